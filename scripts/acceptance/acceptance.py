#!/usr/bin/env python3
"""The GPU acceptance kit's judge and summary writer (scripts/gpu-acceptance.sh, docs/benchmarks.md).

The kit (bash) runs the steps and records what happened in its --out folder; this module turns the
records into verdicts a person and a tool can read. Standard library only: it runs on the lent GPU
machine, where nothing can be installed, and on the build machine, where the tests feed it recorded
verdicts.

  acceptance.py drills LIST_JSON THRESHOLDS_JSON GPUS   the fault drills to run, one TSV row each
  acceptance.py gpus VERDICT_JSON                        how many GPUs a verdict's discovery found
  acceptance.py summary OUT_DIR                          writes OUT_DIR/summary.md and summary.json

Records the kit writes into OUT_DIR (all TSV, tab-separated, one row per line):
  plan.tsv    step, box_s, title                       every step of the plan, in order
  steps.tsv   step, box_s, seconds, state, note        one row per step that ran or was skipped;
              state: done | timed-out | failed | skipped
  runs.tsv    step, name, rc, seconds, file             one row per command a step ran; rc is the
              exit status (124 or 137: killed at the end of the step's box), '-' when the box was
              spent before it could start; file is relative to OUT_DIR
  faults/plan.tsv   the `drills` output the faults step ran
  machine.txt       key=value lines from nvidia-smi, nvcc and the binary
  kit.txt           key=value lines about the kit's run (started_at, rehearsal, build_dir, ...)
Exit status of `summary`: 0 when every step is accepted, 1 otherwise, 2 when the folder is not a
kit's output.
"""

import json
import os
import statistics
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree (the kit runs from a checkout)
# pylint: disable=wrong-import-position
from acceptance_drills import drills_command, judge_drill
from acceptance_markdown import markdown
from acceptance_records import (TIMEOUT_CODES, alarms_of, group_alarms, last_json_line, number,
                                read_json, read_keys, read_tsv, tail)

SCHEMA = "preflight.acceptance/1"
# The quick step: the first run and at least this many more.
MIN_EXTRA_HEALTHY_RUNS = 5

# ---------------------------------------------------------------------------------------------
# Steps


def runs_of(runs, step):
    return [r for r in runs if r[0] == step]


def summarize_tests(runs):
    items, failed = [], []
    for _, name, rc, seconds, path in runs:
        if rc == "0":
            state = "pass"
        elif rc == "77":
            state = "skipped"  # no GPU seen: a failure here
        elif rc == "-":
            state = "not run"
        elif rc in TIMEOUT_CODES:
            state = "timed out"
        else:
            state = "failed (exit %s)" % rc
        items.append({"name": name, "state": state, "ok": rc == "0", "seconds": number(seconds),
                      "log": path})
        if rc != "0":
            failed.append("gpu test '%s': %s" % (name, state))
    detail = "%d of %d passed" % (sum(1 for i in items if i["ok"]), len(items))
    if not items:
        failed.append("gpu tests: none ran")
    return {"items": items, "detail": detail}, failed


def time_model_rows(verdicts):
    """Measured against modelled seconds per check (docs/plan.md): the median over the runs of
    each check's duration_s, next to the time model's expected_s and the deadline it was given.
    A check slower than its model by more than the planner's headroom (x1.5) is flagged: the
    model needs its figures raised before a tight --timeout can be trusted on this machine."""
    per_check = {}
    for verdict in verdicts:
        for check in verdict.get("checks") or []:
            plan = check.get("plan") if isinstance(check, dict) else None
            if not isinstance(plan, dict) or check.get("status") == "skip":
                continue
            row = per_check.setdefault(str(check.get("name")), {"measured": [], "modelled": [],
                                                                "deadline": []})
            for key, field in (("measured", check.get("duration_s")),
                               ("modelled", plan.get("expected_s")),
                               ("deadline", plan.get("deadline_s"))):
                if isinstance(field, (int, float)):
                    row[key].append(float(field))
    rows = []
    for name, row in per_check.items():
        if not row["measured"] or not row["modelled"]:
            continue
        measured = statistics.median(row["measured"])
        modelled = statistics.median(row["modelled"])
        rows.append({"check": name, "measured_s": round(measured, 3),
                     "modelled_s": round(modelled, 3),
                     "deadline_s": round(statistics.median(row["deadline"]), 3)
                     if row["deadline"] else None,
                     "ratio": round(measured / modelled, 2) if modelled > 0 else None,
                     "over_headroom": modelled > 0 and measured > 1.5 * modelled})
    return rows


