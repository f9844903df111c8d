#!/usr/bin/env python3
"""The table of the GPU check (ci/gpu-check.sh): one row per GPU benchmark with its configurations
passed / invalid (ran, but failed verification or was too noisy) / failed / skipped, its headline
number (the first performance metric of the passed configuration doing the most work per
iteration), that configuration's % of the datasheet peak or link (the metric its benchmark
declared with hint fraction_of_peak), the ratio to PyTorch measured in the same run, the
errors compute-sanitizer found in it, and the wall time its run took; then every PyTorch
comparison.

Input: a manifest, one tab-separated line per step the shell script ran:
    run             <benchmark>  <report.json>  <wall seconds>
    sanitizer       <benchmark>  <compute-sanitizer log>
    reference       <ci/gpu_reference.py JSON>
    reference_step  <benchmarks/training/pytorch_reference.py --json output>
Verdict: FAIL when a configuration failed or was invalid, a report is missing, the sanitizer found
errors or did not finish, or a benchmark ran nothing for a reason other than this machine having
one GPU and one rank (reason codes needs_ranks, no_device). Skipped configurations are counted
apart and never as passes.
Exit status: 0 PASS, 1 FAIL, 2 a bad manifest.
Kept apart from the shell so the table's logic is tested with fake reports on any machine
(tests/e2e/test_gpu_check.py)."""
import json
import re
import sys

SUMMARY = re.compile(r"ERROR SUMMARY:\s*(\d+)\s+error")
# Why a configuration may be skipped on a one-GPU, one-rank machine without the check failing.
ONE_GPU_SKIPS = {"needs_ranks", "no_device"}


def sanitizer_errors(path):
    """Errors compute-sanitizer reported in a log; None when the log has no summary (it did not
    finish: a crash or a timeout)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    found = SUMMARY.findall(text)
    return sum(int(n) for n in found) if found else None


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def is_performance(m):
    return m.get("role", "performance") == "performance"


def headline_metric(result):
    """The result's first performance metric that is not a percentage, or None."""
    return next((m for m in result.get("metrics", [])
                 if is_performance(m) and m.get("unit") != "%"), None)


def percent_metric(result):
    """The metric the benchmark declared as the result's share of its hardware ceiling (hint
    fraction_of_peak: a GEMM's datasheet peak, a copy's link, the training step's MFU); None when
    it declared none (a drift or a throttled fraction in % never stands in for it)."""
    return next((m for m in result.get("metrics", []) if m.get("hint") == "fraction_of_peak"),
                None)


def energy_text(result, headline=None):
    """The joules of the result's timed window on the device it ran on and its work per joule
    (the energy meter, docs/reports.md "Energy"), or "-" and why not. Picked by unit ("J", "/J")
    and by the counter the method names (NVML for a result on a GPU, RAPL otherwise); the work per
    joule in the headline's work where there is one (tokens/s: tokens/J, GFLOP/s: GFLOP/J)."""
    ms = result.get("metrics", [])
    source = "NVML" if result.get("gpu") is not None else "RAPL"
    joules = next((m for m in ms if m.get("unit") == "J" and source in m.get("method", "")), None)
    per_js = [m for m in ms if str(m.get("unit", "")).endswith("/J")]
    unit = str((headline or {}).get("unit", ""))
    same_work = [m for m in per_js if unit.endswith("/s") and m["unit"] == unit[:-2] + "/J"]
    per_j = (same_work or per_js or [None])[0]
    if joules is None or per_j is None:
        why = "; ".join(sorted(set(result.get("withheld", {}).values())))
        return "-", why
    return f"{fmt(joules['value'])} J, {fmt(per_j['value'])} {per_j['unit']}", ""


def count_results(report, benchmark):
    """{passed, invalid, failed, skipped, skip_codes, results} of `benchmark` in a report."""
    counts = {"passed": 0, "invalid": 0, "failed": 0, "skipped": 0, "skip_codes": set(),
              "results": []}
    for r in report.get("results", []):
        if r.get("benchmark") != benchmark:
            continue
        counts["results"].append(r)
        status = r.get("status")
        if status == "passed" and r.get("valid") is False:
            counts["invalid"] += 1
        elif status == "skipped":
            counts["skipped"] += 1
            counts["skip_codes"].add(r.get("reason_code", "none"))
        elif status == "passed":
            counts["passed"] += 1
        else:
            counts["failed"] += 1
    return counts


