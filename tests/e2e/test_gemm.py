"""gemm/*: the CPU GEMMs (ours, OpenBLAS, oneDNN) run and verify, report fractions of the measured
peak and ours/theirs ratios, OpenBLAS runs the core type we chose, FP16 is skipped with the reason
where the CPU lacks it, the CUDA benchmarks are listed and skipped without a GPU, and bad input is a
one-line error (exit 2)."""
import json
import os

import pytest

from conftest import FAST, cpu_flags, listing, load_report, metric, results, run

CPU = ["cpu_peak", "onednn_bf16", "onednn_fp32", "openblas_fp32", "ours_bf16", "ours_fp32"]
GPU = ["cublas", "cublaslt", "cuda_simt_fp32", "cuda_wmma"]
HAS_CUDA = os.environ.get("INFRABENCH_HAS_CUDA", "0").upper() in ("1", "ON", "TRUE")


def test_list_shows_cpu_and_gpu_benchmarks():
    names = listing("^gemm/")
    for n in CPU:
        assert "gemm/" + n in names, n
        assert names["gemm/" + n]["description"]
    for n in GPU:
        assert ("gemm/" + n in names) == HAS_CUDA, n
    axes = {a["name"]: a for a in names["gemm/ours_fp32"]["axes"]}
    assert axes["trans"]["choices"] == ["nn", "nt", "tn", "tt"]
    assert {"shape", "threads", "isa"} <= set(axes)


@pytest.mark.skipif(not HAS_CUDA, reason="built without CUDA")
def test_gpu_benchmarks_skip_with_the_probe_reason(report_path):
    names = listing("^gemm/")
    p = run("run", "--filter", "^gemm/(cublas|cuda_)", *FAST, "-a", "shape=256", "-o", report_path)
    assert p.returncode == 0, p.stderr
    report = load_report(report_path)
    for n in GPU:
        rs = results(report, "gemm/" + n)
        assert rs, n
        if not names["gemm/" + n]["runnable"]:
            for r in rs:
                assert r["status"] == "skipped" and r["reason"], r


def test_cpu_gemms_run_verify_and_compare(report_path):
    # Small shapes with edges (not multiples of the 12x32 tile), 1 and all threads.
    p = run("run", "--filter", "^gemm/(cpu_peak|onednn|openblas|ours)", *FAST,
            "-a", "shape=200,61x97x130", "-a", "threads=1,0", "-o", report_path, timeout=300)
    report = load_report(report_path)
    assert p.returncode == 0, p.stderr + json.dumps(report["summary"])
    flags = cpu_flags()
    for name in ["gemm/ours_fp32", "gemm/openblas_fp32", "gemm/onednn_fp32",
                 "gemm/ours_bf16", "gemm/onednn_bf16"]:
        rs = results(report, name)
        assert len(rs) == 4, name
        for r in rs:
            if r["status"] == "skipped":
                assert r["reason"]
                continue
            assert r["status"] == "passed", r
            # Verified against fp64: no verification failure among the invalid reasons.
            assert not any("fp64" in why for why in r["invalid_reasons"]), r["invalid_reasons"]
            assert 0 <= metric(r, "verify_err_to_bound") <= 1
            assert metric(r, "gflops") > 0
    for r in results(report, "gemm/ours_fp32"):
        assert metric(r, "pct_of_fma_peak") > 0
        if any(x["status"] == "passed" for x in results(report, "gemm/openblas_fp32")):
            # A ratio, or the reason there is none (the reference was implausibly slow).
            notes = " ".join(r["warnings"])
            assert metric(r, "pct_of_openblas") > 0 or "pct_of_openblas not reported" in notes, (
                r["metrics"], notes)
    # References of these tiny shapes are too small to judge against the peak (thread wake-up may
    # dominate): the plausibility rule leaves them alone.
    for name in ["gemm/openblas_fp32", "gemm/onednn_fp32", "gemm/onednn_bf16"]:
        for r in results(report, name):
            assert not any("implausibly slow" in why for why in r["invalid_reasons"]), r
    if "avx512_bf16" in flags:
        for r in results(report, "gemm/ours_bf16"):
            assert r["status"] == "passed"
            assert metric(r, "pct_of_fma_peak") > 0
    # FP16 peak: skipped with the reason on CPUs without AVX512_FP16.
    for r in results(report, "gemm/cpu_peak"):
        if r["axes"]["isa"] == "avx512_fp16" and "avx512_fp16" not in flags:
            assert r["status"] == "skipped"
            assert "AVX512_FP16" in r["reason"]
        elif r["status"] == "passed":
            assert metric(r, "clock_ghz") > 0
            assert metric(r, "instr_per_cycle") > 0


def test_openblas_runs_the_chosen_core_type(report_path):
    names = listing("^gemm/")
    coretype = next(a for a in names["gemm/openblas_fp32"]["axes"] if a["name"] == "coretype")
    # An inherited variable naming a weaker core must not win: the axis value does.
    p = run("run", "--filter", "^gemm/openblas_fp32$", *FAST, "-a", "shape=128",
            "-a", "threads=1", "-a", "coretype=Prescott,%s,env" % coretype["defaults"][0],
            "-o", report_path, env={"OPENBLAS_CORETYPE": "Prescott"})
    assert p.returncode == 0, p.stderr
    report = load_report(report_path)
    rs = results(report, "gemm/openblas_fp32")
    if rs[0]["status"] == "skipped":
        pytest.skip(rs[0]["reason"])  # no libopenblas here
    assert len(rs) == 3
    for r in rs:
        assert r["status"] == "passed", r
        notes = " ".join(r["warnings"])
        assert "asked OpenBLAS" not in notes, notes  # it runs the core we asked for
    best = rs[1]
    assert "OPENBLAS_CORETYPE=Prescott from the environment was overridden" in " ".join(
        best["warnings"])
    assert "OpenBLAS core: Prescott" in " ".join(rs[2]["warnings"])


def test_bad_input_is_one_line_exit_2(report_path):
    cases = [
        (["-a", "shape=abc"], "expected N, MxNxK"),
        (["-a", "shape=0"], "must be positive"),
        (["-a", "shape=64x64"], "expected N, MxNxK"),
        (["-a", "shape=gpt9.qkv"], "unknown model"),
        (["-a", "trans=xy"], "trans"),
        (["-a", "shape=200000"], "needs"),  # 3 x 160 GB of fp32 operands
    ]
    for args, needle in cases:
        p = run("run", "--filter", "^gemm/ours_fp32$", *FAST, *args, "-o", report_path)
        assert p.returncode == 2, (args, p.stderr)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        assert len(lines) == 1, p.stderr
        assert needle in lines[0], lines[0]
        assert not os.path.exists(report_path)
