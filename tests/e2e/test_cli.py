"""The CLI as a user runs it: subcommands, reports, and every bad input of issue #2."""
import json
import os
import re
import signal
import subprocess

import pytest

from conftest import BIN, FAST, load_report, run, validate, one_line_error

SMALL = ["-a", "array_size=1MiB", "-a", "working_set=16KiB,1MiB"]




# ---- subcommands ---------------------------------------------------------------------------------

# Every subcommand, nested ones included (issue #2: --version and --help on every subcommand).
SUBCOMMANDS = [["list"], ["run"], ["sysinfo"], ["check"], ["baseline"], ["baseline", "create"],
               ["compare"], ["history"], ["history", "record"], ["history", "show"],
               ["history", "trend"], ["history", "check"], ["report"], ["completion"]]


@pytest.mark.parametrize("args", [["--version"], ["--help"]] +
                         [sub + ["--help"] for sub in SUBCOMMANDS] +
                         [sub + ["--version"] for sub in SUBCOMMANDS])
def test_help_and_version(args):
    p = run(*args)
    assert p.returncode == 0, (args, p.stderr)
    assert p.stdout.strip()
    if args[-1] == "--version":
        # The same line everywhere; on a subcommand it wins over required arguments
        # (`check --version` needs no REPORT).
        assert p.stdout.startswith("infrabench 0."), (args, p.stdout)


def test_version_names_commit():
    p = run("--version")
    assert p.stdout.startswith("infrabench 0.")


def test_list_shows_bandwidth_benchmarks():
    p = run("list")
    assert p.returncode == 0, p.stderr
    for name in ["bandwidth/host_memory", "bandwidth/memory_latency"]:
        assert name in p.stdout
    assert "runs here: yes" in p.stdout
    assert "-a array_size=256MiB" in p.stdout


def test_list_json():
    p = run("list", "--json")
    assert p.returncode == 0, p.stderr
    items = {b["name"]: b for b in json.loads(p.stdout)}
    assert items["bandwidth/host_memory"]["runnable"] is True
    axes = {a["name"]: a for a in items["bandwidth/host_memory"]["axes"]}
    assert axes["kernel"]["defaults"] == ["copy", "scale", "add", "triad"]
    # Every declared dependency names a benchmark of this binary (a typo would order nothing).
    for name, b in items.items():
        for used in b["uses"]:
            assert used in items, (name, used)
    assert "bandwidth/host_memory" in items["preprocess/crop"]["uses"]
    # A benchmark that cannot run here says why, with the reason's code.
    for b in items.values():
        assert b["runnable"] == ("reason_code" not in b), b


def test_list_names_is_one_name_a_line():
    # Issue 45 item 15: `list` is ~800 lines, 500 columns wide; scripts and completion want names.
    p = run("list", "--names")
    assert p.returncode == 0, p.stderr
    names = p.stdout.splitlines()
    full = {b["name"] for b in json.loads(run("list", "--json").stdout)}
    assert len(names) == len(set(names)) and set(names) == full, names[:5]
    assert all(" " not in n and len(n) < 60 for n in names), names
    p = run("list", "--names", "--filter", "^bandwidth/host_memory$")
    assert p.returncode == 0 and p.stdout == "bandwidth/host_memory\n", p.stdout
    one_line_error(run("list", "--names", "--json"), "excludes")


@pytest.mark.parametrize("args,help_cmd", [
    (["run", "--no-such-option"], "see infrabench run --help"),
    (["list", "--no-such-option"], "see infrabench list --help"),
    (["history", "check", "--no-such-option"], "see infrabench history check --help"),
    (["--no-such-option"], "see infrabench --help"),
])
def test_option_errors_point_at_the_subcommands_help(args, help_cmd):
    # Issue 45 item 15: the help that lists the options the user mistyped, not the top level's.
    one_line_error(run(*args), help_cmd)


