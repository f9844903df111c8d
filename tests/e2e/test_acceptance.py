"""Node acceptance end to end (issue 19), without a GPU: a fake NVML (sim/nvml, built beside
the binary) and a sysfs fixture tree stand in for the hardware, so telemetry -> per-result summary
-> health verdict -> check -> exit code is exercised as an operator runs it. Also: the acceptance
suite measures every configuration the shipped baselines judge, `list --suite` sums its
estimates, `check` names the suite to run, `accept` is one command, the sampler's cost."""
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import BIN, FAST, load_report, metric, results, run

SRC = os.environ.get("INFRABENCH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
FAKE_NVML = os.path.join(os.path.dirname(os.path.abspath(BIN)), "libinfrabench_fake_nvml.so")
FIXTURE = os.path.join(SRC, "tests", "fixtures", "sysfs-node")
BASELINES = os.path.join(SRC, "configs", "baselines")


def fake_nvml_env(tmp_path, gpus):
    if not os.path.exists(FAKE_NVML):
        pytest.fail(f"{FAKE_NVML} missing: build the infrabench_fake_nvml target (it is built with "
                    "infrabench and the unit tests)")
    cfg = tmp_path / "fake-nvml.json"
    cfg.write_text(json.dumps({"driver_version": "580.0-fake", "gpus": gpus}))
    return {"INFRABENCH_NVML_LIBRARY": FAKE_NVML, "INFRABENCH_FAKE_NVML": str(cfg)}


def gpu(**overrides):
    g = {"name": "Fake H100", "sm_clock_mhz": 1980, "mem_clock_mhz": 2619, "power_w": 420, "temp_c": 58,
         "throttle_reasons": 4, "pcie_gen": 5, "pcie_width": 16, "pcie_max_gen": 5, "pcie_max_width": 16,
         "pcie_replay": 0, "ecc_enabled": True, "ecc_sbe_volatile": 0, "ecc_dbe_volatile": 0,
         "ecc_sbe_aggregate": 0, "ecc_dbe_aggregate": 0, "remapped_rows_correctable": 0,
         "remapped_rows_uncorrectable": 0, "remap_pending": False, "remap_failure": False, "nvlinks": 18,
         "nvlink_crc_flit": 0, "nvlink_crc_data": 0, "nvlink_replay": 0, "nvlink_recovery": 0}
    g.update(overrides)
    return g


# The GPU part of template-h100-8gpu.json's health rules, as a node would be judged.
# The short memory_latency run beside them is often INVALID (noisy) here: judged by value.
GPU_HEALTH_BASELINE = {"infrabench_baseline": 1, "name": "fake-gpu-node", "defaults": {"allow_invalid": True}, "rules": [
    {"benchmark": "health/gpu_pcie_link", "metric": "pcie_gen_min", "min": 5},
    {"benchmark": "health/gpu_pcie_link", "metric": "pcie_width_min", "min": 16},
    {"benchmark": "health/gpu_nvlink", "metric": "nvlinks_active_min", "min": 18},
    {"benchmark": "health/gpu_ecc", "metric": "ecc_sbe_new_max", "max": 0},
    {"benchmark": "health/gpu_row_remap", "metric": "remap_pending_max", "max": 0},
    {"benchmark": "health/gpu_throttle", "metric": "thermal_or_hw_slowdown_fraction_max", "max": 0},
    {"benchmark": "health/gpu_xid", "metric": "xid_events", "max": 0},
    {"benchmark": "bandwidth/memory_latency", "metric": "ns_per_load", "max": 1e6}]}

# Something to measure first (the health checks judge "during the run"), then the GPU checks.
GPU_RUN = ["--filter", "^(bandwidth/memory_latency|health/gpu_.*)$", "-a", "working_set=16KiB,4MiB", *FAST]


def write(tmp_path, name, obj):
    p = tmp_path / name
    p.write_text(json.dumps(obj))
    return str(p)


def by_name(report):
    return {r["benchmark"]: r for r in report["results"]}


def test_healthy_fake_gpu_node_is_accepted(tmp_path, report_path):
    env = fake_nvml_env(tmp_path, [gpu(), gpu()])
    p = run("run", *GPU_RUN, "-o", report_path, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    rep = load_report(report_path)
    r = by_name(rep)
    for name in ("health/gpu_pcie_link", "health/gpu_nvlink", "health/gpu_ecc", "health/gpu_row_remap",
                 "health/gpu_throttle", "health/gpu_xid"):
        assert r[name]["status"] == "passed", (name, r[name].get("reason"))
    assert metric(r["health/gpu_nvlink"], "nvlinks_active_min") == 18
    # The telemetry: one trace per GPU, every series as long as t_s, and the summary on each result.
    tele = rep["telemetry"]
    assert tele["nvml"]["available"] and len(tele["gpus"]) == 2
    for g in tele["gpus"]:
        n = len(g["trace"]["t_s"])
        assert n >= 2 and all(len(v) == n for v in g["trace"].values())
        assert g["counters_before"]["ecc_sbe_volatile"] == 0 and g["counters_after"] is not None
    lat = results(rep, "bandwidth/memory_latency")[0]
    assert metric(lat, "gpu_sm_clock_mhz_median") == 1980
    assert metric(lat, "gpu_power_w_mean") == 420
    assert metric(lat, "gpu_throttle_sw_power_cap_fraction") == 1
    roles = {m["name"]: m["role"] for m in lat["metrics"]}
    assert roles["gpu_temp_c_max"] == "information" and roles["ns_per_load"] == "performance"
    base = write(tmp_path, "b.json", GPU_HEALTH_BASELINE)
    c = run("check", report_path, "-b", base)
    assert c.returncode == 0, c.stdout + c.stderr
    assert "8 passed, 0 failed, 0 waived -> PASS" in c.stdout


def test_core_speed_on_a_machine_busy_in_every_round_is_never_a_drain(tmp_path, report_path):
    # Issue 44/45 item 7: beside a build, healthy cores still read 79-84% of their siblings now and
    # then (a process on one vCPU slows its sibling through the shared physical core, which the
    # thread's CPU time does not count). Each core is now judged on the rounds no other process ran
    # in; with spinners on every CPU there is none, and the check says so in its method: a slow
    # reading then is INVALID with the reason, never FAILED, and health-check does not drain.
    cpus = sorted(os.sched_getaffinity(0))
    spinners = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2 * len(cpus))]
    try:
        p = run("run", "--filter", "^health/cpu_core_speed$", "-a", "rounds=6", "-o", report_path,
                timeout=300)
        h = run("health-check", "--", "-a", "rounds=6", timeout=300)
    finally:
        for s in spinners:
            s.kill()
            s.wait()
    [r] = results(load_report(report_path), "health/cpu_core_speed")
    assert r["status"] == "passed", (p.stderr, r.get("reason"))
    method = {m["name"]: m["method"] for m in r["metrics"]}["slowest_core_ratio"]
    assert "other processes ran in every round" in method, method
    if not r["valid"]:  # a core read below the bound: said, not failed
        assert "core speed not judged" in r["invalid_reasons"][0], r["invalid_reasons"]
        assert p.returncode == 0, p.stderr
    assert h.returncode == 0 and h.stdout.startswith("OK: "), h.stdout + h.stderr


