#!/usr/bin/env python3
"""The corpus of real kernel logs (tests/data/kernel-logs/, docs/checks/events.md).

  test_kernel_logs.py BINARY LOG VERDICT FINDINGS

`preflight run --checks events --expect-gpus 0 --kernel-log LOG` must give VERDICT (pass, warn,
fail) and exactly the events check's FINDINGS (CODE@ENTITY,... or - for none; the inventory
check's own findings on this GPU-less machine are not the log's), and `preflight judge` of the
verdict it wrote must give the same again: the findings are made from the readings alone.
"""
import json
import os
import subprocess
import sys
import tempfile


def fail(message):
    print("kernel-log corpus: " + message, file=sys.stderr)
    sys.exit(1)


def events_findings(verdict):
    for check in verdict["checks"]:
        if check["name"] == "events":
            return sorted({f["code"] + "@" + f["entity"] for f in check["findings"]})
    fail("the verdict has no events check")


def main():
    binary, log, want_verdict, want = sys.argv[1:5]
    want = sorted(set(want.split(","))) if want != "-" else []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "verdict.json")
        run = subprocess.run([binary, "run", "--checks", "events", "--expect-gpus", "0",
                              "--kernel-log", log, "--json", out],
                             capture_output=True, text=True, timeout=60)
        if run.returncode not in (0, 1):
            fail(f"run exited {run.returncode}: {run.stderr.strip()}")
        with open(out) as f:
            verdict = json.load(f)
        got = events_findings(verdict)
        if verdict["verdict"] != want_verdict or got != want:
            fail(f"{os.path.basename(log)}: got {verdict['verdict']} {got}, "
                 f"expected {want_verdict} {want}")
        judged = os.path.join(tmp, "judged.json")
        again = subprocess.run([binary, "judge", out, "--json", judged],
                               capture_output=True, text=True, timeout=60)
        if again.returncode not in (0, 1):
            fail(f"judge exited {again.returncode}: {again.stderr.strip()}")
        with open(judged) as f:
            rejudged = json.load(f)
        if rejudged["verdict"] != want_verdict or events_findings(rejudged) != want:
            fail(f"judge: got {rejudged['verdict']} {events_findings(rejudged)}")
    print(f"{os.path.basename(log)}: {want_verdict} {want}")


if __name__ == "__main__":
    main()