def summarize_quick(runs, out_dir):
    items, alarms, failed = [], [], []
    skipped = {}
    verdicts = []
    for _, name, rc, seconds, path in runs:
        item = {"name": name, "exit": rc, "seconds": number(seconds), "verdict": None,
                "duration_s": None, "file": path}
        if rc == "-":
            continue  # the box was spent: not a run
        verdict, why = read_json(os.path.join(out_dir, path))
        if verdict is None:
            item["verdict"] = "timed out" if rc in TIMEOUT_CODES else "no verdict: " + why
            failed.append("quick run %s: %s" % (name, item["verdict"]))
        else:
            item["verdict"] = verdict.get("verdict")
            item["duration_s"] = verdict.get("duration_s")
            verdicts.append(verdict)
            for alarm in alarms_of(verdict):
                alarm["run"] = name
                alarms.append(alarm)
            for check in verdict.get("checks") or []:
                if isinstance(check, dict) and check.get("status") == "skip":
                    skipped.setdefault(str(check.get("name")), str(check.get("skip_reason")))
        items.append(item)
    figures = {"runs": len(items)}
    if items:
        first = items[0]
        figures["time_to_verdict_s"] = first["seconds"]
        figures["first_duration_s"] = first["duration_s"]
        walls = [i["seconds"] for i in items if i["seconds"] is not None]
        if walls:
            figures["wall_s_min"] = min(walls)
            figures["wall_s_median"] = statistics.median(walls)
            figures["wall_s_max"] = max(walls)
    extra = max(len(items) - 1, 0)
    if extra < MIN_EXTRA_HEALTHY_RUNS:
        failed.append("quick: %d more run(s) after the first fit the box, at least %d needed"
                      % (extra, MIN_EXTRA_HEALTHY_RUNS))
    groups = group_alarms(alarms)
    for g in groups:
        failed.append("false alarm in %d of %d quick runs: %s %s %s%s" % (
            len(g["runs"]), len(items), g["check"], g["entity"], g["code"],
            " (" + "; ".join(g["figures"]) + ")" if g["figures"] else ""))
    detail = "%d runs, %d false alarm(s)" % (len(items), len(groups))
    if items and items[0]["seconds"] is not None:
        detail += ", time to verdict %.1f s" % items[0]["seconds"]
    model = time_model_rows(verdicts)
    slow = [r["check"] for r in model if r["over_headroom"]]
    if slow:
        detail += "; slower than the time model by more than x1.5: " + ", ".join(sorted(slow))
    return {"items": items, "figures": figures, "false_alarms": alarms,
            "false_alarm_groups": groups, "skipped_checks": skipped, "time_model": model,
            "detail": detail}, failed


def summarize_faults(runs, out_dir):
    plan = read_tsv(os.path.join(out_dir, "faults", "plan.tsv"), 7)
    by_name = {r[1]: r for r in runs}
    items, failed = [], []
    for row in plan:
        result = judge_drill(row, by_name.get(row[1]), out_dir)
        items.append(result)
        if not result["ok"]:
            failed.append("drill %s: %s: %s" % (result["spec"], result["state"], result["detail"]))
    if not plan:
        failed.append("faults: no drill was planned")
    tested = [i for i in items if i["state"] != "n/a"]
    detail = "%d of %d drills found, %d not applicable" % (
        sum(1 for i in tested if i["ok"]), len(tested), len(items) - len(tested))
    return {"items": items, "detail": detail}, failed


