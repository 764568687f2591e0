"""Reading the GPU acceptance kit's records and the verdicts it saved (scripts/acceptance/acceptance.py).

Every file here is the output of the kit or of preflight, but a broken run can leave anything
behind: reads are bounded and a bad file is a reason, never an exception.
"""

import json
import os

# Cap on a JSON file read from the folder.
MAX_JSON_BYTES = 64 << 20
# Exit statuses of `timeout`: the command was killed at the end of its step's box.
TIMEOUT_CODES = ("124", "137")

def read_json(path):
    """The document at path, or None with the reason."""
    try:
        if not os.path.isfile(path):
            return None, "missing"
        if os.path.getsize(path) > MAX_JSON_BYTES:
            return None, "larger than %d MiB" % (MAX_JSON_BYTES >> 20)
        with open(path, encoding="utf-8", errors="replace") as f:
            return json.load(f), ""
    except (OSError, ValueError, RecursionError) as e:
        return None, "not JSON (%s)" % str(e).splitlines()[0][:120]


def read_tsv(path, columns):
    rows = []
    if not os.path.isfile(path):
        return rows
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            cells = line.split("\t")
            cells += [""] * (columns - len(cells))
            rows.append(cells[:columns])
    return rows


def read_keys(path):
    keys = {}
    if os.path.isfile(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, sep, value = line.rstrip("\n").partition("=")
                if sep and key:
                    keys[key.strip()] = value.strip()
    return keys


def last_json_line(path):
    """The last line of a file that parses as a JSON object (the benchmarks print one)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read(MAX_JSON_BYTES).splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


def tail(path, count=3):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [l.rstrip() for l in f.read(1 << 20).splitlines() if l.strip()]
    except OSError:
        return ""
    return " / ".join(lines[-count:])[:400]


def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


# ---------------------------------------------------------------------------------------------
# Verdicts


def all_findings(verdict):
    """(check name, finding) for the run-level findings and every check's."""
    out = [("run", f) for f in verdict.get("findings") or [] if isinstance(f, dict)]
    for check in verdict.get("checks") or []:
        if not isinstance(check, dict):
            continue
        for f in check.get("findings") or []:
            if isinstance(f, dict):
                out.append((str(check.get("name", "?")), f))
    return out


def figure(f):
    """A finding's figure for people: '87 C (limit 85)'."""
    value, threshold = f.get("value"), f.get("threshold")
    if not isinstance(value, (int, float)):
        return ""
    text = "%g" % value + (" " + str(f.get("unit")) if f.get("unit") else "")
    if isinstance(threshold, (int, float)):
        text += " (limit %g)" % threshold
    return text


def alarms_of(verdict):
    """Every warn or fail finding of a healthy run, and checks that failed without one."""
    alarms = []
    for check, f in all_findings(verdict):
        if f.get("severity") in ("warn", "fail"):
            alarms.append({
                "check": check,
                "code": str(f.get("code", "")),
                "severity": str(f.get("severity", "")),
                "entity": str(f.get("entity", "")),
                "value": f.get("value"),
                "unit": str(f.get("unit", "")),
                "threshold": f.get("threshold"),
                "figure": figure(f),
                "message": str(f.get("message", ""))[:200],
            })
    for check in verdict.get("checks") or []:
        if isinstance(check, dict) and check.get("status") in ("fail", "error", "warn"):
            if not check.get("findings"):
                alarms.append({"check": str(check.get("name")), "code": "STATUS_" +
                               str(check.get("status")).upper(), "severity": "fail",
                               "entity": "node", "value": None, "unit": "", "threshold": None,
                               "figure": "", "message": str(check.get("summary", ""))[:200]})
    return alarms


def group_alarms(alarms):
    """The same finding on the same entity in several runs is one false alarm, seen N times."""
    groups = {}
    for a in alarms:
        key = (a["check"], a["entity"], a["code"])
        g = groups.setdefault(key, {"check": a["check"], "entity": a["entity"], "code": a["code"],
                                    "severity": a["severity"], "runs": [], "figures": [],
                                    "message": a["message"]})
        if a.get("run") not in g["runs"]:
            g["runs"].append(a.get("run"))
        if a["figure"] and a["figure"] not in g["figures"] and len(g["figures"]) < 3:
            g["figures"].append(a["figure"])
    return list(groups.values())
