"""The default `infrabench run`: the quick suite covers every hop this machine can run, passes,
and (in an optimised build) stays under its 60 s budget on 2 cores."""
import os
import time

from conftest import load_report, run


# A sanitizer build (ASan+UBSan) runs this to find memory errors along every hop, not to time them:
# the same configurations, sampled briefly (the budget below is not checked there).
SANITIZED = os.environ.get("INFRABENCH_SANITIZED") == "1"
BRIEF = ["--min-time", "0.01", "--max-time", "0.05"] if SANITIZED else []


def test_default_run_is_the_quick_suite(tmp_path):
    start = time.monotonic()
    p = run("run", *BRIEF, cwd=str(tmp_path), timeout=300)
    elapsed = time.monotonic() - start
    assert p.returncode == 0, p.stderr
    report = load_report(tmp_path / "infrabench-report.json")
    assert report["run"]["suite"]["name"] == "quick"
    benchmarks = {r["benchmark"] for r in report["results"]}
    # Every hop of the data path has an entry: storage, CPU preprocessing, CPU GEMM with its
    # references, the GPU hops (skipped here with the probe's reason), the interconnect, and the
    # whole path at once (the training step).
    hops = {"bandwidth/host_memory", "bandwidth/memory_latency", "bandwidth/numa_matrix",
            "storage/read", "storage/dataloader", "preprocess/pipeline", "gemm/ours_fp32",
            "gemm/openblas_fp32", "bandwidth/h2d", "bandwidth/d2h", "gemm/cublas",
            "collectives/mpi_allreduce", "collectives/pairwise", "collectives/nccl_allreduce",
            "training/step"}
    built = {b for b in hops if run("list", "--filter", "^" + b + "$").returncode == 0}
    assert built - benchmarks == set(), built - benchmarks
    passed = {r["benchmark"] for r in report["results"] if r["status"] == "passed"}
    for b in ("bandwidth/host_memory", "storage/read", "storage/checkpoint", "preprocess/pipeline",
              "gemm/ours_fp32"):
        assert b in passed, b  # psync reads (and checkpoint writes) run in every build
    for r in report["results"]:
        if r["benchmark"] == "storage/dataloader" and r["status"] == "skipped":
            assert "io_uring" in r["reason"], r  # its default reader needs io_uring
        if r["benchmark"] == "training/step" and r["status"] != "passed":
            assert r["status"] == "skipped" and "jpeg" in r["reason"].lower(), r  # the whole path
    sources = {r["axes"]["source"] for r in report["results"]
               if r["benchmark"] == "preprocess/pipeline"}
    assert sources == {"pixels", "jpeg"}, sources  # the transform alone, and decode + transform
    print(f"quick suite: {elapsed:.1f} s")
    # Sanitizer builds are several times slower; the budget is for the shipped (Release) build.
    if not SANITIZED:
        assert elapsed < 60, f"the quick suite took {elapsed:.1f} s (budget 60 s)"
