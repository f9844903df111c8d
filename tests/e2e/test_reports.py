"""Verdicts, comparisons, history and the HTML report from the command line (issue 8), on real
reports of a short run and on the fixtures of tests/fuzz/corpus/ (synthetic shapes: 4 nodes, a
matrix, percentiles)."""
import copy
import csv
import io
import json
import math
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
import xml.etree.ElementTree as ET

import pytest

from conftest import BIN, FAST, load_report, real_suite_reports, run, one_line_error

SRC = os.environ.get("INFRABENCH_SOURCE_DIR", ".")
CORPUS = os.path.join(SRC, "tests", "fuzz", "corpus")
MULTI = os.path.join(CORPUS, "report", "synthetic_multinode.json")
SINGLE = os.path.join(CORPUS, "report", "synthetic_single.json")
MINIMAL = os.path.join(CORPUS, "report", "minimal_fields.json")
SMALL = ["--filter", "bandwidth/(host_memory|memory_latency)", "-a", "array_size=1MiB", "-a", "threads=1",
         "-a", "kernel=triad", "-a", "working_set=16KiB,1MiB"]




@pytest.fixture(scope="module")
def real(tmp_path_factory):
    d = tmp_path_factory.mktemp("real")
    paths = []
    for i in range(2):
        path = str(d / ("run%d.json" % i))
        p = run("run", *SMALL, *FAST, "-o", path)
        assert p.returncode == 0, p.stderr
        load_report(path)
        paths.append(path)
    return paths


def write(tmp_path, name, doc):
    path = str(tmp_path / name)
    with open(path, "w") as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def scaled(path, factor, tmp_path, name):
    """A copy of a report with every metric (value and samples) multiplied by factor."""
    with open(path) as f:
        doc = json.load(f)
    for r in doc["results"]:
        for m in r["metrics"]:
            m["value"] *= factor
            m["best"] *= factor
            m["samples"] = [s * factor for s in m["samples"]]
            if "repetitions" in m:
                m["repetitions"] = [v * factor for v in m["repetitions"]]
    return write(tmp_path, name, doc)


def repeated(path, tmp_path, name):
    """A copy of a report as `run --repetitions 3` writes it: each metric's repetitions (2% apart,
    their median the value), so compare tests between runs."""
    with open(path) as f:
        doc = json.load(f)
    for r in doc["results"]:
        for m in r["metrics"]:
            m["repetitions"] = [m["value"] * 0.98, m["value"], m["value"] * 1.02]
    return write(tmp_path, name, doc)


# ---- check / baseline --------------------------------------------------------------------------

def test_baseline_create_then_check_passes_with_junit(real, tmp_path):
    base = str(tmp_path / "base.json")
    # Runs this short are often INVALID (noisy): --allow-invalid derives from them too.
    p = run("baseline", "create", *real, "--allow-invalid", "-o", base)
    assert p.returncode == 0, p.stderr
    b = json.load(open(base))
    assert b["infrabench_baseline"] == 1 and b["source"] == "measured" and b["rules"]
    assert {r["metric"] for r in b["rules"]} >= {"bandwidth_gbps", "ns_per_load"}
    # A report checked against a baseline derived from itself never FAILs, whatever the machine's
    # noise: its medians pass; a noisy result whose interval straddles a bound is INCONCLUSIVE
    # (exit 4, issue 44), never a silent PASS.
    assert run("baseline", "create", real[0], "--allow-invalid", "-o", base).returncode == 0
    b = json.load(open(base))
    junit = str(tmp_path / "junit.xml")
    p = run("check", real[0], "--baseline", base, "--junit", junit)
    assert p.returncode in (0, 4), p.stdout + p.stderr
    assert "0 failed" in p.stdout and ("-> PASS" in p.stdout or "-> INCONCLUSIVE" in p.stdout)
    suite = ET.parse(junit).getroot().find("testsuite")
    assert int(suite.get("tests")) == len(b["rules"]) and suite.get("failures") == "0"
    assert len(suite.findall("testcase")) == len(b["rules"])


def test_the_same_run_twice_is_one_run(real, tmp_path):
    """Issue 40 item 16: the same report under two paths counted as two known-good runs in baseline
    create; another report with one start time was "already recorded" by history record."""
    copy = str(tmp_path / "copy.json")
    shutil.copyfile(real[0], copy)
    base = str(tmp_path / "base.json")
    p = run("baseline", "create", real[0], copy, "--allow-invalid", "-o", base)
    assert p.returncode == 0, p.stderr
    assert "is the same run as" in p.stderr and "counted once" in p.stderr, p.stderr
    assert "from 1 report(s)" in p.stderr, p.stderr
    db = str(tmp_path / "h.db")
    assert run("history", "record", real[0], "--db", db).returncode == 0
    assert "already recorded" in run("history", "record", copy, "--db", db).stdout
    doc = load_report(real[0])
    doc["results"][0]["metrics"][0]["value"] *= 0.5
    edited = write(tmp_path, "edited.json", doc)
    one_line_error(run("history", "record", edited, "--db", db), "is recorded as run 1 with different results")


def test_check_fails_with_exit_1_and_says_why(real, tmp_path):
    # Runs this short are often INVALID (noisy), which fails a rule by default: judged by value here.
    base = write(tmp_path, "b.json", {"infrabench_baseline": 1, "name": "strict", "defaults": {"allow_invalid": True}, "rules": [
        {"id": "triad-floor", "benchmark": "bandwidth/host_memory", "metric": "bandwidth_gbps", "min": 1e6, "unit": "GB/s"},
        {"id": "latency-ok", "benchmark": "bandwidth/memory_latency", "metric": "ns_per_load", "max": 1e6},
        {"id": "gpu", "benchmark": "bandwidth/host_memory", "axes": {"kernel": "copy"}, "metric": "bandwidth_gbps", "min": 1}]})
    junit = str(tmp_path / "j.xml")
    p = run("check", real[0], "-b", base, "--junit", junit)
    assert p.returncode == 1, p.stdout + p.stderr
    assert re.search(r"FAIL( \(INVALID[^)]*\))?\s+triad-floor", p.stdout), p.stdout
    assert re.search(r"PASS( \(INVALID[^)]*\))?\s+latency-ok", p.stdout), p.stdout
    assert re.search(r"WAIVED\s+gpu", p.stdout) and "not in the report" in p.stdout
    assert "1 passed, 1 failed, 1 waived -> FAIL" in p.stdout
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("failures") == "1" and suite.get("skipped") == "1"
    js = run("check", real[0], "-b", base, "--format", "json")
    assert js.returncode == 1
    doc = json.loads(js.stdout)
    assert doc["verdict"] == "FAIL" and [r["verdict"] for r in doc["rules"]] == ["FAIL", "PASS", "WAIVED"]
    assert run("check", real[0], "-b", base, "--fail-on-waived").returncode == 1


