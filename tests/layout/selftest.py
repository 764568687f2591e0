#!/usr/bin/env python3
"""check_layout.py against small trees: a clean one passes, and each rule it holds is broken
once and named. Usage: selftest.py (exit 0 when every case behaves)."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = os.path.join(HERE, "check_layout.py")

CLEAN = {
    "include/preflight/check.hpp": '#include "preflight/verdict.hpp"\n',
    "include/preflight/verdict.hpp": "",
    "src/model/verdict.cpp": '#include "preflight/verdict.hpp"\n',
    "src/model/CMakeLists.txt": "add_library(m x.cpp)\npreflight_layer(m model)\n",
    "src/run/CMakeLists.txt": "add_library(r x.cpp)\npreflight_layer(r model run)\n",
    "src/run/bounded_task.hpp": "void f() { std::thread(g).detach(); }\n",
    "src/run/runner.cpp": '#include "model/stats.hpp"\n#include "run/bounded_task.hpp"\n',
    "src/model/stats.hpp": "",
    "src/report/prometheus_report.cpp": '#include "model/stats.hpp"\n// the gemm check\n',
    "src/checks/gemm/gemm_check.cpp": '#include "run/runner.hpp"\nconst char* n = "gemm";\n',
    "tests/checks/gemm/test_gemm_check.cpp": "",
    "tests/checks/rdma/test_rdma_check.cpp": "",
    "src/checks/rdma/rdma_check.cpp": '#include "checks/rdma/rdma_judge.hpp"\n#include "checks/common/pci_link.hpp"\n',
    "src/app/main.cpp": '#include "fleet/mpi/fleet_command.hpp"\n',
    "README.md": "then `ctest --test-dir build -L gpu --output-on-failure` there\n",
    "scripts/build.sh": "# builds what src/app/main.cpp and src/run/*.cpp need into BUILD/tests/x\n",
}

BROKEN = [
    ("a model file that includes the run",
     {"src/model/verdict.cpp": '#include "run/runner.hpp"\n'},
     "model may not depend on run"),
    ("a report that names a check",
     {"src/report/prometheus_report.cpp": 'bool g(const std::string& c) { return c == "gemm"; }\n'},
     'names the check "gemm"'),
    ("a header name used twice",
     {"src/report/stats.hpp": ""},
     "header name stats.hpp appears 2 times"),
    ("a second file that detaches",
     {"src/checks/gemm/gemm_check.cpp": "void h() { t.detach(); }\n"},
     "threads are detached in 2 files"),
    ("a check that includes another check's header",
     {"src/checks/rdma/rdma_check.cpp": '#include "checks/gemm/gemm_check.hpp"\n'},
     "a check includes only its own folder and checks/common/"),
    ("a README that runs the GPU tests in another folder",
     {"README.md": "run `ctest --test-dir build-test -L gpu` on a GPU node\n"},
     "not 'ctest --test-dir build-test -L gpu'"),
    ("a library whose compiler view lets it see more than the rule",
     {"src/run/CMakeLists.txt": "preflight_layer(r model run checks)\n"},
     "preflight_layer(r) gives ['checks', 'model', 'run'], the rule allows ['model', 'run']"),
    ("a library the compiler does not hold",
     {"src/model/CMakeLists.txt": "add_library(m x.cpp)\n"},
     "no preflight_layer() call"),
    ("a check without tests of its own",
     {"src/checks/nccl/nccl_check.cpp": ""},
     "src/checks/nccl/: the check has no tests in tests/checks/nccl/"),
    ("a comment naming a file that moved",
     {"src/run/runner.cpp": "// the engine (src/gpu/gemm_engine.cpp) is polled\n"},
     "a comment names src/gpu/gemm_engine.cpp, which does not exist"),
    ("a comment naming a glob that matches nothing",
     {"scripts/build.sh": "# see src/core/html_*.cpp\n"},
     "a comment names src/core/html_*.cpp"),
    ("a folder outside the rule",
     {"src/misc/x.cpp": ""},
     "folder 'misc' has no place"),
]


def run(tree):
    with tempfile.TemporaryDirectory() as root:
        for rel, text in tree.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        p = subprocess.run([sys.executable, CHECKER, root], capture_output=True, text=True)
        return p.returncode, p.stdout


def main():
    failures = 0
    rc, out = run(CLEAN)
    if rc != 0 or out:
        print(f"FAIL: the clean tree: rc {rc}, said:\n{out}")
        failures += 1
    for name, change, expected in BROKEN:
        rc, out = run({**CLEAN, **change})
        if rc != 1 or expected not in out:
            print(f"FAIL: {name}: rc {rc}, expected a line with {expected!r}, said:\n{out}")
            failures += 1
        else:
            print(f"ok: {name}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
