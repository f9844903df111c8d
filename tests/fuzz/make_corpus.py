#!/usr/bin/env python3
"""Writes the seed corpus of the report and baseline parser fuzzers (tests/fuzz/corpus/), which the
end-to-end and unit tests use as fixtures too.

  tests/fuzz/make_corpus.py [REAL_REPORT.json]

With a report written by `infrabench run`, a trimmed copy of it (5 samples per metric) becomes
report/real_quick.json. The other reports are SYNTHETIC (suite name "synthetic-fixture", hosts
"fixture-*"): shapes the suite cannot produce on one CPU-only machine (4 nodes with a slow one, the
collectives/pairwise matrix, storage/read latency percentiles, a gemm/ours_fp32 shape sweep with
gemm/cpu_peak, a two-node bandwidth/numa_matrix, preprocess/pipeline; a GPU node's copy sweeps, p2p
matrix, axis metadata and telemetry), with made-up numbers, under the
benchmark names and axes the suite writes today. They test
the code paths; they are not measurements and are never quoted as such.
"""
import copy
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")


def stats(samples):
    s = sorted(samples)
    n = len(s)
    med = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    mean = sum(s) / n
    sd = (sum((x - mean) ** 2 for x in s) / max(1, n - 1)) ** 0.5
    return {"n": n, "min": s[0], "max": s[-1], "mean": mean, "median": med, "p90": s[int(0.9 * (n - 1))],
            "p99": s[-1], "stdev": sd, "cv": sd / mean, "robust_cv": 0.01, "median_ci95": [s[0], s[-1]],
            "mean_ci95": [mean - sd, mean + sd]}


def result(rng, bench, axes, metrics, host="fixture-node1", rank=0, status="passed", reason=None, valid=True):
    """metrics: list of (name, unit, value, better)."""
    r = {"benchmark": bench, "axes": axes,
         "axes_display": {k: (v if isinstance(v, str) else str(v)) for k, v in axes.items()},
         "status": status, "valid": valid, "invalid_reasons": [] if valid else ["noisy: synthetic"],
         "warnings": [], "rank": rank, "host": host, "elapsed_s": 0.5,
         "work_per_iteration": {"bytes_read": 0.0, "bytes_written": 0.0, "flops": 0.0, "items": 0.0,
                                "item_name": "item"},
         "metrics": []}
    if reason:
        r["reason"] = reason
    if status != "passed":
        return r
    times = [round(0.01 * (1 + rng.gauss(0, 0.01)), 6) for _ in range(5)]
    r.update({"timer": "cpu_steady_clock", "iterations_per_sample": 1, "stop_reason": "converged",
              "time_s": stats(times), "samples_s": times})
    for name, unit, value, better in metrics:
        samples = [round(value * (1 + rng.gauss(0, 0.01)), 4) for _ in range(5)]
        r["metrics"].append({"name": name, "unit": unit, "value": value, "best": max(samples) if better == "higher" else min(samples),
                             "better": better, "method": "synthetic fixture", "samples": samples})
    return r


def host(name):
    return {"hostname": name, "cpu": {"model": "Fixture CPU", "cores": 2, "sockets": 1},
            "memory": {"total_bytes": 25276510208, "available_bytes": 20000000000},
            "os": {"name": "Debian GNU/Linux 12 (bookworm)", "kernel": "6.1.0-fixture", "arch": "x86_64"},
            "build": {"git_commit": "fixture", "compiler": "GNU 12.2.0", "build_type": "Release", "version": "0.1.0"},
            "gpus": [], "timestamp_utc": "2026-01-01T00:00:00.000Z"}


def report(results, hosts, started="2026-01-01T00:00:00.000Z", world=1):
    return {"schema_version": "1.0.0", "tool": "infrabench",
            "units": "decimal: GB = 1e9 bytes, GB/s = 1e9 bytes/s; sizes in axes are binary (KiB = 1024 B)",
            "run": {"command_line": ["infrabench", "run"], "started_utc": started, "finished_utc": started,
                    "launcher": "mpi" if world > 1 else "single", "world_size": world, "interrupted": False,
                    "suite": {"name": "synthetic-fixture", "source": "tests/fuzz/make_corpus.py", "benchmarks": []},
                    "settings": {"min_samples": 5, "min_time_s": 0.2, "max_time_s": 1.5, "target_rel_ci": 0.02,
                                 "timeout_s": 60.0, "min_sample_time_s": 0.001, "max_cv": 0.1, "options": {}}},
            "capabilities": {"isa": {}, "cuda": {"available": False, "reason": "fixture"},
                             "nccl": {"available": False, "reason": "fixture"}, "io_uring": {"available": True},
                             "mpi": {"available": world > 1}},
            "hosts": hosts,
            "summary": {"configurations": len(results),
                        "passed": sum(r["status"] == "passed" for r in results),
                        "skipped": sum(r["status"] == "skipped" for r in results),
                        "failed": sum(r["status"] == "failed" for r in results),
                        "invalid": sum(r["status"] == "passed" and not r["valid"] for r in results)},
            "results": results}


