"""No code in the harness, the reports or the apps decides anything from a benchmark's or a
metric's name (issue 25): renderers, compare, baselines and the cluster analysis ask the metric
declarations (unit, direction, role, kind, relation, cell, headline) that every benchmark makes
when it registers. This scans their sources for string literals that are a declared benchmark or
metric name, and for substring searches (find/starts_with/ends_with) with a fragment of metric
names, against a short list of exemptions, each with its reason."""
import json
import os
import pathlib
import re

from conftest import run, strip_comment

SOURCE = pathlib.Path(os.environ.get("INFRABENCH_SOURCE_DIR", "."))
SCANNED = ["harness/src", "harness/include", "reports/src", "reports/include", "apps"]

# (file, literal): why the literal is not a decision by name.
EXEMPT = {
    # The harness derives these metrics from declared work: this is their declaration.
    ("harness/src/metric_decl.cpp", "bandwidth_gbps"): "declares the derived byte rate",
    ("harness/src/metric_decl.cpp", "gflops"): "declares the derived FLOP rate",
    ("harness/src/metric_decl.cpp", "hosts"): "a unit in the unit-kind table",
    ("harness/src/metric_decl.cpp", "ranks"): "a unit in the unit-kind table",
    # Keys of the report's own objects that happen to equal a metric's name.
    ("harness/src/report.cpp", "hosts"): "the report's hosts array",
    ("harness/src/report_model.cpp", "hosts"): "the report's hosts array",
    ("harness/src/report_model_writer.cpp", "hosts"): "the report's hosts array (its writer, "
                                                      "part of report_model.cpp's reader/writer)",
    ("harness/src/cluster.cpp", "ranks"): "a column heading of the host table",
    ("harness/src/console_header.cpp", "ranks"): "the plural in the header's world line",
    ("harness/src/console_header.cpp", "hosts"): "the plural in the header's world line",
    ("harness/src/telemetry.cpp", "edac_ue"): "the EDAC counter's key in the telemetry snapshot",
    ("harness/src/telemetry_cpu.cpp", "edac_ue"): "the EDAC counter's key in the telemetry snapshot",
    ("harness/src/telemetry.cpp", "xid_events"): "the telemetry section's Xid watch state",
    ("reports/src/baseline_file.cpp", "peak"): "a key of a baseline's fraction_of_peak object",
    ("harness/src/machine_load.cpp", "cpu"): "a /proc/stat line, not a metric",
}

LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')
# A substring test on a string: starts_with/ends_with, rfind(..., 0), or find(...) against npos (a
# JSON object's find(key) is a key lookup, not a guess).
SEARCH = re.compile(r'\.(?:starts_with|ends_with)\(\s*"((?:[^"\\]|\\.)*)"\)|'
                    r'\.rfind\(\s*"((?:[^"\\]|\\.)*)",\s*0\)|'
                    r'\.find\(\s*"((?:[^"\\]|\\.)*)"\)\s*[!=]=\s*std::string::npos')


def declared_names():
    out = run("list", "--json")
    assert out.returncode == 0, out.stderr
    listing = json.loads(out.stdout)
    benchmarks = listing if isinstance(listing, list) else listing.get("benchmarks", listing)
    names, metrics = set(), set()
    for b in benchmarks:
        names.add(b["name"])
        for m in b["metrics"]:
            stem = m["name"].split("*")[0].rstrip("_") if "*" in m["name"] else m["name"]
            names.add(stem)
            metrics.add(m["name"])
    return names, metrics


def code_lines():
    for d in SCANNED:
        for f in sorted((SOURCE / d).rglob("*")):
            if f.suffix not in (".cpp", ".h", ".in") or not f.is_file():
                continue
            rel = str(f.relative_to(SOURCE))
            for i, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
                code = strip_comment(line)
                if code.strip():
                    yield rel, i, code


def test_no_literal_names_a_benchmark_or_a_metric():
    names, _ = declared_names()
    hits = []
    for rel, i, line in code_lines():
        for m in LITERAL.finditer(line):
            if m.group(1) in names and (rel, m.group(1)) not in EXEMPT:
                hits.append(f"{rel}:{i}: \"{m.group(1)}\"")
    assert not hits, "decisions by name (ask the declaration instead):\n" + "\n".join(hits)


def test_no_substring_search_on_metric_name_fragments():
    _, metrics = declared_names()
    hits = []
    for rel, i, line in code_lines():
        for m in SEARCH.finditer(line):
            frag = next(g for g in m.groups() if g is not None)
            # A fragment of two or more declared metric names is a guess at a family of them.
            if len(frag) >= 3 and sum(frag in name for name in metrics) >= 2 and \
                    (rel, frag) not in EXEMPT:
                hits.append(f"{rel}:{i}: .find(\"{frag}\")")
    assert not hits, "guesses from a metric's name:\n" + "\n".join(hits)