def work_of(result):
    """The work one iteration of a result does, as its benchmark declared it: flops, else bytes,
    else items (the largest configuration is the one a headline speaks for: GEMM 8192 rather
    than 1024, GPT-2 124M rather than the tiny model of the gradient check)."""
    w = result.get("work_per_iteration") or {}
    return (w.get("flops", 0.0), w.get("bytes_read", 0.0) + w.get("bytes_written", 0.0),
            w.get("items", 0.0))


def best_result(results):
    """The passed, valid result doing the most work per iteration, the better headline metric
    breaking ties (bf16 over fp32 at one shape), and that metric."""
    best = None
    for r in results:
        if r.get("status") != "passed" or r.get("valid") is False:
            continue
        m = headline_metric(r)
        if m is None:
            continue
        value = m["value"] if m.get("better", "higher") == "higher" else -m["value"]
        key = (work_of(r), value)
        if best is None or key > best[0]:
            best = (key, r, m)
    return (best[1], best[2]) if best else (None, None)


def axis_text(r):
    shown = r.get("axes_display") or r.get("axes", {})
    return " ".join(f"{k}={v}" for k, v in shown.items())


def plain(value):
    """An axis value as matched: "auto (16)" -> "16"."""
    text = str(value)
    return text[len("auto ("):-1] if text.startswith("auto (") and text.endswith(")") else text


def matches(result, axes):
    shown = result.get("axes_display", {})
    have = result.get("axes", {})
    for k, v in axes.items():
        if k not in have:
            return False
        if str(have[k]) != str(v) and plain(shown.get(k, "")) != str(v):
            return False
    return True


def fmt(v):
    if v is None:
        return "-"
    if abs(v) >= 1e5:
        return f"{v:,.0f}"
    return f"{v:.4g}"


def comparisons(rows, references, steps):
    """[(what, ours, ours_unit, torch, ratio, benchmark)] from the PyTorch references."""
    out = []
    for ref in references:
        for e in ref.get("entries", []):
            bench = e["match"]["benchmark"]
            row = rows.get(bench)
            ours = None
            for r in (row or {}).get("results", []):
                if r.get("status") != "passed" or r.get("valid") is False:
                    continue
                if not matches(r, e["match"]["axes"]):
                    continue
                m = next((m for m in r.get("metrics", [])
                          if is_performance(m) and m.get("unit") == e["unit"]), None)
                if m is not None:
                    ours = m["value"]
            out.append((e["what"], ours, e["unit"], e["value"],
                        ours / e["value"] if ours and e["value"] else None, bench))
    for step in steps:
        axes = {"model": step.get("model"), "batch": step.get("batch"), "seq": step.get("seq"),
                "dtype": step.get("dtype"), "device": "gpu"}
        ours = None
        for r in rows.get("training/step", {}).get("results", []):
            if r.get("status") == "passed" and r.get("valid") is not False and matches(r, axes):
                m = next((m for m in r.get("metrics", [])
                          if is_performance(m) and m.get("unit") == "tokens/s"), None)
                ours = m["value"] if m else ours
        for mode in ("eager", "compile"):
            if mode in step:
                torch_rate = step[mode]["tokens_per_s"]
                out.append((f"GPT-2 {step.get('model')} step B{step.get('batch')} "
                            f"T{step.get('seq')} {step.get('dtype')} vs torch {mode}", ours,
                            "tokens/s", torch_rate, ours / torch_rate if ours else None,
                            "training/step"))
    return out


