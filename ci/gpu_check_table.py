#!/usr/bin/env python3
"""The table of the GPU smoke check (ci/gpu-check.sh): one row per GPU benchmark with its
configurations passed / invalid (ran, but failed verification or was too noisy) / failed /
skipped, the errors compute-sanitizer found in it, and the wall time its run took.

Input: a manifest, one tab-separated line per step the shell script ran:
    run        <benchmark>  <report.json>       <wall seconds>
    sanitizer  <benchmark>  <compute-sanitizer log>
Exit status: 0 when every configuration passed or was skipped and no sanitizer error was found,
1 otherwise (a missing or unreadable report counts as a failure), 2 for a bad manifest.
Kept apart from the shell so the table's logic is tested with fake reports on any machine
(tests/e2e/test_gpu_check.py)."""
import json
import re
import sys

SUMMARY = re.compile(r"ERROR SUMMARY:\s*(\d+)\s+error")


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


def count_results(path, benchmark):
    """{passed, invalid, failed, skipped} of `benchmark` in a report; None when unreadable."""
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError):
        return None
    counts = {"passed": 0, "invalid": 0, "failed": 0, "skipped": 0}
    for r in report.get("results", []):
        if r.get("benchmark") != benchmark:
            continue
        status = r.get("status")
        if status == "passed" and r.get("valid") is False:
            counts["invalid"] += 1
        elif status in counts:
            counts[status] += 1
        else:
            counts["failed"] += 1
    return counts


def build_rows(manifest_lines):
    """Rows by benchmark, in the order they first appear; raises ValueError on a bad line."""
    rows = {}
    for n, line in enumerate(manifest_lines, 1):
        line = line.rstrip("\n")
        if not line.strip():
            continue
        fields = line.split("\t")
        kind = fields[0]
        if kind == "run" and len(fields) == 4:
            _, name, report, wall = fields
            row = rows.setdefault(name, {"sanitizer": None, "wall_s": 0.0})
            counts = count_results(report, name)
            row["counts"] = counts
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
        else:
            raise ValueError(f"manifest line {n}: expected 'run NAME REPORT SECONDS' or "
                             f"'sanitizer NAME LOG', got {line!r}")
    return rows


def render(rows):
    """The table as text and whether everything is fine."""
    header = ["benchmark", "passed", "invalid", "failed", "skipped", "sanitizer errors", "wall s"]
    table = [header]
    ok = True
    for name, row in rows.items():
        counts = row.get("counts")
        if "counts" in row and counts is None:
            cells = ["no report"] + ["-"] * 3
            ok = False
        elif counts is None:
            cells = ["-"] * 4
        else:
            cells = [str(counts[k]) for k in ("passed", "invalid", "failed", "skipped")]
            ok = ok and counts["invalid"] == 0 and counts["failed"] == 0
        san = row["sanitizer"]
        if san is None:
            san_text = "not run"
        elif san < 0:
            san_text = "did not finish"
            ok = False
        else:
            san_text = str(san)
            ok = ok and san == 0
        table.append([name] + cells + [san_text, f"{row['wall_s']:.1f}"])
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = []
    for k, r in enumerate(table):
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines), ok


def main(argv):
    if len(argv) != 2:
        print("usage: gpu_check_table.py MANIFEST", file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8") as f:
            rows = build_rows(f.readlines())
    except (OSError, ValueError) as e:
        print(f"gpu_check_table.py: {e}", file=sys.stderr)
        return 2
    text, ok = render(rows)
    print(text)
    print("GPU check: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