def bench_figures(name, doc):
    """The headline figures and ratios of one benchmark's JSON line."""
    if doc is None:
        return {}, "no JSON line"
    if doc.get("bench") == "gemm":
        return ({k: doc.get(k) for k in ("device", "dtype", "size", "plain_tflops",
                                         "checked_effective_tflops", "verify_overhead", "ratio",
                                         "wall_ratio", "clean", "pass")},
                "plain %.1f, checked %.1f TFLOP/s; ratio %.3f, by wall time %.3f (target >= 0.95)"
                % (doc.get("plain_tflops") or 0, doc.get("checked_effective_tflops") or 0,
                   doc.get("ratio") or 0, doc.get("wall_ratio") or 0))
    if doc.get("bench") == "bandwidth":
        parts, figures = [], {"directions": []}
        for d in doc.get("directions") or []:
            figures["directions"].append(d)
            parts.append("%s %.1f GB/s vs %.1f (%+.1f%%)" % (
                d.get("direction"), d.get("measured_gbps") or 0, d.get("reference_gbps") or 0,
                d.get("difference_percent") or 0))
        figures["pass"] = doc.get("pass")
        return figures, "; ".join(parts) + " (target within 3%)"
    if doc.get("bench") == "nccl":
        parts, figures = [], {"clean": doc.get("clean"), "runs": []}
        for run in doc.get("runs") or []:
            sizes = run.get("sizes") or []
            if sizes:
                top = max(sizes, key=lambda s: s.get("bytes") or 0)
                figures["runs"].append({"op": run.get("op"), "bytes": top.get("bytes"),
                                        "algbw_gbps": top.get("algbw_gbps"),
                                        "busbw_gbps": top.get("busbw_gbps")})
                parts.append("%s %d MiB algbw %.1f busbw %.1f GB/s" % (
                    run.get("op"), (top.get("bytes") or 0) >> 20, top.get("algbw_gbps") or 0,
                    top.get("busbw_gbps") or 0))
        unavailable = doc.get("unavailable")
        if unavailable:
            parts.append("NCCL unavailable: " + str(unavailable))
        # The engine times NCCL's collectives alone and verifies after the timed loop, as
        # nccl-tests times them; nccl-tests itself is not on the lent machine to compare.
        return figures, "; ".join(parts) + " (no reference run: nccl-tests is not on the machine)"
    return {}, "unknown benchmark output"


def summarize_bench(runs, out_dir):
    items, failed = [], []
    for _, name, rc, seconds, path in runs:
        full = os.path.join(out_dir, path)
        figures, line = ({}, "") if rc == "-" else bench_figures(name, last_json_line(full))
        ok = rc == "0"
        state = ("pass" if ok else "not run" if rc == "-" else "timed out"
                 if rc in TIMEOUT_CODES else "failed (exit %s)" % rc)
        if not ok and rc != "-" and not figures:
            line = tail(full, 2)
        items.append({"name": name, "state": state, "ok": ok, "seconds": number(seconds),
                      "figures": figures, "line": line, "file": path})
        if not ok:
            failed.append("bench %s: %s%s" % (name, state, ": " + line if line else ""))
    if not items:
        failed.append("bench: none ran")
    return {"items": items, "detail": "%d of %d met their targets" % (
        sum(1 for i in items if i["ok"]), len(items))}, failed


def summarize_hbm(runs, out_dir):
    items, failed = [], []
    for _, name, rc, seconds, path in runs:
        item = {"name": name, "seconds": number(seconds), "status": None, "metrics": {},
                "findings": []}
        verdict, why = (None, "not run") if rc == "-" else read_json(os.path.join(out_dir, path))
        if verdict is None:
            item["status"] = "timed out" if rc in TIMEOUT_CODES else "no verdict: " + why
        else:
            for check in verdict.get("checks") or []:
                if isinstance(check, dict) and check.get("name") == "hbm":
                    item["status"] = check.get("status")
                    item["check_s"] = check.get("duration_s")
                    item["metrics"] = check.get("metrics") or {}
            item["findings"] = alarms_of(verdict)
        if item["status"] != "pass":
            failed.append("hbm: the check's status is %s, not pass" % (
                item["status"] or "missing (no hbm check in the verdict)"))
        for alarm in item["findings"]:
            failed.append("hbm: false alarm %s %s %s" % (alarm["entity"], alarm["code"],
                                                          alarm["figure"]))
        items.append(item)
    if not items:
        failed.append("hbm: did not run")
    detail = "; ".join("%s in %.1f s" % (i["status"], i["seconds"] or 0) for i in items)
    return {"items": items, "detail": detail}, failed


