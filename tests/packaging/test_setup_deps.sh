#!/usr/bin/env bash
# scripts/setup-deps.sh names the real cause of a failed download (issue 31): a copy of the script
# runs --cuda 12 in a scratch repository with a curl that fails as the real one does (its message
# on stderr, its exit status), and a dpkg-query that reports every package installed, so nothing
# is installed or downloaded. Each cause gets its own advice, no file is left behind, and the
# script and its library stay clean under shellcheck (where installed).
#   test_setup_deps.sh REPO_ROOT
set -euo pipefail
repo=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$T/repo/scripts/lib" "$T/bin"
cp "$repo/scripts/setup-deps.sh" "$T/repo/scripts/"
cp "$repo/scripts/lib/download.sh" "$T/repo/scripts/lib/"
cat >"$T/bin/dpkg-query" <<'FAKE'
#!/bin/sh
printf 'install ok installed'
FAKE
cat >"$T/bin/curl" <<'FAKE'
#!/bin/sh
# The messages curl 7.88 prints for these statuses.
case $FAKE_CURL_STATUS in
  60) echo "curl: (60) SSL certificate problem: unable to get local issuer certificate" >&2 ;;
  22) echo "curl: (22) The requested URL returned error: 404" >&2 ;;
  6) echo "curl: (6) Could not resolve host: deb.debian.org" >&2 ;;
  5) echo "curl: (5) Could not resolve proxy: proxy.example" >&2 ;;
  28) echo "curl: (28) Failed to connect to deb.debian.org port 443 after 30001 ms: Timeout was reached" >&2 ;;
esac
exit "$FAKE_CURL_STATUS"
FAKE
chmod +x "$T/bin/dpkg-query" "$T/bin/curl"

# expect STATUS TEXT: the one error line names TEXT, exit status 1, and no download is left.
expect() {
  local status=$1 text=$2 out rc=0
  out=$(PATH="$T/bin:$PATH" FAKE_CURL_STATUS=$status "$T/repo/scripts/setup-deps.sh" --cuda 12 2>&1) ||
    rc=$?
  ((rc == 1)) || fail "curl status $status: setup-deps exited $rc, not 1: $out"
  grep -q '^setup-deps: download failed: https://deb.debian.org/debian/pool/' <<<"$out" ||
    fail "curl status $status: no 'download failed' line naming the URL: $out"
  grep -qF -- "$text" <<<"$out" || fail "curl status $status: '$text' not said: $out"
  if [[ $status != 22 ]] && grep -q 'left the archive' <<<"$out"; then
    fail "curl status $status: blamed on the archive: $out"
  fi
  [[ -z $(find "$T/repo/.deps" -mindepth 1 -print -quit) ]] ||
    fail "curl status $status: left $(find "$T/repo/.deps" -mindepth 1)"
  echo "ok: curl status $status: $(grep 'download failed' <<<"$out")"
}

expect 60 "TLS failed (curl error 60: SSL certificate problem"
expect 22 "not found on the server (The requested URL returned error: 404): the pinned file has left the archive"
expect 6 "the host name does not resolve"
expect 5 "the proxy failed"
expect 28 "no connection (curl error 28"

if command -v shellcheck >/dev/null 2>&1; then
  (cd "$repo/scripts" && shellcheck -x setup-deps.sh lib/download.sh) || fail "shellcheck"
  echo "ok: shellcheck"
fi
