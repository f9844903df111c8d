"""The GPU smoke check (ci/gpu-check.sh) as a user runs it: without a GPU it says so and exits 0;
its table (ci/gpu_check_table.py) counts each benchmark's configurations and sanitizer errors
from reports and logs, and fails on anything that failed, was invalid or was not checked."""
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
    assert "no GPU here" in p.stdout and "no CUDA device" in p.stdout, p.stdout
    assert not (tmp_path / "out").exists()  # nothing was run


def test_bad_arguments_exit_2():
    p = subprocess.run([SCRIPT, "--frobnicate"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "unknown argument" in p.stderr
    p = subprocess.run([SCRIPT, "--bin", "/nonexistent/infrabench"], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 2 and "no infrabench executable" in p.stderr


def result(benchmark, status, valid=True):
    return {"benchmark": benchmark, "status": status, "valid": valid}


def write_report(path, results):
    path.write_text(json.dumps({"results": results}))
    return path


def table(tmp_path, lines):
    manifest = tmp_path / "manifest.tsv"
    manifest.write_text("".join("\t".join(map(str, l)) + "\n" for l in lines))
    return subprocess.run([sys.executable, TABLE, str(manifest)], capture_output=True, text=True,
                          timeout=30)


def rows_of(stdout):
    """{benchmark: [cells...]} from the printed table."""
    out = {}
    for line in stdout.splitlines()[2:]:
        cells = line.split()
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
    # passed, invalid, failed, skipped, sanitizer errors, wall s
    assert rows["gemm/cuda_mma"] == ["2", "0", "0", "1", "0", "2.5"], p.stdout
    assert rows["bandwidth/h2d"] == ["1", "0", "0", "1", "not", "run", "1.2"], p.stdout
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
    assert rows["bandwidth/d2d"][:5] == ["1", "0", "1", "0", "3"], p.stdout
    assert rows["bandwidth/p2p"][:2] == ["no", "report"], p.stdout
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
    assert set(rows) == {"gemm/cublas", "gemm/cuda_mma"}, p.stdout  # GPU benchmarks only
    assert rows["gemm/cublas"][:4] == ["1", "0", "0", "0"] and rows["gemm/cublas"][4] == "not"
    assert rows["gemm/cuda_mma"][:5] == ["1", "0", "0", "0", "1"], p.stdout
    assert (out / "gemm_cuda_mma.memcheck.log").exists()
    assert "GPU check: FAIL" in p.stdout