def multinode(rng):
    nodes = ["fixture-node%d" % i for i in range(4)]
    res = []
    for i, n in enumerate(nodes):
        slow = 0.7 if i == 3 else 1.0  # node 3: a slow memory channel (made up)
        for kernel, bw in (("copy", 40.0), ("triad", 45.0)):
            res.append(result(rng, "bandwidth/host_memory", {"kernel": kernel, "threads": 0},
                              [("bandwidth_gbps", "GB/s", bw * slow * (1 + 0.01 * i), "higher")], n, i))
        # The pairwise matrix as collectives/pairwise writes it: one result per rank (the row), a
        # metric per peer (the column); links to and from node 3 are slow (made up).
        links = [("bandwidth_gbps_to_rank_%d" % j, "GB/s", 5.0 if 3 in (i, j) else 12.0, "higher")
                 for j in range(4) if j != i]
        res.append(result(rng, "collectives/pairwise", {"between": "nodes", "size": 1048576},
                          links + [("bandwidth_gbps_min", "GB/s", min(l[2] for l in links), "higher")], n, i))
        for bs in (4096, 131072, 1048576):
            res.append(result(rng, "storage/read", {"engine": "io_uring", "pattern": "rand", "block_size": bs,
                                                    "queue_depth": 32, "size": 134217728},
                              [("bandwidth_gbps", "GB/s", min(2.0, bs / 4096 * 0.25), "higher"),
                               ("latency_us_p50", "us", 40 + bs / 10000, "lower"),
                               ("latency_us_p99", "us", 90 + bs / 5000, "lower"),
                               ("latency_us_p99_9", "us", 250 + bs / 2000, "lower")], n, i))
        # gemm/ours_fp32 as it writes results: a string shape axis (square sizes and a model shape)
        # and its fraction of the FMA peak that gemm/cpu_peak measured.
        for shape in ("512", "1024", "2048", "4096", "llama3-8b.qkv@1024"):
            size = int(shape) if shape.isdigit() else 1024
            gflops = 150 * (1 - 256 / size)
            res.append(result(rng, "gemm/ours_fp32", {"shape": shape, "threads": 0, "trans": "nn", "isa": "auto"},
                              [("gflops", "GFLOP/s", gflops, "higher"),
                               ("pct_of_fma_peak", "%", 100 * gflops / 200, "higher")], n, i))
        for isa, peak in (("avx2_fp32", 100.0), ("avx512_fp32", 200.0)):
            res.append(result(rng, "gemm/cpu_peak", {"isa": isa, "threads": 0},
                              [("gflops", "GFLOP/s", peak, "higher"), ("clock_ghz", "GHz", 3.0, "higher")], n, i))
        res.append(result(rng, "gemm/cublas", {"shape": "4096", "dtype": "bf16", "trans": "nn"}, [], n, i,
                          status="skipped", reason="no CUDA device: fixture"))
    return report(res, [host(n) for n in nodes], world=4)


