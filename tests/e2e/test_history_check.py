"""history check (the CI gate over change points) and baseline create from valid results (issue
26, items 4 and 5), on small synthetic reports: exit codes, what the verdicts name, INVALID runs
judged and marked (issue 44), timestamps to the second."""
import copy
import json
import os
import random

from conftest import run, one_line_error

SRC = os.environ.get("INFRABENCH_SOURCE_DIR", ".")
SINGLE = os.path.join(SRC, "tests", "fuzz", "corpus", "report", "synthetic_single.json")
HOST_MEMORY = "bandwidth/host_memory"  # its declared headline: bandwidth_gbps




def reports(tmp_path, factors, noise=0.01, seed=1, invalid_from=None, prefix="r"):
    """One report per factor: SINGLE with host_memory's metrics scaled by it (times noise), each
    started a second after the previous one (all in one minute). Runs from index invalid_from on
    have host_memory marked INVALID."""
    base = json.load(open(SINGLE))
    rng = random.Random(seed)
    paths = []
    for i, f in enumerate(factors):
        doc = copy.deepcopy(base)
        doc["run"]["started_utc"] = "2026-02-01T00:00:%02d.000Z" % i
        doc["run"]["finished_utc"] = "2026-02-01T00:00:%02d.500Z" % i
        for r in doc["results"]:
            if r["benchmark"] != HOST_MEMORY:
                continue
            k = f * (1 + rng.gauss(0, noise))
            for m in r["metrics"]:
                m["value"] *= k
                m["best"] *= k
                m["samples"] = [s * k for s in m["samples"]]
            if invalid_from is not None and i >= invalid_from:
                r["valid"] = False
                r["invalid_reasons"] = ["noisy: synthetic"]
        path = str(tmp_path / ("%s%02d.json" % (prefix, i)))
        with open(path, "w") as out:
            json.dump(doc, out)
        paths.append(path)
    return paths


def recorded(tmp_path, paths, name="h.db"):
    db = str(tmp_path / name)
    p = run("history", "record", *paths, "--db", db)
    assert p.returncode == 0, p.stderr
    return db


def test_check_finds_the_step_and_names_it(tmp_path):
    # 8 runs, then 4 at -42% (a node confined to one of its two CPUs).
    db = recorded(tmp_path, reports(tmp_path, [1.0] * 8 + [0.58] * 4))
    p = run("history", "check", "--db", db)
    assert p.returncode == 1, (p.stdout, p.stderr)
    line = [l for l in p.stdout.splitlines() if l.startswith("REGRESSION")]
    assert len(line) == 1, p.stdout
    for needle in (HOST_MEMORY, "bandwidth_gbps", "from run 9", "2026-02-01T00:00:08Z", "p 0.0"):
        assert needle in line[0], (needle, line[0])
    assert "-4" in line[0] and "%" in line[0]
    assert "-> FAIL" in p.stdout
    j = run("history", "check", "--db", db, "--format", "json")
    assert j.returncode == 1
    doc = json.loads(j.stdout)
    assert doc["verdict"] == "FAIL" and doc["regressions"] == 1
    # The method as judged, with its settings (here the defaults), not only its name.
    assert doc["method"]["name"] == "e-divisive", doc["method"]
    assert doc["method"]["alpha"] == 0.01 and doc["method"]["min_relative_shift"] == 0.05
    assert doc["method"]["min_effect"] > 0 and doc["method"]["permutations"] > 0
    hit = [s for s in doc["series"] if s["regression"]]
    assert len(hit) == 1 and hit[0]["metric"] == "bandwidth_gbps"
    cp = hit[0]["change_points"][-1]
    assert cp["index"] == 8 and cp["p_value"] < 0.01 and cp["after"] < 0.65 * cp["before"]
    # Only the headline metric is gated: host_memory's other metrics and the INVALID
    # memory_latency series are not in the verdict.
    assert {s["benchmark"] for s in doc["series"]} <= {HOST_MEMORY, "bandwidth/memory_latency",
                                                        "bandwidth/numa_matrix", "preprocess/pipeline"}
    # Accepting the change: judged from run 9 on, nothing stepped.
    ok = run("history", "check", "--db", db, "--since", "9")
    assert ok.returncode == 0, ok.stdout


