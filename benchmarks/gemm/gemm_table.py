#!/usr/bin/env python3
"""Measures the README's CPU GEMM table: ours vs OpenBLAS vs oneDNN, fp32 and bf16, at 1 and all
threads, as a fraction of the measured FMA peak.

The machine is shared and noisy, so each (shape, threads) point is run `--repeat` times in
separate `infrabench run` invocations, alternating with the other points, and every number is the
median over the repeats of each run's median (the "best" column: the fastest sample seen). Every
value comes from a report whose results passed verification; invalid (noisy) results still count,
and the table says how many were.

    benchmarks/gemm/gemm_table.py --bin build/infrabench --shapes 1024,2048,4096 --repeat 5
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

REFS = "^gemm/(cpu_peak|onednn_fp32|onednn_bf16|openblas_fp32|ours_fp32|ours_bf16)$"


def run_once(binary, shape, threads, min_time, max_time):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        cmd = [binary, "run", "--suite", "full", "--filter", REFS, "-a", "shape=" + shape,
               "-a", "threads=%d" % threads, "--min-time", str(min_time), "--max-time",
               str(max_time), "-q", "-o", out]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit("infrabench failed (%d): %s" % (p.returncode, p.stderr))
        with open(out) as f:
            return json.load(f)


def gflops(result):
    for m in result.get("metrics", []):
        if m["name"] == "gflops":
            return m["value"], m["best"]
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="build/infrabench")
    ap.add_argument("--shapes", default="1024,2048,4096")
    ap.add_argument("--threads", default="1,0")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--max-time", type=float, default=3)
    args = ap.parse_args()
    shapes = args.shapes.split(",")
    threads = [int(t) for t in args.threads.split(",")]

    # (bench, shape, threads, isa) -> lists of (median, best)
    data, invalid, failed = {}, {}, []
    for rep in range(args.repeat):
        for shape in shapes:
            for t in threads:
                report = run_once(args.bin, shape, t, args.min_time, args.max_time)
                for r in report["results"]:
                    if r["status"] != "passed":
                        continue
                    if any("fp64" in why for why in r["invalid_reasons"]):
                        failed.append((r["benchmark"], r["axes"]))
                        continue
                    g = gflops(r)
                    if g is None:
                        continue
                    isa = r["axes"].get("isa", "")
                    key = (r["benchmark"], shape, t, isa if r["benchmark"] == "gemm/cpu_peak" else "")
                    data.setdefault(key, []).append(g)
                    if not r["valid"]:
                        invalid[key] = invalid.get(key, 0) + 1
                print("repeat %d shape %s threads %d done" % (rep + 1, shape, t), file=sys.stderr)
    if failed:
        sys.exit("verification failed: %s" % failed)

    def med(key):
        v = data.get(key)
        return statistics.median(x[0] for x in v) if v else None

    def best(key):
        v = data.get(key)
        return max(x[1] for x in v) if v else None

    def fmt(x):
        return "—" if x is None else "%.0f" % x

    def pct(a, b):
        return "—" if a is None or not b else "%.0f%%" % (100.0 * a / b)

    def table(agg, title):
        print(title)
        print("| shape | threads | peak fp32 | ours fp32 | OpenBLAS | oneDNN fp32 | ours / best ref "
              "| ours % peak | peak bf16 | ours bf16 | oneDNN bf16 | ours / oneDNN | ours bf16 % peak |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for shape in shapes:
            for t in threads:
                def k(b, isa=""):
                    return (b, shape, t, isa)
                pf = best(k("gemm/cpu_peak", "avx512_fp32"))
                pb = best(k("gemm/cpu_peak", "avx512_bf16"))
                o32, ob, od32 = agg(k("gemm/ours_fp32")), agg(k("gemm/openblas_fp32")), agg(
                    k("gemm/onednn_fp32"))
                o16, od16 = agg(k("gemm/ours_bf16")), agg(k("gemm/onednn_bf16"))
                refs = [x for x in (ob, od32) if x]
                print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    shape, "all" if t == 0 else t, fmt(pf), fmt(o32), fmt(ob), fmt(od32),
                    pct(o32, max(refs) if refs else None), pct(o32, pf), fmt(pb), fmt(o16),
                    fmt(od16), pct(o16, od16), pct(o16, pb)))
        print()

    table(med, "Median over %d runs of each run's median GFLOP/s (peaks: fastest sample of "
          "gemm/cpu_peak):" % args.repeat)
    table(best, "Fastest sample over %d runs (the least disturbed by other load):" % args.repeat)
    print("Results flagged noisy (robust CV > 10%%): %d of %d." % (
        sum(invalid.values()), sum(len(v) for v in data.values())))

if __name__ == "__main__":
    main()