def gpu(rng):
    """One GPU node as the copy benchmarks write it: a result per size x memory x copy with the GPU
    as a column (bandwidth_gbps_gpu0, efficiency_pct_gpu0 and ceiling_gbps_gpu0 of a 63 GB/s PCIe
    5.0 x16 link), d2d against HBM (efficiency only, as reports before ceiling_gbps), a 2-GPU p2p matrix, information metrics (clocks), the axis metadata the harness
    writes (size is a byte axis) and node telemetry (GPU and CPU traces, counters, an event)."""
    results = []
    sizes = [4096, 65536, 1048576, 16777216, 268435456]
    for bench, link, scale in (("bandwidth/h2d", 63.0, 0.87), ("bandwidth/d2h", 63.0, 0.87),
                               ("bandwidth/bidirectional", 126.0, 0.78)):
        for size in sizes:
            for memory in ("pinned", "pageable"):
                for copy_ in ("ce", "sm"):
                    bw = link * scale * size / (size + 262144) * (1.0 if memory == "pinned" else 0.45) * \
                        (1.0 if copy_ == "ce" else 0.93)
                    r = result(rng, bench, {"size": size, "memory": memory, "copy": copy_, "numa_node": 0, "gpu": -1},
                               [("bandwidth_gbps_gpu0", "GB/s", round(bw, 3), "higher"),
                                ("efficiency_pct_gpu0", "%", round(100 * bw / link, 3), "higher")])
                    r["axes_display"]["size"] = fmt_bytes(size)
                    r["metrics"].append({"name": "ceiling_gbps_gpu0", "unit": "GB/s", "value": link, "best": link,
                                         "better": "higher", "role": "information", "samples": [],
                                         "method": "theoretical PCIe 5.0 x16 (synthetic)"})
                    results.append(r)
    for size in (268435456, 1073741824):
        for copy_ in ("ce", "sm"):
            r = result(rng, "bandwidth/d2d", {"size": size, "copy": copy_, "gpu": -1},
                       [("bandwidth_gbps_gpu0", "GB/s", 2970.0 if copy_ == "ce" else 2850.0, "higher"),
                        ("efficiency_pct_gpu0", "%", 88.6 if copy_ == "ce" else 85.0, "higher")])
            r["axes_display"]["size"] = fmt_bytes(size)
            results.append(r)
    for src in (0, 1):
        results.append(result(rng, "bandwidth/p2p", {"src": src, "dst": -1, "size": 268435456, "copy": "ce"},
                              [("bandwidth_gbps_gpu%d" % d, "GB/s", 0.0 if d == src else 390.0, "higher")
                               for d in (0, 1)]))
    results.append(result(rng, "gemm/cublas", {"shape": "8192", "dtype": "bf16"},
                          [("gflops", "GFLOP/s", 699000.0, "higher"), ("sm_clock_mhz_actual", "MHz", 1650.0, "higher")]))
    results[-1]["metrics"][1]["role"] = "information"
    doc = report(results, [host("fixture-gpu")])
    size_axis = {"kind": "int64", "bytes": True, "pow2": True, "unit": "B", "description": "bytes per copy"}
    plain = {"kind": "string", "bytes": False, "pow2": False, "description": "synthetic"}
    doc["run"]["benchmark_metadata"] = {
        b: {"requires": ["cuda"], "axes": {"size": size_axis, "memory": plain, "copy": plain, "numa_node": plain,
                                           "gpu": plain, "src": plain, "dst": plain}}
        for b in ("bandwidth/h2d", "bandwidth/d2h", "bandwidth/bidirectional", "bandwidth/d2d", "bandwidth/p2p")}
    doc["run"]["benchmark_metadata"]["gemm/cublas"] = {"requires": ["cuda"], "axes": {}}
    t = [round(0.1 * i, 1) for i in range(40)]
    doc["telemetry"] = {
        "interval_s": 0.1,
        "gpus": [{"index": 0, "name": "Fixture GPU",
                  "trace": {"t_s": t, "sm_clock_mhz": [1980 if i < 10 else 1650 for i in range(40)],
                            "mem_clock_mhz": [2619] * 40, "power_w": [120 if i < 10 else 690 for i in range(40)],
                            "temp_c": [38 + i // 2 for i in range(40)]},
                  "counters_before": {"xid_count": 0, "ecc": {"volatile_sbe": 0}, "throttle_us": 0},
                  "counters_after": {"xid_count": 1, "ecc": {"volatile_sbe": 0}, "throttle_us": 1500}}],
        "cpu": {"trace": {"t_s": t, "freq_mhz_mean": [4400 - 5 * i for i in range(40)],
                          "package_temp_c": [50 + i // 4 for i in range(40)]},
                "counters_before": {"context_switches": 1000}, "counters_after": {"context_switches": 5200}},
        "events": [{"t_s": 2.5, "kind": "xid", "gpu": 0, "text": "Xid 63: row remapping (synthetic)"}]}
    doc["summary"]["configurations"] = len(results)
    doc["summary"]["passed"] = len(results)
    return doc


def fmt_bytes(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n % div == 0:
            return "%d%s" % (n // div, unit)
    return str(n)


def main():
    rng = random.Random(1)
    os.makedirs(os.path.join(OUT, "report"), exist_ok=True)
    os.makedirs(os.path.join(OUT, "baseline"), exist_ok=True)
    docs = {"report/synthetic_multinode.json": multinode(rng)}
    single = report([result(rng, "bandwidth/host_memory", {"kernel": "triad", "threads": 1},
                            [("bandwidth_gbps", "GB/s", 30.0, "higher")]),
                     result(rng, "bandwidth/memory_latency", {"working_set": 268435456},
                            [("ns_per_load", "ns", 150.0, "lower")], valid=False),
                     result(rng, "storage/read", {"engine": "io_uring", "block_size": 4096}, [], status="failed",
                            reason="open /scratch: Permission denied")],
                    [host("fixture-node1")])
    # A two-node host as bandwidth/numa_matrix writes it: a row per CPU node, a metric per memory node.
    for cpu in (0, 1):
        single["results"].append(result(rng, "bandwidth/numa_matrix", {"cpu_node": cpu, "threads": 0},
                                        [("bandwidth_gbps_mem%d" % m, "GB/s", 40.0 if m == cpu else 25.0, "higher")
                                         for m in (0, 1)]))
    for threads in (1, 0):
        single["results"].append(result(rng, "preprocess/pipeline",
                                        {"isa": "auto", "threads": threads, "batch": 32, "source": "pixels"},
                                        [("images_per_s", "images/s", 900.0 * (2 if threads == 0 else 1), "higher"),
                                         ("input_gbps", "GB/s", 0.5, "higher")]))
    single["summary"]["configurations"] = len(single["results"])
    single["summary"]["passed"] += 4
    docs["report/synthetic_single.json"] = single
    older = copy.deepcopy(single)  # what a 1.0 writer without the optional fields would leave
    for r in older["results"]:
        for k in ("axes_display", "invalid_reasons", "warnings", "time_s", "samples_s"):
            r.pop(k, None)
        for m in r["metrics"]:
            m.pop("best", None)
    docs["report/minimal_fields.json"] = older
    docs["report/synthetic_gpu.json"] = gpu(random.Random(2))
    if len(sys.argv) > 1:
        with open(sys.argv[1]) as f:
            real = json.load(f)
        for r in real["results"]:
            if "samples_s" in r:
                r["samples_s"] = r["samples_s"][:5]
            for m in r["metrics"]:
                m["samples"] = m["samples"][:5]
        docs["report/real_quick.json"] = real
    docs["baseline/all_kinds.json"] = {
        "infrabench_baseline": 1, "name": "fuzz-seed", "source": "measured",
        "defaults": {"require_valid": False, "max_deviation": 0.1},
        "rules": [
            {"benchmark": "bandwidth/host_memory", "axes": {"kernel": "triad"}, "metric": "bandwidth_gbps", "min": 20, "unit": "GB/s"},
            {"benchmark": "bandwidth/memory_latency", "metric": "ns_per_load", "reference": [150, None, 0.2, "ns"]},
            {"benchmark": "bandwidth/memory_latency", "metric": "ns_per_load", "reference": {"value": 150, "lower": -0.5, "upper": 0.5}},
            {"benchmark": "gemm/ours_fp32", "axes": {"shape": "4096"}, "metric": "gflops",
             "fraction_of_peak": {"min": 0.6, "peak_metric": "gflops", "peak_benchmark": "gemm/cpu_peak",
                                  "peak_axes": {"isa": "avx512_fp32", "threads": 0}}},
            {"benchmark": "gemm/ours_fp32", "metric": "gflops", "fraction_of_peak": {"min": 0.1, "peak": 1000, "peak_source": "datasheet"}},
            {"benchmark": "bandwidth/host_memory", "metric": "bandwidth_gbps", "no_outlier_nodes": {"max_deviation": 0.1}},
            {"id": "waived", "benchmark": "gemm/cublas", "metric": "tflops", "min": 1, "waived": "no GPU in this class"},
        ]}
    docs["baseline/minimal.json"] = {"infrabench_baseline": 1, "rules": [
        {"benchmark": "bandwidth/host_memory", "metric": "bandwidth_gbps", "max": 1000}]}
    for name, doc in docs.items():
        with open(os.path.join(OUT, name), "w") as f:
            json.dump(doc, f, indent=1 if name.startswith("baseline") else None)
            f.write("\n")
        print("wrote", os.path.join("tests/fuzz/corpus", name))


if __name__ == "__main__":
    main()