def test_sysinfo():
    p = run("sysinfo", "--json")
    assert p.returncode == 0, p.stderr
    inv = json.loads(p.stdout)
    assert inv["hostname"]
    assert inv["cpu"]["model"]
    assert inv["memory"]["total_bytes"] > 0
    assert "capabilities" in inv
    text = run("sysinfo")
    assert text.returncode == 0 and "hostname:" in text.stdout


# ---- run -----------------------------------------------------------------------------------------

def test_run_writes_valid_report_and_table(report_path):
    p = run("run", "--filter", "^bandwidth/(host_memory|memory_latency)$", *SMALL, *FAST, "-o", report_path)
    assert p.returncode == 0, p.stderr
    report = load_report(report_path)
    names = {r["benchmark"] for r in report["results"]}
    assert names == {"bandwidth/host_memory", "bandwidth/memory_latency"}
    for r in report["results"]:
        assert r["status"] == "passed", r
        assert r["samples_s"], r
        units = {m["name"]: m["unit"] for m in r["metrics"]}
        if r["benchmark"] == "bandwidth/host_memory":
            assert units["bandwidth_gbps"] == "GB/s"
            assert r["axes"]["array_size"] == 1 << 20
        else:
            assert units["ns_per_load"] == "ns"
    assert report["run"]["suite"]["axis_overrides"] == SMALL[1::2]
    assert "coordination" not in report["run"]  # one rank: nothing to coordinate (test_mpi.py)
    assert report["hosts"][0]["hostname"]
    # The console: one table per benchmark, units on the numbers, and where the report went.
    assert "bandwidth/host_memory" in p.stdout and "GB/s" in p.stdout and "ns" in p.stdout
    assert "report written to " + report_path in p.stderr


def test_reasons_carry_codes_the_schema_knows(report_path):
    # A skip and a failure in one run: each reason has its code, and the schema's enum is the
    # harness's list of codes (harness/src/result.cpp), no more, no fewer.
    p = run("run", "--filter", "^gemm/cpu_peak$", "-a", "isa=avx512_fp16", "-a", "threads=1", *FAST,
            "-o", report_path)
    assert p.returncode == 0, p.stderr
    report = load_report(report_path)
    (r,) = report["results"]
    if r["status"] == "skipped":
        assert r["reason_code"] == "unsupported", r
    assert r["invalid_reason_codes"] == [] or len(r["invalid_reason_codes"]) == len(
        r["invalid_reasons"])
    src = os.environ.get("INFRABENCH_SOURCE_DIR", ".")
    with open(os.path.join(src, "harness/src/result.cpp")) as f:
        codes = re.findall(r'\{reason_code::(\w+), "(\w+)"\}', f.read())
    assert codes and all(a == b for a, b in codes), codes
    with open(os.path.join(src, "reports/schema/report.schema.json")) as f:
        schema = json.load(f)
    assert schema["$defs"]["reason_code"]["enum"] == [b for a, b in codes if b != "none"]


def test_format_json_prints_the_report(report_path):
    p = run("run", "--filter", "memory_latency", "-a", "working_set=16KiB", *FAST,
            "--format", "json", "-o", report_path)
    assert p.returncode == 0, p.stderr
    validate(json.loads(p.stdout))


def test_suite_file_and_axis_precedence(tmp_path, report_path):
    suite = tmp_path / "s.json"
    suite.write_text(json.dumps({
        "name": "mine",
        "settings": {"min_time_s": 0.01, "max_time_s": 0.05},
        "benchmarks": [{"filter": "^bandwidth/memory_latency$", "axes": {"working_set": ["16KiB", "32KiB"]}}],
    }))
    p = run("run", "--suite", str(suite), "-o", report_path, "-q")
    assert p.returncode == 0, p.stderr
    rep = load_report(report_path)
    assert sorted(r["axes"]["working_set"] for r in rep["results"]) == [16384, 32768]
    assert rep["run"]["suite"]["name"] == "mine"
    # -a beats the suite file.
    p = run("run", "--suite", str(suite), "-a", "working_set=64KiB", "-o", report_path, "-q")
    assert p.returncode == 0, p.stderr
    assert [r["axes"]["working_set"] for r in load_report(report_path)["results"]] == [65536]