def test_sick_fake_gpu_node_fails_with_actionable_reasons(tmp_path, report_path):
    # The fake's clock starts at nvmlInit, the run's ECC counters at its telemetry's start: under
    # ASan on a loaded machine more than 0.3 s apart (CI at 516db8a: the 4 errors were there at the
    # start, so none was new). The ECC errors come at 1 s, after a check that takes ~2 s first (40
    # rounds), so that they arrive during the run in every build.
    sick = gpu(pcie_gen=4, nvlinks_down=[3],
               changes=[{"at_s": 0.3, "throttle_reasons": 0x40 | 0x4},
                        {"at_s": 1.0, "ecc_sbe_volatile": 4, "throttle_reasons": 0x40 | 0x4}],
               xids=[{"at_s": 0.3, "xid": 79}])
    env = fake_nvml_env(tmp_path, [gpu(), sick])
    p = run("run", "--filter", "^(health/cpu_core_speed|health/gpu_.*)$", "-a", "rounds=40", *FAST,
            "-o", report_path, env=env)
    assert p.returncode == 1, p.stdout + p.stderr
    r = by_name(load_report(report_path))
    reason = {k: v.get("reason", "") for k, v in r.items() if v["status"] == "failed"}
    # No CUDA device here to put a copy load on the fake GPUs while their links are read: an idle
    # GPU lowers its link, so a link below its maximum read without load is a warning, never a
    # failure (under the check's own load it fails: tests/unit/test_health.cpp).
    pcie = r["health/gpu_pcie_link"]
    assert pcie["status"] == "passed", pcie
    warned = " ".join(pcie["warnings"])
    assert "GPU 1 (Fake H100)" in warned and "Gen4" in warned and "no copy load" in warned, warned
    assert "GPU 1 (Fake H100): NVLink 3 down (17 of 18 up)" in reason["health/gpu_nvlink"]
    assert "4 new single-bit ECC errors during the run" in reason["health/gpu_ecc"]
    assert "hw_thermal_slowdown" in reason["health/gpu_throttle"]
    assert "XID 79: GPU has fallen off the bus" in reason["health/gpu_xid"]
    assert r["health/gpu_row_remap"]["status"] == "passed"
    tele = load_report(report_path)["telemetry"]
    kinds = {(e["kind"], e["gpu"]) for e in tele["events"]}
    assert ("xid", 1) in kinds and ("ecc_sbe", 1) in kinds
    # check: the failed health checks are FAIL rules with their reasons; exit 1.
    c = run("check", report_path, "-b", write(tmp_path, "b.json", GPU_HEALTH_BASELINE))
    assert c.returncode == 1, c.stdout + c.stderr
    assert "FAIL     health/gpu_xid:xid_events" in c.stdout
    assert "-> FAIL" in c.stdout


