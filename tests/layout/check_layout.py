#!/ usr / bin / env python3
"""The source layout's rules (docs/architecture.md), checked against the tree.

- Dependencies point one way: each folder under src/ includes only the folders it may depend on.
- No header name appears twice under include/ and src/.
- One file under src/ detaches threads (the bounded task).
- No reporter, fleet or model code names a check outside the data tables listed here.
- No check includes another check's headers: what two checks share is in src/checks/common/.
- The README and docs/ give one command for the GPU tests (GPU_TEST_COMMAND).
- Each check (a folder of src/checks/ but common/) has its tests in tests/checks/<check>/.
- The compiler holds the same rule: each library's preflight_layer() call (src/CMakeLists.txt)
  names exactly the folders ALLOWED gives its folder, so the two cannot drift apart.
- A comment that names a file or folder of the repository (src/..., docs/..., a glob such as
  src/gpu/bandwidth_*.cpp too) names one that exists: a moved file leaves no stale pointer.

Usage: check_layout.py REPO_ROOT. Prints one line per broken rule; exit 1 when any.
"""
import glob
import os
import re
import sys

#Folder->the folders its includes may name("preflight" is include / preflight, the seams).
ALLOWED = {
    "preflight": {"preflight"},
    "model": {"preflight", "model"},
    "run": {"preflight", "model", "run"},
    "report": {"preflight", "model", "report"},
    "fleet/logic": {"preflight", "model", "report", "fleet/logic"},
    "learned": {"preflight", "model", "run", "report", "learned"},
    "checks": {"preflight", "model", "run", "checks"},
    "kernels": {"kernels"},
    "gpu": {"preflight", "model", "run", "gpu", "kernels"},
#GPUDirect : the RDMA engine registers GPU memory with gpu /'s CUDA error checks and scope.
    "net": {"preflight", "model", "net", "gpu"},
    "fleet/mpi": {"preflight", "model", "run", "report", "fleet/logic", "fleet/mpi", "checks"},
    "app": None,  # the top: anything
}

#Where check names may appear in model, report and fleet code : data tables(the SKU figures),
#not logic.
#The checks are read from the tree : each folder of src / checks / but common / is one check.
def check_names(root):
    checks = os.path.join(root, "src", "checks")
    if not os.path.isdir(checks):
        return []
    return sorted(d for d in os.listdir(checks)
                  if d != "common" and os.path.isdir(os.path.join(checks, d)))

NAME_FREE = ["src/model", "src/report", "src/fleet/logic"]
DATA_TABLES = {"src/model/sku_table.cpp"}
#Lines about the software stack's NCCL version (verdict.system.nccl), not the nccl check.
SYSTEM_FIELD = re.compile(r"system\.nccl|\(sys, \"nccl\"\)")

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

#Paths named in comments : a repository folder, then names; not part of a longer path(a build
#folder's "BUILD/tests/unit_tests" is an output, not a source).
TOP_FOLDERS = ("src", "include", "tests", "scripts", "docs", "bench", "cmake", "packaging")
NAMED_PATH = re.compile(r"(?<![\w./$-])((?:" + "|".join(TOP_FOLDERS) + r")/[\w./*-]*[\w*])")
SELFTEST = os.path.join("tests", "layout", "selftest.py")

#The one spelling of "run the GPU tests" in the README and docs / (after scripts / build.sh).
GPU_TEST_COMMAND = "ctest --test-dir build -L gpu --output-on-failure"
CTEST_GPU = re.compile(r"ctest [^`\n]*-L gpu[^`\n]*")


def gpu_test_commands(root):
    """Lines of the README and docs/ that spell the GPU test command another way."""
    docs = ["README.md"]
    for base, _, files in os.walk(os.path.join(root, "docs")):
        docs += [os.path.relpath(os.path.join(base, n), root) for n in files if n.endswith(".md")]
    for rel in sorted(docs):
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f.read().split("\n"), 1):
                for spelled in CTEST_GPU.findall(line):
                    if spelled.strip() != GPU_TEST_COMMAND:
                        yield (f"{rel}:{number}: the GPU tests are run with '{GPU_TEST_COMMAND}', "
                               f"not '{spelled.strip()}'")
COMMENT = re.compile(r"(?://|#)(.*)$", re.M)
#Where comments are read for paths : sources, scripts and build files.
COMMENTED = re.compile(r"\.(hpp|cpp|cu|cuh|h|in|py|sh|cmake)$|(^|/)CMakeLists\.txt$")


def folder_of(rel):
    """src/fleet/logic/x.cpp -> fleet/logic; include/preflight/engine/y.hpp -> preflight."""
    if rel.startswith("include/"):
        return "preflight"
    parts = rel.split("/")[1:-1]
    if parts[:1] == ["fleet"] or parts[:1] == ["report"]:
        key = "/".join(parts[:2]) if parts[:1] == ["fleet"] else "report"
        return key
    return parts[0] if parts else ""


def included_folder(spelled):
    if spelled.startswith("preflight/"):
        return "preflight"
    parts = spelled.split("/")
    if parts[0] == "fleet" and len(parts) > 2:
        return "fleet/" + parts[1]
    return parts[0] if len(parts) > 1 else None