def machine_of(out_dir):
    """nvidia-smi's readings, completed from preflight's own discovery where nvidia-smi is absent."""
    machine = read_keys(os.path.join(out_dir, "machine.txt"))
    verdict, _ = read_json(os.path.join(out_dir, "machine", "inventory.json"))
    system = (verdict or {}).get("system") or {}
    gpus = [g for g in system.get("gpus") or [] if isinstance(g, dict)]
    discovered = {"gpu_name": gpus[0].get("name") if gpus else None,
                  "gpu_count": str(len(gpus)) if verdict else None,
                  "driver": system.get("driver_version"),
                  "cuda_driver": system.get("cuda_driver"),
                  "cuda_runtime": system.get("cuda_runtime"),
                  "nccl": system.get("nccl")}
    for key, value in discovered.items():
        if value and not machine.get(key):
            machine[key] = str(value)
    return machine


SUMMARIZERS = {
    "gpu-tests": lambda runs, out: summarize_tests(runs),
    "quick": summarize_quick,
    "faults": summarize_faults,
    "bench": summarize_bench,
    "hbm": summarize_hbm,
}


def summarize(out_dir):
    plan = read_tsv(os.path.join(out_dir, "plan.tsv"), 3)
    recorded = {r[0]: r for r in read_tsv(os.path.join(out_dir, "steps.tsv"), 5)}
    runs = read_tsv(os.path.join(out_dir, "runs.tsv"), 5)
    kit = read_keys(os.path.join(out_dir, "kit.txt"))
    steps, failures = [], []
    for name, box, title in plan:
        step = {"name": name, "title": title, "box_s": number(box), "seconds": None,
                "state": "not reached", "note": "", "ok": False, "detail": ""}
        failed = []
        if name in recorded:
            _, _, seconds, state, note = recorded[name]
            step.update(seconds=number(seconds), state=state, note=note)
        if name in SUMMARIZERS and step["state"] not in ("skipped", "not reached"):
            extra, failed = SUMMARIZERS[name](runs_of(runs, name), out_dir)
            step.update(extra)
        if step["state"] == "timed-out":
            failed.append("%s: ran out of its %g s box" % (name, step["box_s"] or 0))
        elif step["state"] in ("failed", "not reached"):
            failed.append("%s: %s%s" % (name, step["state"], ": " + step["note"]
                                        if step["note"] else ""))
        if not step["detail"]:
            step["detail"] = step["note"]
        step["ok"] = not failed
        step["failures"] = failed
        failures += failed
        steps.append(step)
    if kit.get("interrupted") == "1":
        failures.append("the kit was stopped by a signal before its last step")
    total_box = sum(s["box_s"] or 0 for s in steps)
    elapsed = sum(s["seconds"] or 0 for s in steps)
    quick = next((s for s in steps if s["name"] == "quick"), {})
    return {
        "schema": SCHEMA,
        "rehearsal": kit.get("rehearsal") == "1",
        "kit": kit,
        "machine": machine_of(out_dir),
        "box_total_s": total_box,
        "elapsed_s": round(elapsed, 1),
        "ok": not failures,
        "steps": steps,
        "false_alarms": quick.get("false_alarms", []),
        "failures": failures,
    }



def write_atomically(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def summary_command(out_dir):
    if not os.path.isfile(os.path.join(out_dir, "plan.tsv")):
        print("acceptance: %s holds no plan.tsv: not the kit's output" % out_dir, file=sys.stderr)
        return 2
    doc = summarize(out_dir)
    write_atomically(os.path.join(out_dir, "summary.json"), json.dumps(doc, indent=2) + "\n")
    text = markdown(doc)
    write_atomically(os.path.join(out_dir, "summary.md"), text)
    print(text)
    return 0 if doc["ok"] else 1


def gpus_command(path):
    verdict, why = read_json(path)
    if verdict is None:
        print("acceptance: %s: %s" % (path, why), file=sys.stderr)
        print(0)
        return 1
    print(len((verdict.get("system") or {}).get("gpus") or []))
    return 0


def main(argv):
    if len(argv) == 5 and argv[1] == "drills":
        return drills_command(argv[2], argv[3], argv[4])
    if len(argv) == 3 and argv[1] == "summary":
        return summary_command(argv[2])
    if len(argv) == 3 and argv[1] == "gpus":
        return gpus_command(argv[2])
    print(__doc__.strip().splitlines()[0], file=sys.stderr)
    print("usage: acceptance.py drills LIST THRESHOLDS GPUS | gpus VERDICT | summary OUT_DIR",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
