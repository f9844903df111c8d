"""training/step: the whole data path of a training step at once (read -> decode + transform ->
forward/backward -> gradient all-reduce -> update), alone and under mpirun; its scratch data set
is removed; bad shapes fail with the reason while the run goes on."""
import os
import shutil
import subprocess

import pytest

from conftest import BIN, FAST, load_report, run

SMALL = ["--filter", "^training/step$", "-a", "samples=24", "-a", "batch=8", "-a", "width=96",
         "-a", "height=72", "-a", "resize=40", "-a", "crop=32", "-a", "hidden=16"]
HOPS = ["read_ms", "preprocess_ms", "compute_ms", "wait_ms", "allreduce_ms", "update_ms"]
HAS_MPI = os.environ.get("INFRABENCH_HAS_MPI") == "1" and shutil.which("mpirun")


def metrics(r):
    return {m["name"]: m for m in r["metrics"]}


def verified(r):
    """Passed, and invalid (if at all) only for noise: every verification held (on every rank)."""
    return r["status"] == "passed" and all(w.startswith("noisy") for w in r["invalid_reasons"])


def jpeg_missing(r):
    return r["status"] == "skipped" and "jpeg" in r["reason"].lower()


def test_step_runs_every_hop_and_removes_its_data_set(tmp_path):
    out = str(tmp_path / "r.json")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    p = run("run", *SMALL, *FAST, "--scratch", str(scratch), "-o", out)
    rep = load_report(out)
    (r,) = rep["results"]
    if jpeg_missing(r):
        pytest.skip(r["reason"])
    assert p.returncode == 0, p.stderr
    assert verified(r), r
    m = metrics(r)
    for name in HOPS + ["samples_per_s", "compute_gflops", "limiting_hop_percent"]:
        assert name in m and m[name]["value"] >= 0, name
    assert "1 rank(s)" in m["allreduce_ms"]["method"]
    # The hops run one after another: together they are the step (mean vs median, so loosely).
    step_ms = r["time_s"]["median"] * 1e3
    hops = sum(m[h]["value"] for h in HOPS)
    assert 0.5 * step_ms < hops < 2 * step_ms, (hops, step_ms)
    # 8 samples per step; the harness derives samples/s from the declared work.
    assert abs(m["samples_per_s"]["value"] * r["time_s"]["median"] - 8) < 0.5
    assert r["axes"]["batch"] == 8
    assert list(scratch.iterdir()) == [], list(scratch.iterdir())


@pytest.mark.parametrize("axes,reason", [
    (["-a", "crop=48"], "larger than resize"),
    (["-a", "samples=4"], "at least one batch"),
])
def test_impossible_shapes_fail_with_the_reason(tmp_path, axes, reason):
    out = str(tmp_path / "r.json")
    p = run("run", *SMALL, *axes, *FAST, "--scratch", str(tmp_path), "-o", out)
    (r,) = load_report(out)["results"]
    if jpeg_missing(r):
        pytest.skip(r["reason"])
    assert p.returncode == 1, p.stderr
    assert r["status"] == "failed" and reason in r["reason"], r


def test_missing_scratch_directory_fails_with_the_path(tmp_path):
    out = str(tmp_path / "r.json")
    missing = str(tmp_path / "no" / "such")
    p = run("run", *SMALL, *FAST, "--scratch", missing, "-o", out)
    (r,) = load_report(out)["results"]
    if jpeg_missing(r):
        pytest.skip(r["reason"])
    assert p.returncode == 1, p.stderr
    assert r["status"] == "failed" and missing in r["reason"], r


@pytest.mark.skipif(not HAS_MPI, reason="built without MPI, or no mpirun")
def test_two_ranks_all_reduce_their_gradients(tmp_path):
    out = str(tmp_path / "r.json")
    cmd = ["mpirun", "--oversubscribe", "--mca", "btl", "self,vader", "--mca", "mpi_yield_when_idle",
           "1", "--timeout", "170", "-np", "2", BIN, "run", *SMALL, *FAST, "--scratch", str(tmp_path),
           "-o", out]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)
    rep = load_report(out)
    (r,) = [x for x in rep["results"] if x["benchmark"] == "training/step"]
    if jpeg_missing(r):
        pytest.skip(r["reason"])
    assert p.returncode == 0, p.stdout + p.stderr
    # One result for the group, verified: every rank ended with identical parameters.
    assert verified(r), r
    m = metrics(r)
    assert "2 rank(s)" in m["allreduce_ms"]["method"]
    assert abs(m["samples_per_s"]["value"] * r["time_s"]["median"] - 16) < 0.5  # global batch
    assert [x for x in tmp_path.iterdir() if x.name.startswith("infrabench-scratch")] == []
