"""`run --repetitions N`: every configuration runs N times, interleaved, and the report keeps one
result per configuration with each repetition's values and their median."""
import json
import os
import shutil
import signal
import statistics
import subprocess
import time

import pytest

from conftest import BIN, FAST, load_report, results, run

LATENCY = ["--filter", "^bandwidth/memory_latency$", "-a", "working_set=16KiB,32KiB"]


def test_three_repetitions_keep_each_value_and_the_median(tmp_path):
    out = str(tmp_path / "r.json")
    p = run("run", *LATENCY, "--repetitions", "3", *FAST, "-o", out)
    assert p.returncode == 0, p.stderr
    rep = load_report(out)
    assert rep["run"]["settings"]["repetitions"] == 3
    rs = results(rep, "bandwidth/memory_latency")
    assert len(rs) == 2  # one result per configuration
    assert rep["summary"]["configurations"] == 2
    for r in rs:
        assert r["status"] == "passed", r
        assert len(r["repetitions"]) == 3
        assert all(x["status"] == "passed" and x["elapsed_s"] > 0 for x in r["repetitions"])
        assert abs(r["elapsed_s"] - sum(x["elapsed_s"] for x in r["repetitions"])) < 1e-6
        assert r["metrics"]
        for m in r["metrics"]:
            assert len(m["repetitions"]) == 3, m
            assert m["value"] == pytest.approx(statistics.median(m["repetitions"]), rel=1e-12)
        assert r["time_s"]["n"] == len(r["samples_s"])


def test_one_repetition_writes_todays_report(tmp_path):
    out = str(tmp_path / "r.json")
    p = run("run", *LATENCY, *FAST, "-o", out)
    assert p.returncode == 0, p.stderr
    rep = load_report(out)
    assert rep["run"]["settings"]["repetitions"] == 1
    for r in rep["results"]:
        assert "repetitions" not in r
        assert all("repetitions" not in m for m in r["metrics"])