def test_check_is_silent_on_aa_runs(tmp_path):
    db = recorded(tmp_path, reports(tmp_path, [1.0] * 14, noise=0.03, seed=7))
    p = run("history", "check", "--db", db)
    assert p.returncode == 0, p.stdout
    assert "0 regressed -> PASS" in p.stdout
    # Too few runs yet: nothing judged, nothing failed (the first runs of a new CI).
    db2 = str(tmp_path / "short.db")
    assert run("history", "record", *reports(tmp_path, [1.0] * 3, prefix="s"), "--db", db2).returncode == 0
    p = run("history", "check", "--db", db2)
    assert p.returncode == 0 and "not enough runs" in p.stdout and "PASS" not in p.stdout, p.stdout


def test_invalid_runs_are_judged_and_marked(tmp_path):
    # Issue 44: the slow runs are INVALID (noisy) and still 42% slow: a noisy run is less precise,
    # not no evidence. They are judged, the step fails the gate, and they are marked INVALID.
    db = recorded(tmp_path, reports(tmp_path, [1.0] * 8 + [0.58] * 4, invalid_from=8))
    p = run("history", "check", "--db", db)
    assert p.returncode == 1, p.stdout
    line = [l for l in p.stdout.splitlines() if l.startswith("REGRESSION")]
    assert len(line) == 1 and "4 of them INVALID" in line[0], p.stdout
    t = run("history", "trend", "bandwidth_gbps", "--benchmark", HOST_MEMORY, "--db", db)
    assert t.returncode == 0
    assert t.stdout.count("INVALID (judged, less precise)") == 4, t.stdout
    assert "4 INVALID run(s) judged with the others" in t.stdout


def test_a_step_is_flagged_three_runs_after_it(tmp_path):
    # Issue 44: a step of >= 20% is flagged within 3 runs after it (E-divisive needs four): the three
    # newest runs are the three worst of 11 (p = 1/C(11,3) = 0.006) and 25% below the rest.
    db = recorded(tmp_path, reports(tmp_path, [1.0] * 8 + [0.75] * 3, noise=0.03, seed=3))
    p = run("history", "check", "--db", db)
    assert p.returncode == 1, p.stdout
    line = [l for l in p.stdout.splitlines() if l.startswith("REGRESSION")]
    assert len(line) == 1 and "recent step" in line[0] and "from run 9" in line[0], p.stdout
    # Two runs after it are not enough to say (1/C(10,2) = 0.022), and a 10% step three runs old is
    # left to E-divisive (it needs more runs).
    two = recorded(tmp_path, reports(tmp_path, [1.0] * 8 + [0.75] * 2, noise=0.03, seed=3,
                                     prefix="two"), name="two.db")
    assert run("history", "check", "--db", two).returncode == 0


def test_a_drift_for_the_worse_fails(tmp_path):
    # Issue 44: a drift (-60% over 16 runs) sat in the JSON with regression false. It is one now.
    values = [1.0] * 6 + [1.0 - 0.04 * k for k in range(1, 15)]
    db = recorded(tmp_path, reports(tmp_path, values, noise=0.01, seed=5))
    p = run("history", "check", "--db", db, "--format", "json")
    doc = json.loads(p.stdout)
    hit = [s for s in doc["series"] if s["regression"]]
    assert p.returncode == 1 and len(hit) == 1, p.stdout[:2000]
    assert hit[0]["regression_kind"] in ("drift", "step", "recent step"), hit[0]


def test_improvement_does_not_fail_and_times_have_seconds(tmp_path):
    db = recorded(tmp_path, reports(tmp_path, [1.0] * 8 + [1.5] * 4))
    p = run("history", "check", "--db", db)
    assert p.returncode == 0, p.stdout
    assert "better" in p.stdout and "1 improved, 0 regressed" in p.stdout
    show = run("history", "show", "--db", db)
    assert "2026-02-01T00:00:11Z" in show.stdout and "2026-02-01T00:00:10Z" in show.stdout
    t = run("history", "trend", "bandwidth_gbps", "--benchmark", HOST_MEMORY, "--db", db)
    assert "2026-02-01T00:00:03Z" in t.stdout


def test_check_bad_input_is_exit_2(tmp_path):
    one_line_error(run("history", "check", "--db", str(tmp_path / "none.db")), "no history database")
    db = recorded(tmp_path, reports(tmp_path, [1.0] * 6))
    one_line_error(run("history", "check", "--db", db, "--since", "999"), "--since 999", "no such run")
    one_line_error(run("history", "check", "--db", db, "--benchmark", "no/such"), "no recorded headline metric")
    assert run("history", "check", "--db", db, "--alpha", "2").returncode == 2


# ---- baseline create ---------------------------------------------------------------------------

