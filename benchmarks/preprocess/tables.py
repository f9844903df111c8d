#!/usr/bin/env python3
"""Markdown tables of the preprocess/* results (the README's), from one or more infrabench
reports: each number is the median over the reports of that configuration's value (runs
alternated on a shared machine are noisy; the median of several is what the README shows).

    for i in 1 2 3; do
      build/infrabench run --filter '^(bandwidth/host_memory|preprocess/)' \\
          -a isa=scalar,avx2,avx512 -a kernel=copy -a stores=regular,nontemporal -o run$i.json
    done
    benchmarks/preprocess/tables.py [--best] run1.json run2.json run3.json

--best takes each configuration's fastest sample rather than its median sample (less sensitive
to other processes on a shared machine; ratios of custom metrics are always from medians).
"""
import json
import statistics
import sys
from collections import defaultdict


# The memory-bound stages, compared with the best STREAM copy of the same thread count.
ROOFLINE = {"preprocess/crop", "preprocess/flip", "preprocess/normalize", "preprocess/layout"}


def load(paths, field="value"):
    """(benchmark, frozen axes) -> metric name -> [values over reports]. field: "value" (from
    the median sample) or "best" (from the fastest sample). Adds "roofline_fraction" to the
    memory-bound stages: GB/s over the best bandwidth/host_memory copy with the same threads in
    the same report (memory bandwidth on a shared VM moves between runs; the ratio within a run
    is what is comparable)."""
    values = defaultdict(lambda: defaultdict(list))
    for p in paths:
        with open(p) as f:
            report = json.load(f)
        passed = [r for r in report["results"] if r["status"] == "passed"]

        def metric(r, name):
            for m in r.get("metrics", []):
                if m["name"] == name:
                    return m.get(field, m["value"])
            return None

        copy = defaultdict(float)
        for r in passed:
            if r["benchmark"] == "bandwidth/host_memory" and r["axes"].get("kernel") == "copy":
                t = r["axes"]["threads"]
                copy[t] = max(copy[t], metric(r, "bandwidth_gbps") or 0)
        for r in passed:
            key = (r["benchmark"], frozenset(r["axes"].items()))
            for m in r.get("metrics", []):
                values[key][m["name"]].append(m.get(field, m["value"]))
            gb = metric(r, "bandwidth_gbps")
            if r["benchmark"] in ROOFLINE and gb and copy.get(r["axes"]["threads"]):
                values[key]["roofline_fraction"].append(gb / copy[r["axes"]["threads"]])
    return values


def pick(values, bench, metric, **axes):
    """Median of `metric` over the reports, for the first configuration matching `axes`."""
    for (b, frozen), metrics in values.items():
        if b != bench:
            continue
        ax = dict(frozen)
        if all(ax.get(k) == v for k, v in axes.items()) and metric in metrics:
            return statistics.median(metrics[metric])
    return None


def fmt(v, unit=""):
    if v is None:
        return "-"
    if unit == "x":
        return f"{v:.2f}x"
    if unit == "%":
        return f"{100 * v:.0f}%"
    if v >= 1000:
        return f"{v / 1000:.1f}k"
    return f"{v:.0f}"


