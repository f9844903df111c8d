#!/usr/bin/env python3
"""Synthetic fleet node reports made from one real report (issue 39): the fleet check's test
(tests/e2e/test_fleet_check.py) and its 1,000-node measurement (ci/fleet-check.sh).

Each node's report is the real one with its host renamed (node0000, ...) and every metric moved by
up to +-2% (a healthy fleet is not identical). Some nodes are degraded: `slow` ones take 3x as long
on every performance metric (below the baseline's threshold), `outlier` ones 1.3x (within the
threshold, but far from the other nodes: only the cross-node rule catches them), `failed` ones had
their first judged configuration fail. Every result is VALID and measured on an idle machine, as a
quiet node's would be (the real report comes from a shared machine, whose noise and load are not
what this tests: a slow node whose machine was busy is INCONCLUSIVE, not FAIL).

The baseline written beside them has, per passed configuration with a headline metric, a threshold
at 1.5x worse than the real value and a no_outlier_nodes rule (max_deviation 0.2).

usage: fleet_reports.py REPORT OUTDIR --nodes N [--slow 3,17] [--outlier 5] [--failed 9]
                        [--baseline FILE] [--max-configurations N]
Prints the hosts that must be drained, one per line, sorted.
"""
import argparse
import copy
import json
import math
import os
import random
import sys


def host_name(i):
    return f"node{i:04d}"


def headline(meta, result):
    """The declared headline of the result's benchmark; for a report without declarations (a
    synthetic one, tests/perf/synth_report.py), its first metric."""
    for m in meta.get(result["benchmark"], {}).get("metrics", []):
        if m.get("headline"):
            return m
    if not meta and result.get("metrics"):
        return result["metrics"][0]
    return None


def judged(doc, limit=None):
    """(result index, headline declaration) of each passed configuration the baseline judges (the
    first `limit`; rank 0's only, a configuration once)."""
    meta = doc["run"].get("benchmark_metadata", {})
    out = []
    for i, r in enumerate(doc["results"]):
        if limit is not None and len(out) >= limit:
            break
        if r.get("rank", 0) != 0:
            continue
        h = headline(meta, r)
        if r.get("status") != "passed" or h is None or h.get("role", "performance") != "performance":
            continue
        m = next((m for m in r.get("metrics", []) if m["name"] == h["name"]), None)
        if m is None or not isinstance(m.get("value"), (int, float)) or m["value"] <= 0:
            continue
        out.append((i, h))
    return out


def baseline(doc, limit=None):
    rules = []
    for k, (i, h) in enumerate(judged(doc, limit)):
        r = doc["results"][i]
        value = next(m["value"] for m in r["metrics"] if m["name"] == h["name"])
        higher = h.get("better", "higher") == "higher"
        limit = {"min": value / 1.5} if higher else {"max": value * 1.5}
        common = {"benchmark": r["benchmark"], "axes": r["axes"], "metric": h["name"]}
        rules.append({"id": f"r{k}", **common, **limit})
        rules.append({"id": f"r{k}-outliers", **common, "no_outlier_nodes": {"max_deviation": 0.2}})
    return {"infrabench_baseline": 1, "name": "fleet", "rules": rules}


def scale(metric, factor):
    """Moves a metric `factor` times worse (factor < 1: better), its value, best and samples."""
    higher = metric.get("better", "higher") == "higher"
    f = 1 / factor if higher else factor
    for key in ("value", "best"):
        if isinstance(metric.get(key), (int, float)) and math.isfinite(metric[key]):
            metric[key] *= f
    if isinstance(metric.get("samples"), list):
        metric["samples"] = [s * f if isinstance(s, (int, float)) else s for s in metric["samples"]]


def node_report(doc, i, kind, first_judged):
    out = copy.deepcopy(doc)
    name = host_name(i)
    rng = random.Random(i)
    for h in out.get("hosts", []):
        h["hostname"] = name
    for k, r in enumerate(out["results"]):
        r.update(host=name, valid=True, invalid_reasons=[], invalid_reason_codes=[])
        r.pop("sampling_load", None)
        for m in r.get("metrics", []):
            scale(m, 1 + rng.uniform(-0.02, 0.02))
            if m.get("role", "performance") == "performance" and kind in ("slow", "outlier"):
                scale(m, 3.0 if kind == "slow" else 1.3)
        if kind == "failed" and k == first_judged:
            r.update(status="failed", reason="injected: the benchmark failed on this node",
                     metrics=[], samples_s=[])
            r.pop("time_s", None)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report")
    ap.add_argument("outdir")
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--slow", default="")
    ap.add_argument("--outlier", default="")
    ap.add_argument("--failed", default="")
    ap.add_argument("--baseline")
    ap.add_argument("--max-configurations", type=int, help="judge only the first N (default: all)")
    a = ap.parse_args()
    with open(a.report) as f:
        doc = json.load(f)
    kinds = {}
    for kind in ("slow", "outlier", "failed"):
        for x in filter(None, getattr(a, kind).split(",")):
            kinds[int(x)] = kind
    js = judged(doc)
    if not js:
        sys.exit(f"{a.report}: no passed configuration with a headline metric to judge")
    os.makedirs(a.outdir, exist_ok=True)
    for i in range(a.nodes):
        text = json.dumps(node_report(doc, i, kinds.get(i, "healthy"), js[0][0]))
        with open(os.path.join(a.outdir, host_name(i) + ".json"), "w") as f:
            f.write(text)
    if a.baseline:
        with open(a.baseline, "w") as f:
            json.dump(baseline(doc, a.max_configurations), f, indent=1)
    for i in sorted(k for k in kinds if k < a.nodes):
        print(host_name(i))


if __name__ == "__main__":
    main()