def test_baseline_create_drops_invalid_and_fails_a_broken_node(tmp_path):
    good = reports(tmp_path, [1.0, 1.02, 0.98, 1.01], noise=0.0)
    base = str(tmp_path / "fleet.json")
    p = run("baseline", "create", *good, "-o", base)
    assert p.returncode == 0, p.stderr
    # SINGLE's memory_latency result is INVALID in every report, and does not say why in codes
    # (noise alone would be used, issue 44): dropped, said, no rule.
    assert "dropped 4 INVALID result(s)" in p.stderr and "--allow-invalid" in p.stderr
    assert "no rule for 1 configuration" in p.stderr and "memory_latency" in p.stderr
    doc = json.load(open(base))
    rules = {r["id"]: r for r in doc["rules"]}
    hm = [r for r in doc["rules"] if r["benchmark"] == HOST_MEMORY]
    assert len(hm) == 1 and hm[0]["metric"] == "bandwidth_gbps"  # the headline only
    assert not any(r["benchmark"] == "bandwidth/memory_latency" for r in rules.values())
    note = hm[0]["note"]
    assert "4 value(s) of 4 result(s)" in note and "min 29.4" in note and "max 30.6" in note, note
    assert "floor" in note and "cap 25%" in note, note
    # A node confined to one CPU (-42%) fails; a fifth good run passes.
    broken = reports(tmp_path, [0.58], noise=0.0, prefix="broken")[0]
    assert run("check", broken, "--baseline", base).returncode == 1
    fifth = reports(tmp_path, [0.97], noise=0.0, prefix="fifth")[0]
    p = run("check", fifth, "--baseline", base)
    assert p.returncode == 0, p.stdout
    # --allow-invalid derives from them too.
    p = run("baseline", "create", *good, "--allow-invalid", "-o", str(tmp_path / "all.json"))
    assert p.returncode == 0 and "used 4 INVALID" in p.stderr, p.stderr
    assert any(r["benchmark"] == "bandwidth/memory_latency" for r in json.load(open(tmp_path / "all.json"))["rules"])


def test_baseline_create_caps_a_wide_spread(tmp_path):
    # Runs 30% apart would ask for a tolerance that passes a broken node: capped, and said so.
    wide = reports(tmp_path, [1.0, 0.7, 1.0, 0.85], noise=0.0)
    base = str(tmp_path / "wide.json")
    assert run("baseline", "create", *wide, "-o", base).returncode == 0
    hm = [r for r in json.load(open(base))["rules"] if r["benchmark"] == HOST_MEMORY][0]
    assert hm["reference"][1] == -0.25 and "= cap" in hm["note"], hm
    broken = reports(tmp_path, [0.55], noise=0.0, prefix="broken")[0]
    assert run("check", broken, "--baseline", base).returncode == 1


def test_baseline_create_of_only_invalid_results_is_exit_2(tmp_path):
    bad = reports(tmp_path, [1.0, 1.0], noise=0.0, invalid_from=0)
    for path in bad:
        doc = json.load(open(path))
        doc["results"] = [r for r in doc["results"] if r["benchmark"] in (HOST_MEMORY, "bandwidth/memory_latency")]
        json.dump(doc, open(path, "w"))
    one_line_error(run("baseline", "create", *bad, "-o", str(tmp_path / "b.json")), "every result is INVALID",
                   "--allow-invalid")


def test_too_few_runs_is_not_enough_runs_not_a_pass(tmp_path):
    # Issue 45: a first run or two judged nothing, and the gate said "0 series judged ... -> PASS";
    # a new database said "migrated h.db: 0 -> 1".
    db = str(tmp_path / "h.db")
    p = run("history", "record", *reports(tmp_path, [1.0, 1.0]), "--db", db)
    assert p.returncode == 0 and "created the history" in p.stderr, p.stderr
    assert "migrated" not in p.stderr, p.stderr
    p = run("history", "check", "--db", db)
    assert p.returncode == 0, p.stderr
    assert "not enough runs" in p.stdout and p.stdout.rstrip().endswith("-> NOT ENOUGH RUNS"), p.stdout
    assert "PASS" not in p.stdout, p.stdout
    doc = json.loads(run("history", "check", "--db", db, "--format", "json").stdout)
    assert doc["verdict"] == "NOT ENOUGH RUNS" and doc["series_judged"] == 0, doc
    # Once a series has its runs it is judged as before (test_check_is_silent_on_aa_runs).
    recorded(tmp_path, reports(tmp_path, [1.0] * 8, prefix="more"), name="h.db")
    p = run("history", "check", "--db", db)
    assert p.returncode == 0 and p.stdout.rstrip().endswith("-> PASS"), p.stdout