def test_check_multinode_outliers_and_peak(tmp_path):
    base = os.path.join(CORPUS, "baseline", "all_kinds.json")
    p = run("check", MULTI, "-b", base)
    assert p.returncode == 1, p.stderr
    assert "fixture-node3" in p.stdout and "outlier nodes" in p.stdout
    assert "waived by the baseline: no GPU in this class" in p.stdout


def test_shipped_baselines(tmp_path):
    ci = os.path.join(SRC, "configs", "baselines", "ci-2vcpu-kvm.json")
    real_quick = os.path.join(CORPUS, "report", "real_quick.json")
    p = run("check", real_quick, "-b", ci, "--format", "json")
    # The report it was partly derived from passes every rule it has results for (derived from
    # runs on a loaded machine, the baseline judges INVALID results by value); it ran an older,
    # shorter quick suite, so the rules of what it lacks are NOT RUN, not silently WAIVED.
    assert p.returncode == 1, p.stdout + p.stderr
    verdicts = {r["verdict"] for r in json.loads(p.stdout)["rules"]}
    assert verdicts == {"PASS", "NOT RUN"}, verdicts
    template = os.path.join(SRC, "configs", "baselines", "template-h100-8gpu.json")
    t = json.load(open(template))
    assert t["source"] == "datasheet" and "NOT MEASURED" in t["description"]
    assert all("peak_source" in r["fraction_of_peak"] for r in t["rules"] if "fraction_of_peak" in r)
    import jsonschema
    schema = json.load(open(os.path.join(SRC, "configs", "baselines", "schema", "baseline.schema.json")))
    for path in (ci, template, os.path.join(CORPUS, "baseline", "all_kinds.json")):
        jsonschema.validate(json.load(open(path)), schema, cls=jsonschema.Draft202012Validator)


def test_run_with_baseline_checks_in_one_go(tmp_path):
    # Short runs on a shared machine are often INVALID (noisy): judged by value here.
    good = write(tmp_path, "good.json", {"infrabench_baseline": 1, "defaults": {"allow_invalid": True}, "rules": [
        {"benchmark": "bandwidth/memory_latency", "metric": "ns_per_load", "max": 1e6}]})
    report = str(tmp_path / "r.json")
    junit = str(tmp_path / "j.xml")
    p = run("run", *SMALL, *FAST, "-o", report, "--baseline", good, "--junit", junit)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "-> PASS" in p.stdout and os.path.exists(junit)
    assert load_report(report)["run"]["settings"]["options"]["baseline"] == good
    # Issue 45: the JUnit file names the report it judged, and each testcase's time is what its
    # results took to measure (they were "" and "0").
    suite = ET.parse(junit).getroot().find("testsuite")
    props = {e.get("name"): e.get("value") for e in suite.iter("property")}
    assert props["report"] == report, props
    measured = sum(r["elapsed_s"] for r in load_report(report)["results"]
                   if r["benchmark"] == "bandwidth/memory_latency")  # what the one rule judged
    times = [float(c.get("time")) for c in suite.iter("testcase")]
    assert times and abs(sum(times) - measured) < 0.01 and all(t > 0 for t in times), (times, measured)
    # No report file (-o -: the report on stdout): no report property, rather than an empty one.
    p = run("run", *SMALL, *FAST, "-o", "-", "--baseline", good, "--junit", junit)
    assert p.returncode == 0, p.stdout + p.stderr
    props = {e.get("name"): e.get("value") for e in ET.parse(junit).getroot().iter("property")}
    assert "report" not in props and props["baseline"] == good, props
    bad = write(tmp_path, "bad.json", {"infrabench_baseline": 1, "rules": [
        {"benchmark": "bandwidth/memory_latency", "metric": "ns_per_load", "max": 1e-6}]})
    p = run("run", *SMALL, *FAST, "-o", report, "--baseline", bad)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "-> FAIL" in p.stdout


@pytest.mark.parametrize("rules,needle", [
    ([{"benchmark": "bandwidth/host_memory", "metric": "bandwidth_gbps"}], "no check"),
    ([{"benchmark": "bandwidth/host_memory", "metric": "bandwidth_gbps", "min": 5, "max": 1}], "min 5 > max 1"),
    ([{"benchmark": "bandwidth/host_memory", "metric": "bandwidth_gbps", "minimum": 5}], "unknown key \"minimum\""),
    ([{"benchmark": "bandwidth/host_mem", "metric": "bandwidth_gbps", "min": 5}], "unknown benchmark \"bandwidth/host_mem\""),
])
def test_bad_baseline_refused_before_running(tmp_path, rules, needle):
    base = write(tmp_path, "b.json", {"infrabench_baseline": 1, "rules": rules})
    report = str(tmp_path / "r.json")
    p = run("run", *SMALL, *FAST, "-o", report, "--baseline", base)
    one_line_error(p, needle)
    assert not os.path.exists(report)  # nothing ran


@pytest.mark.parametrize("axes,needle", [
    ({"kernal": "triad"}, "axis \"kernal\" does not exist on bandwidth/host_memory"),
    ({"kernel": "nope"}, "'nope' is not one of: copy, scale, add, triad"),
])
def test_rule_with_impossible_axes_refused(real, tmp_path, axes, needle):
    # Without the check the rule selects nothing: WAIVED, "PASS (no rule could be checked)", exit 0.
    base = write(tmp_path, "b.json", {"infrabench_baseline": 1, "rules": [
        {"benchmark": "bandwidth/host_memory", "axes": axes, "metric": "bandwidth_gbps", "min": 1}]})
    one_line_error(run("check", real[0], "-b", base), needle)
    report = str(tmp_path / "r.json")
    one_line_error(run("run", *SMALL, *FAST, "-o", report, "--baseline", base), needle)
    assert not os.path.exists(report)  # refused before anything ran


