#!/usr/bin/env python3
"""Tests of the GPU acceptance kit's judge and summary writer (scripts/acceptance/acceptance*.py).

  test_summary.py CASE SOURCE_DIR PREFLIGHT [FAKE_NVML]

The recorded verdicts are real: the preflight binary under test writes them, on no GPU or on the
fake NVML, as the kit would on a GPU machine; the records around them (plan.tsv, steps.tsv,
runs.tsv) are written here as the kit writes them. Exit 0 pass, 1 fail, 77 skipped (a case that
needs the fake NVML in a build without CUDA).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

CASE, SRC, PREFLIGHT = sys.argv[1], sys.argv[2], sys.argv[3]
FAKE_NVML = sys.argv[4] if len(sys.argv) > 4 else ""
JUDGE = os.path.join(SRC, "scripts", "acceptance", "acceptance.py")
PLAN = [("build", 120, "build"), ("machine", 10, "machine"), ("gpu-tests", 130, "tests"),
        ("quick", 100, "quick"), ("faults", 75, "faults"), ("bench", 65, "bench"),
        ("hbm", 30, "hbm")]


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def tsv(rows):
    return "".join("\t".join(str(c) for c in row) + "\n" for row in rows)


def no_gpu_env():
    env = dict(os.environ, PREFLIGHT_NVML_LIBRARY="/nonexistent", CUDA_VISIBLE_DEVICES="")
    return env


def fake_env(work, config):
    path = os.path.join(work, "node.conf")
    write(path, config)
    return dict(os.environ, PREFLIGHT_NVML_LIBRARY=FAKE_NVML, FAKE_NVML_CONFIG=path,
                CUDA_VISIBLE_DEVICES="", NVIDIA_VISIBLE_DEVICES="none")


def preflight(args, env, verdict_path):
    """A real run whose verdict lands where the kit would put it; its exit status."""
    os.makedirs(os.path.dirname(verdict_path), exist_ok=True)
    r = subprocess.run([PREFLIGHT] + args + ["--json", verdict_path], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    check(os.path.isfile(verdict_path), "preflight %s wrote no verdict: %s" % (args, r.stderr))
    return r.returncode


def judge(*args):
    return subprocess.run([sys.executable, JUDGE] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=60)


def summarize(out):
    r = judge("summary", out)
    check(os.path.isfile(os.path.join(out, "summary.json")), "no summary.json: " + r.stderr)
    with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
        doc = json.load(f)
    with open(os.path.join(out, "summary.md"), encoding="utf-8") as f:
        md = f.read()
    return r, doc, md


def step(doc, name):
    return next(s for s in doc["steps"] if s["name"] == name)


def base_records(out, steps):
    write(os.path.join(out, "plan.tsv"), tsv(PLAN))
    write(os.path.join(out, "steps.tsv"), tsv(steps))
    write(os.path.join(out, "kit.txt"), "started_at=2026-11-25T10:00:00Z\nrehearsal=0\n")
    write(os.path.join(out, "machine.txt"),
          "gpu_name=NVIDIA H100 80GB HBM3\ngpu_memory_mib=81559\ndriver=580.159.04\n"
          "cuda_driver=13.0\nnvcc=13.0\n")


def healthy_quick_runs(out, count):
    runs = []
    for i in range(1, count + 1):
        name = "run-%02d" % i
        rc = preflight(["run", "--checks", "inventory", "--expect-gpus", "0"], no_gpu_env(),
                       os.path.join(out, "quick", name + ".json"))
        check(rc == 0, "a healthy no-GPU run must pass, got exit %d" % rc)
        runs.append(("quick", name, 0, "1.%03d" % i, "quick/%s.json" % name))
    return runs


def case_accepted():
    """Healthy runs only, the other steps skipped: accepted, exit 0."""
    out = tempfile.mkdtemp()
    try:
        steps = [("build", 120, 0, "skipped", "--build-dir"), ("machine", 10, "0.5", "done", ""),
                 ("quick", 100, "7.2", "done", "6 runs")]
        steps += [(n, b, 0, "skipped", "not in --steps") for n, b, _ in PLAN
                  if n not in ("build", "machine", "quick")]
        base_records(out, steps)
        write(os.path.join(out, "runs.tsv"), tsv(healthy_quick_runs(out, 6)))
        r, doc, md = summarize(out)
        check(r.returncode == 0, "an accepted run must exit 0, got %d: %s" % (r.returncode,
                                                                               doc["failures"]))
        check(doc["ok"] is True and doc["failures"] == [], "failures: %s" % doc["failures"])
        check(doc["schema"] == "preflight.acceptance/1", "schema")
        quick = step(doc, "quick")
        check(quick["figures"]["runs"] == 6, "six runs recorded")
        check(quick["figures"]["time_to_verdict_s"] == 1.001, "time to verdict is the first run's")
        check(quick["false_alarms"] == [], "no false alarm in healthy runs")
        check("| Result | ACCEPTED |" in md, "the table says ACCEPTED:\n" + md)
        check("| 3 | quick | 100 s | 7.2 s | ok |" in md, "the quick row:\n" + md)
        check("REHEARSAL" not in md, "not a rehearsal")
        # The time model beside what was measured (docs/plan.md): inventory's row, from the
        # verdicts' checks[].plan.expected_s and duration_s.
        model = {r["check"]: r for r in quick["time_model"]}
        check("inventory" in model, "inventory's modelled and measured time: %s" % model)
        check(model["inventory"]["modelled_s"] > 0 and model["inventory"]["measured_s"] >= 0,
              "figures: %s" % model["inventory"])
        check("Time model (docs/plan.md)" in md and "| inventory |" in md,
              "the time model table:\n" + md)
    finally:
        shutil.rmtree(out)


def case_failures():
    """A pass, a false alarm, a found and a failed injection, a skipped test, a timed-out step."""
    if not FAKE_NVML:
        print("skipped: the fake NVML needs a CUDA build")
        sys.exit(77)
    out = tempfile.mkdtemp()
    try:
        steps = [("build", 120, "98.0", "done", "sm_90"), ("machine", 10, "0.5", "done", ""),
                 ("gpu-tests", 130, "60.0", "done", "2 tests listed"),
                 ("quick", 100, "9.0", "done", "6 runs"), ("faults", 75, "3.0", "done", "3 drills"),
                 ("bench", 65, "65.1", "timed-out", "")]  # hbm: never reached
        base_records(out, steps)
        runs = [("gpu-tests", "gpu inventory: listed", 0, "2.0", "tests/01.log"),
                ("gpu-tests", "gpu gemm: healthy", 77, "0.4", "tests/02.log")]
        runs += healthy_quick_runs(out, 5)
        # A false alarm: a GPU at 80 C against the 75 C warning limit, on an otherwise idle node.
        env = fake_env(out, "gpus=1\ngpu0.temperature=80\n")
        preflight(["run", "--checks", "inventory"], env, os.path.join(out, "quick", "run-06.json"))
        runs.append(("quick", "run-06", 1, "1.2", "quick/run-06.json"))
        # Drills: mig-on is found; gemm-nan is not (CUDA does not see the fake GPU).
        env = fake_env(out, "gpus=1\n")
        preflight(["run", "--checks", "inventory", "--inject-fault", "mig-on@gpu=0"], env,
                  os.path.join(out, "faults", "mig-on.json"))
        preflight(["run", "--checks", "gemm", "--inject-fault", "gemm-nan@gpu=0"], env,
                  os.path.join(out, "faults", "gemm-nan.json"))
        # A preflight that forgot to mark its drill: the same verdict with `injected` cleared.
        preflight(["run", "--checks", "inventory", "--inject-fault", "ecc-off@gpu=0"], env,
                  os.path.join(out, "faults", "ecc-off.json"))
        with open(os.path.join(out, "faults", "ecc-off.json"), encoding="utf-8") as f:
            unmarked = json.load(f)
        for check_doc in unmarked["checks"]:
            for finding in check_doc["findings"]:
                finding["injected"] = False
        write(os.path.join(out, "faults", "ecc-off.json"), json.dumps(unmarked))
        write(os.path.join(out, "faults", "plan.tsv"), tsv([
            ("run", "ecc-off", "ecc-off@gpu=0", "gpu0", "ECC_DISABLED", "--checks inventory", ""),
            ("run", "mig-on", "mig-on@gpu=0", "gpu0", "MIG_ENABLED", "--checks inventory", ""),
            ("run", "gemm-nan", "gemm-nan@gpu=0", "gpu0", "GEMM_NAN_INF,GEMM_CHECKSUM_MISMATCH",
             "--checks gemm", ""),
            ("n/a", "nvlink-slow", "nvlink-slow:0.3@pair=0-1", "gpu0-gpu1",
             "NVLINK_BANDWIDTH_LOW", "--checks nvlink", "needs 2 GPUs, this node has 1")]))
        runs += [("faults", "ecc-off", 1, "0.3", "faults/ecc-off.json"),
                 ("faults", "mig-on", 1, "0.3", "faults/mig-on.json"),
                 ("faults", "gemm-nan", 1, "0.3", "faults/gemm-nan.json")]
        # The bench step ran out of time: one killed at the end of its box, one never started.
        write(os.path.join(out, "bench", "gemm-bf16.out"), "preflight-bench-gemm: bf16 ...\n")
        runs += [("bench", "gemm-bf16", 124, "65.0", "bench/gemm-bf16.out"),
                 ("bench", "gemm-fp64", "-", "0", "bench/gemm-fp64.out")]
        write(os.path.join(out, "runs.tsv"), tsv(runs))

        r, doc, md = summarize(out)
        check(r.returncode == 1, "failures must exit 1, got %d" % r.returncode)
        check(doc["ok"] is False, "not accepted")
        states = {s["name"]: (s["state"], s["ok"]) for s in doc["steps"]}
        check(states["build"] == ("done", True) and states["machine"] == ("done", True),
              "build and machine are fine: %s" % states)
        for name in ("gpu-tests", "quick", "faults", "bench", "hbm"):
            check(not states[name][1], "%s must fail: %s" % (name, states))
        check(states["bench"][0] == "timed-out" and states["hbm"][0] == "not reached", states)

        tests = step(doc, "gpu-tests")["items"]
        check([(t["state"], t["ok"]) for t in tests] == [("pass", True), ("skipped", False)],
              "a skipped test is listed as not ok: %s" % tests)
        check(any("gpu gemm: healthy': skipped" in f for f in doc["failures"]),
              "a skipped GPU test counts as a failure: %s" % doc["failures"])

        quick = step(doc, "quick")
        groups = {(g["entity"], g["code"]): g for g in quick["false_alarm_groups"]}
        temp = groups.get(("gpu0", "TEMPERATURE_HIGH"))
        check(temp is not None, "the 80 C reading is a false alarm: %s" % list(groups))
        check(temp["runs"] == ["run-06"] and temp["figures"] == ["80 C (limit 75)"], temp)
        check(all(a["run"] == "run-06" for a in quick["false_alarms"]),
              "the five healthy runs raise nothing: %s" % quick["false_alarms"])
        check(doc["false_alarms"] == quick["false_alarms"], "top-level false alarms")
        check("| inventory | gpu0 | TEMPERATURE_HIGH | warn | 1 of 6 | 80 C (limit 75) |" in md,
              "the false alarm row:\n" + md)

        drills = {d["kind"]: d for d in step(doc, "faults")["items"]}
        check(drills["mig-on"]["ok"] and drills["mig-on"]["state"] == "found", drills["mig-on"])
        check(not drills["gemm-nan"]["ok"] and drills["gemm-nan"]["state"] == "missed",
              drills["gemm-nan"])
        check("GEMM_GPU_NOT_TESTED" in drills["gemm-nan"]["detail"],
              "a missed drill says what was found instead: %s" % drills["gemm-nan"])
        check(drills["ecc-off"]["state"] == "not marked" and not drills["ecc-off"]["ok"],
              "a finding not marked injected fails the drill: %s" % drills["ecc-off"])
        check(drills["nvlink-slow"]["state"] == "n/a" and drills["nvlink-slow"]["ok"],
              "not applicable drills are listed, not failed")
        check(step(doc, "faults")["detail"] == "1 of 3 drills found, 1 not applicable",
              step(doc, "faults")["detail"])

        bench = {b["name"]: b for b in step(doc, "bench")["items"]}
        check(bench["gemm-bf16"]["state"] == "timed out", bench)
        check(bench["gemm-fp64"]["state"] == "not run", bench)
        check("bench: ran out of its 65 s box" in doc["failures"], doc["failures"])
        check("hbm: not reached" in doc["failures"], doc["failures"])

        for text in ("| Result | NOT ACCEPTED", "| 5 | bench | 65 s | 65.1 s | timed-out |",
                     "| mig-on@gpu=0 | MIG_ENABLED on gpu0 | found |",
                     "| gemm-nan@gpu=0 | GEMM_NAN_INF/GEMM_CHECKSUM_MISMATCH on gpu0 | missed",
                     "| gpu gemm: healthy | skipped | 0.4 s |", "## Failures and false alarms"):
            check(text in md, "summary.md lacks %r:\n%s" % (text, md))
    finally:
        shutil.rmtree(out)


def case_drills():
    """Every fault kind of `preflight list --json` aimed at a GPU gets a drill with a valid spec."""
    work = tempfile.mkdtemp()
    try:
        listing = subprocess.run([PREFLIGHT, "list", "--json"], stdout=subprocess.PIPE,
                                 check=True, timeout=60).stdout
        write(os.path.join(work, "list.json"), listing.decode())
        thresholds = subprocess.run([PREFLIGHT, "thresholds", "--sku", "h100-sxm5-80gb"],
                                    stdout=subprocess.PIPE, check=True, timeout=60).stdout
        write(os.path.join(work, "thresholds.json"), thresholds.decode())
        kinds = json.loads(listing)["fault_kinds"]
        gpu_kinds = {k["kind"] for k in kinds
                     if "gpu" in k["targets"] or "pair" in k["targets"]}
        for gpus, peers in ((8, True), (1, False)):
            r = judge("drills", os.path.join(work, "list.json"),
                      os.path.join(work, "thresholds.json"), str(gpus))
            check(r.returncode == 0, r.stderr)
            rows = [line.split("\t") for line in r.stdout.splitlines()]
            check({row[1] for row in rows} == gpu_kinds,
                  "one row per GPU kind: %s" % sorted(gpu_kinds ^ {row[1] for row in rows}))
            for state, kind, spec, entity, codes, args, note in rows:
                check(state != "error", "%s: %s" % (kind, note))
                check(state == "run" or (not peers and state == "n/a"), (gpus, state, kind))
                check(codes and "FAULT_TARGET_MISSING" not in codes.split(","), (kind, codes))
                check(entity in ("gpu0", "node", "gpu0-gpu1"), (kind, entity))
                if state != "run":
                    continue
                # The spec is one preflight itself accepts: parsed, and refused only for the
                # GPU the no-GPU node does not have (exit 2, after discovery).
                p = subprocess.run([PREFLIGHT, "run", "--expect-gpus", "0"] + args.split() +
                                   ["--inject-fault", spec, "--json", "-"], env=no_gpu_env(),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   timeout=60)
                refused = "this node has no gpu0" in p.stderr or "does not have both" in p.stderr
                check(p.returncode == 2 and refused,
                      "spec %s %s: exit %d %s" % (spec, args, p.returncode, p.stderr))
    finally:
        shutil.rmtree(work)


def case_not_kit_folder():
    """A folder without plan.tsv is not the kit's: exit 2, nothing written."""
    work = tempfile.mkdtemp()
    try:
        r = judge("summary", work)
        check(r.returncode == 2 and "not the kit's output" in r.stderr, r.stderr)
        check(os.listdir(work) == [], "nothing written")
        # The machine step failed and left no list: one line, exit 1, no drill.
        r = judge("drills", os.path.join(work, "list.json"), os.path.join(work, "th.json"), "1")
        check(r.returncode == 1 and r.stdout == "" and len(r.stderr.splitlines()) == 1
              and "list.json: missing" in r.stderr, "drills without a list: %r" % r.stderr)
        bad = os.path.join(work, "bad.json")
        write(bad, "[" * 100000)
        r = judge("gpus", bad)
        check(r.returncode == 1 and r.stdout.strip() == "0" and "not JSON" in r.stderr, r.stderr)
    finally:
        shutil.rmtree(work)


CASES = {"accepted": case_accepted, "failures": case_failures, "drills": case_drills,
         "not_kit_folder": case_not_kit_folder}

if __name__ == "__main__":
    CASES[CASE]()
    print("ok: " + CASE)