def test_every_gpu_health_rule_names_the_gpus_behind_its_evidence(tmp_path, report_path):
    # Issue 38: 8 fake GPUs, GPU 5 with 17 NVLinks (the check passes; the baseline's floor of 18
    # fails on its value) and GPU 2 gaining single-bit ECC errors (the check itself fails). Before,
    # health/gpu_nvlink:nvlinks_active_min FAILed the node with "gpu": null and "17 links".
    gpus = [gpu() for _ in range(8)]
    gpus[5] = gpu(nvlinks=17)
    gpus[2] = gpu(changes=[{"at_s": 0.3, "ecc_sbe_volatile": 4}])
    env = fake_nvml_env(tmp_path, gpus)
    p = run("run", "--filter", "^(health/cpu_core_speed|health/gpu_.*)$", "-a", "rounds=20", *FAST,
            "-o", report_path, env=env)
    assert p.returncode == 1, p.stdout + p.stderr
    r = by_name(load_report(report_path))
    nvlink = r["health/gpu_nvlink"]
    assert nvlink["status"] == "passed", nvlink
    assert {m["name"]: m.get("gpus") for m in nvlink["metrics"]}["nvlinks_active_min"] == [5], nvlink
    assert r["health/gpu_ecc"]["status"] == "failed" and r["health/gpu_ecc"]["failed_gpus"] == [2]
    c = run("check", report_path, "-b", write(tmp_path, "b.json", GPU_HEALTH_BASELINE), "--format", "json")
    assert c.returncode == 1, c.stdout + c.stderr
    out = json.loads(c.stdout)
    [node] = out["nodes"]
    assert node["failed_gpus"] == [2, 5], node
    [drain] = out["drain"]
    blamed = {(e["rule"], e["gpu"]) for e in drain["evidence"]}
    assert ("health/gpu_nvlink:nvlinks_active_min", 5) in blamed, drain["evidence"]
    assert ("health/gpu_ecc:ecc_sbe_new_max", 2) in blamed, drain["evidence"]
    # No GPU rule's evidence goes without its GPU.
    assert all(e["gpu"] is not None for e in drain["evidence"] if e["rule"].startswith("health/gpu_")), drain
    text = run("check", report_path, "-b", write(tmp_path, "b.json", GPU_HEALTH_BASELINE)).stdout
    assert "17 links (GPU 5)" in text, text


