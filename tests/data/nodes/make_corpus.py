#!/usr/bin/env python3
"""Writes the corpus of real nodes (docs/judge.md#the-corpus-of-real-nodes).

Each facts/<node>.json (with facts/_extra.json) holds what published sources show about one kind of machine (its
topology, its ports, its measured figures, each with the source it came from). This script
turns each into the verdict document `preflight run` would write on a healthy node of that kind:
every check's readings in the schema the check records (docs/checks/*.md, "Readings"), no
findings, and a top-level "corpus" block (ignored by `preflight judge`) that names the sources
and lists every value that is NOT a published figure (placeholders such as idle temperatures,
figures taken from a sibling machine, derived values), so a reader can tell them apart.

  python3 tests/data/nodes/make_corpus.py          # rewrites tests/data/nodes/<node>.json
  python3 tests/data/nodes/make_corpus.py --check  # exit 1 if a file is not what it writes

The files are checked in; the test (tests/corpus/) reads them, not this script.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# PCI device ids and model names as nvidia-smi / NVML print them, per SKU id (src/model/sku_table.cpp).
SKU_IDS = {
    "h100-sxm5-80gb": ("0x2330", "NVIDIA H100 80GB HBM3"),
    "h100-pcie-80gb": ("0x2331", "NVIDIA H100 PCIe"),
    "h200-sxm-141gb": ("0x2335", "NVIDIA H200"),
    "a100-sxm4-40gb": ("0x20b0", "NVIDIA A100-SXM4-40GB"),
    "a100-sxm4-80gb": ("0x20b2", "NVIDIA A100-SXM4-80GB"),
}
# Per-GPU placeholders: no source publishes them for these machines; values of an idle,
# healthy GPU, listed in every file's corpus.assumed.
IDLE_TEMPERATURE_C = 33
PROBE_MS = 40.0


def pcie_raw_gbps(gen, width):
    lane = {1: 0.25, 2: 0.5, 3: 0.9846, 4: 1.9692, 5: 3.9385, 6: 7.5625}[gen]
    return lane * width


def figure(facts, key):
    f = (facts.get("figures") or {}).get(key)
    if not f or f.get("value") is None:
        return None
    return f


class Node:
    """One corpus node being written: the facts, the verdict, and the notes on what is assumed."""

    def __init__(self, facts, extra):
        self.facts = facts
        self.extra = extra
        self.assumed = list(extra.get("assumed", []))
        self.sku = facts["sku"]
        device_id, name = SKU_IDS[self.sku]
        self.device_id = facts.get("pci_device_id") or device_id
        self.gpu_name = facts.get("gpu_name") or name
        if not facts.get("gpu_name"):
            self.assumed.append(f"GPU name: {name} (NVML's name for the SKU; the source gives none)")
        self.gpus = [dict(g) for g in facts["gpus"]]
        for index, patch in (extra.get("gpus_patch") or {}).items():
            self.gpus[int(index)].update(patch)
        self.bus_ids = []
        placeholder = False
        for i, g in enumerate(self.gpus):
            if g.get("pci_bus_id"):
                self.bus_ids.append(g["pci_bus_id"].upper().replace("0000:", "00000000:", 1)
                                    if len(g["pci_bus_id"]) == 12 else g["pci_bus_id"])
            else:
                placeholder = True
                self.bus_ids.append(f"00000000:{0x10 + 0x10 * i:02X}:00.0")
        if placeholder:
            self.assumed.append("GPU PCI bus ids: placeholders (the sources give none or not all)")

    def entity(self, i):
        return f"gpu{self.gpus[i]['index']}"


def inventory_readings(n):
    gpus = []
    for i, g in enumerate(n.gpus):
        nv = g.get("nvlink") or {}
        links = nv.get("active_links")
        peers = []
        for peer, count in sorted((nv.get("peers") or {}).items()):
            if count:
                peers += [n.bus_ids[int(peer)]] * int(count)
        gpu = {
            "index": g["index"], "name": n.gpu_name, "uuid": f"GPU-corpus-{n.facts['node']}-{i}",
            "pci_bus_id": n.bus_ids[i], "pci_device_id": n.device_id, "cuda_ordinal": g["index"],
            "mig_enabled": False, "ecc_enabled": True, "persistence_enabled": True,
            "ecc_uncorrected_volatile": 0, "ecc_uncorrected_aggregate": 0,
            "ecc_corrected_volatile": 0, "retired_pages_pending": False,
            "row_remap_pending": False, "row_remap_failed": False,
            "clock_event_reasons": ["gpu_idle"], "temperature_c": IDLE_TEMPERATURE_C,
            "pcie_gen_current": g["pcie"]["gen_max"], "pcie_gen_max_link": g["pcie"]["gen_max"],
            "pcie_gen_max_gpu": g["pcie"]["gen_max"], "pcie_width_current": g["pcie"]["width_max"],
            "pcie_width_max": g["pcie"]["width_max"],
            "foreign_processes": 0, "foreign_memory_mib": 0,
            "probe": {"responsive": True, "ms": PROBE_MS},
        }
        if links is not None:
            gpu["nvlink_active"] = links
            gpu["nvlink_supported"] = links
            gpu["nvlink_switch_links"] = links if nv.get("to_nvswitch") else 0
            gpu["nvlink_peer_bus_ids"] = peers
        gpus.append(gpu)
    return {
        "expect_gpus": len(n.gpus), "driver_version": "580.65.06", "cuda_driver_version": "13.0",
        "cuda_runtime_version": "13.0", "nvml_loaded": True, "cuda_device_count": len(n.gpus),
        "pci_gpu_count": len(n.gpus), "gpus": gpus,
    }


def gemm_readings(n, tflops):
    return {"gpus": [{
        "gpu": n.entity(i), "model": n.gpu_name, "dtype": "bf16", "status": "completed",
        "m": 8192, "n": 8192, "k": 8192, "products": 20,
        "tflops": {"median": tflops, "min": tflops, "max": tflops},
    } for i in range(len(n.gpus))]}


def pcie_readings(n, h2d, d2h, all_at_once):
    """all_at_once: {gpu position: (h2d, d2h)} or None (not measured)."""
    gpus, uplinks = [], {}
    for i, g in enumerate(n.gpus):
        stats = lambda v: {"median_gbps": v, "min_gbps": v, "count": 3}
        gpu = {
            "index": g["index"], "bus_id": n.bus_ids[i],
            "link": {"gen_current": g["pcie"]["gen_max"], "gen_max_link": g["pcie"]["gen_max"],
                     "gen_max_gpu": g["pcie"]["gen_max"], "width_current": g["pcie"]["width_max"],
                     "width_max": g["pcie"]["width_max"]},
            "alone": {"h2d": stats(h2d), "d2h": stats(d2h)},
        }
        if g.get("numa_node") is not None:
            gpu["numa_node"] = g["numa_node"]
        switch = g.get("switch")
        if switch:
            # Root port and the switch's upstream port below it: placeholders where the source
            # names the switch but not its bus numbers.
            bus = 0x10 + 0x10 * len(uplinks)
            root = g.get("root_port") or f"0000:{bus:02x}:01.0"
            uplink = uplinks.setdefault(switch, {"id": root, "device": f"0000:{bus + 1:02x}:00.0",
                                                 "gpus": [], "link": g.get("uplink")})
            uplink["gpus"].append(n.entity(i))
            gpu["root_port"] = uplink["id"]
            if uplink["link"]:
                # The slowest link on the way up to the root port: a Gen5 GPU behind a Gen4
                # switch cannot copy faster than Gen4.
                gpu["path"] = {"gen_max": min(uplink["link"]["gen"], g["pcie"]["gen_max"]),
                               "width_max": min(uplink["link"]["width"], g["pcie"]["width_max"])}
        if all_at_once is not None:
            a, b = all_at_once[i]
            gpu["all_at_once"] = {"h2d": stats(a), "d2h": stats(b)}
        gpus.append(gpu)
    out_uplinks = []
    for switch, u in uplinks.items():
        link = u["link"] or {"gen": n.gpus[0]["pcie"]["gen_max"], "width": 16}
        out_uplinks.append({"id": u["id"], "device": u["device"],
                            "gen_current": link["gen"], "width_current": link["width"],
                            "gen_max": link["gen"], "width_max": link["width"], "gpus": u["gpus"]})
    return {"topology": "sysfs" if uplinks else "unknown", "gpus": gpus, "uplinks": out_uplinks}


def nvlink_readings(n, pair_gbps):
    size = len(n.gpus)
    inv = inventory_readings(n)["gpus"]
    gpus = [{"gpu": n.entity(i), "pci_bus_id": n.bus_ids[i],
             "nvlink_active": inv[i].get("nvlink_active"),
             "nvlink_supported": inv[i].get("nvlink_supported"),
             "nvlink_switch_links": inv[i].get("nvlink_switch_links"),
             "nvlink_peer_bus_ids": inv[i].get("nvlink_peer_bus_ids", [])} for i in range(size)]
    matrix = [[None if i == j else pair_gbps for j in range(size)] for i in range(size)]
    return {"gpus": gpus, "unidirectional_gbps": matrix}


def hbm_readings(n, traffic_gbps):
    return {"gpus": [{"gpu": n.entity(i),
                      "copy": {"copy_gbps": traffic_gbps / 2, "traffic_gbps": traffic_gbps,
                               "samples": 3},
                      "pattern": {"bytes": 2147483648, "passes": 1, "bad_words": 0,
                                  "bad_ranges": [], "ranges_truncated": False}}
                     for i in range(len(n.gpus))]}


def nccl_readings(n, allgather, allreduce):
    size = 268435456
    collectives = {}
    for name, value in (("allgather", allgather), ("allreduce", allreduce)):
        if value is not None:
            collectives[name] = {"initialized": True, "sizes": [{"bytes": size, "busbw_gbps": value}],
                                 "corrupt_elements": 0, "verified": True}
    return {"gpus": [n.entity(i) for i in range(len(n.gpus))], "sizes_planned": [size],
            "iterations": 10, "collectives": collectives}


def rdma_readings(n):
    devices = []
    for nic in n.extra.get("nics") or n.facts.get("nics") or []:
        ports = []
        for p in nic["ports"]:
            if p.get("state") is None:
                continue
            port = {"port": p["port"], "state": p["state"], "phys_state": p["phys_state"],
                    "rate_gbps": p.get("rate_gbps") or 0, "link_layer": p.get("link_layer") or "",
                    "usable_gid": p["state"] == "ACTIVE"}
            ports.append(port)
        if not ports or not nic.get("name"):
            continue
        device = {"name": nic["name"]}
        if nic.get("pci_bus_id"):
            device["pci_bus_id"] = nic["pci_bus_id"]
        if nic.get("numa_node") is not None:
            device["numa_node"] = nic["numa_node"]
        if nic.get("pcie"):
            device["pcie"] = {"gen": nic["pcie"]["gen"], "width": nic["pcie"]["width"],
                              "max_gen": nic["pcie"]["gen"], "max_width": nic["pcie"]["width"]}
        near = [i for i, g in enumerate(n.gpus) if nic.get("switch") and g.get("switch") == nic["switch"]]
        if near:
            device["nearest_gpu"] = n.entity(near[0])
            device["gpu_affinity"] = "switch"
        elif nic.get("affinity"):
            device["gpu_affinity"] = nic["affinity"]
        device["ports"] = ports
        devices.append(device)
    return {"devices": devices, "expect": {}, "transfers": [], "transfers_not_run": 0}


def check(name, readings, summary):
    return {"name": name, "status": "pass", "duration_s": 0.0, "summary": summary,
            "skip_reason": "", "findings": [], "metrics": {}, "matrices": [], "readings": readings}


def skipped(name, why):
    return {"name": name, "status": "skip", "duration_s": 0.0, "summary": "not run",
            "skip_reason": why, "findings": [], "metrics": {}, "matrices": [], "readings": None}


def build(facts, extra):
    n = Node(facts, extra)
    no_figure = "corpus: no published figure for this machine"
    checks = [check("inventory", inventory_readings(n), f"{len(n.gpus)} x {n.gpu_name}")]

    gemm = extra.get("gemm_bf16_tflops") or figure(facts, "gemm_bf16_tflops")
    checks.append(check("gemm", gemm_readings(n, gemm["value"]), "bf16") if gemm
                  else skipped("gemm", no_figure))

    h2d = extra.get("pcie_h2d_gbps") or figure(facts, "pcie_h2d_gbps")
    d2h = extra.get("pcie_d2h_gbps") or figure(facts, "pcie_d2h_gbps") or h2d
    if h2d:
        together = None
        if extra.get("pcie_all_at_once"):
            together = [tuple(v) for v in extra["pcie_all_at_once"]]
        checks.append(check("pcie", pcie_readings(n, h2d["value"], d2h["value"], together), "pcie"))
    else:
        checks.append(skipped("pcie", no_figure))

    pair = extra.get("nvlink_pair_unidir_gbps") or figure(facts, "nvlink_pair_unidir_gbps")
    checks.append(check("nvlink", nvlink_readings(n, pair["value"]), "nvlink") if pair
                  else skipped("nvlink", no_figure))

    hbm = extra.get("hbm_traffic_gbps")
    checks.append(check("hbm", hbm_readings(n, hbm["value"]), "hbm") if hbm
                  else skipped("hbm", no_figure))

    allgather = figure(facts, "nccl_allgather_busbw_gbps")
    allreduce = figure(facts, "nccl_allreduce_busbw_gbps")
    if allgather or allreduce:
        checks.append(check("nccl", nccl_readings(n, allgather and allgather["value"],
                                                   allreduce and allreduce["value"]), "nccl"))
    else:
        checks.append(skipped("nccl", no_figure))

    rdma = rdma_readings(n)
    if extra.get("skip_rdma"):
        checks.append(skipped("rdma", "corpus: " + extra["skip_rdma"]))
    else:
        checks.append(check("rdma", rdma, "rdma") if rdma["devices"]
                      else skipped("rdma", "corpus: the source lists no RDMA device"))

    sources = list(facts["sources"]) + list(extra.get("sources", []))
    return {
        "schema": "preflight.verdict/1",
        "tool": {"name": "preflight", "version": "corpus", "git": ""},
        "host": facts["node"], "started_at": "2026-11-25T00:00:00Z", "duration_s": 0.0,
        "profile": "quick", "argv": ["tests/data/nodes/make_corpus.py"],
        "system": {"driver_version": "580.65.06", "cuda_driver": "13.0", "cuda_runtime": "13.0",
                   "nccl": "", "gpus": [{"index": g["index"], "name": n.gpu_name, "uuid": "",
                                         "pci_bus_id": n.bus_ids[i], "serial": ""}
                                        for i, g in enumerate(n.gpus)], "libraries": []},
        "verdict": "pass", "exit_code": 0, "reason": "", "injected_faults": [], "findings": [],
        "checks": checks, "burnin": None, "passes": [], "first_failed_pass": None,
        "thresholds": {"sku": n.sku, "sku_name": "", "detected_by": "corpus", "overrides_file": "",
                       "values": {}},
        "rejudged": None,
        "corpus": {
            "title": facts["title"],
            "sources": sources,
            "figures_used": {k: v for k, v in {
                "gemm_bf16_tflops": gemm, "pcie_h2d_gbps": h2d, "pcie_d2h_gbps": d2h,
                "nvlink_pair_unidir_gbps": pair, "hbm_traffic_gbps": hbm,
                "nccl_allgather_busbw_gbps": allgather,
                "nccl_allreduce_busbw_gbps": allreduce}.items() if v},
            "assumed": n.assumed + [
                f"idle temperature {IDLE_TEMPERATURE_C} C, ECC counters 0, no MIG, persistence on, "
                "no other process: a healthy idle GPU (no source publishes these per node)",
                "driver 580.65.06 and CUDA 13.0: the lent GPU machines' branch, not the source's",
                "one sample figure for every GPU, link or pair: the sources give one figure per "
                "machine, not per GPU",
            ],
            "notes": facts.get("notes", ""),
            "missing": facts.get("missing", []),
        },
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    with open(os.path.join(HERE, "facts", "_extra.json"), encoding="utf-8") as f:
        extras = json.load(f)
    stale = []
    for name in sorted(os.listdir(os.path.join(HERE, "facts"))):
        if not name.endswith(".json") or name.startswith("_"):
            continue
        with open(os.path.join(HERE, "facts", name), encoding="utf-8") as f:
            facts = json.load(f)
        text = json.dumps(build(facts, extras.get(facts["node"], {})), indent=2) + "\n"
        path = os.path.join(HERE, name)
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if old != text:
            stale.append(name)
            if not args.check:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
    if args.check and stale:
        print("make_corpus: out of date: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
