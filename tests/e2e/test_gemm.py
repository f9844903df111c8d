"""gemm/*: the CPU GEMMs (ours, OpenBLAS, oneDNN) run and verify, report fractions of the measured
peak and ours/theirs ratios, OpenBLAS runs the core type we chose, FP16 is skipped with the reason
where the CPU lacks it, the CUDA benchmarks are listed and skipped without a GPU, and bad input is a
one-line error (exit 2)."""
import json
import os

import pytest

from conftest import FAST, cpu_flags, listing, load_report, metric, results, run


def value_or_why(r, name):
    """A positive value, or the warning that withholds it (state::withhold_metric): a GEMM that beat
    the peak measured beside it (a sanitized build slows the peak kernel more than the GEMM; a busy
    machine, likewise), or a reference whose result was invalid."""
    value = metric(r, name)
    return (value is not None and value > 0) or any(w.startswith(f"{name} not reported: ")
                                                    for w in r["warnings"])


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
    # The results each benchmark reads are declared, and listed.
    assert names["gemm/ours_fp32"]["uses"] == [
        "gemm/cpu_peak", "gemm/openblas_fp32", "gemm/onednn_fp32"]
    assert names["gemm/ours_bf16"]["uses"] == ["gemm/cpu_peak", "gemm/onednn_bf16"]
    assert names["gemm/cpu_peak"]["uses"] == []
    text = run("list", "--filter", "^gemm/ours_fp32$").stdout
    assert "uses: gemm/cpu_peak, gemm/openblas_fp32, gemm/onednn_fp32" in text, text


def test_run_order_follows_declared_uses(report_path):
    # The references and the peak run before ours whatever the names, as declared.
    p = run("run", "--filter", "^gemm/(cpu_peak|openblas_fp32|ours_fp32)$", *FAST,
            "-a", "shape=64", "-a", "threads=1", "-o", report_path)
    assert p.returncode == 0, p.stderr
    order = [r["benchmark"] for r in load_report(report_path)["results"]]
    assert order.index("gemm/ours_fp32") > order.index("gemm/openblas_fp32")
    assert order.index("gemm/ours_fp32") > order.index("gemm/cpu_peak")


