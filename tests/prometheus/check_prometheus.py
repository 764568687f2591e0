#!/usr/bin/python3
"""Parses a `preflight run --prom` file back with the Prometheus client library (Debian's
python3-prometheus-client, an independent parser of the exposition format) and checks it
against the verdict JSON of the same run.

usage: check_prometheus.py PROM_FILE VERDICT_JSON [expectation ...]
expectations: NAME{label=value,...}=VALUE  (a sample that must be there with that value)
              !NAME{label=value,...}       (no such sample)
"""
import json
import os
import re
import stat
import sys
from calendar import timegm
from time import strptime

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    sys.exit("check_prometheus: python3-prometheus-client is not installed "
             "(apt-get install python3-prometheus-client; scripts/setup-deps.sh --test)")

BASE_UNITS = ("_seconds", "_celsius", "_bytes_per_second", "_bits_per_second", "_hertz",
              "_watts", "_errors", "_lanes", "_links", "_tflops", "_words")


def fail(message):
    sys.exit("check_prometheus: " + message)


def parse_expectation(text):
    m = re.fullmatch(r"(!?)([a-z_:][a-z0-9_:]*)(?:\{(.*)\})?(?:=(.*))?", text)
    if not m:
        fail("bad expectation " + text)
    labels = {}
    if m.group(3):
        for pair in m.group(3).split(","):
            key, _, value = pair.partition("=")
            labels[key] = value
    value = float(m.group(4)) if m.group(4) is not None else None
    return m.group(1) == "!", m.group(2), labels, value


def main():
    if len(sys.argv) < 3:
        fail(__doc__)
    prom_path, verdict_path = sys.argv[1], sys.argv[2]
    mode = stat.S_IMODE(os.stat(prom_path).st_mode)
    if mode != 0o644:
        fail(f"{prom_path}: mode {mode:o}, expected 644 (node_exporter runs as another user)")
    leftovers = [n for n in os.listdir(os.path.dirname(prom_path) or ".") if ".tmp" in n]
    if leftovers:
        fail(f"temporary files left beside the metrics: {leftovers}")
    text = open(prom_path, encoding="utf-8").read()
    verdict = json.load(open(verdict_path, encoding="utf-8"))

    families = list(text_string_to_metric_families(text))
    samples = {}
    for family in families:
        if not re.fullmatch(r"preflight_[a-z0-9_]+", family.name):
            fail(f"metric name {family.name} is not preflight_[a-z0-9_]+")
        if family.type != "gauge":
            fail(f"{family.name}: type {family.type}, expected gauge")
        if not family.documentation:
            fail(f"{family.name}: no HELP text")
        for s in family.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            if key in samples:
                fail(f"duplicate series {key}")
            samples[key] = s.value
    names = {f.name for f in families}
    # Figures carry their unit; the verdict/status families are 0/1 and counts.
    for name in names:
        if ("bandwidth" in name or "_rate" in name or "temperature" in name) and \
                not name.endswith(BASE_UNITS):
            fail(f"{name} does not end in a base unit")

    def value(name, **labels):
        return samples.get((name, tuple(sorted(labels.items()))))

    # The verdict and the exit code, exactly as in the JSON of the same run.
    for v in ("pass", "warn", "fail"):
        want = 1.0 if verdict["verdict"] == v else 0.0
        if value("preflight_verdict", verdict=v) != want:
            fail(f"preflight_verdict{{verdict={v}}} != {want}")
    # The node's recommended action: one series per action, 1 for the verdict's.
    for a in ("none", "restart_job", "reset_gpu", "reboot", "service"):
        want = 1.0 if verdict["action"] == a else 0.0
        if value("preflight_action", action=a) != want:
            fail(f"preflight_action{{action={a}}} != {want}")
    if value("preflight_exit_code") != verdict["exit_code"]:
        fail("preflight_exit_code differs from the verdict's exit_code")
    if value("preflight_healthy") != (1.0 if verdict["exit_code"] == 0 else 0.0):
        fail("preflight_healthy does not follow the exit code")
    if value("preflight_injected") != (1.0 if verdict["injected_faults"] else 0.0):
        fail("preflight_injected does not follow injected_faults")
    started = timegm(strptime(verdict["started_at"], "%Y-%m-%dT%H:%M:%SZ"))
    if value("preflight_last_run_timestamp_seconds") != started:
        fail("preflight_last_run_timestamp_seconds is not the verdict's started_at")
    if abs(value("preflight_last_run_duration_seconds") - verdict["duration_s"]) > 0.001:
        fail("preflight_last_run_duration_seconds differs from duration_s")
    # Exactly one status per check, the verdict's.
    for check in verdict["checks"]:
        for status in ("pass", "warn", "fail", "skip", "error"):
            want = 1.0 if check["status"] == status else 0.0
            if value("preflight_check_status", check=check["name"], status=status) != want:
                fail(f"check {check['name']}: status series wrong for {status}")
    # Every warn and fail finding is a series.
    for check in verdict["checks"]:
        for f in check["findings"]:
            if f["severity"] == "info":
                continue
            labels = dict(check=check["name"], code=f["code"], entity=f["entity"],
                          severity=f["severity"], injected="true" if f["injected"] else "false")
            if value("preflight_finding", **labels) != 1.0:
                fail(f"no preflight_finding series for {labels}")

    for text_expectation in sys.argv[3:]:
        negated, name, labels, want = parse_expectation(text_expectation)
        got = value(name, **labels)
        if negated and got is not None:
            fail(f"{text_expectation}: present with {got}")
        if not negated and got != want:
            fail(f"{text_expectation}: got {got}")
    print(f"check_prometheus: {len(families)} families, {len(samples)} series: ok")


main()
