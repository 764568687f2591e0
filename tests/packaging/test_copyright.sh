#!/usr/bin/env bash
# The .deb's licence files: /usr/share/doc/<package>/copyright in Debian's machine-readable
# format (DEP-5: header with Format, "Files: *" under Apache-2.0 with Debian's short paragraph
# pointing at /usr/share/common-licenses/Apache-2.0, every licence named has its text), and
# LICENSE (the Apache License 2.0) in /usr/share/doc/preflight/.
# Usage: test_copyright.sh CPACK BUILD_DIR SOURCE_DIR VERSION DPKG_DEB
# shellcheck source=tests/packaging/lib.sh
source "$(dirname "$0")/lib.sh"
cpack=$1 build=$2 src=$3 version=$4 dpkg_deb=${5:-}
if [[ -z "$dpkg_deb" ]]; then
  echo "dpkg-deb not found (Debian's dpkg): skipped"
  exit 77
fi
make_tmp "$build"
build_deb "$cpack" "$build" "$version"
"$dpkg_deb" -x "$deb" "$tmp/root"

# --- LICENSE ---
license=$tmp/root/usr/share/doc/preflight/LICENSE
if [[ -f "$license" ]]; then
  cmp -s "$src/LICENSE" "$license" || fail "usr/share/doc/preflight/LICENSE differs from LICENSE"
else
  fail "the package has no usr/share/doc/preflight/LICENSE"
fi
# The standard text, with only the appendix's copyright line filled in (Debian's copy, from
# base-files, is the reference).
apache=/usr/share/common-licenses/Apache-2.0
if [[ -f "$apache" ]]; then
  sed 's/^   Copyright 2026 preflight contributors$/   Copyright [yyyy] [name of copyright owner]/' \
    "$src/LICENSE" | cmp -s - "$apache" ||
    fail "LICENSE is not the Apache License 2.0 text of $apache with 'Copyright 2026 preflight contributors'"
else
  echo "note: $apache not found, LICENSE text not compared"
fi

# --- copyright ---
copyright=$tmp/root/usr/share/doc/$pkg/copyright
[[ -f "$copyright" ]] || die "the package has no usr/share/doc/$pkg/copyright (Debian policy 12.5)"
# Structure, by the rules of copyright-format 1.0: paragraphs of "Field: value" lines and
# continuation lines (a space first), separated by empty lines; the first paragraph is the header
# with Format; each Files paragraph has Copyright and License; a License without text has a
# stand-alone License paragraph of that name.
problems=$(awk '
  function flush() {
    if (!n) return
    if (n == 1) {
      if (f["Format"] != "https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/")
        print "header: Format is \"" f["Format"] "\""
    } else if ("Files" in f) {
      if (!("Copyright" in f)) print "Files: " f["Files"] ": no Copyright"
      if (!("License" in f)) print "Files: " f["Files"] ": no License"
      else if (!text["License"]) used[f["License"]] = 1
    } else if ("License" in f) {
      if (!text["License"]) print "License: " f["License"] ": stand-alone paragraph without text"
      defined[f["License"]] = 1
    } else print "paragraph " n ": neither Files nor License"
    delete f; delete text; last = ""
  }
  /^$/ { flush(); inpara = 0; next }
  /^[ \t]+$/ { print "line " NR ": only blanks (paragraphs are separated by empty lines)"; next }
  /^[ \t]/ { if (last == "") print "line " NR ": continuation outside a field"; else text[last] = 1; next }
  /^[A-Za-z][A-Za-z0-9-]*:/ {
    if (!inpara) { inpara = 1; n++ }
    name = $0; sub(/:.*/, "", name); value = $0; sub(/^[^:]*:[ \t]*/, "", value)
    if (name in f) print "line " NR ": field " name " twice in a paragraph"
    f[name] = value; last = name; next
  }
  { print "line " NR ": not a field: " $0 }
  END {
    flush()
    if (n < 2) print "no Files paragraph"
    for (l in used) if (!(l in defined)) print "License " l " has no text and no stand-alone paragraph"
  }' "$copyright")
[[ -z "$problems" ]] || fail "$copyright is not DEP-5:"$'\n'"$problems"
awk 'BEGIN { RS = "" } /(^|\n)Files: \*\n/ && /\nCopyright: 2026 preflight contributors\n/ &&
  /\nLicense: Apache-2.0(\n|$)/ { found = 1 } END { exit !found }' "$copyright" ||
  fail "copyright has no 'Files: *' paragraph with 'Copyright: 2026 preflight contributors' and 'License: Apache-2.0'"
awk 'BEGIN { RS = "" } /^License: Apache-2.0\n/ && /On Debian systems, the complete text of the Apache License, Version 2.0\n can be found in "\/usr\/share\/common-licenses\/Apache-2.0"\./ { found = 1 }
  END { exit !found }' "$copyright" ||
  fail "copyright's Apache-2.0 paragraph does not point at /usr/share/common-licenses/Apache-2.0"
# Code compiled into the binary from elsewhere is named with its licence.
for name in CLI11 nlohmann/json; do
  grep -q "$name" "$copyright" || fail "copyright does not name $name, which is compiled in"
done
if [[ "$pkg" == preflight-cuda* ]]; then
  for text in libcudart_static.a 'Attachment A'; do
    grep -q "$text" "$copyright" ||
      fail "copyright lacks '$text' (NVIDIA's CUDA runtime is linked statically)"
  done
fi
# Debian's own parser, where it is installed (python3-debian; scripts/setup-deps.sh --test).
if /usr/bin/python3 -c 'import debian.copyright' 2>/dev/null; then
  /usr/bin/python3 - "$copyright" <<'PY' || fail "python3-debian rejects $copyright (above)"
import sys
import warnings
from debian.copyright import Copyright
warnings.simplefilter("error")  # its warnings are format errors too
with open(sys.argv[1], encoding="utf-8") as f:
    c = Copyright(f, strict=True)
assert c.find_files_paragraph("usr/bin/preflight").license.synopsis == "Apache-2.0"
PY
else
  echo "note: python3-debian not installed, copyright not parsed by debian.copyright"
fi
finish