def test_amx_peak_skipped_with_the_reason_without_tiles(report_path):
    if "amx_tile" in cpu_flags():
        pytest.skip("this CPU has AMX tiles")
    p = run("run", "--filter", "^gemm/cpu_peak$", *FAST, "-a", "isa=amx_bf16,amx_int8",
            "-a", "threads=1", "-o", report_path)
    assert p.returncode == 0, p.stderr
    rs = results(load_report(report_path), "gemm/cpu_peak")
    assert len(rs) == 2
    for r in rs:
        assert r["status"] == "skipped", r
        assert r["reason_code"] == "unsupported"
        assert "AMX" in r["reason"], r["reason"]


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
    # A run that wrote no report says why (it failed once, under load, with no report and no
    # message kept: not reproduced in 40 runs since).
    assert os.path.exists(report_path), f"no report (exit {p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
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
        assert value_or_why(r, "pct_of_fma_peak"), (r["metrics"], r["warnings"])
        if any(x["status"] == "passed" for x in results(report, "gemm/openblas_fp32")):
            # A ratio, or the reason there is none (the reference was implausibly slow).
            assert value_or_why(r, "pct_of_openblas"), (r["metrics"], r["warnings"])
    # Every percentage of a peak is at most 100 and names its peak beside it.
    for r in report["results"]:
        for m in r.get("metrics", []):
            if m["name"] in ("pct_of_fma_peak", "pct_of_amx_peak"):
                assert m["value"] <= 100, (r["benchmark"], r["axes"], m)
                companions = [c for c in r["metrics"]
                              if c["name"].startswith("peak_") and c["name"] in m["method"]]
                assert companions and companions[0]["role"] == "information", m["method"]
    # References of these tiny shapes are too small to judge against the peak (thread wake-up may
    # dominate): the plausibility rule leaves them alone.
    for name in ["gemm/openblas_fp32", "gemm/onednn_fp32", "gemm/onednn_bf16"]:
        for r in results(report, name):
            assert not any("implausibly slow" in why for why in r["invalid_reasons"]), r
    if "avx512_bf16" in flags:
        for r in results(report, "gemm/ours_bf16"):
            assert r["status"] == "passed"
            assert value_or_why(r, "pct_of_fma_peak"), (r["metrics"], r["warnings"])
    # Issue 45: a bf16 GEMM reports each fraction of a peak, or withholds it with the reason (no
    # AMX tiles; judged against the AMX peak where oneDNN uses them), so that a baseline made on a
    # CPU of the other kind waives its rule instead of refusing it as naming an unknown metric.
    for name in ["gemm/ours_bf16", "gemm/onednn_bf16"]:
        for r in results(report, name):
            if r["status"] == "passed":
                for frac in ("pct_of_fma_peak", "pct_of_amx_peak"):
                    assert value_or_why(r, frac) or frac in r.get("withheld", {}), (name, frac, r)
    # FP16 peak: skipped with the reason on CPUs without AVX512_FP16.
    for r in results(report, "gemm/cpu_peak"):
        if r["axes"]["isa"] == "avx512_fp16" and "avx512_fp16" not in flags:
            assert r["status"] == "skipped"
            assert "AVX512_FP16" in r["reason"]
        elif r["status"] == "passed":
            assert metric(r, "clock_ghz") > 0
            assert metric(r, "instr_per_cycle") > 0
            # Clock x width where the table knows this core: the kernel reaches it (a loaded
            # machine may cost a few percent; the suite's own warning names < 97%).
            names = [m["name"] for m in r["metrics"]]
            # (Not under a sanitizer: the instrumented kernel runs ~12x slower, ASan+UBSan.)
            if "pct_of_clock_x_width" in names and os.environ.get("INFRABENCH_SANITIZED") != "1":
                # All threads: a VM's hypervisor may hold one of its vCPUs for a while (one of
                # two gone is 50%: seen at 49.9% in CI), so the bound there is a quarter.
                # AMX likewise: on a 2-vCPU Emerald Rapids VM (2026-11-28) one thread's tile
                # unit ran at 1.0-1.2 TFLOP/s in some processes and 2.6 (100%) in others, the
                # clock the same.
                amx = r["axes"]["isa"].startswith("amx")
                low = 50 if r["axes"].get("threads") == 1 and not amx else 25
                assert low < metric(r, "pct_of_clock_x_width") < 110, r["metrics"]


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


def test_a_shipped_baseline_of_another_cpu_judges_the_bf16_fractions(report_path):
    """Issue 45: configs/baselines/ci-2vcpu-kvm.json was made on a CPU with AVX512_BF16 and no AMX
    tiles, so its rules judge oneDNN's bf16 GEMM by pct_of_fma_peak; on a CPU with tiles that
    fraction is withheld (judged against the AMX peak), and `check` waived the rule's metric as
    unknown with exit 2 (a usage error, after the run). It is waived now, with the reason."""
    p = run("run", "--filter", "^gemm/onednn_bf16$", *FAST, "-a", "shape=512", "-a", "threads=1",
            "-o", report_path)
    assert p.returncode == 0, p.stderr
    (r,) = results(load_report(report_path), "gemm/onednn_bf16")
    if r["status"] != "passed":
        pytest.skip(f"gemm/onednn_bf16 did not run here: {r.get('reason')}")
    base = os.path.join(os.environ["INFRABENCH_SOURCE_DIR"], "configs", "baselines", "ci-2vcpu-kvm.json")
    c = run("check", report_path, "-b", base)
    assert c.returncode != 2 and "unknown metric" not in c.stderr, c.stdout + c.stderr
    line = next(l for l in c.stdout.splitlines() if "gemm/onednn_bf16[threads=1]:pct_of_fma_peak" in l)
    if "pct_of_fma_peak" in r.get("withheld", {}):
        assert line.lstrip().startswith("WAIVED") and "AMX" in line, line
