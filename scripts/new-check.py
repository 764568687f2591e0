#!/usr/bin/env python3
"""Adds a check to the tree from the template in scripts/new-check/ (docs/architecture.md,
"Adding a check"): its folder src/checks/NAME/ (the check, its finding codes, its threshold
keys), its registration line in src/checks/builtin_checks.cpp, its page docs/checks/NAME.md
with a line in each index (docs/findings.md, docs/thresholds.md), and its tests in
tests/checks/NAME/. Nothing else changes: the build compiles every .cpp of a check folder and
the unit tests every .cpp of tests/checks/, the registry assembles the catalogue and the keys.

Usage: scripts/new-check.py NAME [--root DIR]
NAME: lower case letters and digits, starting with a letter (the check's name in --checks).
Exit 2, with one line naming the problem, for a bad or taken name or a tree it cannot edit; the
tree is left as it was."""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE = os.path.join(HERE, "new-check")

# Template file -> its place in the tree ({name} replaced).
FILES = {
    "src/check.hpp.in": "src/checks/{name}/{name}_check.hpp",
    "src/check.cpp.in": "src/checks/{name}/{name}_check.cpp",
    "src/findings.hpp.in": "src/checks/{name}/{name}_findings.hpp",
    "src/findings.cpp.in": "src/checks/{name}/{name}_findings.cpp",
    "src/thresholds.hpp.in": "src/checks/{name}/{name}_thresholds.hpp",
    "src/thresholds.cpp.in": "src/checks/{name}/{name}_thresholds.cpp",
    "tests/test_check.cpp.in": "tests/checks/{name}/test_{name}_check.cpp",
    "docs/check.md.in": "docs/checks/{name}.md",
}


def fail(message):
    print(f"new-check: {message}", file=sys.stderr)
    sys.exit(2)


def fill(text, name):
    camel = name[0].upper() + name[1:]
    return text.replace("@name@", name).replace("@Name@", camel).replace("@NAME@", name.upper())


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def registration(text, name):
    """builtin_checks.cpp with the check's include and its registry.add line, after the last."""
    include = f'#include "checks/{name}/{name}_check.hpp"\n'
    add = f"  registry.add(std::make_unique<{name[0].upper() + name[1:]}Check>());\n"
    includes = list(re.finditer(r'^#include "checks/[^"]+"\n', text, re.M))
    adds = list(re.finditer(r"^  registry\.add\(.*\n", text, re.M))
    if not includes or not adds:
        fail("src/checks/builtin_checks.cpp: no check includes or registry.add lines to follow")
    # Includes stay sorted (clang-format's order): before the first one that sorts after.
    at = next((m.start() for m in includes if m.group(0) > include), includes[-1].end())
    text = text[:at] + include + text[at:]
    adds = list(re.finditer(r"^  registry\.add\(.*\n", text, re.M))
    at = adds[-1].end()
    return text[:at] + add + text[at:]


def index_line(text, heading, line, page):
    """`line` appended to the bullet list under `heading` of an index page."""
    section = re.search(r"^" + re.escape(heading) + r"\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not section:
        fail(f"{page}: no section {heading!r} to add the index line to")
    bullets = list(re.finditer(r"^- \[.*\n", section.group(1), re.M))
    if not bullets:
        fail(f"{page}: section {heading!r} has no index bullets")
    at = section.start(1) + bullets[-1].end()
    return text[:at] + line + "\n" + text[at:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name")
    parser.add_argument("--root", default=os.path.dirname(HERE))
    args = parser.parse_args()
    name, root = args.name, args.root
    if not re.fullmatch(r"[a-z][a-z0-9]{1,23}", name):
        fail(f"'{name}': a check name is 2 to 24 lower-case letters and digits, from a letter")
    if name == "common" or os.path.exists(os.path.join(root, "src", "checks", name)):
        fail(f"'{name}': src/checks/{name} exists already")
    for path in FILES.values():
        if os.path.exists(os.path.join(root, path.format(name=name))):
            fail(f"{path.format(name=name)} exists already")

    # Everything is computed first, then written: a tree it cannot edit is left as it was.
    writes = {}
    for template, path in FILES.items():
        writes[path.format(name=name)] = fill(read(os.path.join(TEMPLATE, template)), name)
    builtin = "src/checks/builtin_checks.cpp"
    writes[builtin] = registration(read(os.path.join(root, builtin)), name)
    code = f"{name.upper()}_TOO_FEW_GPUS"
    findings = "docs/findings.md"
    writes[findings] = index_line(read(os.path.join(root, findings)), "## Codes by check",
                                  f"- [{name}](checks/{name}.md#finding-codes): `{code}`",
                                  findings)
    thresholds = "docs/thresholds.md"
    writes[thresholds] = index_line(read(os.path.join(root, thresholds)), "## Keys",
                                    f"- [{name}](checks/{name}.md#threshold-keys): "
                                    f"`{name}.min_gpus`", thresholds)
    for path, text in writes.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        tmp = full + ".new-check.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, full)
    print(f"new-check: added check '{name}':")
    for path in sorted(writes):
        print(f"  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
