"""The GPU check (ci/gpu-check.sh) as a user runs it: without a GPU it says so and exits 0;
its table (ci/gpu_check_table.py) counts each benchmark's configurations and sanitizer errors
from reports and logs, shows each one's headline number, % of peak and ratio to PyTorch, and
fails on anything that failed, was invalid, was not checked, or ran nothing for a reason other
than this machine having one GPU (skipped is never a pass)."""
import json
import os
import subprocess
import sys

import pytest

from conftest import BIN, listing

SOURCE = os.environ.get("INFRABENCH_SOURCE_DIR",
                        os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
SCRIPT = os.path.join(SOURCE, "ci", "gpu-check.sh")
TABLE = os.path.join(SOURCE, "ci", "gpu_check_table.py")
HAS_CUDA = os.environ.get("INFRABENCH_HAS_CUDA", "0").upper() in ("1", "ON", "TRUE")


def gpu_present():
    entry = listing("^gemm/cublas$").get("gemm/cublas")
    return entry is not None and entry["runnable"]


def test_without_a_gpu_it_says_so_and_exits_0(tmp_path):
    if not HAS_CUDA:
        p = subprocess.run([SCRIPT, "--bin", BIN], capture_output=True, text=True, timeout=60)
        assert p.returncode == 2, (p.stdout, p.stderr)
        assert "built without CUDA" in p.stderr
        return
    if gpu_present():
        pytest.skip("a GPU is present: the full check runs in minutes (run ci/gpu-check.sh)")
    p = subprocess.run([SCRIPT, "--bin", BIN, "--out", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert "no GPU here" in p.stdout, p.stdout
    # The reason says what is missing (issue 25), not the CUDA runtime's "driver is insufficient".
    assert "insufficient" not in p.stdout, p.stdout
    assert not (tmp_path / "out").exists()  # nothing was run


def test_bad_arguments_exit_2():
    p = subprocess.run([SCRIPT, "--frobnicate"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "unknown argument" in p.stderr
    p = subprocess.run([SCRIPT, "--bin", "/nonexistent/infrabench"], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 2 and "no infrabench executable" in p.stderr


def result(benchmark, status, valid=True, code=None, metrics=(), axes=None):
    r = {"benchmark": benchmark, "status": status, "valid": valid, "metrics": list(metrics),
         "axes": axes or {}, "axes_display": {k: str(v) for k, v in (axes or {}).items()}}
    if code:
        r["reason_code"] = code
    return r


def metric(name, unit, value, role=None, hint=None):
    m = {"name": name, "unit": unit, "value": value, "better": "higher"}
    if role:
        m["role"] = role
    if hint:
        m["hint"] = hint
    return m


def write_report(path, results):
    path.write_text(json.dumps({"results": results}))
    return path


def table(tmp_path, lines):
    manifest = tmp_path / "manifest.tsv"
    manifest.write_text("".join("\t".join(map(str, l)) + "\n" for l in lines))
    return subprocess.run([sys.executable, TABLE, str(manifest)], capture_output=True, text=True,
                          timeout=30)


def rows_of(stdout):
    """{benchmark: [cells...]} from the printed table (cells split on runs of 2+ spaces)."""
    import re
    out = {}
    for line in stdout.splitlines()[2:]:
        if not line.strip():
            break  # the end of the first table
        cells = re.split(r"\s{2,}", line.strip())
        if cells and "/" in cells[0]:
            out[cells[0]] = cells[1:]
    return out


def test_table_counts_configurations_and_sanitizer_errors(tmp_path):
    gemm = write_report(tmp_path / "gemm.json", [
        result("gemm/cuda_mma", "passed"), result("gemm/cuda_mma", "passed"),
        result("gemm/cuda_mma", "skipped"), result("gemm/other", "failed")])
    h2d = write_report(tmp_path / "h2d.json", [
        result("bandwidth/h2d", "passed"), result("bandwidth/h2d", "skipped")])
    clean = tmp_path / "clean.log"
    clean.write_text("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n")
    p = table(tmp_path, [("run", "gemm/cuda_mma", gemm, 2.5), ("run", "bandwidth/h2d", h2d, 1.25),
                         ("sanitizer", "gemm/cuda_mma", clean)])
    assert p.returncode == 0, (p.stdout, p.stderr)
    rows = rows_of(p.stdout)
    # passed, invalid, failed, skipped, headline, % peak, energy, vs torch, sanitizer errors, wall s
    assert rows["gemm/cuda_mma"] == ["2", "0", "0", "1", "-", "-", "-", "-", "0", "2.5"], p.stdout
    assert rows["bandwidth/h2d"] == ["1", "0", "0", "1", "-", "-", "-", "-", "not run", "1.2"], \
        p.stdout
    assert p.stdout.strip().endswith("GPU check: PASS")


def test_table_fails_on_errors_invalid_results_and_missing_reports(tmp_path):
    report = write_report(tmp_path / "r.json", [
        result("gemm/cuda_simt_fp32", "passed", valid=False),
        result("bandwidth/d2d", "passed"), result("bandwidth/d2d", "failed")])
    dirty = tmp_path / "dirty.log"
    dirty.write_text("========= Invalid __global__ read of size 16 bytes\n"
                     "========= ERROR SUMMARY: 3 errors\n")
    crashed = tmp_path / "crashed.log"
    crashed.write_text("========= Program hit cudaErrorLaunchFailure\n")  # no summary line
    p = table(tmp_path, [("run", "gemm/cuda_simt_fp32", report, 1),
                         ("run", "bandwidth/d2d", report, 1),
                         ("sanitizer", "bandwidth/d2d", dirty),
                         ("run", "bandwidth/p2p", tmp_path / "missing.json", 0.1),
                         ("sanitizer", "gemm/cuda_mma", crashed)])
    assert p.returncode == 1, (p.stdout, p.stderr)
    rows = rows_of(p.stdout)
    assert rows["gemm/cuda_simt_fp32"][:4] == ["0", "1", "0", "0"], p.stdout
    assert rows["bandwidth/d2d"][:4] == ["1", "0", "1", "0"], p.stdout
    assert rows["bandwidth/d2d"][8] == "3", p.stdout
    assert rows["bandwidth/p2p"][0] == "no report", p.stdout
    assert "did not finish" in p.stdout
    assert p.stdout.strip().endswith("GPU check: FAIL")


def test_bad_manifest_exits_2(tmp_path):
    p = table(tmp_path, [("runn", "x", "y", "z")])
    assert p.returncode == 2 and "manifest line 1" in p.stderr


FAKE_BIN = r'''#!/usr/bin/env python3
"""Stands in for infrabench on a GPU machine: two GPU benchmarks that run and pass."""
import json, sys
args = sys.argv[1:]
if args[:2] == ["list", "--json"]:
    print(json.dumps([
        {"name": "gemm/cublas", "requires": "cuda", "runnable": True, "reason": "", "axes": [],
         "description": ""},
        {"name": "gemm/cuda_mma", "requires": "cuda", "runnable": True, "reason": "",
         "axes": [], "description": ""},
        {"name": "bandwidth/host_memory", "requires": "", "runnable": True, "reason": "",
         "axes": [], "description": ""}]))
    sys.exit(0)
if args[0] == "run":
    name = args[args.index("--filter") + 1].strip("^$")
    out = args[args.index("-o") + 1]
    with open(out, "w") as f:
        json.dump({"results": [{"benchmark": name, "status": "passed", "valid": True}]}, f)
    sys.exit(0)
sys.exit(2)
'''

FAKE_SANITIZER = r'''#!/usr/bin/env bash
# Stands in for compute-sanitizer: runs the program, then reports one error for our mma kernel.
while [ "${1:0:2}" = "--" ]; do shift 2; done
"$@"
case "$*" in *cuda_mma*) echo "========= ERROR SUMMARY: 1 error" ;; *) echo "========= ERROR SUMMARY: 0 errors" ;; esac
'''


def test_on_a_gpu_every_gpu_benchmark_runs_and_our_kernels_are_sanitized(tmp_path):
    """The whole script on a stand-in GPU machine: a fake binary and a fake compute-sanitizer."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "infrabench").write_text(FAKE_BIN)
    (fake / "compute-sanitizer").write_text(FAKE_SANITIZER)
    for f in fake.iterdir():
        f.chmod(0o755)
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}")
    out = tmp_path / "out"
    p = subprocess.run([SCRIPT, "--bin", str(fake / "infrabench"), "--out", str(out)],
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 1, (p.stdout, p.stderr)  # the sanitizer found an error in cuda_mma
    rows = rows_of(p.stdout)
    # GPU benchmarks only, and the training step on the GPU (it needs no CUDA to be listed)
    assert set(rows) == {"gemm/cublas", "gemm/cuda_mma", "training/step"}, p.stdout
    assert rows["gemm/cublas"][:4] == ["1", "0", "0", "0"] and rows["gemm/cublas"][8] == "not run"
    assert rows["gemm/cuda_mma"][:4] == ["1", "0", "0", "0"], p.stdout
    assert rows["gemm/cuda_mma"][8] == "1", p.stdout
    assert rows["training/step"][8] == "0", p.stdout  # the transformer's kernels, sanitized
    assert (out / "gemm_cuda_mma.memcheck.log").exists()
    assert "GPU check: FAIL" in p.stdout


def test_skipped_is_not_a_pass_unless_one_gpu_explains_it(tmp_path):
    """p2p on one GPU (no_device) and NCCL with one rank (needs_ranks) may skip; a benchmark that
    one GPU can run but skipped everything for another reason fails the check."""
    p2p = write_report(tmp_path / "p2p.json", [result("bandwidth/p2p", "skipped", code="no_device")])
    nccl = write_report(tmp_path / "nccl.json", [
        result("collectives/nccl_allreduce", "skipped", code="needs_ranks")])
    ok = table(tmp_path, [("run", "bandwidth/p2p", p2p, 0.1),
                          ("run", "collectives/nccl_allreduce", nccl, 0.1)])
    assert ok.returncode == 0, (ok.stdout, ok.stderr)
    gemm = write_report(tmp_path / "gemm.json", [
        result("gemm/cublas", "skipped", code="unsupported"),
        result("gemm/cublas", "skipped", code="unsupported")])
    bad = table(tmp_path, [("run", "bandwidth/p2p", p2p, 0.1), ("run", "gemm/cublas", gemm, 0.1)])
    assert bad.returncode == 1, (bad.stdout, bad.stderr)
    assert rows_of(bad.stdout)["gemm/cublas"][:4] == ["0", "0", "0", "2"]
    assert "problem: gemm/cublas: ran nothing (unsupported)" in bad.stdout
    assert "bandwidth/p2p" not in bad.stdout.split("problem:", 1)[1]


def test_headline_percent_of_peak_and_the_ratio_to_pytorch(tmp_path):
    """The headline is the first performance metric of the passed configuration doing the most
    work per iteration (ties: the better value), its % of peak the metric the benchmark declared
    with hint fraction_of_peak, and the ratio to PyTorch the matching configuration's metric of
    the reference's unit over PyTorch's figure; other metrics in % (a stress's drift) never stand
    in for a % of peak."""
    peak = "fraction_of_peak"
    big, small = {"flops": 1.4e11}, {"flops": 2.1e9}
    gemm = write_report(tmp_path / "gemm.json", [
        result("gemm/cublas", "passed", axes={"shape": "1024", "dtype": "bf16"},
               metrics=[metric("gflops", "GFLOP/s", 800000.0),
                        metric("pct_of_peak", "%", 80.8, role="information", hint=peak)]),
        result("gemm/cublas", "passed", axes={"shape": "4096", "dtype": "fp32"},
               metrics=[metric("gflops", "GFLOP/s", 50000.0),
                        metric("pct_of_peak", "%", 74.6, role="information", hint=peak)]),
        result("gemm/cublas", "passed", axes={"shape": "4096", "dtype": "bf16"},
               metrics=[metric("gflops", "GFLOP/s", 600000.0),
                        metric("pct_of_peak_at_clock", "%", 90.1, role="information"),
                        metric("pct_of_peak", "%", 60.6, role="information", hint=peak)]),
        result("gemm/cublas", "passed", valid=False, axes={"shape": "8192", "dtype": "bf16"},
               metrics=[metric("gflops", "GFLOP/s", 900000.0)])])
    data = json.loads(gemm.read_text())
    for r, w in zip(data["results"], (small, big, big, big)):
        r["work_per_iteration"] = w
    gemm.write_text(json.dumps(data))
    stress = write_report(tmp_path / "stress.json", [
        result("stress/gpu", "passed", metrics=[
            metric("gemm_tflops_gpu0", "TFLOP/s", 700.0),
            metric("gemm_drift_pct_gpu0", "%", -3.6, role="information")])])
    step = write_report(tmp_path / "step.json", [
        result("training/step", "passed",
               axes={"model": "gpt2-124m", "batch": 0, "seq": 0, "dtype": "auto", "device": "auto"},
               metrics=[metric("tokens_per_s_per_rank", "tokens/s", 400000.0)])])
    # axes_display of the step as the benchmark writes it: auto values resolved
    data = json.loads(step.read_text())
    data["results"][0]["axes_display"] = {"model": "gpt2-124m", "batch": "auto (16)",
                                          "seq": "auto (1024)", "dtype": "auto (bf16)",
                                          "device": "auto (gpu)"}
    step.write_text(json.dumps(data))
    ref = tmp_path / "reference.json"
    ref.write_text(json.dumps({"entries": [
        {"what": "matmul bf16 4096", "unit": "GFLOP/s", "value": 750000.0,
         "match": {"benchmark": "gemm/cublas", "axes": {"shape": "4096", "dtype": "bf16"}}}]}))
    torch_step = tmp_path / "torch_step.json"
    torch_step.write_text(json.dumps({"model": "gpt2-124m", "batch": 16, "seq": 1024,
                                      "dtype": "bf16", "eager": {"tokens_per_s": 320000.0},
                                      "compile": {"tokens_per_s": 500000.0}}))
    p = table(tmp_path, [("run", "gemm/cublas", gemm, 1), ("run", "stress/gpu", stress, 9),
                         ("run", "training/step", step, 5), ("reference", ref),
                         ("reference_step", torch_step)])
    rows = rows_of(p.stdout)
    assert rows["gemm/cublas"][4:8] == ["600,000 GFLOP/s", "60.6", "-", "0.80"], p.stdout
    assert rows["stress/gpu"][4:6] == ["700 TFLOP/s", "-"], p.stdout
    assert rows["training/step"][4] == "400,000 tokens/s", p.stdout
    assert rows["training/step"][7] == "0.80", p.stdout  # the worst of 1.25 (eager), 0.80
    assert "vs torch eager" in p.stdout and "1.250" in p.stdout and "0.800" in p.stdout
    assert p.returncode == 1  # one invalid configuration


def test_energy_column_shows_joules_and_work_per_joule_or_why_not(tmp_path):
    """The energy meter's numbers of the headline's configuration: the joules of the counter of
    the device the result ran on (NVML for a GPU result) and its work per joule; where there are
    none, "-" and a note with the withheld reason, never a failure."""
    gemm = write_report(tmp_path / "gemm.json", [
        dict(result("gemm/cublaslt", "passed",
                    metrics=[metric("gflops", "GFLOP/s", 700000.0),
                             {"name": "gpu_energy_j", "unit": "J", "value": 800.0,
                              "role": "information", "method": "NVML total energy of GPU 0"},
                             {"name": "gpu_gflop_per_j", "unit": "GFLOP/J", "value": 1000.0,
                              "role": "information", "method": "per joule"}]), gpu=0)])
    step = write_report(tmp_path / "step.json", [
        dict(result("training/step", "passed", metrics=[metric("tokens_per_s", "tokens/s", 9e4)]),
             gpu=0, withheld={"gpu_energy_j": "NVML total energy not supported on this GPU"})])
    p = table(tmp_path, [("run", "gemm/cublaslt", gemm, 3.0), ("run", "training/step", step, 4.0)])
    assert p.returncode == 0, (p.stdout, p.stderr)
    rows = rows_of(p.stdout)
    assert rows["gemm/cublaslt"][6] == "800 J, 1000 GFLOP/J", p.stdout
    assert rows["training/step"][6] == "-", p.stdout
    assert "note: training/step: no energy number: NVML total energy not supported" in p.stdout
    assert p.stdout.strip().endswith("GPU check: PASS")


def test_energy_column_gives_the_headlines_work_per_joule(tmp_path):
    """A result declaring several kinds of work (the step: flop and tokens) shows its work per
    joule in the headline's work (tokens/s: tokens/J), not whichever comes first (the H200 run of
    2026-11-28 printed the step's GFLOP/J beside its tokens/s)."""
    step = write_report(tmp_path / "step.json", [
        dict(result("training/step", "passed",
                    metrics=[metric("tokens_per_s", "tokens/s", 4e5),
                             {"name": "gpu_energy_j", "unit": "J", "value": 825.0,
                              "role": "information", "method": "NVML total energy of GPU 0"},
                             {"name": "gpu_gflop_per_j", "unit": "GFLOP/J", "value": 512.0,
                              "role": "information", "method": "per joule"},
                             {"name": "gpu_tokens_per_j", "unit": "tokens/J", "value": 596.0,
                              "role": "information", "method": "per joule"}]), gpu=0)])
    p = table(tmp_path, [("run", "training/step", step, 4.0)])
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert rows_of(p.stdout)["training/step"][6] == "825 J, 596 tokens/J", p.stdout
