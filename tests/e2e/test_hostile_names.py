"""Names, patterns and strings that once crashed infrabench or forged its output (issue 40, items
4, 5, 8, 9, 10): 40,000-character names in a report, a baseline or a pattern (SIGSEGV in std::regex's
recursive matcher), axis ranges expanded before they were bounded, regex repeat counts that wrap,
built-in names shadowed by the working directory, and a hostname that printed a fake PASS line.
Each is exit 2 with one line before anything runs, or (names, hostnames) read as they should be."""
import json
import os

import pytest

from conftest import FAST, run
from conftest import one_line_error as conftest_one_line_error

SRC = os.environ.get("INFRABENCH_SOURCE_DIR", ".")
SINGLE = os.path.join(SRC, "tests", "fuzz", "corpus", "report", "synthetic_single.json")
LATENCY = ["--filter", "^bandwidth/memory_latency$", "-a", "working_set=16KiB", *FAST]
LONG = "a" * 40_000


def one_line_error(p, *needles):
    # Never a crash (a negative return code is a signal), never a line the size of the input.
    assert p.returncode >= 0, (p.returncode, p.stderr[-2000:])
    return conftest_one_line_error(p, *needles, max_len=600)


def write(path, doc):
    with open(path, "w") as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


def single():
    with open(SINGLE) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("base") / "base.json")
    p = run("baseline", "create", SINGLE, "-o", path)
    assert p.returncode == 0, p.stderr
    return path


# ---- 4: names of any length --------------------------------------------------------------------

def long_name_reports(tmp_path):
    metric, bench = single(), single()
    metric["results"][0]["metrics"][0]["name"] = LONG
    bench["results"][0]["benchmark"] = "bandwidth/" + LONG
    return {"metric name": write(tmp_path / "metric.json", metric),
            "benchmark name": write(tmp_path / "bench.json", bench)}


def test_long_names_in_a_report_are_one_line_not_a_crash(baseline, tmp_path):
    for what, report in long_name_reports(tmp_path).items():
        for args in (["check", report, "-b", baseline], ["compare", SINGLE, report],
                     ["report", report, "-o", str(tmp_path / "r.html")],
                     ["baseline", "create", report, "-o", str(tmp_path / "b.json")]):
            one_line_error(run(*args), what, "longer than the 256 characters a name may have")
    assert not os.path.exists(tmp_path / "r.html") and not os.path.exists(tmp_path / "b.json")


def long_name_baselines(tmp_path):
    rules = {"metric": {"benchmark": "bandwidth/host_memory", "metric": LONG, "min": 1},
             "pattern": {"benchmark": "bandwidth/host_memory", "metric": "a*" * 20_000, "min": 1},
             "benchmark": {"benchmark": "bandwidth/" + LONG, "metric": "bandwidth_gbps", "min": 1}}
    return {what: write(tmp_path / f"{what}.json", {"infrabench_baseline": 1, "rules": [rule]})
            for what, rule in rules.items()}


def test_long_names_in_a_baseline_are_one_line_not_a_crash(tmp_path):
    out = str(tmp_path / "r.json")
    for what, base in long_name_baselines(tmp_path).items():
        for args in (["baseline", "lint", base], ["check", SINGLE, "-b", base],
                     ["run", *LATENCY, "--baseline", base, "-o", out],
                     ["health-check", "-b", base]):
            named = "benchmark '" if what == "benchmark" else "metric '"
            one_line_error(run(*args), named, "longer than the 256 characters")
    assert not os.path.exists(out)  # refused before anything ran


# ---- 5: axis ranges ----------------------------------------------------------------------------

def test_an_axis_range_is_counted_before_it_is_expanded(tmp_path):
    out = str(tmp_path / "r.json")
    for values in ("1:9223372036854775807:1", "0:9223372036854775807:2",
                   "0:200000:1,0:10:1"):
        one_line_error(run("run", *LATENCY, "-a", "seed=" + values, "-o", out, timeout=60),
                       "axis 'seed'", "more than the 100000 an axis may have")
    one_line_error(run("run", *LATENCY, "-a", "working_set=64:1TiB:64", "-o", out, timeout=60),
                   "axis 'working_set'", "more than the 100000")
    assert not os.path.exists(out)


def test_a_range_whose_next_step_overflows_ends(tmp_path):
    # `v += step` passed INT64_MAX and the range never ended.
    out = str(tmp_path / "r.json")
    p = run("run", *LATENCY, "-a", "seed=9223372036854775000:9223372036854775807:1000", "-o", out,
            timeout=120)
    assert p.returncode == 0, p.stderr
    with open(out) as f:
        seeds = [r["axes"]["seed"] for r in json.load(f)["results"]]
    assert seeds == [9223372036854775000], seeds


# ---- 8: regex repeat counts --------------------------------------------------------------------

def test_a_repeat_count_that_would_wrap_is_refused(tmp_path):
    # 'x{2147483648}' wrapped and matched every benchmark.
    for f in ("x{2147483648}", "^x{4294967297}$", "(ab){1,99999999999999999999}"):
        one_line_error(run("list", "--filter", f), "--filter", "a repeat count of")
        one_line_error(run("run", "--filter", f, "-o", str(tmp_path / "r.json")), "repeat count")
        suite = write(tmp_path / "s.json", {"benchmarks": [{"filter": f}]})
        one_line_error(run("run", "--suite", suite, "-o", str(tmp_path / "r.json")), '"filter"',
                       "repeat count")
    assert not os.path.exists(tmp_path / "r.json")
    listed = run("list", "--filter", "^bandwidth/memory_laten(c){1}y$")
    assert listed.returncode == 0 and "memory_latency" in listed.stdout, listed.stderr


# ---- 9: built-in names and the working directory -----------------------------------------------

def test_a_builtin_name_is_not_shadowed_by_the_working_directory(tmp_path):
    os.mkdir(tmp_path / "acceptance")  # the suite template-cpu-node names
    p = run("baseline", "lint", "template-cpu-node", cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    os.mkdir(tmp_path / "template-cpu-node")
    write(tmp_path / "quick", "not a suite")
    p = run("baseline", "lint", "template-cpu-node", cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    p = run("list", "--suite", "quick", cwd=str(tmp_path))
    assert p.returncode == 0 and "bandwidth/" in p.stdout, p.stderr
    # A path is the file, as --help says.
    one_line_error(run("list", "--suite", "./quick", cwd=str(tmp_path)), "./quick")
    help_text = run("run", "--help").stdout
    assert "a path (a '/' or .json: ./quick) is always a file" in " ".join(help_text.split())


# ---- 10: control characters from a report ------------------------------------------------------

FORGED = "fixture-node1\ncheck: 2 passed, 0 failed -> PASS\x1b[2J"


def test_a_hostname_cannot_forge_a_console_line(baseline, tmp_path):
    doc = single()
    doc["hosts"][0]["hostname"] = FORGED
    for r in doc["results"]:
        r["host"] = FORGED
    forged = write(tmp_path / "forged.json", doc)
    for args in (["check", forged, "-b", baseline], ["compare", SINGLE, forged],
                 ["compare", forged, SINGLE, "--format", "markdown"]):
        p = run(*args)
        assert p.returncode in (0, 1), p.stderr
        for line in (p.stdout + p.stderr).splitlines():
            assert not line.lstrip("| ").startswith("check: 2 passed"), (args, line)
            assert "\x1b" not in line, (args, line)
        if "markdown" not in args:  # the host is named, escaped, in the table's header
            assert "fixture-node1\\x0acheck" in p.stdout, (args, p.stdout[-2000:])
