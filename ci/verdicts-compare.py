#!/usr/bin/env python3
"""Measures compare's verdicts on this machine (issue 26, "Done when": A/A and A/B).

A runs: `infrabench run --repetitions R` of the quick suite, the same binary each time.
B runs: the same under `taskset -c 0` (one CPU): all-thread results (threads=0) lose about half,
single-thread ones (threads=1) should not move.

Runs alternate A, B, A, B, ... (so slow drift of the machine hits both kinds alike) until
--pairs pairs are done or --budget-min minutes have passed, then:
  A/A  every pair of A runs (and, separately, consecutive ones), `compare A_i A_j
       --fail-on-regression PCT` must exit 0: false alarms are the pairs that exit 1;
  A/B  each B against the A run just before it (and every A x B pair): detected when every
       affected gated (headline) metric is a significant regression; a false alarm on an
       unaffected (threads=1) gated metric is counted separately.
Runs already in --out are reused (rerun with --analyse-only to recount without running).
Not a test: a person runs it (about 75 s or more per run here) and quotes its summary.
"""
import argparse
import itertools
import json
import os
import subprocess
import sys
import time


def run_suite(binary, out, reps, confined, suite, extra):
    cmd = [binary, "run", "--suite", suite, "-q", "-o", out] + extra
    if reps > 1:
        cmd += ["--repetitions", str(reps)]
    if confined:
        cmd = ["taskset", "-c", "0"] + cmd
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # exit 1 is a run with failed or INVALID results: still a report to compare
    if p.returncode not in (0, 1) or not os.path.exists(out):
        sys.exit("run failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr[-2000:]))
    return time.time() - t0


def compare(binary, a, b, pct):
    p = subprocess.run([binary, "compare", a, b, "--format", "json"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("compare failed: %s" % p.stderr)
    gate = subprocess.run([binary, "compare", a, b, "--fail-on-regression=%g" % pct],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return json.loads(p.stdout), gate.returncode, gate.stderr


def threads_of(row):
    """The row's threads axis: 0 = all CPUs (affected by taskset -c 0), 1 = one (unaffected)."""
    v = row.get("axes", {}).get("threads")
    return None if v is None else int(v)


def classify(doc, pct):
    """Per gated row of report 1 vs 0: (kind, verdict, loss) with kind affected/unaffected/other."""
    out = []
    for m in doc["metrics"]:
        if not m.get("gated"):
            continue
        r = m["reports"][1]
        t = threads_of(m)
        kind = "affected" if t == 0 else "unaffected" if t == 1 else "other"
        perf = r["perf_ratio"]
        loss = None if perf is None else 1 - perf
        flagged = r["verdict"] == "WORSE" and loss is not None and loss * 100 > pct
        out.append({"kind": kind, "verdict": r["verdict"], "flagged": flagged, "loss": loss,
                    "name": "%s %s %s" % (m["benchmark"], m["configuration"], m["metric"])})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build-cpu/infrabench")
    ap.add_argument("--out", default="verdicts-compare")
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--budget-min", type=float, default=30)
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--suite", default="quick")
    ap.add_argument("--pct", type=float, default=5)
    ap.add_argument("--analyse-only", action="store_true")
    ap.add_argument("extra", nargs="*", help="more `run` arguments (after --)")
    o = ap.parse_args()
    os.makedirs(o.out, exist_ok=True)
    path = lambda kind, i: os.path.join(o.out, "%s%d.json" % (kind, i))
    t_start = time.time()
    i = 0
    while not o.analyse_only and i < o.pairs:
        if time.time() - t_start > o.budget_min * 60:
            break
        for kind in ("a", "b"):
            if not os.path.exists(path(kind, i)):
                s = run_suite(o.bin, path(kind, i), o.repetitions, kind == "b", o.suite, o.extra)
                print("%s%d: %.0f s" % (kind, i, s), flush=True)
        i += 1
    a_runs = sorted((p for p in os.listdir(o.out) if p.startswith("a") and p.endswith(".json")),
                    key=lambda p: int(p[1:-5]))
    n = len(a_runs)
    runs = [(path("a", k), path("b", k)) for k in range(n) if os.path.exists(path("b", k))]
    print("runs: %d A, %d B (%s, --repetitions %d, wall %.0f s)"
          % (n, len(runs), o.suite, o.repetitions, time.time() - t_start))

    # A/A: every pair of A runs, consecutive ones on their own line.
    aa = {}
    for x, y in itertools.combinations(range(n), 2):
        doc, rc, err = compare(o.bin, path("a", x), path("a", y), o.pct)
        aa[(x, y)] = rc
        if rc != 0:
            print("  A/A a%d a%d exit %d:\n%s" % (x, y, rc, err))
    cons = [aa[(k, k + 1)] for k in range(n - 1)]
    print("A/A consecutive pairs: %d, exit 0 in %d (false alarms %d)"
          % (len(cons), cons.count(0), len(cons) - cons.count(0)))
    print("A/A all pairs: %d, exit 0 in %d (false alarms %d)"
          % (len(aa), list(aa.values()).count(0), len(aa) - list(aa.values()).count(0)))

    # A/B: each B against its own A, then every A x B. INVALID results are in no gate (either
    # side): counted apart, so a pair's detection is judged on the affected metrics VALID in both.
    def ab(pairs, label):
        detected = any_flag = false_pairs = 0
        for x, y in pairs:
            doc, rc, _ = compare(o.bin, path("a", x), path("b", y), o.pct)
            rows = classify(doc, o.pct)
            aff = [r for r in rows if r["kind"] == "affected" and r["verdict"] != "INVALID"]
            una = [r for r in rows if r["kind"] == "unaffected" and r["verdict"] != "INVALID"]
            invalid = sum(r["verdict"] == "INVALID" for r in rows if r["kind"] != "other")
            # what the gate lists as "losses on INVALID results, not counted"
            invalid_aff_loss = sum(r["verdict"] == "INVALID" and (r["loss"] or 0) * 100 > o.pct
                                   for r in rows if r["kind"] == "affected")
            hit = sum(r["flagged"] for r in aff)
            wrong = [r for r in una if r["flagged"]]
            detected += hit == len(aff) and aff != []
            any_flag += rc == 1
            false_pairs += wrong != []
            if label == "own":
                other = [r for r in rows if r["kind"] == "other" and r["flagged"]]
                missed = "; ".join("%s %s %+.0f%%" % (r["name"], r["verdict"], -100 * (r["loss"] or 0))
                                   for r in aff if not r["flagged"])
                print("  a%d b%d: exit %d; affected flagged %d/%d%s; unaffected flagged %d/%d%s; "
                      "INVALID (not gated) %d, of them affected and listed as a loss > %g%% %d; "
                      "no threads axis flagged %d" % (
                          x, y, rc, hit, len(aff), " (missed: %s)" % missed if missed else "",
                          len(wrong), len(una),
                          " (%s)" % "; ".join(r["name"] for r in wrong) if wrong else "",
                          invalid, o.pct, invalid_aff_loss, len(other)))
        print("A/B %s pairs: %d; every VALID affected headline flagged in %d; gate exit 1 in %d; "
              "a false alarm on an unaffected metric in %d" % (label, len(pairs), detected, any_flag,
                                                               false_pairs))

    ab([(k, k) for k, _ in enumerate(runs)], "own")
    ab([(x, y) for x in range(n) for y in range(len(runs))], "all A x B")


if __name__ == "__main__":
    main()
