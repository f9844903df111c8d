"""Under mpirun every rank runs and rank 0 writes one report holding every rank's results."""
import os
import shutil
import subprocess

import pytest

from conftest import BIN, load_report

pytestmark = pytest.mark.skipif(os.environ.get("INFRABENCH_HAS_MPI") != "1" or not shutil.which("mpirun"),
                                reason="built without MPI, or no mpirun")


def mpirun(n, *args, timeout=120):
    cmd = ["mpirun", "--oversubscribe", "--mca", "btl", "self,vader", "--mca", "mpi_yield_when_idle", "1",
           "--timeout", str(timeout - 10), "-np", str(n)]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    # LeakSanitizer reports Open MPI's own allocations (sanitized builds only; harmless otherwise).
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    return subprocess.run(cmd + [BIN, *args], capture_output=True, text=True, timeout=timeout, env=env)


def test_two_ranks_one_report(tmp_path):
    out = str(tmp_path / "r.json")
    p = mpirun(2, "run", "--filter", "memory_latency", "-a", "working_set=16KiB", "--min-time", "0.01",
               "--max-time", "0.05", "-q", "-o", out)
    assert p.returncode == 0, p.stdout + p.stderr
    rep = load_report(out)
    assert rep["run"]["launcher"] == "mpi"
    assert rep["run"]["world_size"] == 2
    assert sorted(r["rank"] for r in rep["results"]) == [0, 1]
    assert rep["capabilities"]["mpi"]["available"] is True
    assert len(rep["hosts"]) == 1  # both ranks on this host: one inventory
    assert p.stdout.count("report written") + p.stderr.count("report written") == 1
    # The coordination overhead (issue 39, docs/scale.md): one configuration run started together,
    # its time split from the benchmarks' and bounded by the run's own length.
    c = rep["run"]["coordination"]
    assert c["configuration_runs"] == 1, c
    assert 0 <= c["start_s"] < 30 and 0 <= c["outcomes_s"] < 30 and 0 <= c["gather_s"] < 30, c
    assert c["per_configuration_ms"] == pytest.approx((c["start_s"] + c["outcomes_s"]) * 1e3), c


def test_bad_input_on_all_ranks_exits_2(tmp_path):
    p = mpirun(2, "run", "--filter", "^nothing$", "-o", str(tmp_path / "r.json"))
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.count("infrabench: error:") >= 1