def test_sigint_keeps_finished_results(report_path):
    proc = subprocess.Popen([BIN, "run", "--filter", "memory_latency", "-a", "working_set=16KiB:64KiB",
                             "-a", "seed=1:50:1", "--min-time", "0.2", "--max-time", "0.3", "-o", report_path],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Interrupted once its first configuration has ended (the progress line of the second on
    # stderr), not after a fixed time: an instrumented build beside CI's other tests took over 2 s
    # to reach it (0.9 s alone).
    seen = []
    while not (seen and seen[-1].startswith("[2/")):
        seen.append(proc.stderr.readline())
        assert seen[-1], "the run ended before its second configuration began: " + "".join(seen)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    err = "".join(seen) + err
    assert proc.returncode == 128 + signal.SIGINT, err
    rep = load_report(report_path)
    assert rep["run"]["interrupted"] is True
    assert "Interrupt" in rep["run"]["interrupted_reason"]
    assert 1 <= len(rep["results"]) < 150
    assert "interrupted" in err


# ---- bad input: one line on stderr, exit 2, nothing run, no report -------------------------------

@pytest.mark.parametrize("args,needles", [
    (["frobnicate"], ["frobnicate"]),
    (["run", "--bogus"], ["--bogus"]),
    ([], ["subcommand"]),
    (["run", "--filter", "^nothing$"], ["matches no benchmark"]),
    (["run", "--filter", "(["], ["not a valid regular expression"]),
    (["run", "--filter", "bandwidth", "-a", "nosuchaxis=1"], ["no selected benchmark has an axis 'nosuchaxis'"]),
    (["run", "--filter", "host_memory", "-a", "array_size=abc"], ["array_size", "abc"]),
    (["run", "--filter", "host_memory", "-a", "array_size=0"], ["array_size", "below the minimum"]),
    (["run", "--filter", "host_memory", "-a", "array_size=-4KiB"], ["array_size", "below the minimum"]),
    (["run", "--filter", "host_memory", "-a", "array_size=4TiB"], ["needs", "is available"]),
    (["run", "--filter", "host_memory", "-a", "threads=-1"], ["threads"]),
    # A thread count far above the CPUs exhausts the machine's process ids: bounded per CPU.
    (["run", "--filter", "^bandwidth/host_memory$", "-a", "threads=100000"],
     ["threads", "100000 is above the maximum", "x the", "CPU(s)"]),
    (["run", "--filter", "^gemm/ours_fp32$", "-a", "threads=100000"], ["threads", "above the maximum", "CPU(s)"]),
    (["run", "--filter", "^preprocess/pipeline$", "-a", "threads=100000"], ["threads", "above the maximum", "CPU(s)"]),
    (["run", "--filter", "^bandwidth/numa_matrix$", "-a", "threads=100000"], ["threads", "above the maximum", "CPU(s)"]),
    (["run", "--filter", "^storage/read$", "-a", "jobs=100000"], ["jobs", "above the maximum", "CPU(s)"]),
    (["run", "--filter", "^training/step$", "-a", "threads=100000"], ["threads", "above the maximum", "CPU(s)"]),
    # Paths the benchmarks need, checked before anything runs.
    (["run", "--filter", "^storage/read$", "--scratch", "/nonexistent-dir"], ["--scratch /nonexistent-dir", "no such directory"]),
    (["run", "--filter", "^storage/read$", "--scratch", ""], ["--scratch", "empty path"]),
    (["run", "--filter", "^storage/read$", "--scratch", "/proc/self/status"], ["--scratch /proc/self/status", "not a directory"]),
    (["run", "--filter", "^preprocess/pipeline$", "--jpeg-dir", "/nonexistent-dir"], ["--jpeg-dir /nonexistent-dir", "no such directory"]),
    (["run", "--filter", "^preprocess/pipeline$", "--jpeg-dir", "/proc/self"], ["--jpeg-dir /proc/self", "no .jpg or .jpeg files"]),
    (["run", "--filter", "host_memory", "-a", "kernel=copy,bogus"], ["kernel", "not one of"]),
    (["run", "--filter", "memory_latency", "-a", "working_set=1MiB:4KiB"], ["inverted"]),
    (["run", "--filter", "host_memory", "-a", "array_size"], ["expected axis=value"]),
    (["run", "--min-time", "-1"], ["min-time"]),
    (["run", "--min-time", "5", "--max-time", "1"], ["above --max-time"]),
    (["run", "--format", "xml"], ["format"]),
    (["run", "--suite", "nosuchsuite"], ["no suite named 'nosuchsuite'", "quick"]),
    (["run", "--suite", "/nonexistent/suite.json"], ["/nonexistent/suite.json", "does not exist"]),
    (["run", "-o", "/nonexistent-dir/r.json"], ["/nonexistent-dir", "does not exist"]),
    (["run", "-o", "/proc/r.json"], ["/proc/r.json", "cannot create a file in /proc"]),
    (["run", "--min-time", "0", "--max-time", "-1"], ["--max-time: must be a number of seconds > 0 (got -1)"]),
    (["run", "--timeout", "-5"], ["--timeout: must be a number of seconds > 0 (got -5)"]),
    (["run", "--target-ci", "0"], ["--target-ci: must be a fraction > 0 and < 1 (got 0)"]),
    (["list", "--filter", "^zzz$"], ["matches no benchmark"]),
])
def test_bad_input(tmp_path, args, needles):
    p = run(*args, cwd=str(tmp_path))
    one_line_error(p, *needles)
    assert not os.path.exists(tmp_path / "infrabench-report.json")


@pytest.mark.parametrize("text,needles", [
    ('{\n  "benchmarks": [\n    {"filter": }\n  ]\n}', ["bad.json", "invalid JSON", "line 3"]),
    ('{"benchmarks": [{"filter": "."}], "colour": 1}', ["unknown key \"colour\""]),
    ('{"benchmarks": [{"filter": ".", "axes": {"threads": {"a": 1}}}]}', ["axis \"threads\""]),
    ('{"benchmarks": [{"filter": 3}]}', ["filter"]),
    ('{"benchmarks": [{"filter": "."}], "settings": {"max_time_s": "long"}}', ["max_time_s", "number"]),
    ('{"benchmarks": [{"filter": "memory_latency", "axes": {"working_sett": [1]}}]}', ["working_sett"]),
    ('{"benchmarks": [{"filter": "memory_latency", "axes": {"working_set": ["huge"]}}]}', ["working_set", "huge"]),
])
def test_bad_suite_file(tmp_path, text, needles):
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    p = run("run", "--suite", str(bad), cwd=str(tmp_path))
    one_line_error(p, *needles)
    assert not os.path.exists(tmp_path / "infrabench-report.json")


def test_endless_suite_file_is_refused(tmp_path):
    """A device (/dev/zero, which never ends) is refused without being read; a pipe
    (--suite <(...)) is read like a file."""
    p = run("run", "--suite", "/dev/zero", cwd=str(tmp_path))
    one_line_error(p, "/dev/zero", "character device")
    r, w = os.pipe()
    os.write(w, b'{"benchmarks": [{"filter": "^bandwidth/memory_latency$"}]}')
    os.close(w)
    p = subprocess.run([BIN, "list", "--suite", f"/dev/fd/{r}"], capture_output=True, text=True,
                       pass_fds=(r,), timeout=60)
    os.close(r)
    assert p.returncode == 0, p.stderr
    assert "memory_latency" in p.stdout, p.stdout


def test_unwritable_directory_as_user(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere; /proc covers the unwritable case")
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    try:
        one_line_error(run("run", "-o", str(d / "r.json")), "cannot create a file in",
                              "Permission denied")
    finally:
        d.chmod(0o755)