def test_without_nvml_the_gpu_checks_are_skipped_with_the_reason(tmp_path, report_path):
    env = {"INFRABENCH_NVML_LIBRARY": str(tmp_path / "no-such-libnvidia-ml.so.1")}
    p = run("run", "--filter", "^health/gpu_", *FAST, "-o", report_path, env=env)
    assert p.returncode == 0, p.stderr
    for res in load_report(report_path)["results"]:
        assert res["status"] == "skipped" and "no-such-libnvidia-ml.so.1" in res["reason"]


def test_cpu_node_from_the_fixture_tree(tmp_path, report_path):
    root = tmp_path / "root"
    shutil.copytree(FIXTURE, root)
    env = {"INFRABENCH_SYSFS_ROOT": str(root), "INFRABENCH_NVML_LIBRARY": "/nonexistent.so"}
    p = run("run", "--filter", "^(health/cpu_(edac|mce)|stress/cpu)$", "-a", "duration_s=2", "-a", "max_sag=1",
            *FAST, "-o", report_path, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    rep = load_report(report_path)
    r = by_name(rep)
    assert "3 corrected memory errors (EDAC) since boot" in r["health/cpu_edac"]["warnings"]
    assert metric(r["health/cpu_edac"], "edac_ce_new") == 0
    assert metric(r["health/cpu_mce"], "mce_new") == 0
    s = r["stress/cpu"]
    assert metric(s, "wrong_results") == 0 and metric(s, "memory_errors_new") == 0
    gflops = next(m for m in s["metrics"] if m["name"] == "gflops")
    assert len(gflops["samples"]) == 2 and gflops["value"] > 0  # one value per whole second
    assert metric(s, "cpu_freq_mhz_median") == 2600 and metric(s, "cpu_package_temp_c_max") == 61
    trace = rep["telemetry"]["cpu"]["trace"]
    assert set(trace["freq_mhz_mean"]) == {2600} and len(trace["package_power_w"]) == len(trace["t_s"])


def test_memory_errors_during_a_stress_fail_it(tmp_path, report_path):
    root = tmp_path / "root"
    shutil.copytree(FIXTURE, root)
    env = dict(os.environ, INFRABENCH_SYSFS_ROOT=str(root), INFRABENCH_NVML_LIBRARY="/nonexistent.so")
    proc = subprocess.Popen([BIN, "run", "--filter", "^stress/cpu$", "-a", "duration_s=3", "-a", "max_sag=1",
                             "-o", report_path], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    for line in proc.stderr:  # the progress line says the stress started
        if "stress/cpu" in line:
            break
    time.sleep(1)
    (root / "sys/devices/system/edac/mc/mc1/ce_count").write_text("4\n")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, out + err
    res = results(load_report(report_path), "stress/cpu")[0]
    assert res["status"] == "failed"
    assert "3 EDAC memory errors during the stress: find the DIMM" in res["reason"]


def listed_configs(suite):
    p = run("list", "--suite", suite, "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_list_suite_prints_estimates_within_the_targets():
    p = run("list", "--suite", "acceptance")
    assert p.returncode == 0, p.stderr
    assert "total by design, every configuration of this build running" in p.stdout and "here:" in p.stdout
    est = listed_configs("acceptance")
    assert all(c["estimate_from"] == "suite" for c in est["configurations"])
    assert abs(sum(c["estimate_s"] for c in est["configurations"]) - est["total_s"]) < 1e-6
    stress = [c for c in est["configurations"] if c["benchmark"] == "stress/cpu"]
    assert stress and stress[0]["estimate_s"] == 70  # 10 s of set-up + its 60 s duration
    assert est["here_s"] < 180  # this machine: 2 cores, no GPU
    if "gemm/cublas" in run("list").stdout:  # with every GPU benchmark compiled in: an 8-GPU node
        assert est["total_s"] < 360, est["total_s"]
    burn = listed_configs("burn-in")
    assert any(c["benchmark"] == "stress/cpu" and c["estimate_s"] >= 1800 for c in burn["configurations"])


def axes_of(configuration):
    return dict(kv.split("=", 1) for kv in configuration.split())


@pytest.mark.parametrize("template", ["template-h100-8gpu.json", "template-cpu-node.json"])
def test_acceptance_measures_every_configuration_the_templates_judge(template):
    base = json.load(open(os.path.join(BASELINES, template)))
    assert base["suite"] == "acceptance"
    configs = listed_configs("acceptance")["configurations"]
    compiled = run("list").stdout
    for rule in base["rules"]:
        if rule["benchmark"] + "\n" not in compiled:  # a GPU benchmark in a CPU-only build
            assert template == "template-h100-8gpu.json", rule
            continue
        matching = [c for c in configs if c["benchmark"] == rule["benchmark"] and
                    all(axes_of(c["configuration"]).get(k) == str(v) for k, v in rule.get("axes", {}).items())]
        assert matching, f"{template}: no acceptance configuration for {rule['benchmark']} {rule.get('axes')}"


def test_check_names_the_suite_when_configurations_are_missing(tmp_path, report_path):
    p = run("run", "--filter", "^bandwidth/memory_latency$", "-a", "working_set=16KiB", *FAST, "-o", report_path,
            "--telemetry", "off")
    assert p.returncode == 0, p.stderr
    rules = [{"benchmark": "bandwidth/memory_latency", "axes": {"working_set": "1MiB"}, "metric": "ns_per_load", "max": 1e6}]
    named = write(tmp_path, "named.json", {"infrabench_baseline": 1, "suite": "acceptance", "rules": rules})
    c = run("check", report_path, "-b", named)
    # Made for a suite: a configuration the suite measures and the report lacks did not run.
    assert c.returncode == 1, c.stderr
    assert ("1 rule(s) not run: the report has no result for their configuration: this baseline was made "
            "for suite acceptance: run infrabench run --suite acceptance") in c.stdout
    unnamed = write(tmp_path, "unnamed.json", {"infrabench_baseline": 1, "rules": rules})
    c = run("check", report_path, "-b", unnamed)
    assert c.returncode == 0 and "it names none: add \"suite\"" in c.stdout, c.stdout
    bad = write(tmp_path, "bad.json", {"infrabench_baseline": 1, "suite": "no-such-suite", "rules": rules})
    c = run("check", report_path, "-b", bad)
    assert c.returncode == 2 and c.stderr.count("\n") == 1 and "\"suite\"" in c.stderr, c.stderr
    # baseline create records the suite the reports ran (a built-in one).
    created = str(tmp_path / "created.json")
    c = run("baseline", "create", report_path, "--allow-invalid", "-o", created)
    assert c.returncode == 0, c.stderr
    assert json.load(open(created))["suite"] == "quick"
    assert "telemetry" not in load_report(report_path)


def tiny_suite(tmp_path):
    return write(tmp_path, "tiny.json", {
        "name": "tiny", "settings": {"min_time_s": 0.01, "max_time_s": 0.05, "timeout_s": 60},
        "benchmarks": [{"filter": "^bandwidth/memory_latency$", "axes": {"working_set": ["16KiB", "64KiB"]},
                        "estimate_s": 1}]})


def test_accept_is_one_command(tmp_path):
    tiny_suite(tmp_path)
    rule = {"benchmark": "bandwidth/memory_latency", "axes": {"working_set": "16KiB"}, "metric": "ns_per_load"}
    # Short runs on a shared machine are often INVALID (noisy): judged by value here.
    good = write(tmp_path, "good.json", {"infrabench_baseline": 1, "suite": "tiny.json", "defaults": {"allow_invalid": True},
                                         "rules": [dict(rule, max=1e6)]})
    junit, html, report, prom = (str(tmp_path / n) for n in ("a.xml", "a.html", "a.json", "a.prom"))
    p = run("accept", "--baseline", good, "--junit", junit, "--html", html, "--openmetrics", prom, "-o", report,
            "--", "-q")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "accept: PASS (exit 0)" in p.stderr and "-> PASS" in p.stdout
    assert os.path.getsize(junit) > 0 and os.path.getsize(html) > 0
    # The verdicts for the node exporter's textfile collector, written whole (test_fleet_hooks parses it).
    text = open(prom).read()
    assert 'infrabench_verdict{' in text and 'verdict="PASS"' in text and text.endswith("# EOF\n"), text[-500:]
    assert load_report(report)["run"]["suite"]["name"] == "tiny"
    bad = write(tmp_path, "bad.json", {"infrabench_baseline": 1, "suite": "tiny.json", "rules": [dict(rule, max=1e-6)]})
    p = run("accept", "--baseline", bad, "-o", report, "--", "-q")
    assert p.returncode == 1 and "accept: FAIL (exit 1)" in p.stderr, p.stdout + p.stderr
    none = write(tmp_path, "none.json", {"infrabench_baseline": 1, "rules": [dict(rule, max=1)]})
    p = run("accept", "--baseline", none, "-o", str(tmp_path / "never.json"))
    assert p.returncode == 2 and "names no suite to run" in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert not os.path.exists(tmp_path / "never.json")


def test_accept_levels(tmp_path):
    """Issue 45 item 11: DCGM-style levels. 1 (health) runs the suite's health checks, 2 (short)
    shortens its stress; what a level does not run is WAIVED, not NOT RUN; a bad level is one line
    and exit 2 before anything runs."""
    write(tmp_path, "lv.json", {
        "name": "lv", "settings": {"min_time_s": 0.01, "max_time_s": 0.05, "timeout_s": 60},
        "benchmarks": [{"filter": "^bandwidth/memory_latency$", "axes": {"working_set": ["16KiB"]}},
                       {"filter": "^health/gpu_xid$"},
                       # A generous sag: a shared 2-core machine must not fail the short stress.
                       {"filter": "^stress/cpu$", "axes": {"duration_s": [60], "max_sag": [0.99]}}]})
    base = write(tmp_path, "b.json", {"infrabench_baseline": 1, "suite": "lv.json", "defaults": {"allow_invalid": True},
                                      "rules": [{"benchmark": "bandwidth/memory_latency", "metric": "ns_per_load", "max": 1e6},
                                                {"benchmark": "health/gpu_xid", "metric": "xid_events", "max": 0},
                                                {"benchmark": "stress/cpu", "axes": {"duration_s": 60},
                                                 "metric": "wrong_results", "max": 0}]})
    env = fake_nvml_env(tmp_path, [gpu()])
    report, junit = str(tmp_path / "r.json"), str(tmp_path / "j.xml")
    for bad in ("5", "0", "long", "Health"):
        p = run("accept", "--baseline", base, "--level", bad, "-o", str(tmp_path / "never.json"))
        assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
        assert "--level: must be 1, 2, 3 or 4, or health, short, accept, burn-in" in p.stderr, p.stderr
        assert not os.path.exists(tmp_path / "never.json")
    for level in ("1", "health"):
        p = run("accept", "--baseline", base, "--level", level, "--junit", junit, "-o", report, "--", "-q", env=env)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "accept: PASS at level 1 (health) (exit 0)" in p.stderr, p.stderr
        assert {r["benchmark"] for r in load_report(report)["results"]} == {"health/gpu_xid"}
        assert re.search(r"^ *PASS +health/gpu_xid", p.stdout, re.M), p.stdout
        assert "NOT RUN" not in p.stdout and "measured part of suite lv.json" in p.stdout, p.stdout
        assert "2 waived -> PASS" in p.stdout, p.stdout
    p = run("accept", "--baseline", base, "-r", "short", "-o", report, "--", "-q", env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    stress = [r for r in load_report(report)["results"] if r["benchmark"] == "stress/cpu"]
    assert [r["axes"]["duration_s"] for r in stress] == [10], stress
    assert re.search(r"^ *WAIVED +stress/cpu\[duration_s=60\]", p.stdout, re.M), p.stdout
    assert re.search(r"^ *PASS\b.*bandwidth/memory_latency:ns_per_load", p.stdout, re.M), p.stdout
    # The levels are in accept's --help, numbers and names.
    h = run("accept", "--help").stdout
    assert all(s in h for s in ("1|health", "2|short", "3|accept", "4|burn-in")), h


def test_telemetry_options(tmp_path, report_path):
    for args, needle in ((["--telemetry", "maybe"], "--telemetry: must be on or off"),
                         (["--telemetry-interval", "0"], "--telemetry-interval: must be a number of seconds")):
        p = run("run", "--filter", "^bandwidth/memory_latency$", *args, "-o", report_path)
        assert p.returncode == 2 and needle in p.stderr and p.stderr.count("\n") == 1, p.stderr
    env = fake_nvml_env(tmp_path, [gpu()])
    p = run("run", "--filter", "^health/gpu_xid$", "--telemetry", "off", *FAST, "-o", report_path, env=env)
    assert p.returncode == 0, p.stderr
    rep = load_report(report_path)
    assert "telemetry" not in rep
    assert "run with --telemetry on" in rep["results"][0]["reason"]


def test_stress_refuses_a_duration_beyond_the_timeout(report_path):
    p = run("run", "--filter", "^stress/cpu$", "--stress-duration", "100", "--timeout", "60", "-o", report_path)
    assert p.returncode == 1, p.stderr
    res = load_report(report_path)["results"][0]
    assert res["axes"]["duration_s"] == 100  # --stress-duration is -a duration_s on stress/*
    assert "does not fit the configuration timeout of 60 s: raise --timeout" in res["reason"]


def test_sampler_costs_under_one_percent(report_path):
    # The same all-core load with the sampler running and paused, in this one run; and the
    # sampler's own CPU time over the cores, the most it can take from a CPU-bound benchmark.
    # A sanitized sampler's own instructions cost several times the release build's (CI saw 1.03%
    # at 100 Hz under ASan+UBSan beside another e2e file): there it is held to the default rate.
    interval = "0.1" if os.environ.get("INFRABENCH_SANITIZED") == "1" else "0.01"
    p = run("run", "--filter", "^health/telemetry_overhead$", "-a", "pairs=4", "-a", "round_ms=100",
            "--telemetry-interval", interval, "-o", report_path)
    assert p.returncode == 0, p.stdout + p.stderr
    res = load_report(report_path)["results"][0]
    assert res["valid"], res["invalid_reasons"]
    assert metric(res, "sampler_cost_pct") < 1.0  # at 100 Hz, ten times the default rate (release)
    assert metric(res, "overhead_pct") is not None


def test_gpu_stress_runs_or_says_why_not(report_path):
    if "stress/gpu\n" not in run("list").stdout:
        pytest.skip("built without CUDA: stress/gpu is not compiled in")
    p = run("run", "--filter", "^stress/gpu$", "-a", "duration_s=2", "-a", "matrix_n=2048", "-o", report_path)
    res = load_report(report_path)["results"][0]
    if res["status"] == "skipped":  # no GPU here: the probe's reason, by its code
        assert p.returncode == 0 and res["reason_code"] == "no_device" and res["reason"], res
    else:  # on a GPU: every second's throughput, every result checked
        assert res["status"] == "passed", res.get("reason")
        assert metric(res, "wrong_results_gpu0") == 0 and metric(res, "gemm_tflops_gpu0") > 0


def test_a_healthy_core_shared_with_a_busy_process_is_not_called_slow(tmp_path, report_path):
    # Issue 44: a core shared with another process (here one spinning on it) was timed by the wall
    # clock and ran at 50-83% of its sibling: a DRAIN of a healthy node. Its rate is now per second
    # of its own CPU time, so it is judged at the default bound (15%) like its sibling.
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2 or not shutil.which("taskset"):
        pytest.skip("needs two CPUs and taskset")
    # Eight spinners: the shared core gives the check a ninth of itself, well under what another
    # core gives it even with CI's other stages on that one. With the wall clock (before the fix)
    # this FAILed (2026-11-28, beside CI's ASan stage: 3 spinners read 0.91, 8 failed); now 0.997.
    spinners = [subprocess.Popen(["taskset", "-c", str(cpus[0]), "sh", "-c", "while :; do :; done"])
                for _ in range(8)]
    try:
        p = run("run", "--filter", "^health/cpu_core_speed$", "-a", "rounds=8", "-o", report_path,
                timeout=300)
    finally:
        for s in spinners:
            s.kill()
            s.wait()
    [r] = results(load_report(report_path), "health/cpu_core_speed")
    assert p.returncode == 0 and r["status"] == "passed", (p.stderr, r.get("reason"))
    ratio = next(m for m in r["metrics"] if m["name"] == "slowest_core_ratio")
    # Under a sanitizer another e2e file runs on the other core (CI runs them two at a time there):
    # a reading under the bound is then left unjudged, as on any busy machine, never failed.
    if os.environ.get("INFRABENCH_SANITIZED") == "1" and ratio["value"] <= 0.85:
        assert "not judged below the bound" in ratio["method"], ratio
    else:
        assert ratio["value"] > 0.85, r["metrics"]