def build_rows(manifest_lines):
    """Rows by benchmark in the order they first appear, and the reference outputs; raises
    ValueError on a bad line."""
    rows, references, steps = {}, [], []
    for n, line in enumerate(manifest_lines, 1):
        line = line.rstrip("\n")
        if not line.strip():
            continue
        fields = line.split("\t")
        kind = fields[0]
        if kind == "run" and len(fields) == 4:
            _, name, report, wall = fields
            row = rows.setdefault(name, {"sanitizer": None, "wall_s": 0.0})
            data = load_json(report)
            row["counts"] = None if data is None else count_results(data, name)
            row["results"] = [] if row["counts"] is None else row["counts"]["results"]
            row["wall_s"] += float(wall)
        elif kind == "sanitizer" and len(fields) == 3:
            _, name, log = fields
            row = rows.setdefault(name, {"sanitizer": None, "wall_s": 0.0})
            errors = sanitizer_errors(log)
            # -1: the sanitizer run did not finish (no summary line): shown, and a failure.
            errors = -1 if errors is None else errors
            if row["sanitizer"] is None or row["sanitizer"] < 0:
                row["sanitizer"] = errors
            elif errors >= 0:
                row["sanitizer"] += errors
            else:
                row["sanitizer"] = -1
        elif kind in ("reference", "reference_step") and len(fields) == 2:
            data = load_json(fields[1])
            if data is not None:
                (references if kind == "reference" else steps).append(data)
        else:
            raise ValueError(f"manifest line {n}: expected 'run NAME REPORT SECONDS', "
                             f"'sanitizer NAME LOG' or 'reference[_step] FILE', got {line!r}")
    return rows, references, steps


def render(rows, references=(), steps=()):
    """The tables as text and whether everything is fine."""
    compared = comparisons(rows, references, steps)
    worst_ratio = {}
    for what, ours, unit, torch_value, ratio, bench in compared:
        if ratio is not None:
            worst_ratio[bench] = min(ratio, worst_ratio.get(bench, ratio))
    header = ["benchmark", "passed", "invalid", "failed", "skipped", "headline", "% peak",
              "energy (timed window)", "vs torch", "sanitizer", "wall s"]
    table = [header]
    problems = []
    notes = []  # energy not measured, and why (a VM, an older GPU, a window too short): no failure
    for name, row in rows.items():
        counts = row.get("counts")
        headline = pct = energy = "-"
        if "counts" in row and counts is None:
            cells = ["no report"] + ["-"] * 3
            problems.append(f"{name}: no report")
        elif counts is None:
            cells = ["-"] * 4
        else:
            cells = [str(counts[k]) for k in ("passed", "invalid", "failed", "skipped")]
            if counts["invalid"] or counts["failed"]:
                problems.append(f"{name}: {counts['failed']} failed, {counts['invalid']} invalid")
            if counts["passed"] == 0 and counts["invalid"] == 0 and counts["failed"] == 0:
                odd = counts["skip_codes"] - ONE_GPU_SKIPS
                if odd or not counts["skip_codes"]:
                    problems.append(f"{name}: ran nothing ({', '.join(sorted(odd)) or 'empty'})")
            best, m = best_result(counts["results"])
            if m is not None:
                headline = f"{fmt(m['value'])} {m.get('unit', '')}"
                p = percent_metric(best)
                pct = f"{p['value']:.1f}" if p else "-"
                energy, why = energy_text(best, m)
                if why:
                    notes.append(f"{name}: no energy number: {why}")
        san = row["sanitizer"]
        if san is None:
            san_text = "not run"
        elif san < 0:
            san_text = "did not finish"
            problems.append(f"{name}: the sanitizer did not finish")
        else:
            san_text = str(san)
            if san:
                problems.append(f"{name}: {san} sanitizer errors")
        ratio = worst_ratio.get(name)
        table.append([name] + cells + [headline, pct, energy,
                                       "-" if ratio is None else f"{ratio:.2f}", san_text,
                                       f"{row['wall_s']:.1f}"])
    lines = align(table, left=(0,))
    if compared:
        lines.append("")
        lines.append("PyTorch on the same GPU, same run (ratio = infrabench / PyTorch):")
        lines += align([["what", "infrabench", "PyTorch", "unit", "ratio"]] +
                       [[w, fmt(o), fmt(t), u, "-" if r is None else f"{r:.3f}"]
                        for w, o, u, t, r, _ in compared], left=(0, 3))
    if notes:
        lines.append("")
        lines += [f"note: {n}" for n in notes]
    if problems:
        lines.append("")
        lines += [f"problem: {p}" for p in problems]
    return "\n".join(lines), not problems


def align(table, left):
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    lines = []
    for k, r in enumerate(table):
        lines.append("  ".join(c.ljust(w) if i in left else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def main(argv):
    if len(argv) != 2:
        print("usage: gpu_check_table.py MANIFEST", file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8") as f:
            rows, references, steps = build_rows(f.readlines())
    except (OSError, ValueError) as e:
        print(f"gpu_check_table.py: {e}", file=sys.stderr)
        return 2
    text, ok = render(rows, references, steps)
    print(text)
    print("GPU check: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
