#!/usr/bin/env python3
"""Issue 44, offline: the regression gate's decision recomputed from the repetitions of the reports
ci/noise-protocol.sh kept (a*.json, q*.json, t*.json), under variants of its between-run test, to
judge a change of test by the same protocol before it goes into `compare` (docs/reports.md):
two_sided (Welch, as `compare` decides), one_sided (toward a loss), margin (the loss confidently
more than the threshold), moderated (each row's variance shrunk toward the median of the rows, as
limma does for few replicates) and moderated_margin. Every performance metric of both reports, BH
over them, a loss of at least 5%; no canary exclusion (compare names machine drift apart).
Usage: ci/gate-variants.py OUT_DIR"""
import glob, itertools, json, math, re, sys

def betacf(a, b, x):
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > 1e-300 else 1e-300)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1 + aa * d; d = 1 / (d if abs(d) > 1e-300 else 1e-300)
        c = 1 + aa / c if abs(1 + aa / c) > 1e-300 else 1e-300
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1 + aa * d; d = 1 / (d if abs(d) > 1e-300 else 1e-300)
        c = 1 + aa / c if abs(1 + aa / c) > 1e-300 else 1e-300
        de = d * c
        h *= de
        if abs(de - 1) < 1e-12: break
    return h

def ibeta(a, b, x):
    if x <= 0: return 0.0
    if x >= 1: return 1.0
    bt = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x))
    if x < (a + 1) / (a + b + 2): return bt * betacf(a, b, x) / a
    return 1 - bt * betacf(b, a, 1 - x) / b

def t_cdf(t, df):
    x = df / (df + t * t)
    tail = 0.5 * ibeta(df / 2, 0.5, x)
    return tail if t < 0 else 1 - tail

def runs(out, kind):
    return sorted(glob.glob(f"{out}/{kind}[0-9]*.json"), key=lambda p: int(re.findall(r"(\d+)\.json$", p)[0]))

def metrics(path):
    out = {}
    for r in json.load(open(path))["results"]:
        if r["status"] != "passed": continue
        key = r["benchmark"] + " " + ",".join(f"{k}={v}" for k, v in sorted(r["axes_display"].items()))
        for m in r["metrics"]:
            if m.get("role", "performance") != "performance": continue
            reps = m.get("repetitions") or [m["value"]]
            if any(v is None or v <= 0 for v in reps): continue
            sign = 1 if m["better"] == "higher" else -1
            out[key + " " + m["name"]] = [sign * math.log(v) for v in reps]
    return out

def welch(a, b):
    na, nb = len(a), len(b)
    ma, mb = sum(a) / na, sum(b) / nb
    va = sum((x - ma) ** 2 for x in a) / (na - 1)
    vb = sum((x - mb) ** 2 for x in b) / (nb - 1)
    se2 = va / na + vb / nb
    df = se2 * se2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1)) if se2 > 0 else 1e9
    return mb - ma, math.sqrt(se2), df

def bh(ps):
    idx = sorted(range(len(ps)), key=lambda i: ps[i])
    q, run = [1.0] * len(ps), 1.0
    for k in range(len(idx) - 1, -1, -1):
        run = min(run, ps[idx[k]] * len(ps) / (k + 1)); q[idx[k]] = run
    return q

def var(x):
    m = sum(x) / len(x)
    return sum((v - m) ** 2 for v in x) / (len(x) - 1)

def regressions(pa, pb, variant, alpha=0.05, margin=0.05, d0=4):
    A, B = metrics(pa), metrics(pb)
    keys = [k for k in A if k in B and len(A[k]) >= 2 and len(B[k]) >= 2]
    # The prior variance of a repetition's log value: the median over every row of both sides.
    pool = sorted(v for k in keys for v in (var(A[k]), var(B[k])))
    s0 = pool[len(pool) // 2] if pool else 0
    names, ps, effects = [], [], []
    for k in keys:
        d, se, df = welch(A[k], B[k])  # d: log perf change (negative: worse)
        if variant.startswith("moderated"):
            na, nb = len(A[k]), len(B[k])
            dd = na + nb - 2
            s2 = ((na - 1) * var(A[k]) + (nb - 1) * var(B[k])) / dd
            s2 = (d0 * s0 + dd * s2) / (d0 + dd)
            se, df = math.sqrt(s2 * (1 / na + 1 / nb)), d0 + dd
        if se == 0: continue
        if variant == "two_sided":
            p = 2 * t_cdf(-abs(d) / se, df)
        elif variant == "one_sided":
            p = t_cdf(d / se, df)
        elif variant in ("margin", "moderated_margin"):  # is the loss confidently more than `margin`?
            p = t_cdf((d - math.log(1 - margin)) / se, df)
        else:  # moderated, one-sided against no change
            p = t_cdf(d / se, df)
        names.append(k); ps.append(p); effects.append(d)
    q = bh(ps)
    return [n for n, qq, d in zip(names, q, effects) if qq < alpha and d <= math.log(1 - margin)]

out = sys.argv[1]
A, Q, T = runs(out, "a"), runs(out, "q"), runs(out, "t")
touched = {"q": re.compile(r"threads=0"), "t": re.compile(r"threads=0")}
for variant in ("two_sided", "one_sided", "margin", "moderated", "moderated_margin"):
    pairs = list(itertools.combinations(A, 2))
    fired = [(a, b, regressions(a, b, variant)) for a, b in pairs]
    fired = [f for f in fired if f[2]]
    print(f"{variant}: A/A {len(fired)} of {len(pairs)} pairs fired (both directions: {sum(1 for a,b in pairs if regressions(b,a,variant))})")
    for a, b, f in fired[:3]: print("   ", a.split('/')[-1], b.split('/')[-1], f)
    for kind, B in (("q", Q), ("t", T)):
        caught = only_touched = 0
        for k, b in enumerate(B):
            a = A[len(A) - len(B) + k] if len(A) >= len(B) else A[k % len(A)]
            f = regressions(a, b, variant)
            caught += bool(f)
            only_touched += bool(f) and all(touched[kind].search(x) for x in f)
        print(f"{variant}: A/B {kind}: {caught} of {len(B)} caught, {only_touched} naming only all-thread configurations")