def sources(root, top):
    for base, _, files in os.walk(os.path.join(root, top)):
        for name in files:
            if re.search(r"\.(hpp|cpp|cu|cuh|h|in)$", name):
                yield os.path.relpath(os.path.join(base, name), root)


def strip_comments(text):
    """The code without comments (string literals stay: check names are looked for in them)."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return text


def commented_files(root):
    for top in TOP_FOLDERS + (".ci",):
        for base, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                rel = os.path.relpath(os.path.join(base, name), root)
#The checker's own test names missing paths on purpose.
                if COMMENTED.search(rel) and rel != SELFTEST:
                    yield rel
    if os.path.exists(os.path.join(root, "CMakeLists.txt")):
        yield "CMakeLists.txt"


def stale_paths(root):
    """Lines of comments that name a repository path which does not exist."""
    for rel in sorted(commented_files(root)):
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for number, line in enumerate(text.split("\n"), 1):
            for comment in COMMENT.findall(line):
                for named in NAMED_PATH.findall(comment):
                    named = named.rstrip(".")
                    if "*" in named:
                        found = glob.glob(os.path.join(root, named))
                    else:
                        found = os.path.exists(os.path.join(root, named))
                    if not found:
                        yield f"{rel}:{number}: a comment names {named}, which does not exist"


LAYER_CALL = re.compile(r"^\s*preflight_layer\(\s*(\S+)((?:\s+[\w/]+)*)\s*\)", re.M)


def layer_calls(root):
    """Where the compiler's views disagree with ALLOWED."""
    src = os.path.join(root, "src")
    for base, _, files in os.walk(src):
        if "CMakeLists.txt" not in files or base == src:
            continue
        folder = os.path.relpath(base, src).replace(os.sep, "/")
        rel = os.path.relpath(os.path.join(base, "CMakeLists.txt"), root)
        with open(os.path.join(base, "CMakeLists.txt"), encoding="utf-8") as f:
            calls = LAYER_CALL.findall(f.read())
        allowed = ALLOWED.get(folder, "unknown")
        if allowed is None or allowed == "unknown":
            for target, _ in calls:
                yield f"{rel}: preflight_layer({target}): folder '{folder}' has no layer to give"
            continue
        want = sorted(allowed - {"preflight"})
        if not calls:
            yield f"{rel}: no preflight_layer() call: the compiler does not hold '{folder}' to {want}"
        for target, folders in calls:
            got = sorted(folders.split())
            if got != want:
                yield (f"{rel}: preflight_layer({target}) gives {got}, the rule allows {want}")


def main(root):
    names = check_names(root)
    problems = list(stale_paths(root)) + list(gpu_test_commands(root)) + list(layer_calls(root))
    for name in names:
        tests = os.path.join(root, "tests", "checks", name)
        if not os.path.isdir(tests) or not any(n.endswith(".cpp") for n in os.listdir(tests)):
            problems.append(f"src/checks/{name}/: the check has no tests in tests/checks/{name}/")
    files = list(sources(root, "src")) + list(sources(root, "include"))
    headers = {}
    detaching = []
    for rel in sorted(files):
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            text = f.read()
        folder = folder_of(rel)
        allowed = ALLOWED.get(folder, "unknown")
        if allowed == "unknown":
            problems.append(f"{rel}: folder '{folder}' has no place in the dependency rule")
        elif allowed is not None:
            for spelled in INCLUDE.findall(text):
                target = included_folder(spelled)
                if target is not None and target not in allowed:
                    problems.append(f"{rel}: includes {spelled}: {folder} may not depend on {target}")
        own_check = re.match(r"src/checks/([^/]+)/", rel)
        if own_check and own_check.group(1) != "common":
            for spelled in INCLUDE.findall(text):
                other = re.match(r"checks/([^/]+)/", spelled)
                if other and other.group(1) not in (own_check.group(1), "common"):
                    problems.append(f"{rel}: includes {spelled}: a check includes only its own "
                                    f"folder and checks/common/")
        if rel.endswith((".hpp", ".h", ".cuh", ".hpp.in")):
            name = os.path.basename(rel).replace(".in", "")
            headers.setdefault(name, []).append(rel)
        if rel.startswith("src/") and ".detach()" in strip_comments(text):
            detaching.append(rel)
        if any(rel.startswith(p + "/") for p in NAME_FREE) and rel not in DATA_TABLES:
            code = "\n".join(line for line in strip_comments(text).split("\n")
                             if not SYSTEM_FIELD.search(line))
            for name in names:
                if re.search(r'"' + name + r'[".]', code):
                    problems.append(f'{rel}: names the check "{name}" (a check declares what '
                                    f"reporters need in its CheckInfo)")
    for name, where in sorted(headers.items()):
        if len(where) > 1:
            problems.append(f"header name {name} appears {len(where)} times: {', '.join(where)}")
    if len(detaching) != 1:
        problems.append(f"threads are detached in {len(detaching)} files under src/, not one: "
                        f"{', '.join(detaching) or 'none'}")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: check_layout.py REPO_ROOT")
    sys.exit(main(sys.argv[1]))
