"""Shared helpers for the end-to-end tests: run the binary, load and validate its report."""
import json
import os
import subprocess

import jsonschema
import pytest

BIN = os.environ.get("INFRABENCH_BIN", "build/infrabench")
SCHEMA_PATH = os.environ.get("INFRABENCH_SCHEMA", "reports/schema/report.schema.json")

# Settings that keep a run short: the tests check behaviour, not the machine.
FAST = ["--min-time", "0.01", "--max-time", "0.05", "-q"]


def run(*args, timeout=120, env=None, cwd=None):
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=timeout,
                          env=full_env, cwd=cwd)


def one_line_error(p, *needles, code=2, max_len=None):
    """Bad input: exit `code` (2) with one line on stderr, `infrabench: error: ...` (shorter than
    `max_len` when given), naming each needle; never a traceback or an uncaught exception."""
    assert p.returncode == code, (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    assert "Traceback" not in p.stderr and "terminate called" not in p.stderr, p.stderr[-2000:]
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("infrabench: error: "), p.stderr[-2000:]
    if max_len is not None:
        assert len(lines[0]) < max_len, lines[0][:max_len]
    for n in needles:
        assert n in lines[0], (n, lines[0])


def load_report(path):
    with open(path) as f:
        report = json.load(f)
    validate(report)
    return report


def validate(report):
    with open(SCHEMA_PATH) as f:
        schema = json.load(f)
    jsonschema.validate(report, schema, cls=jsonschema.Draft202012Validator)


def listing(filter_re):
    """`infrabench list --json --filter RE` as {name: entry}."""
    p = run("list", "--json", "--filter", filter_re)
    assert p.returncode == 0, p.stderr
    return {b["name"]: b for b in json.loads(p.stdout)}


def results(report, name):
    """The report's results of one benchmark, in run order."""
    return [r for r in report["results"] if r["benchmark"] == name]


def metric(result, name):
    """A metric's value, or None when the result does not have it."""
    for m in result.get("metrics", []):
        if m["name"] == name:
            return m["value"]
    return None


def cpu_flags():
    """The CPU's feature flags as the kernel lists them (/proc/cpuinfo)."""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


@pytest.fixture
def report_path(tmp_path):
    return str(tmp_path / "report.json")


# A short run of the suite's main hops, as a user's report holds them: storage/read (8 MiB),
# gemm/ours_fp32 over three square shapes with gemm/cpu_peak (the curve and its peak line),
# preprocess/pipeline (a small batch) and bandwidth/numa_matrix. Seconds, not minutes.
REAL_SUITE = ["--filter", "^(storage/read|gemm/(ours_fp32|cpu_peak)|preprocess/pipeline|bandwidth/numa_matrix)$",
              "-a", "size=8MiB", "-a", "engine=psync", "-a", "pattern=rand", "-a", "block_size=64KiB",
              "-a", "queue_depth=1", "-a", "shape=128,192,256", "-a", "threads=1", "-a", "batch=4",
              "-a", "source=pixels", "-a", "array_size=4MiB"]


def real_suite_reports(directory, count=2):
    """Runs REAL_SUITE `count` times into directory; returns the report paths."""
    paths = []
    for i in range(count):
        path = os.path.join(str(directory), "real%d.json" % i)
        p = run("run", *REAL_SUITE, *FAST, "--scratch", str(directory), "-o", path, timeout=120)
        assert p.returncode == 0, p.stderr
        report = load_report(path)
        ran = {r["benchmark"] for r in report["results"] if r["status"] == "passed"}
        assert ran >= {"storage/read", "gemm/ours_fp32", "gemm/cpu_peak", "preprocess/pipeline",
                       "bandwidth/numa_matrix"}, ran
        paths.append(path)
    return paths


# The source scans (test_no_name_decisions.py, test_no_raw_json.py) read C++ lines without comments.
def strip_comment(line):
    """The line without its // comment (a // inside a string literal is kept)."""
    in_str = False
    for k, ch in enumerate(line):
        if ch == '"' and (k == 0 or line[k - 1] != "\\"):
            in_str = not in_str
        elif not in_str and line.startswith("//", k):
            return line[:k]
    return line
