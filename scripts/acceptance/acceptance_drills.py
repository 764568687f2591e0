"""The fault drills of the GPU acceptance kit: which to run on this node, and whether each was found.

A drill is one `preflight run --inject-fault SPEC` for a fault kind of `preflight list --json` aimed at
GPU 0 (or at the pair 0-1). It is found when the verdict marks the run injected and holds one of
the kind's finding codes on the expected entity, marked injected (docs/fault-injection.md).
"""

import os
import sys

from acceptance_records import TIMEOUT_CODES, all_findings, figure, number, read_json, tail

# Values for the kinds that need one: beyond the default limits of every SKU
# (docs/thresholds.md), so the finding cannot depend on the GPU model.
DRILL_VALUES = {
    "temperature": "95",
    "pcie-gen": "1",
    "pcie-width": "1",
    "ecc-correctable": "1000000",
    "foreign-memory": "4096",
    "nvlink-down": "2",
    "throttle": "hw-slowdown",
    "gemm-slow": "0.3",
    "pcie-slow": "0.3",
    "nvlink-slow": "0.3",
    "nccl-slow": "0.3",
    "recovery-action": "2",
    # Counter rises (docs/checks/counters.md): far above each rate limit whatever the check's
    # length.
    "ecc-correctable-rise": "1000000",
    "pcie-replay-rise": "1000",
    "aer-corrected-rise": "1000",
    "nvlink-crc-rise": "1000000",
}
# Kinds whose finding is about the node rather than the GPU (docs/fault-injection.md).
NODE_ENTITY_KINDS = {"gpu-missing", "nccl-slow"}
# Kinds that need a second GPU: the nvlink and nccl checks do not run on one GPU.
PEER_KINDS = {"nvlink-down", "nvlink-slow", "nvlink-crc-rise", "nccl-corrupt", "nccl-slow"}
# Extra flags that keep a drill short without changing what it tests.
CHECK_ARGS = {"gemm": ["--gemm-seconds", "2"]}
# A drill whose only finding is this one tested nothing: the check never reached the target.
NOT_TESTED_CODES = {"FAULT_TARGET_MISSING"}




def plan_drills(kinds, thresholds, gpus):
    """One row per fault kind that can be aimed at GPU 0 (or at the pair 0-1)."""
    links = 0
    try:
        links = float(thresholds.get("inventory", {}).get("expected_nvlink_links") or 0)
    except (AttributeError, TypeError, ValueError):
        links = 0
    rows = []
    for k in kinds:
        kind = str(k.get("kind", ""))
        targets = k.get("targets") or []
        if "gpu" in targets:
            target, entity = "gpu=0", "gpu0"
        elif "pair" in targets:
            target, entity = "pair=0-1", "gpu0-gpu1"
        else:
            continue  # aimed at a NIC, a node or a check: not a GPU path
        if kind in NODE_ENTITY_KINDS:
            entity = "node"
        check = str(k.get("check", ""))
        codes = [c for c in k.get("finding_codes") or [] if c not in NOT_TESTED_CODES]
        row = {"kind": kind, "check": check, "entity": entity, "codes": codes}
        if (kind in PEER_KINDS or "pair" in targets) and gpus < 2:
            row["na"] = "needs 2 GPUs, this node has %d" % gpus
        elif kind == "nvlink-down" and links <= 0:
            row["na"] = "the SKU expects no NVLink links"
        value = k.get("value") or {}
        spec_value = ""
        if value.get("kind") in ("number", "word"):
            if kind not in DRILL_VALUES:
                row["error"] = "no drill value for '%s' (it needs a %s)" % (kind, value.get("kind"))
            spec_value = ":" + DRILL_VALUES.get(kind, "")
        elif kind in DRILL_VALUES:
            spec_value = ":" + DRILL_VALUES[kind]
        row["spec"] = "%s%s@%s" % (kind, spec_value, target)
        row["args"] = ["--checks", check] + CHECK_ARGS.get(check, [])
        rows.append(row)
    return rows


def drills_command(list_path, thresholds_path, gpus_text):
    listing, why = read_json(list_path)
    if listing is None:
        print("acceptance: %s: %s" % (list_path, why), file=sys.stderr)
        return 1
    thresholds, _ = read_json(thresholds_path)
    gpus = int(number(gpus_text) or 0)
    for row in plan_drills(listing.get("fault_kinds") or [], thresholds or {}, gpus):
        state = "error" if "error" in row else "n/a" if "na" in row else "run"
        note = row.get("error") or row.get("na") or ""
        print("\t".join([state, row["kind"], row["spec"], row["entity"], ",".join(row["codes"]),
                         " ".join(row["args"]), note]))
    return 0


def judge_drill(plan_row, run, out_dir):
    """A drill: the expected code on the expected entity, marked injected."""
    state, kind, spec, entity, codes, _args, note = plan_row
    result = {"kind": kind, "spec": spec, "entity": entity, "codes": codes.split(",") if codes
              else [], "ok": False, "state": state, "detail": note, "figure": "",
              "seconds": None, "exit_code": None}
    if state == "n/a":
        result["ok"] = True  # not applicable on this node: listed, not counted
        return result
    if state == "error":
        return result
    if run is None:
        result["state"] = "not run"
        result["detail"] = "the step's box ran out before this drill"
        return result
    _, _, rc, seconds, path = run
    result["seconds"] = number(seconds)
    if rc == "-":
        result["state"] = "not run"
        result["detail"] = "the step's box ran out before this drill"
        return result
    if rc in TIMEOUT_CODES:
        result["state"] = "timed out"
        result["detail"] = "killed at the end of the step's box"
        return result
    verdict, why = read_json(os.path.join(out_dir, path))
    if verdict is None:
        result["state"] = "no verdict"
        result["detail"] = "exit %s, verdict %s: %s" % (rc, why, tail(os.path.join(
            out_dir, os.path.splitext(path)[0] + ".err"), 1))
        return result
    result["exit_code"] = verdict.get("exit_code")
    if spec not in (verdict.get("injected_faults") or []):
        result["state"] = "not marked"
        result["detail"] = "injected_faults does not list %s" % spec
        return result
    matches = [f for _, f in all_findings(verdict)
               if f.get("code") in result["codes"] and f.get("entity") == entity]
    injected = [f for f in matches if f.get("injected") is True]
    if injected:
        result.update(ok=True, state="found", figure=figure(injected[0]),
                      detail="%s on %s" % (injected[0].get("code"), entity))
    elif matches:
        result.update(state="not marked", detail="%s on %s but not marked injected" %
                      (matches[0].get("code"), entity))
    else:
        seen = ["%s %s" % (f.get("code"), f.get("entity")) for _, f in all_findings(verdict)]
        result.update(state="missed", detail="none of %s on %s; findings: %s" %
                      (codes or "-", entity, ", ".join(seen[:4]) or "none"))
    return result