def test_shipped_baselines_lint(tmp_path):
    paths = [os.path.join(SRC, "configs", "baselines", n) for n in ("ci-2vcpu-kvm.json", "template-h100-8gpu.json")]
    p = run("baseline", "lint", *paths)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count("OK") == 2
    # Where the GPU benchmarks are compiled in, every rule of the template is checked.
    if "gemm/cublas" in run("list").stdout:
        assert "not checked" not in p.stdout, p.stdout
    bad = {"infrabench_baseline": 1, "rules": [{"benchmark": "bandwidth/host_memory", "axes": {"kernel": "nope"},
                                                "metric": "bandwidth_gbps", "min": 1}]}
    one_line_error(run("baseline", "lint", write(tmp_path, "bad.json", bad)), "'nope' is not one of")


@pytest.mark.parametrize("peak,needle", [
    # A fraction of a lower-is-better metric: check refused it only once it judged a report.
    ({"benchmark": "bandwidth/memory_latency", "metric": "ns_per_load",
      "fraction_of_peak": {"min": 0.5, "peak": 10}}, "needs a higher-is-better metric"),
    # A typo in peak_benchmark was counted "not compiled into this build" and lint said OK.
    ({"benchmark": "bandwidth/host_memory", "metric": "bandwidth_gbps",
      "fraction_of_peak": {"min": 0.5, "peak_metric": "bandwidth_gbps",
                           "peak_benchmark": "bandwidth/host_memroy"}}, "unknown benchmark"),
])
def test_lint_refuses_what_check_refuses_before_anything_runs(tmp_path, peak, needle):
    """Issue 40 item 15: lint, run --baseline and accept refuse all check would, before running."""
    base = write(tmp_path, "b.json", {"infrabench_baseline": 1, "suite": "quick", "rules": [peak]})
    one_line_error(run("baseline", "lint", base), needle)
    report = str(tmp_path / "r.json")
    one_line_error(run("run", *SMALL, *FAST, "-o", report, "--baseline", base), needle)
    assert not os.path.exists(report)  # refused before anything ran
    one_line_error(run("accept", "-b", base, "-o", report), needle)
    assert not os.path.exists(report)


def test_run_junit_without_baseline_refused(tmp_path):
    one_line_error(run("run", *SMALL, *FAST, "-o", str(tmp_path / "r.json"), "--junit", str(tmp_path / "j.xml")),
                   "--junit needs --baseline")


def test_unknown_metric_is_bad_input(real, tmp_path):
    base = write(tmp_path, "b.json", {"infrabench_baseline": 1, "rules": [
        {"benchmark": "bandwidth/host_memory", "metric": "bandwith_gbps", "min": 1}]})
    one_line_error(run("check", real[0], "-b", base), "unknown metric \"bandwith_gbps\"", "bandwidth_gbps")


@pytest.mark.parametrize("text,needle", [
    ("", "empty"),
    ('{"infrabench_baseline": 1, "rules": [', "truncated JSON"),
    ('{"infrabench_baseline": 2, "rules": []}', "newer"),
    ('{"rules": []}', "not an infrabench baseline"),
    ('{"infrabench_baseline": 1, "rules": [{"benchmark": "a/b", "metric": "x", "reference": [10, 0.1, null]}]}', "lower threshold"),
])
def test_malformed_baselines(real, tmp_path, text, needle):
    one_line_error(run("check", real[0], "-b", write(tmp_path, "b.json", text)), needle)


# ---- reading reports ---------------------------------------------------------------------------

