#!/usr/bin/env python3
"""The corpus of real nodes (docs/judge.md#the-corpus-of-real-nodes).

  test_corpus.py BINARY --node FILE [--allow-warning CODE]...
      A healthy node: `preflight judge FILE` must exit 0 with the verdict "pass", and the file
      must name its sources (its top-level "corpus" block). With --allow-warning, the verdict
      is "warn" with exactly those warnings (SKU_UNKNOWN on GPUs the tool does not know: a
      true statement, not a fault) and nothing else.
  test_corpus.py BINARY --variants FILE --variant NAME
      A fault variant: the variant's edits applied to its node's verdict, `preflight judge` must
      exit 1 with a failing finding on the expected entity (and check and code, where given).

Edits name a place in the document by a path of keys, where `key[field=value]` picks the element
of the array `key` whose `field` equals `value`:
  /checks[name=inventory]/readings/gpus[index=3]/pcie_gen_max_link
An edit replaces the value there ("op": "replace", the default), adds one ("op": "add"), or
deletes the element or key ("op": "remove": an RDMA device gone from the list):
  {"path": "/checks[name=rdma]/readings/devices[name=rdmap80s0]", "op": "remove"}
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

SEGMENT = re.compile(r"^([^\[\]]+)(?:\[([^=\]]+)=([^\]]*)\])?$")


def fail(message):
    print("corpus: " + message, file=sys.stderr)
    sys.exit(1)


def resolve(document, path):
    """The container holding the last segment of `path`, and that segment's key or index."""
    parts = [p for p in path.split("/") if p]
    if not parts:
        fail(f"empty path {path!r}")
    node = document
    for i, part in enumerate(parts):
        match = SEGMENT.match(part)
        if not match:
            fail(f"bad path segment {part!r} in {path}")
        key, field, value = match.groups()
        last = i == len(parts) - 1
        if isinstance(node, list):
            if not key.isdigit() or int(key) >= len(node):
                fail(f"{path}: {key!r} is not an index of a {len(node)}-element array")
            key = int(key)
        elif not isinstance(node, dict):
            fail(f"{path}: {part!r} below a value that is neither an object nor an array")
        if field is None:
            if last:
                return node, key
            if isinstance(node, dict) and key not in node:
                fail(f"{path}: no key {key!r}")
            node = node[key]
            continue
        if not isinstance(node, dict) or not isinstance(node.get(key), list):
            fail(f"{path}: {key!r} is not an array")
        chosen = [e for e in node[key] if isinstance(e, dict) and str(e.get(field)) == value]
        if len(chosen) != 1:
            fail(f"{path}: {len(chosen)} elements of {key!r} have {field} = {value!r}")
        if last:
            return node[key], node[key].index(chosen[0])
        node = chosen[0]
    fail(f"{path}: nothing selected")


def apply_edit(document, edit):
    container, key = resolve(document, edit["path"])
    op = edit.get("op", "replace")
    if op == "replace":
        if isinstance(container, dict) and key not in container:
            fail(f"{edit['path']}: nothing to replace")
        container[key] = edit["value"]
    elif op == "add":
        if isinstance(container, list):
            container.insert(key, edit["value"])
        else:
            container[key] = edit["value"]
    elif op == "remove":
        del container[key]
    else:
        fail(f"unknown op {op!r}")


def judge(binary, document):
    with tempfile.TemporaryDirectory(prefix="preflight-corpus-") as tmp:
        path = os.path.join(tmp, "node.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(document, f)
        result = subprocess.run([binary, "judge", path, "--json", "-", "--no-color"],
                                capture_output=True, text=True, timeout=60, check=False)
    verdict = None
    if result.stdout.strip():
        try:
            verdict = json.loads(result.stdout)
        except json.JSONDecodeError as e:
            fail(f"judge wrote no JSON verdict ({e}); stderr:\n{result.stderr}")
    return result, verdict


def findings_of(verdict, severity):
    out = []
    for check in verdict.get("checks", []):
        for f in check.get("findings", []):
            if f.get("severity") == severity:
                out.append((check["name"], f["code"], f["entity"]))
    for f in verdict.get("findings", []):
        if f.get("severity") == severity:
            out.append(("run", f["code"], f["entity"]))
    return out


def failing_findings(verdict):
    return findings_of(verdict, "fail")


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def healthy(binary, node_path, allowed_warnings):
    document = load(node_path)
    corpus = document.get("corpus") or {}
    if not corpus.get("sources"):
        fail(f"{node_path}: no corpus.sources: every corpus node names where its figures come from")
    result, verdict = judge(binary, document)
    expected = "warn" if allowed_warnings else "pass"
    if result.returncode != 0 or verdict is None or verdict.get("verdict") != expected:
        fail(f"{os.path.basename(node_path)} is a healthy node but judge exited "
             f"{result.returncode}:\n{result.stderr}")
    if allowed_warnings:
        codes = {code for _, code, _ in findings_of(verdict, "warn")}
        if codes != set(allowed_warnings):
            fail(f"{os.path.basename(node_path)}: expected exactly the warnings "
                 f"{sorted(allowed_warnings)}, judge gave {sorted(codes)}:\n{result.stderr}")
    print(f"{os.path.basename(node_path)}: {verdict['verdict']}, "
          f"{verdict['rejudged']['checks_rejudged']} checks judged")


def variant(binary, variants_path, name):
    spec = load(variants_path)
    chosen = [v for v in spec["variants"] if v["name"] == name]
    if len(chosen) != 1:
        fail(f"{variants_path}: {len(chosen)} variants named {name!r}")
    v = chosen[0]
    node_path = os.path.join(os.path.dirname(variants_path), v["node"])
    document = load(node_path)
    for edit in v["edits"]:
        apply_edit(document, edit)
    result, verdict = judge(binary, document)
    if result.returncode != 1 or verdict is None:
        fail(f"{name}: expected exit 1 (unhealthy), got {result.returncode}:\n{result.stderr}")
    expect = v["expect"]
    found = failing_findings(verdict)
    matches = [f for f in found
               if f[2] == expect["entity"]
               and expect.get("check", f[0]) == f[0]
               and expect.get("code", f[1]) == f[1]]
    if not matches:
        fail(f"{name}: no failing finding on {expect}; failing findings: {found}")
    print(f"{name}: fails on {matches[0][2]} ({matches[0][0]}: {matches[0][1]})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--node")
    parser.add_argument("--variants")
    parser.add_argument("--variant")
    parser.add_argument("--allow-warning", action="append", default=[])
    args = parser.parse_args()
    if args.node:
        healthy(args.binary, args.node, args.allow_warning)
    elif args.variants and args.variant:
        variant(args.binary, args.variants, args.variant)
    else:
        parser.error("give --node FILE or --variants FILE --variant NAME")


if __name__ == "__main__":
    main()
