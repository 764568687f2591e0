"""summary.md of the GPU acceptance kit: the table a person reads (scripts/acceptance/acceptance.py)."""


def cell(text):
    return str(text if text is not None else "").replace("|", "/").replace("\n", " ")


def seconds_text(value):
    return "" if value is None else "%.1f s" % value


def markdown(doc):
    m = doc["machine"]
    kit = doc["kit"]
    lines = []
    title = "GPU acceptance kit"
    if doc["rehearsal"]:
        title += ": REHEARSAL without a GPU (nothing here is a GPU measurement)"
    lines.append("# " + title)
    lines.append("")
    lines.append("| | |")
    lines.append("|---|---|")
    for label, value in (
            ("Date", kit.get("started_at", "")),
            ("Device", m.get("gpu_name", "unknown") + (" (%s MiB)" % m["gpu_memory_mib"]
                                                       if m.get("gpu_memory_mib") else "")),
            ("GPUs", m.get("gpu_count", "")),
            ("Driver", m.get("driver", "")),
            ("CUDA (driver)", m.get("cuda_driver", "")),
            ("CUDA (toolkit; binary's runtime)", "%s; %s" % (m.get("nvcc", ""),
                                                            m.get("cuda_runtime", ""))),
            ("cuBLAS", m.get("cublas_library", "?")),
            ("NCCL", "%s (%s)" % (m.get("nccl", "?"), m.get("nccl_library", "?"))),
            ("Binary", m.get("preflight_version", "")),
            ("Build", kit.get("build", "")),
            ("Result", "ACCEPTED" if doc["ok"] else "NOT ACCEPTED: %d failure(s)"
             % len(doc["failures"])),
            ("Time", "%.1f s of %g s boxed" % (doc["elapsed_s"], doc["box_total_s"]))):
        lines.append("| %s | %s |" % (label, cell(value)))
    lines.append("")
    lines.append("| # | Step | Box | Time | Result | Detail |")
    lines.append("|---|---|---|---|---|---|")
    for i, s in enumerate(doc["steps"]):
        result = "ok" if s["ok"] else s["state"] if s["state"] not in ("done",) else "FAIL"
        if s["state"] == "skipped":
            result = "skipped"
        lines.append("| %d | %s | %g s | %s | %s | %s |" % (
            i, s["name"], s["box_s"] or 0, seconds_text(s["seconds"]), result, cell(s["detail"])))
    for s in doc["steps"]:
        section = STEP_SECTIONS.get(s["name"])
        if section and s.get("items") is not None:
            lines.append("")
            lines += section(s)
    lines.append("")
    lines.append("## Failures and false alarms")
    lines.append("")
    lines += ["- " + cell(f) for f in doc["failures"]] or ["None."]
    lines.append("")
    return "\n".join(lines)


def tests_section(s):
    out = ["## gpu tests", "", "| Test | Result | Time |", "|---|---|---|"]
    out += ["| %s | %s | %s |" % (cell(i["name"]), i["state"], seconds_text(i["seconds"]))
            for i in s["items"]]
    return out


def quick_section(s):
    f = s.get("figures", {})
    out = ["## quick profile", ""]
    if f.get("runs"):
        out.append("Time to verdict (first run, wall): %s; verdict's duration_s %s. %d runs; wall "
                   "min %s, median %s, max %s." % (
                       seconds_text(f.get("time_to_verdict_s")), f.get("first_duration_s"),
                       f["runs"], seconds_text(f.get("wall_s_min")),
                       seconds_text(f.get("wall_s_median")), seconds_text(f.get("wall_s_max"))))
    for check, reason in sorted(s.get("skipped_checks", {}).items()):
        out.append("- %s skipped: %s" % (check, cell(reason)))
    out += ["", "| Run | Verdict | Wall | duration_s |", "|---|---|---|---|"]
    out += ["| %s | %s | %s | %s |" % (i["name"], cell(i["verdict"]), seconds_text(i["seconds"]),
                                       i["duration_s"]) for i in s["items"]]
    if s.get("time_model"):
        out += ["", "Time model (docs/plan.md), median over the runs:", "",
                "| Check | Measured | Modelled | Ratio | Deadline |", "|---|---|---|---|---|"]
        out += ["| %s | %s | %s | %s%s | %s |" % (
            r["check"], seconds_text(r["measured_s"]), seconds_text(r["modelled_s"]),
            r["ratio"], " (over x1.5)" if r["over_headroom"] else "",
            seconds_text(r["deadline_s"])) for r in s["time_model"]]
    if s.get("false_alarm_groups"):
        out += ["", "False alarms:", "", "| Check | Entity | Code | Severity | Runs | Figures | "
                "Message |", "|---|---|---|---|---|---|---|"]
        out += ["| %s | %s | %s | %s | %d of %d | %s | %s |" % (
            g["check"], g["entity"], g["code"], g["severity"], len(g["runs"]), len(s["items"]),
            cell("; ".join(g["figures"])), cell(g["message"])) for g in s["false_alarm_groups"]]
    return out


def faults_section(s):
    out = ["## fault drills on GPU 0", "", "| Spec | Expected | Result | Figure | Time |",
           "|---|---|---|---|---|"]
    out += ["| %s | %s on %s | %s | %s | %s |" % (
        cell(i["spec"]), "/".join(i["codes"]) or "-", i["entity"],
        cell(i["state"] + (": " + i["detail"] if i["detail"] and i["state"] != "found" else "")),
        cell(i["figure"]), seconds_text(i["seconds"])) for i in s["items"]]
    return out


def bench_section(s):
    out = ["## benchmarks against their references", "", "| Benchmark | Result | Figures | Time |",
           "|---|---|---|---|"]
    out += ["| %s | %s | %s | %s |" % (i["name"], i["state"], cell(i["line"]),
                                      seconds_text(i["seconds"])) for i in s["items"]]
    return out


def hbm_section(s):
    out = ["## hbm, standard profile", ""]
    for i in s["items"]:
        keys = sorted(k for k in i["metrics"] if "pattern" in k or "gbps" in k)
        shown = ", ".join("%s %s" % (k, i["metrics"][k]) for k in keys[:8])
        out.append("- %s: %s, run %s, check %s%s" % (i["name"], i["status"],
                                                    seconds_text(i["seconds"]),
                                                    seconds_text(i.get("check_s")),
                                                    "; " + shown if shown else ""))
    return out


STEP_SECTIONS = {"gpu-tests": tests_section, "quick": quick_section, "faults": faults_section,
                 "bench": bench_section, "hbm": hbm_section}