def stages_table(v):
    out = ["| stage (224x224 unless noted) | threads | scalar img/s | AVX2 img/s | AVX-512 img/s | AVX-512 / scalar | AVX-512 GB/s | of memory bandwidth |",
           "|---|---|---|---|---|---|---|---|"]
    rows = [("resize 500x375 -> 341x256", "preprocess/resize", {}),
            ("crop 341x256 -> 224x224", "preprocess/crop", {}),
            ("flip", "preprocess/flip", {}),
            ("normalize u8 -> f32 (HWC), batch 256", "preprocess/normalize",
             {"dtype": "f32", "batch": 256, "stores": "regular"}),
            ("normalize u8 -> f32, batch 256, streaming stores", "preprocess/normalize",
             {"dtype": "f32", "batch": 256, "stores": "nontemporal"}),
            ("HWC -> CHW, f32", "preprocess/layout", {"dtype": "f32"}),
            ("fused pipeline (no decode), f32", "preprocess/pipeline",
             {"source": "pixels", "dtype": "f32", "stores": "regular"}),
            ("decode + fused pipeline, f32", "preprocess/pipeline",
             {"source": "jpeg", "dtype": "f32", "stores": "regular"})]
    for label, bench, axes in rows:
        for threads in (1, 0):
            a = dict(axes, threads=threads)
            s = pick(v, bench, "images_per_s", isa="scalar", **a)
            x2 = pick(v, bench, "images_per_s", isa="avx2", **a)
            x5 = pick(v, bench, "images_per_s", isa="avx512", **a)
            gb = pick(v, bench, "bandwidth_gbps", isa="avx512", **a)
            frac = pick(v, bench, "roofline_fraction", isa="avx512", **a)
            ratio = x5 / s if x5 and s else None
            gbs = f"{gb:.1f}" if gb else "-"
            out.append(f"| {label} | {threads or 'all'} | {fmt(s)} | {fmt(x2)} | {fmt(x5)} | "
                       f"{fmt(ratio, 'x')} | {gbs} | {fmt(frac, '%')} |")
    d1 = pick(v, "preprocess/decode", "images_per_s", threads=1)
    d0 = pick(v, "preprocess/decode", "images_per_s", threads=0)
    out.append(f"| JPEG decode 500x375 (libjpeg-turbo) | 1 / all | {fmt(d1)} / {fmt(d0)} | | | | | |")
    return "\n".join(out)


def opencv_table(v):
    out = ["| source | threads | infrabench img/s | OpenCV img/s (parallel=images) | OpenCV img/s (parallel=opencv) | infrabench / best OpenCV |",
           "|---|---|---|---|---|---|"]
    for source in ("pixels", "jpeg"):
        for threads in (1, 0):
            ours = pick(v, "preprocess/pipeline", "images_per_s", source=source, threads=threads,
                        dtype="f32", isa="avx512", stores="regular") or \
                pick(v, "preprocess/pipeline", "images_per_s", source=source, threads=threads,
                     dtype="f32", isa="auto", stores="regular")
            cv_i = pick(v, "preprocess/pipeline_opencv", "images_per_s", source=source,
                        threads=threads, dtype="f32", parallel="images")
            cv_o = pick(v, "preprocess/pipeline_opencv", "images_per_s", source=source,
                        threads=threads, dtype="f32", parallel="opencv")
            best = max([x for x in (cv_i, cv_o) if x] or [0])
            out.append(f"| {source} | {threads or 'all'} | {fmt(ours)} | {fmt(cv_i)} | {fmt(cv_o)} | "
                       f"{fmt(ours / best if ours and best else None, 'x')} |")
    return "\n".join(out)


def roofline_table(v):
    out = ["| threads | STREAM copy GB/s (regular / streaming) | normalize f32 GB/s (regular / streaming) | bf16 | f16 | f32 normalize / best copy (regular / streaming) |",
           "|---|---|---|---|---|---|"]
    for threads in (1, 0):
        copy = [pick(v, "bandwidth/host_memory", "bandwidth_gbps", kernel="copy", threads=threads,
                     stores=s, isa="avx512") for s in ("regular", "nontemporal")]
        norm = {}
        for dtype in ("f32", "bf16", "f16"):
            norm[dtype] = [pick(v, "preprocess/normalize", "bandwidth_gbps", dtype=dtype, batch=256,
                                threads=threads, stores=s, isa="avx512")
                           for s in ("regular", "nontemporal")]

        def pair(p):
            return " / ".join(f"{x:.1f}" if x else "-" for x in p)

        fracs = [pick(v, "preprocess/normalize", "roofline_fraction", dtype="f32", batch=256,
                      threads=threads, stores=s, isa="avx512") for s in ("regular", "nontemporal")]
        out.append(f"| {threads or 'all'} | {pair(copy)} | {pair(norm['f32'])} | {pair(norm['bf16'])} | "
                   f"{pair(norm['f16'])} | {' / '.join(fmt(x, '%') for x in fracs)} |")
    return "\n".join(out)


def main(args):
    field = "value"
    if args and args[0] == "--best":
        field, args = "best", args[1:]
    paths = args
    if not paths:
        print(__doc__)
        return 2
    v = load(paths, field)
    print("Stages, by ISA:\n")
    print(stages_table(v))
    print("\nFused pipeline against OpenCV:\n")
    print(opencv_table(v))
    print("\nconvert + normalize against the measured memory bandwidth (batch 256, AVX-512):\n")
    print(roofline_table(v))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