@pytest.mark.parametrize("one_cpu", [False, True])
def test_the_canary_runs_on_every_cpu_the_run_may_use(tmp_path, one_cpu):
    """Issue 44: the canary's all-CPU numbers, per CPU, on the CPUs the run may use (taskset: one)."""
    if one_cpu and not shutil.which("taskset"):
        pytest.skip("taskset is not installed")
    out = str(tmp_path / "r.json")
    cpus = [min(os.sched_getaffinity(0))] if one_cpu else None
    prefix = ["taskset", "-c", str(cpus[0])] if cpus else []
    p = subprocess.run(prefix + [BIN, "run", *LATENCY, *FAST, "-o", out], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    canary = load_report(out)["run"]["canary"]
    assert canary["all_cpus"] == (len(cpus) if cpus else len(os.sched_getaffinity(0))), canary
    assert canary["fma_gflops_all_cpus"] > 0 and canary["cache_gbps_all_cpus"] > 0, canary
    assert all(pt["fma_gflops_all_cpus"] > 0 for pt in canary["points"]), canary


def test_the_canary_is_as_brief_as_the_runs_measurements(tmp_path):
    """Half the run's --min-time, 0.1 s at most, said in the report; compare judges no machine by a
    brief one (a smoke run's), and says so."""
    reports = []
    for min_time in ["0.01", "0.5"]:
        out = tmp_path / f"r{min_time}.json"
        p = run("run", *LATENCY, "--min-time", min_time, "--max-time", "0.6", "-q", "-o", str(out))
        assert p.returncode == 0, p.stderr
        canary = load_report(out)["run"]["canary"]
        assert canary["seconds_each"] == (0.005 if min_time == "0.01" else 0.1), canary
        assert f"~{canary['seconds_each']:g} s each" in canary["method"], canary["method"]
        # Both points, each of five numbers of that length (a little more: warm-up, allocation).
        assert all(pt["seconds"] >= 4 * canary["seconds_each"] for pt in canary["points"]), canary
        reports.append(str(out))
    p = run("compare", reports[1], reports[0])
    assert p.returncode == 0, p.stderr
    text = p.stdout.replace("\n  ", " ")
    assert "canary ran 0.005 s each, too briefly to judge the machine by" in text, p.stdout


@pytest.mark.parametrize("bad", ["0", "-1", "101", "1e9", "x", "2.5", ""])
def test_bad_repetitions_exit_2_before_running(tmp_path, bad):
    out = tmp_path / "r.json"
    p = run("run", *LATENCY, "--repetitions", bad, *FAST, "-o", str(out))
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith("infrabench: error:") and p.stderr.count("\n") == 1, p.stderr
    assert "--repetitions" in p.stderr
    assert not out.exists()


def test_accept_and_the_baseline_check_take_the_merged_result(tmp_path):
    suite = tmp_path / "tiny.json"
    suite.write_text(json.dumps({
        "name": "tiny", "settings": {"min_time_s": 0.01, "max_time_s": 0.05, "timeout_s": 60},
        "benchmarks": [{"filter": "^bandwidth/memory_latency$", "axes": {"working_set": ["16KiB"]},
                        "estimate_s": 1}]}))
    rule = {"benchmark": "bandwidth/memory_latency", "axes": {"working_set": "16KiB"}, "metric": "ns_per_load",
            "max": 1e6}
    baseline = tmp_path / "b.json"
    # Short runs on a shared machine are often INVALID (noisy): judged by value here.
    baseline.write_text(json.dumps({"infrabench_baseline": 1, "suite": "tiny.json", "defaults": {"allow_invalid": True},
                                    "rules": [rule]}))
    report = str(tmp_path / "a.json")
    p = run("accept", "--baseline", str(baseline), "-o", report, "--", "-q", "--repetitions", "2")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "accept: PASS (exit 0)" in p.stderr
    (r,) = results(load_report(report), "bandwidth/memory_latency")
    assert len(r["repetitions"]) == 2
    # A bad count is refused by run, before anything runs.
    p = run("accept", "--baseline", str(baseline), "-o", str(tmp_path / "never.json"), "--", "--repetitions", "0")
    assert p.returncode == 2, p.stdout + p.stderr
    assert not (tmp_path / "never.json").exists()


def test_sigint_keeps_the_repetitions_that_finished(tmp_path):
    out = str(tmp_path / "r.json")
    # Progress lines (not a terminal: one per configuration run) say when the fourth run started:
    # repetitions 1 of both configurations and 2 of the first have finished by then.
    proc = subprocess.Popen([BIN, "run", *LATENCY, "--repetitions", "3", "--min-time", "0.3",
                             "--max-time", "0.3", "-o", out],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.startswith("[4/6]"):
            break
    time.sleep(0.15)  # into its sampling, most of the time
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGINT, "".join(seen) + err
    rep = load_report(out)
    assert rep["run"]["interrupted"] is True
    first, second = results(rep, "bandwidth/memory_latency")
    assert len(first["repetitions"]) == 2 and all(x["status"] == "passed" for x in first["repetitions"])
    assert all(len(m["repetitions"]) == 2 for m in first["metrics"])
    assert any("ran 2 of 3 repetitions" in w for w in first["warnings"]), first["warnings"]
    # The second configuration: its first repetition finished; its second, stopped by the signal,
    # is kept and marked when it had begun sampling, left out when it had measured nothing. Cut
    # short is noise: it counts only when fewer than half the repetitions are valid (this machine
    # may make the first one noisy too).
    assert second["status"] == "passed", second
    assert len(second["repetitions"]) in (1, 2), second["repetitions"]
    valid = sum(x["valid"] for x in second["repetitions"])
    assert second["valid"] is (2 * valid >= len(second["repetitions"])), second
    if len(second["repetitions"]) == 2:
        cut = second["repetitions"][1]
        assert cut["valid"] is False and "interrupted" in cut["invalid_reason_codes"], cut


@pytest.mark.skipif(os.environ.get("INFRABENCH_HAS_MPI") != "1" or not shutil.which("mpirun"),
                    reason="built without MPI, or no mpirun")
def test_two_ranks_repeat_in_step(tmp_path):
    from test_mpi import mpirun
    out = str(tmp_path / "r.json")
    p = mpirun(2, "run", "--filter", "memory_latency", "-a", "working_set=16KiB,32KiB", "--repetitions", "2",
               "--min-time", "0.01", "--max-time", "0.05", "-q", "-o", out)
    assert p.returncode == 0, p.stdout + p.stderr
    rep = load_report(out)
    rs = results(rep, "bandwidth/memory_latency")
    assert sorted((r["rank"], r["axes"]["working_set"]) for r in rs) == sorted(
        (rank, ws) for rank in (0, 1) for ws in {r["axes"]["working_set"] for r in rs})
    assert len(rs) == 4
    # Rank 1 waits for rank 0 on the same CPUs: no all-CPU canary numbers in a multi-rank run.
    assert "all_cpus" not in rep["run"]["canary"] and rep["run"]["canary"]["fma_gflops"] > 0
    for r in rs:
        assert len(r["repetitions"]) == 2, r
        assert all(len(m["repetitions"]) == 2 for m in r["metrics"]), r