def test_report_versions_and_corruption(real, tmp_path):
    base = write(tmp_path, "b.json", {"infrabench_baseline": 1, "rules": [
        {"benchmark": "bandwidth/host_memory", "metric": "bandwidth_gbps", "min": 0}]})
    doc = json.load(open(real[0]))
    newer = copy.deepcopy(doc)
    newer["schema_version"] = "1.99.0"
    one_line_error(run("check", write(tmp_path, "newer.json", newer), "-b", base), "newer infrabench", "upgrade")
    text = open(real[0]).read()
    one_line_error(run("check", write(tmp_path, "cut.json", text[: len(text) // 2]), "-b", base), "truncated JSON", "line")
    one_line_error(run("check", write(tmp_path, "bin.json", "\x00\x01garbage"), "-b", base), "invalid JSON")
    broken = copy.deepcopy(doc)
    broken["results"][0]["metrics"][0]["value"] = "fast"
    one_line_error(run("check", write(tmp_path, "broken.json", broken), "-b", base),
                   "results[0].metrics[0].value: expected a number")
    one_line_error(run("check", str(tmp_path / "missing.json"), "-b", base), "cannot read report")
    # A device (one that never ends, too) is refused without being read.
    one_line_error(run("check", "/dev/zero", "-b", base), "report /dev/zero is a character device")
    # An older writer's report without the optional fields is read.
    p = run("check", MINIMAL, "-b", base)
    assert p.returncode == 0, p.stdout + p.stderr


# ---- compare -----------------------------------------------------------------------------------

def reordered(path, tmp_path, name):
    """A copy of a report with every metric's samples in another order: the same measurements."""
    doc = json.load(open(path))
    for r in doc["results"]:
        for m in r["metrics"]:
            m["samples"] = m["samples"][1:] + m["samples"][:1]
    return write(tmp_path, name, doc)


def test_compare_same_measurements_is_not_a_regression(real, tmp_path):
    # Two reports of one repetition each: within-run samples never decide, so compare calls a
    # change only beyond the metric's assumed run-to-run noise (15% for rates and times) and says
    # how many repetitions would decide the rest. Same measurements: nothing called, exit 0.
    # (Every result marked VALID: the test is of one repetition a side; INVALID results are judged
    # as any other, which test_compare_invalid_results_gate_and_are_marked shows.)
    doc = json.load(open(real[0]))
    for r in doc["results"]:
        r["valid"], r["invalid_reasons"], r["invalid_reason_codes"] = True, [], []
    base = write(tmp_path, "run0.json", doc)
    same = reordered(base, tmp_path, "same.json")
    p = run("compare", base, same, "--fail-on-regression=5")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "no significant regression" in p.stderr
    doc = json.loads(run("compare", base, same, "--format", "json").stdout)
    assert doc["regressions"] == []
    verdicts = {r["verdict"] for m in doc["metrics"] if m["gated"] for r in m["reports"][1:]}
    assert verdicts == {"inconclusive"}, verdicts
    # 30% slower, one repetition a side: within the assumed noise, inconclusive, not counted, and
    # the note says how many repetitions would decide it.
    slow = scaled(same, 0.7, tmp_path, "slow.json")
    p = run("compare", base, slow, "--fail-on-regression=5")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "not decided by the repetitions" in p.stderr and "repetitions per side would decide it" in p.stderr
    # Half the speed is beyond that noise: the gate fires, so the checks above can fail.
    half = scaled(same, 0.5, tmp_path, "half.json")
    p = run("compare", base, half, "--fail-on-regression=5")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "significant regression" in p.stderr and "bandwidth_gbps" in p.stderr


def test_compare_repetitions_decide(tmp_path):
    """3 repetitions a side: the same values exit 0; 30% slower exits 1 on the headline metrics."""
    a = repeated(SINGLE, tmp_path, "a.json")
    p = run("compare", a, a, "--fail-on-regression=5")
    assert p.returncode == 0, p.stdout + p.stderr
    slow = scaled(a, 0.7, tmp_path, "slow.json")
    p = run("compare", a, slow, "--fail-on-regression=5")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "3 vs 3 repetitions" in p.stderr, p.stderr
    # Gated: the headline of each benchmark (this build's declarations: the report has none), once.
    lines = [l for l in p.stderr.splitlines() if l.startswith("  slow:")]
    assert lines and not any("input_gbps" in l for l in lines), p.stderr
    assert run("compare", a, slow, "--fail-on-regression=35").returncode == 0


def test_compare_lists_setting_differences_first(tmp_path):
    doc = json.load(open(SINGLE))
    doc["run"]["suite"]["axis_overrides"] = ["threads=1"]
    doc["run"]["command_line"] = ["infrabench", "run", "-a", "threads=1", "-o", "b.json"]
    b = write(tmp_path, "b.json", doc)
    p = run("compare", SINGLE, b)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "run settings differ" in out and "run.suite.axis_overrides" in out and "threads=1" in out, out
    assert out.index("run.suite.axis_overrides") < out.index("bandwidth/host_memory\n"), out


def test_compare_two_real_runs_reports_without_gating(real):
    # Two separate runs, back to back: compare reads both and prints a verdict per metric; without
    # --fail-on-regression it does not gate, whatever the machine's drift between them.
    p = run("compare", real[0], real[1])
    assert p.returncode == 0, p.stdout + p.stderr
    assert "bandwidth/host_memory" in p.stdout and "run1/run0" in p.stdout


def test_compare_invalid_results_gate_and_are_marked(tmp_path):
    # Issue 44: INVALID (noisy) means less precise, not no evidence. A -30% loss whose repetitions
    # decide it fails the gate, and every line that names it says INVALID.
    doc = json.load(open(SINGLE))
    for r in doc["results"]:
        r["valid"] = False
        r["invalid_reasons"] = ["noisy: test"]
        r["invalid_reason_codes"] = ["noisy"]
    noisy = repeated(write(tmp_path, "noisy0.json", doc), tmp_path, "noisy.json")
    slow = scaled(noisy, 0.7, tmp_path, "slow.json")
    p = run("compare", noisy, slow, "--fail-on-regression", "10")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "WORSE -30.0%, INVALID: noisy: test" in p.stdout, p.stdout
    assert "significant regression" in p.stderr and "INVALID: noisy: test" in p.stderr, p.stderr
    doc = json.loads(run("compare", noisy, slow, "--format", "json").stdout)
    assert doc["regressions"] and all("INVALID" in r for r in doc["regressions"])
    assert "regressions_not_counted" not in doc
    # A/A of the same noisy run: silent.
    same = run("compare", noisy, noisy, "--fail-on-regression", "10")
    assert same.returncode == 0, same.stdout + same.stderr


def test_compare_fail_on_regression_does_not_swallow_a_report(tmp_path):
    base = repeated(SINGLE, tmp_path, "synthetic_single.json")
    slow = scaled(base, 0.7, tmp_path, "slower.json")
    one_line_error(run("compare", "--fail-on-regression", base, slow),
                   "is not a percentage", "--fail-on-regression=PCT")
    p = run("compare", "--fail-on-regression=10", base, slow)
    assert p.returncode == 1, p.stdout + p.stderr


def test_compare_meta_and_power(tmp_path):
    slow = scaled(SINGLE, 0.7, tmp_path, "slower.json")
    meta = write(tmp_path, "meta.json", {"synthetic_single": {"price": 2000, "power_w": 400},
                                         "slower": {"price": 1000, "power_w": 200}})
    p = run("compare", SINGLE, slow, "--meta", meta, "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    g = doc["groups"][0]["reports"][1]
    assert abs(g["perf_per_price_ratio"] - 2 * g["geomean_perf_ratio"]) < 1e-9
    assert abs(g["perf_per_watt_ratio"] - 2 * g["geomean_perf_ratio"]) < 1e-9
    assert [r["power_w"] for r in doc["reports"]] == [400, 200]
    p = run("compare", SINGLE, slow, "--power", "synthetic_single=700,slower=350")
    assert p.returncode == 0, p.stderr
    assert "perf/energy" in p.stdout and "(typed watts)" in p.stdout
    js = json.loads(run("compare", SINGLE, slow, "--power", "synthetic_single=700,slower=350",
                        "--format", "json").stdout)
    row = next(m for m in js["metrics"] if m["better"] == "higher")
    assert abs(row["reports"][0]["value_per_watt"] - row["reports"][0]["value"] / 700) < 1e-9
    # --meta carries price and power itself: both ways at once is ambiguous.
    one_line_error(run("compare", SINGLE, slow, "--meta", meta, "--price", "slower=1"), "--meta")
    one_line_error(run("compare", SINGLE, slow, "--meta", write(tmp_path, "m.json", {"slower": {"watts": 3}})),
                   "power_w")


def test_compare_regression_gate_and_formats(tmp_path):
    base = repeated(SINGLE, tmp_path, "synthetic_single.json")
    slow = scaled(base, 0.7, tmp_path, "slower.json")
    p = run("compare", base, slow, "--fail-on-regression", "10")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "WORSE -30.0%" in p.stdout and "significant regression" in p.stderr
    assert run("compare", base, slow, "--fail-on-regression", "50").returncode == 0
    js = run("compare", base, slow, "--format", "json", "--price", "synthetic_single=2000,slower=1000")
    assert js.returncode == 0, js.stderr
    doc = json.loads(js.stdout)
    assert doc["method"]["test"].startswith("Welch")
    g = doc["groups"][0]["reports"][1]
    # Every value x0.7: the bandwidths' headlines are worse; the latency (lower is better, so
    # better) is INVALID in the fixture and in the mean all the same (issue 44: less precise, not
    # no evidence); half the price.
    perfs = [r["reports"][1]["perf_ratio"] for r in doc["metrics"]
             if r["gated"] and r["group"] == doc["groups"][0]["group"]]
    assert any(abs(p - 0.7) < 1e-9 for p in perfs), perfs
    assert abs(g["geomean_perf_ratio"] - math.prod(perfs) ** (1 / len(perfs))) < 1e-9
    assert abs(g["perf_per_price_ratio"] - 2 * g["geomean_perf_ratio"]) < 1e-9
    worse = [m for m in doc["metrics"] if m["reports"][1]["verdict"] == "WORSE"]
    assert worse and all(abs(m["reports"][1]["ratio"] - 0.7) < 1e-9 and m["gated"] for m in worse)
    md = run("compare", base, slow, "--format", "markdown")
    assert md.returncode == 0 and "| group |" in md.stdout and "Significant regressions" in md.stdout


def test_every_renderer_shows_the_one_engines_verdicts(tmp_path):
    """Issue 45, item 5: the console, Markdown, JSON, CSV and HTML forms of one comparison show the
    same verdict for every performance metric, and the same method text: the engine's."""
    import html as html_lib
    from collections import Counter
    base = repeated(SINGLE, tmp_path, "synthetic_single.json")
    slow = scaled(base, 0.7, tmp_path, "slower.json")
    doc = json.loads(run("compare", base, slow, "--format", "json").stdout)
    perf = [m for m in doc["metrics"] if m["role"] == "performance"]
    from_json = Counter((m["benchmark"], m["configuration"], m["metric"], m["reports"][1]["verdict"]) for m in perf)
    assert any(v == "WORSE" for *_, v in from_json), from_json  # the pair has something to decide
    rows = list(csv.DictReader(io.StringIO(run("compare", base, slow, "--format", "csv").stdout)))
    from_csv = Counter((r["benchmark"], r["configuration"], r["metric"], r["verdict"]) for r in rows
                       if r["role"] == "performance" and r["report"] == "slower")
    assert from_csv == from_json
    out = str(tmp_path / "c.html")
    assert run("compare", base, slow, "--format", "html", "-o", out).returncode == 0
    page = open(out, encoding="utf-8").read()
    cells = re.findall(r'<tr><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td>.*?<td class="verdict">([^<]*)</td>',
                       page)
    from_html = Counter(tuple(html_lib.unescape(x) for x in c) for c in cells)
    assert from_html == from_json
    # One method text, the engine's, in every renderer that explains it.
    table = run("compare", base, slow).stdout
    md = run("compare", base, slow, "--format", "markdown").stdout
    for text in (table, md, html_lib.unescape(page)):
        flat = " ".join(text.split())
        assert "Welch's t-test on the logs of each side's repetitions" in flat, flat[:3000]
        assert "Mann" not in flat
    for verdict, n in Counter(v for *_, v in from_json).items():
        if verdict in ("WORSE", "BETTER"):
            assert md.count(verdict) >= n and table.count(verdict) >= n, (verdict, n)


def test_compare_names_the_machine_difference(tmp_path):
    doc = json.load(open(SINGLE))
    doc["hosts"][0]["cpu"]["model"] = "Other CPU 9000"
    doc["hosts"][0]["os"]["kernel"] = "6.9.0"
    other = write(tmp_path, "other.json", doc)
    p = run("compare", SINGLE, other)
    assert p.returncode == 0, p.stderr
    assert "Other CPU 9000" in p.stdout and "the systems differ (cpu.model" in p.stdout


# ---- values that are not values (issue 40 items 11-14) ------------------------------------------

def single_with(tmp_path, name, edit):
    with open(SINGLE) as f:
        doc = json.load(f)
    edit(doc)
    return write(tmp_path, name, doc)


def set_triad(value):
    def edit(doc):
        m = doc["results"][0]["metrics"][0]
        m["value"] = value
        m["best"] = value
        m["samples"] = [] if value is None else [value] * 3
    return edit


@pytest.mark.parametrize("value", [0, -1, None])
def test_a_headline_that_is_no_measurement_fails_compare_and_check(tmp_path, value):
    """20.6 GB/s -> 0 (or -1, or null) was "same" and --fail-on-regression 5 exited 0; a null value
    was WAIVED by check, which exited 0."""
    bad = single_with(tmp_path, "bad.json", set_triad(value))
    p = run("compare", SINGLE, bad, "--fail-on-regression", "5")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "FAILED" in p.stdout and "FAILED" in p.stderr, p.stdout + p.stderr
    assert run("compare", bad, SINGLE, "--fail-on-regression", "5").returncode == 1
    base = write(tmp_path, "b.json", {"infrabench_baseline": 1, "rules": [
        {"benchmark": "bandwidth/host_memory", "metric": "bandwidth_gbps", "min": -5}]})
    p = run("check", bad, "-b", base)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "a failed result" in p.stdout and "WAIVED" not in p.stdout.split("->")[0], p.stdout


def test_warn_is_a_pass_near_the_bound_in_every_renderer(tmp_path):
    """Issue 45 item 11: a rule that passes within 5% of its bound is WARN (DCGM's verdict): shown
    in the table, JSON, JUnit (a passing testcase) and HTML, and the exit code stays a pass's."""
    def steady(doc):
        set_triad(40.0)(doc)
        r = doc["results"][0]
        r["valid"] = True
        r.pop("invalid_reasons", None)
        r.pop("invalid_reason_codes", None)
        r["metrics"][0].pop("repetitions", None)
    rep = single_with(tmp_path, "steady.json", steady)
    rule = {"benchmark": "bandwidth/host_memory", "axes": doc_axes(rep), "metric": "bandwidth_gbps"}
    near = write(tmp_path, "near.json", {"infrabench_baseline": 1, "rules": [dict(rule, min=39)]})
    far = write(tmp_path, "far.json", {"infrabench_baseline": 1, "rules": [dict(rule, min=30)]})
    p = run("check", rep, "-b", far)
    assert p.returncode == 0 and "WARN" not in p.stdout + p.stderr, p.stdout + p.stderr
    junit = str(tmp_path / "j.xml")
    p = run("check", rep, "-b", near, "--junit", junit)
    assert p.returncode == 0, p.stdout + p.stderr
    assert re.search(r"^ *WARN +bandwidth/host_memory", p.stdout, re.M), p.stdout
    assert "within 5% of the bound" in p.stdout and "1 warn" in p.stdout and "-> PASS" in p.stdout
    assert "1 rule(s) WARN" in p.stderr, p.stderr
    j = json.loads(run("check", rep, "-b", near, "--format", "json").stdout)
    assert j["verdict"] == "PASS" and j["warned"] == 1 and j["rules"][0]["verdict"] == "WARN", j
    case = ET.parse(junit).getroot().find("testsuite").find("testcase")
    assert case.find("failure") is None and case.find("skipped") is None
    assert case.find("system-out").text.startswith("WARN: measured 40 GB/s")
    assert {e.get("name"): e.get("value") for e in case.iter("property")} == {"verdict": "WARN"}
    html = str(tmp_path / "r.html")
    assert run("report", rep, "--baseline", near, "-o", html).returncode == 0
    assert 'class="verdict WARN">WARN<' in open(html).read()


def doc_axes(path):
    """The axes of a report's first result, as a rule selects it."""
    with open(path) as f:
        return json.load(f)["results"][0]["axes"]


def test_duplicate_results_are_refused_where_they_are_read(tmp_path):
    """Two results of one configuration: compare used the first, check the worst, OpenMetrics wrote
    the series twice. Every reader refuses the report in one line."""
    def twice(doc):
        doc["results"].append(copy.deepcopy(doc["results"][0]))
        doc["results"][-1]["metrics"][0]["value"] = 1.0
    dup = single_with(tmp_path, "dup.json", twice)
    base = write(tmp_path, "b.json", {"infrabench_baseline": 1, "rules": [
        {"benchmark": "bandwidth/host_memory", "metric": "bandwidth_gbps", "min": 5}]})
    for args in (("compare", SINGLE, dup), ("check", dup, "-b", base),
                 ("check", dup, "-b", base, "--format", "openmetrics"), ("report", dup, "-o", str(tmp_path / "r.html"))):
        one_line_error(run(*args), "results[0] and results[7] are both bandwidth/host_memory")


def test_single_process_and_mpirun_reports_of_one_node_compare(tmp_path):
    """One process against mpirun -np 2 of the same node was "nothing in common"."""
    def two_ranks(doc):
        doc["run"]["world_size"] = 2
        for r in list(doc["results"]):
            other = copy.deepcopy(r)
            other.update(rank=1, status="skipped", reason="node-local: rank 0 measures it", metrics=[])
            doc["results"].append(other)
    mpi = single_with(tmp_path, "mpi.json", two_ranks)
    p = run("compare", SINGLE, mpi)
    assert p.returncode == 0, p.stderr
    assert "one process: its results are compared with rank 0's of the others" in p.stdout, p.stdout
    assert "rank=0" in p.stdout and "memory_latency" in p.stdout, p.stdout


def test_compare_bad_inputs(tmp_path):
    doc = json.load(open(SINGLE))
    for r in doc["results"]:
        r["benchmark"] = "other/bench"
    one_line_error(run("compare", SINGLE, write(tmp_path, "o.json", doc)), "nothing in common")
    one_line_error(run("compare", SINGLE), "at least two reports")
    one_line_error(run("compare", SINGLE, SINGLE, "--price", "nobody=3"), "no report labelled")
    one_line_error(run("compare", SINGLE, SINGLE, "--price", "x"), "LABEL=NUMBER")


# ---- history -----------------------------------------------------------------------------------

def test_history_record_show_trend(real, tmp_path):
    db = str(tmp_path / "h.db")
    p = run("history", "record", *real, "--db", db)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("recorded") == 2
    assert "already recorded" in run("history", "record", real[0], "--db", db).stdout
    show = run("history", "show", "--db", db, "--format", "json")
    assert show.returncode == 0 and len(json.loads(show.stdout)) == 2
    t = run("history", "trend", "ns_per_load", "--db", db, "-a", "working_set=16KiB")
    assert t.returncode == 0, t.stderr
    assert "too few runs" in t.stdout and "working_set=16KiB" in t.stdout
    one_line_error(run("history", "trend", "no_such_metric", "--db", db), "no recorded value")
    one_line_error(run("history", "show", "--db", str(tmp_path / "none.db")), "no history database")


def test_history_trend_finds_a_step(tmp_path):
    db = str(tmp_path / "h.db")
    base = json.load(open(SINGLE))
    paths = []
    for i in range(12):
        doc = copy.deepcopy(base)
        doc["run"]["started_utc"] = doc["run"]["finished_utc"] = "2026-02-%02dT00:00:00.000Z" % (i + 1)
        factor = (1.0 if i < 6 else 0.75) * (1 + 0.003 * (i % 3))
        for r in doc["results"]:
            for m in r["metrics"]:
                m["value"] *= factor
        paths.append(write(tmp_path, "r%02d.json" % i, doc))
    assert run("history", "record", *paths, "--db", db).returncode == 0
    t = run("history", "trend", "bandwidth/host_memory:bandwidth_gbps", "--db", db, "--format", "json")
    assert t.returncode == 0, t.stderr
    series = json.loads(t.stdout)
    assert len(series) == 1 and len(series[0]["points"]) == 12
    cps = series[0]["change_points"]
    assert len(cps) == 1 and cps[0]["index"] == 6 and cps[0]["after"] < cps[0]["before"]
    text = run("history", "trend", "bandwidth_gbps", "--benchmark", "bandwidth/host_memory", "--db", db)
    assert "change point" in text.stdout and "worse" in text.stdout


def test_history_parallel_writers(tmp_path):
    """Eight processes record at once into one new database: nothing lost, nothing corrupt."""
    db = str(tmp_path / "h.db")
    base = json.load(open(SINGLE))
    procs = []
    for w in range(8):
        paths = []
        for i in range(3):
            doc = copy.deepcopy(base)
            doc["run"]["started_utc"] = doc["run"]["finished_utc"] = "2026-03-01T00:%02d:%02d.000Z" % (w, i)
            paths.append(write(tmp_path, "w%d_%d.json" % (w, i), doc))
        procs.append(subprocess.Popen([BIN, "history", "record", *paths, "--db", db],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert out.count("recorded") == 3, out
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 24
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()


def test_history_refuses_foreign_newer_and_read_only(real, tmp_path):
    text = write(tmp_path, "notes.db", "these are my notes, not a database\n" * 20)
    one_line_error(run("history", "record", real[0], "--db", text), "not an infrabench history")
    other = str(tmp_path / "other.db")
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE customers (name TEXT)")
    con.commit()
    con.close()
    one_line_error(run("history", "record", real[0], "--db", other), "not an infrabench history")
    newer = str(tmp_path / "newer.db")
    assert run("history", "record", real[0], "--db", newer).returncode == 0
    con = sqlite3.connect(newer)
    con.execute("PRAGMA user_version = 42")
    con.commit()
    con.close()
    one_line_error(run("history", "show", "--db", newer), "newer than this infrabench")
    # Read-only: as another user when we are root (root ignores file permissions), in a directory
    # that user can reach.
    shared = tempfile.mkdtemp(prefix="ib-ro-", dir="/tmp")
    try:
        os.chmod(shared, 0o755)
        ro = os.path.join(shared, "ro.db")
        assert run("history", "record", real[0], "--db", ro).returncode == 0
        os.chmod(ro, 0o444)
        rep = os.path.join(shared, "r1.json")
        shutil.copy(real[1], rep)
        os.chmod(rep, 0o644)
        cmd = [BIN, "history", "record", rep, "--db", ro]
        if os.geteuid() == 0:
            if not shutil.which("setpriv"):
                pytest.skip("running as root without setpriv: cannot make the file read-only for the test")
            cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
        one_line_error(subprocess.run(cmd, capture_output=True, text=True, timeout=60), "read-only")
        # Reading a read-only database still works.
        show = subprocess.run(cmd[:-5] + ["history", "show", "--db", ro], capture_output=True, text=True, timeout=60)
        assert show.returncode == 0 and "run" in show.stdout, show.stderr
    finally:
        shutil.rmtree(shared, ignore_errors=True)


# ---- HTML --------------------------------------------------------------------------------------

def test_html_report_is_self_contained(real, tmp_path):
    out = str(tmp_path / "r.html")
    p = run("report", *real, MULTI, "-o", out, "--baseline", os.path.join(CORPUS, "baseline", "all_kinds.json"))
    assert p.returncode == 0, p.stderr
    html = open(out, encoding="utf-8").read()
    assert "Chart.js v" in html and "<canvas data-chart=" in html
    assert "src=\"http" not in html and "href=\"http" not in html
    assert "Verdicts" in html and "fixture-node3" in html
    # The scorecard first (issue 45): a column per report, a row per hop of the data path.
    assert html.index('id="scorecard"') < html.index('id="reports"') < html.index('id="verdicts"')
    card = html[html.index('id="scorecard"'):html.index('id="reports"')]
    assert "storage read" in card and "compute" in card and card.count("<th>") == 2 + 3, card[:2000]
    # One report: its benchmark, fractions and reasons in columns of their own; these short runs
    # of two memory benchmarks measure no hop of the data path, and say so.
    p = run("report", real[0], "-o", out)
    assert p.returncode == 0, p.stderr
    html = open(out, encoding="utf-8").read()
    card = html[html.index('id="scorecard"'):html.index('id="reports"')]
    assert "of peak or reference" in card and "no benchmark of this run measures it" in card, card[:2000]
    one_line_error(run("report", str(tmp_path / "missing.json"), "-o", out), "cannot read report")


# ---- every command on reports of the suite's main hops ---------------------------------------

@pytest.fixture(scope="module")
def suite_reports(tmp_path_factory):
    return real_suite_reports(tmp_path_factory.mktemp("suite"))


def test_every_command_on_real_suite_reports(suite_reports, tmp_path):
    a, b = suite_reports
    # check, against a baseline made from the reports themselves
    base = str(tmp_path / "base.json")
    # Short real runs are often INVALID (noisy): this checks the commands, so they count too.
    p = run("baseline", "create", a, b, "--allow-invalid", "-o", base)
    assert p.returncode == 0, p.stderr
    rules = json.load(open(base))["rules"]
    assert {r["benchmark"] for r in rules} >= {"storage/read", "gemm/ours_fp32", "gemm/cpu_peak",
                                               "preprocess/pipeline", "bandwidth/numa_matrix"}
    p = run("check", a, "--baseline", base, "--junit", str(tmp_path / "j.xml"))
    # two short runs on a shared machine may differ: FAIL, or INCONCLUSIVE (4) across a bound
    assert p.returncode in (0, 1, 4), p.stdout + p.stderr
    assert "storage/read" in p.stdout and "gemm/ours_fp32" in p.stdout and "-> " in p.stdout
    assert run("baseline", "create", a, "-o", base).returncode == 0
    p = run("check", a, "--baseline", base)
    # Its own baseline never FAILs it; a noisy result across a bound is INCONCLUSIVE (issue 44).
    assert p.returncode in (0, 4), p.stdout + p.stderr
    # compare
    p = run("compare", a, b, "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert {m["benchmark"] for m in doc["metrics"]} >= {"storage/read", "gemm/ours_fp32", "preprocess/pipeline",
                                                        "bandwidth/numa_matrix"}
    p = run("compare", a, b)
    assert p.returncode == 0 and "gemm" in p.stdout, p.stderr
    # history
    db = str(tmp_path / "h.db")
    p = run("history", "record", a, b, "--db", db)
    assert p.returncode == 0 and p.stdout.count("recorded") == 2, p.stderr
    p = run("history", "show", "--db", db)
    assert p.returncode == 0, p.stderr
    p = run("history", "trend", "gemm/ours_fp32:gflops", "--db", db, "-a", "shape=256")
    assert p.returncode == 0, p.stderr
    assert "shape=256" in p.stdout
    # report: the GEMM sizes as a curve with the measured peak as a line
    out = str(tmp_path / "r.html")
    p = run("report", a, b, "-o", out)
    assert p.returncode == 0, p.stderr
    html = open(out, encoding="utf-8").read()
    data = json.loads(html[html.index('id="ib-data">') + len('id="ib-data">'):].split("</script>")[0])
    charts = data["charts"].values()
    gemm = [c for c in charts if c["kind"] == "line" and c["title"].startswith("gemm/ours_fp32: gflops vs shape")]
    assert gemm, [c["title"] for c in charts]
    assert any(d.get("level") and "gemm/cpu_peak" in d["label"] for d in gemm[0]["datasets"]), gemm[0]["datasets"]
    # The NUMA matrix is a heat map only where it is one (more than one cell); on a one-node
    # machine its single cell is one configuration: a table of its numbers, not a chart.
    numa_rows = [r for r in load_report(a)["results"]
                 if r["benchmark"] == "bandwidth/numa_matrix" and r["status"] == "passed"]
    columns = max((sum(m["name"].startswith("bandwidth_gbps_mem") for m in r["metrics"]) for r in numa_rows),
                  default=0)
    numa = [c["kind"] for c in charts if c["title"].startswith("bandwidth/numa_matrix")]
    if len(numa_rows) * columns > 1:
        assert "heatmap" in numa, numa
    else:
        assert not numa and "bandwidth/numa_matrix: one configuration" in html, numa
    # storage/read ran one configuration here: its latency percentiles are rows of its table.
    assert "storage/read: one configuration" in html
    assert not any(c["title"].startswith("storage/read") for c in charts)


# ---- output formats (one printer interface), roles and axis metadata ------------------------------
def test_run_writes_axis_metadata_and_prints_csv(tmp_path):
    path = str(tmp_path / "r.json")
    p = run("run", "--filter", "bandwidth/memory_latency", "-a", "working_set=16KiB,1MiB", *FAST,
            "--format", "csv", "-o", path)
    assert p.returncode == 0, p.stderr
    rows = list(csv.reader(io.StringIO(p.stdout)))
    assert rows[0][:8] == ["benchmark", "configuration", "host", "rank", "status", "valid", "reason", "metric"]
    body = [r for r in rows[1:] if r]
    assert body and all(r[0] == "bandwidth/memory_latency" for r in body), rows
    assert any("working_set=16KiB" in r[1] for r in body) and any("working_set=1MiB" in r[1] for r in body), rows
    assert "configurations:" not in p.stdout  # the table's summary line is not CSV
    meta = load_report(path)["run"]["benchmark_metadata"]["bandwidth/memory_latency"]
    assert meta["axes"]["working_set"]["bytes"] is True
    assert meta["requires"] == []


def test_run_format_choices_come_from_the_printers():
    p = run("run", "--format", "markdown", "--filter", "nothing")
    assert p.returncode == 2
    assert "csv" in p.stderr and "json" in p.stderr and "table" in p.stderr, p.stderr


def test_compare_and_check_print_csv(tmp_path):
    base = repeated(SINGLE, tmp_path, "synthetic_single.json")
    slow = scaled(base, 0.7, tmp_path, "slower.json")
    p = run("compare", base, slow, "--format", "csv")
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    triad = [r for r in rows if r["benchmark"] == "bandwidth/host_memory" and r["report"] == "slower"]
    assert triad and triad[0]["verdict"] == "WORSE" and abs(float(triad[0]["ratio"]) - 0.7) < 1e-9, rows
    base = write(tmp_path, "b.json", {"infrabench_baseline": 1, "rules": [
        {"benchmark": "bandwidth/host_memory", "metric": "bandwidth_gbps", "min": 25}]})
    p = run("check", slow, "--baseline", base, "--format", "csv")
    assert p.returncode == 1, p.stdout + p.stderr
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    assert rows[0]["verdict"] == "FAIL" and rows[0]["metric"] == "bandwidth_gbps", rows


def test_compare_gates_performance_metrics_only(tmp_path):
    """Two runs whose clock and verification error moved: not a regression, not in the means."""
    doc = json.load(open(SINGLE))
    r = doc["results"][0]
    r["metrics"].append({"name": "clock_ghz", "unit": "GHz", "value": 4.0, "best": 4.0, "better": "higher",
                         "method": "test", "role": "information", "samples": [4.0, 4.01, 3.99, 4.0, 4.02]})
    a = write(tmp_path, "a.json", doc)
    slow = copy.deepcopy(doc)
    m = slow["results"][0]["metrics"][-1]
    m["value"], m["samples"] = 2.0, [2.0, 2.01, 1.99, 2.0, 2.02]
    b = write(tmp_path, "b.json", slow)
    p = run("compare", a, b, "--fail-on-regression=1")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "clock_ghz (information)" in p.stdout and "not gated" in p.stdout
    js = json.loads(run("compare", a, b, "--format", "json").stdout)
    # Counted: each benchmark's headline, INVALID ones too (issue 44); the clock is shown only.
    assert all(g["reports"][1]["metrics"] == sum(
        1 for x in js["metrics"] if x["group"] == g["group"] and x["gated"]) for g in js["groups"])
    assert not any(x["gated"] for x in js["metrics"] if x["role"] != "performance")


def test_compare_decides_nothing_by_name():
    """Which metric is gated comes from the declarations, never from a name written in compare.cpp:
    no declared metric or benchmark name of this build appears there as a string literal."""
    listing = json.loads(run("list", "--json").stdout)
    names = {b["name"] for b in listing} | {m["name"] for b in listing for m in b["metrics"]}
    assert "bandwidth_gbps" in names and "bandwidth/host_memory" in names, sorted(names)[:20]
    src = open(os.path.join(SRC, "reports", "src", "compare.cpp"), encoding="utf-8").read()
    found = sorted(n for n in names if '"%s"' % n in src)
    assert not found, found
