#!/usr/bin/env python3
"""Writes a SYNTHETIC report shaped like `mpirun -np RANKS infrabench run --suite full` on GPU nodes,
for timing the renderers (ci/report-speed.sh): every configuration `infrabench list --suite full`
gives on this build, plus the GPU part a CUDA build adds (copy sweeps with a column per GPU, cuBLAS
shapes, NCCL collectives over sizes), each run by every rank, RANKS_PER_HOST ranks a host. The
numbers are made up (a seeded generator); about 5% of the results are INVALID and 1% FAILED, so the
renderers' slow paths for those run too. It tests speed; it is never quoted as a measurement.

  tests/perf/synth_report.py --bin build-cpu/infrabench --ranks 64 -o /tmp/synth64.json

A build without CUDA lists fewer configurations than a CUDA build (190 against 1,357 on the 2-vCPU
VM of docs/scale.md): --configurations N pads its list with copies of its benchmarks under other
names (bandwidth/host_memory_c1, ...), as many as a CUDA build's GPU benchmarks, which no CPU rule
names either, so that the report has N configurations in all (1,643: a CUDA build's).
"""
import argparse
import json
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz"))
from make_corpus import host, report, result  # noqa: E402

SIZES = ["4KiB", "32KiB", "256KiB", "2MiB", "16MiB", "128MiB", "1GiB"]
GPUS = 8


def parse_configuration(text):
    """'kernel=copy array_size=256MiB threads=1' -> {'kernel': 'copy', 'array_size': 268435456, ...}."""
    axes = {}
    for part in text.split():
        key, _, value = part.partition("=")
        axes[key] = int(value) if value.lstrip("-").isdigit() else value
    return axes


def padded(configs, total):
    """`configs` repeated, each copy's benchmarks renamed NAME_cK, until there are `total`."""
    out = []
    k = 0
    while len(out) < total:
        out += [(bench + ("_c%d" % k if k else ""), axes) for bench, axes in configs][:total - len(out)]
        k += 1
    return out


def cpu_configurations(binary):
    listed = json.loads(subprocess.run([binary, "list", "--suite", "full", "--json"], check=True,
                                       capture_output=True, text=True).stdout)
    return [(c["benchmark"], parse_configuration(c["configuration"])) for c in listed["configurations"]]


def gpu_configurations():
    out = []
    for bench in ("bandwidth/h2d", "bandwidth/d2h", "bandwidth/bidirectional", "bandwidth/d2d"):
        for size in SIZES:
            for memory in ("pinned", "pageable"):
                for engine in ("ce", "sm"):
                    out.append((bench, {"size": size, "memory": memory, "engine": engine}))
    for dtype in ("fp32", "tf32", "bf16", "fp16"):
        for shape in ("1024", "2048", "4096", "8192", "16384", "llama3-8b.qkv@4096"):
            out.append(("gemm/cublas", {"shape": shape, "dtype": dtype, "trans": "nn"}))
    for coll in ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall"):
        for k in range(25):
            out.append(("collectives/nccl_" + coll, {"size": 1024 << k, "dtype": "float"}))
    return out


def metrics_for(rng, bench, axes):
    """A headline rate, a time and a percentile family (as storage and collectives write them); a
    column per GPU for the copies."""
    scale = 1 + rng.random()
    if bench.startswith("bandwidth/") and "memory" in axes:
        return [("bandwidth_gbps_gpu%d" % g, "GB/s", 20 * scale, "higher") for g in range(GPUS)]
    return [("throughput", "GB/s", 10 * scale, "higher"), ("time_us", "us", 50 / scale, "lower"),
            ("latency_us_p50", "us", 40 * scale, "lower"), ("latency_us_p99", "us", 90 * scale, "lower"),
            ("latency_us_p99_9", "us", 250 * scale, "lower")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="the infrabench whose full suite is the shape")
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--ranks-per-host", type=int, default=8)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--configurations", type=int,
                    help="pad the build's list to this many configurations in all (a CUDA build's: 1643)")
    a = ap.parse_args()
    rng = random.Random(64)
    gpu = gpu_configurations()
    cpu = cpu_configurations(a.bin)
    if a.configurations:
        cpu = padded(cpu, a.configurations - len(gpu))
    configs = cpu + gpu
    results = []
    for rank in range(a.ranks):
        node = "synth-node%02d" % (rank // a.ranks_per_host)
        for bench, axes in configs:
            roll = rng.random()
            status = "failed" if roll < 0.01 else "passed"
            r = result(rng, bench, axes, metrics_for(rng, bench, axes), node, rank, status=status,
                       reason="synthetic failure" if status == "failed" else None, valid=roll > 0.06)
            results.append(r)
    hosts = [host("synth-node%02d" % h) for h in range((a.ranks + a.ranks_per_host - 1) // a.ranks_per_host)]
    doc = report(results, hosts, world=a.ranks)
    doc["run"]["suite"]["name"] = "synthetic-full"
    with open(a.output, "w") as f:
        json.dump(doc, f)
    print("%s: %d configurations x %d ranks = %d results, %.1f MB" %
          (a.output, len(configs), a.ranks, len(results), os.path.getsize(a.output) / 1e6))


if __name__ == "__main__":
    main()
