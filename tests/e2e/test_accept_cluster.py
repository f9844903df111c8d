"""Acceptance is never silently partial, and a cluster gets a verdict per node (issue 28, items 3
and 4): `check` on a 4-host report with one slow host names that host alone, on its line and in
the JSON's drain list with the evidence; a rule whose configuration did not run is NOT RUN (exit
1), not WAIVED; INVALID results fail unless the baseline allows them; `accept` on a fake 8-GPU
node refuses a one-process run of rules that need one rank per GPU, with the command to run; the
README's accept section shows a cluster accept whose per-node lines are what `check` prints."""
import copy
import json
import os
import re

import pytest

from conftest import FAST, one_line_error, run
from test_acceptance import fake_nvml_env, gpu, write
import test_inventory
from test_inventory import identity, node_report

LATENCY = ["--filter", "^bandwidth/memory_latency$", "-a", "working_set=16KiB", *FAST, "--telemetry", "off"]


@pytest.fixture(scope="module")
def one_node(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("one") / "r.json")
    p = run("run", *LATENCY, "-o", path)
    assert p.returncode == 0, p.stderr
    with open(path) as f:
        return json.load(f)


def cluster(doc, slow="node2", factor=3.0):
    """The report of one node made the report of four (node0..node3, one rank each), `slow` taking
    `factor` times as long per load; every result VALID, measured on an idle machine, as a quiet
    cluster's would be (the one run's own load is not kept: beside CI's other tests it is busy, and
    a slow node on a busy machine is INCONCLUSIVE, not FAIL)."""
    out = copy.deepcopy(doc)
    out["hosts"], out["results"] = [], []
    for i in range(4):
        name = f"node{i}"
        host = copy.deepcopy(doc["hosts"][0])
        host["hostname"] = name
        out["hosts"].append(host)
        for r in doc["results"]:
            r = copy.deepcopy(r)
            r.update(host=name, rank=i, valid=True, invalid_reasons=[], invalid_reason_codes=[])
            r.pop("sampling_load", None)
            for m in r.get("metrics", []):
                if m["name"] == "ns_per_load" and name == slow:
                    m["value"] *= factor
                    m["best"] *= factor
            out["results"].append(r)
    out["run"]["world_size"] = 4
    return out


def latency_rule(doc, **extra):
    value = next(m["value"] for m in doc["results"][0]["metrics"] if m["name"] == "ns_per_load")
    return {"id": "l1-latency", "benchmark": "bandwidth/memory_latency", "axes": {"working_set": "16KiB"},
            "metric": "ns_per_load", "max": value * 1.5, **extra}


def test_check_gives_a_verdict_per_node_and_the_nodes_to_drain(one_node, tmp_path):
    report = write(tmp_path, "cluster.json", cluster(one_node))
    base = write(tmp_path, "fleet.json", {"infrabench_baseline": 1, "rules": [
        latency_rule(one_node),
        {"id": "outliers", "benchmark": "bandwidth/memory_latency", "metric": "ns_per_load",
         "axes": {"working_set": "16KiB"}, "no_outlier_nodes": True}]})
    p = run("check", report, "-b", base)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "nodes: 4, 1 to drain" in p.stdout, p.stdout
    lines = {line.split()[0]: line for line in p.stdout.splitlines()
             if line.strip().startswith("node") and len(line.split()) > 1 and line.split()[1] in ("PASS", "FAIL")}
    assert {h: l.split()[1] for h, l in lines.items()} == {
        "node0": "PASS", "node1": "PASS", "node2": "FAIL", "node3": "PASS"}, p.stdout
    assert "l1-latency" in lines["node2"] and "outliers" in lines["node2"], lines["node2"]
    assert "expected <=" in lines["node2"], lines["node2"]

    js = run("check", report, "-b", base, "--format", "json")
    assert js.returncode == 1, js.stderr
    doc = json.loads(js.stdout)
    assert [(n["host"], n["verdict"]) for n in doc["nodes"]] == [
        ("node0", "PASS"), ("node1", "PASS"), ("node2", "FAIL"), ("node3", "PASS")]
    assert [d["host"] for d in doc["drain"]] == ["node2"]
    assert doc["drain"][0]["failed_rules"] == ["l1-latency", "outliers"]
    evidence = {e["rule"]: e["evidence"] for e in doc["drain"][0]["evidence"]}
    assert "on node2" in evidence["l1-latency"] and "ns" in evidence["l1-latency"], evidence
    assert "vs median" in evidence["outliers"], evidence


NODE_ROW = re.compile(r"^  (\S+)\s+(PASS|FAIL)\s+(-|\d+(?:,\d+)*)(?:\s+(\S.*))?$")
FAILED_RULE = re.compile(r"^[^:]+: .+ on \S+( rank \d+)?: \S+ .*\(expected [<>]= \S+\)$")


def node_table(text):
    """The per-node table after `nodes: N, K to drain`: (its header, its rows as NODE_ROW matches)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"^nodes: \d+, \d+ to drain", line))
    header, rows = lines[start + 1].split(), []
    for line in lines[start + 2:]:
        if set(line.strip()) <= set("- "):
            continue  # the rule under the header
        m = NODE_ROW.match(line)
        if not m:
            break
        rows.append(m)
    return header, rows


def test_readme_shows_a_cluster_accept_with_what_check_prints(one_node, tmp_path):
    src = os.environ.get("INFRABENCH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    with open(os.path.join(src, "README.md")) as f:
        readme = f.read()
    section = readme[readme.index("### Accept a node"):]
    block = section[section.index("```sh"):section.index("```", section.index("```sh") + 5)]
    assert re.search(r"^mpirun .*-H \S+ .*infrabench accept --baseline", block, re.M), block
    shown_header, shown = node_table(block)
    assert {m.group(2) for m in shown} == {"PASS", "FAIL"}, block
    report = write(tmp_path, "cluster.json", cluster(one_node))
    p = run("check", report, "-b", write(tmp_path, "fleet.json", {"infrabench_baseline": 1,
                                                                  "rules": [latency_rule(one_node)]}))
    assert p.returncode == 1, p.stdout + p.stderr
    header, rows = node_table(p.stdout)
    assert shown_header == header == ["node", "verdict", "GPUs", "failed", "rules"], (shown_header, header)
    assert len(rows) == 4 and [m.group(2) for m in rows].count("FAIL") == 1, p.stdout
    for m in [*shown, *rows]:  # the README's failing node reads as check's does
        if m.group(2) == "FAIL":
            assert FAILED_RULE.match(m.group(4)), m.group(0)


def test_a_configuration_the_suite_should_have_run_is_not_run(one_node, tmp_path):
    report = write(tmp_path, "r.json", cluster(one_node, slow=""))
    missing = {"id": "l2", "benchmark": "bandwidth/memory_latency", "axes": {"working_set": "1MiB"},
               "metric": "ns_per_load", "max": 1e6}
    # Made for a suite: what it judges must have run.
    base = write(tmp_path, "suite.json", {"infrabench_baseline": 1, "suite": "acceptance",
                                          "rules": [latency_rule(one_node), missing]})
    p = run("check", report, "-b", base, "--format", "json")
    assert p.returncode == 1, p.stdout + p.stderr
    doc = json.loads(p.stdout)
    assert [r["verdict"] for r in doc["rules"]] == ["PASS", "NOT RUN"], doc["rules"]
    assert doc["failed"] == 1 and doc["not_run"] == 1 and doc["verdict"] == "FAIL"
    text = run("check", report, "-b", base).stdout
    assert "NOT RUN" in text and "1 rule(s) not run: the report has no result for their configuration" in text, text
    assert "check: 1 passed, 1 failed (1 not run), 0 waived -> FAIL" in text, text
    # ... unless the baseline waives it by name.
    waived = write(tmp_path, "waived.json", {"infrabench_baseline": 1, "suite": "acceptance", "waive": ["l2"],
                                             "rules": [latency_rule(one_node), missing]})
    p = run("check", report, "-b", waived)
    assert p.returncode == 0 and "WAIVED   l2" in p.stdout, p.stdout + p.stderr
    one_line_error(run("check", report, "-b", write(tmp_path, "typo.json", {
        "infrabench_baseline": 1, "waive": ["l3"], "rules": [missing]})), "\"waive\"", "l3")


def test_invalid_results_fail_unless_the_baseline_allows_them(one_node, tmp_path):
    doc = copy.deepcopy(one_node)
    for r in doc["results"]:
        r.update(valid=False, invalid_reasons=["verify failed: test"], invalid_reason_codes=["verify_failed"])
    report = write(tmp_path, "unverified.json", doc)
    strict = write(tmp_path, "strict.json", {"infrabench_baseline": 1, "rules": [latency_rule(one_node)]})
    p = run("check", report, "-b", strict)
    assert p.returncode == 1 and "allow_invalid" in p.stdout, p.stdout
    # An allowed INVALID result is judged by its interval, which no sample lies beyond: a bound past
    # its slowest sample makes the verdict PASS however noisy the run (under ASan the interval of
    # this 0.2 s run has reached 4x its median).
    t = one_node["results"][0]["time_s"]
    roomy = latency_rule(one_node)
    roomy["max"] *= 2 * t["max"] / t["median"]
    lenient = write(tmp_path, "lenient.json", {"infrabench_baseline": 1, "defaults": {"allow_invalid": True},
                                               "rules": [roomy]})
    p = run("check", report, "-b", lenient)
    assert p.returncode == 0 and "marked INVALID" in p.stdout, p.stdout


def test_a_noisy_result_is_judged_by_its_interval_never_failed_for_noise_alone(one_node, tmp_path):
    # Issue 44: INVALID (noisy) means less precise, not wrong. The same result, only noisy, is
    # judged by the 95% interval of its median: inside the bound it is no FAIL (PASS, or
    # INCONCLUSIVE where the interval reaches past the bound), and the verdict says INVALID.
    doc = copy.deepcopy(one_node)
    for r in doc["results"]:
        r.update(valid=False, invalid_reasons=["noisy: test"], invalid_reason_codes=["noisy"])
    report = write(tmp_path, "noisy.json", doc)
    strict = write(tmp_path, "strict.json", {"infrabench_baseline": 1, "rules": [latency_rule(one_node)]})
    p = run("check", report, "-b", strict)
    assert p.returncode in (0, 4) and "INVALID: noisy" in p.stdout, p.stdout
    assert " -> FAIL" not in p.stdout, p.stdout
    # Far outside the bound it FAILs: the interval is confidently past it.
    tight = latency_rule(one_node)
    tight["max"] = tight["max"] / 1000
    p = run("check", report, "-b", write(tmp_path, "tight.json", {"infrabench_baseline": 1, "rules": [tight]}))
    assert p.returncode == 1 and " -> FAIL" in p.stdout, p.stdout


def test_accept_on_an_8_gpu_node_refuses_one_process(tmp_path):
    env = fake_nvml_env(tmp_path, [gpu() for _ in range(8)])
    # Benchmarks of several ranks this build may have (the cpu-only preset: the storage jobs).
    candidates = {"collectives/nccl_allreduce": "busbw_gbps", "collectives/mpi_allreduce": "busbw_gbps",
                  "storage/checkpoint_job": "write_gbps"}
    listed = {line.split()[0] for line in run("list").stdout.splitlines() if line.split()}
    bench = next((b for b in candidates if b in listed), None)
    if bench is None:
        pytest.fail("no benchmark of several ranks in this build")
    rule = {"id": "allreduce", "benchmark": bench, "metric": candidates[bench], "min": 1}
    base = write(tmp_path, "gpu-node.json", {"infrabench_baseline": 1, "suite": "quick", "rules": [rule]})
    report = str(tmp_path / "out.json")
    p = run("accept", "--baseline", base, "-o", report, "--", "--min-time", "0.01", env=env, cwd=str(tmp_path))
    one_line_error(p, "8 GPUs", "allreduce", "need one rank per GPU",
                   f"run: mpirun -np 8 {os.path.realpath(os.environ.get('INFRABENCH_BIN', 'build/infrabench'))} "
                   f"accept --baseline {base} -o {report} -- --min-time 0.01")
    assert not os.path.exists(report)  # nothing ran
    # A rule the baseline waives is not held to it; nor is a node of one GPU.
    waived = write(tmp_path, "waived.json", {"infrabench_baseline": 1, "suite": "quick", "waive": ["allreduce"],
                                             "rules": [rule]})
    p = run("accept", "--baseline", waived, "-o", report, "--", "--filter", "^bandwidth/memory_latency$",
            *LATENCY[2:], env=env, cwd=str(tmp_path))
    assert "need one rank per GPU" not in p.stderr, p.stderr


def test_run_baseline_and_check_give_the_same_verdicts(one_node, tmp_path):
    """`run --baseline` (what `accept` runs) judges the run's report as the model holds it, `check`
    the file it wrote: the same verdicts, NOT RUN and WAIVED included. storage/read_job needs
    several ranks: on a node of two GPUs a one-process run skipped it for want of ranks the node
    can have (NOT RUN: run one rank per GPU); on a node without GPUs a one-rank run is all there
    is (WAIVED). Only the skip's reason code tells them apart, so a view without it judged both
    WAIVED."""
    # The latency rule's bound is far off: a busy machine's noisy reading (judged by its interval
    # under allow_invalid) must not make it INCONCLUSIVE; the verdict under test is read-job's.
    rules = [latency_rule(one_node, id="latency", max=1e6),
             {"id": "read-job", "benchmark": "storage/read_job", "metric": "aggregate_gbps", "min": 1}]
    base = write(tmp_path, "b.json", {"infrabench_baseline": 1, "defaults": {"allow_invalid": True},
                                      "rules": rules})
    for gpus, want in ((2, "NOT RUN"), (0, "WAIVED")):
        env = fake_nvml_env(tmp_path, [gpu() for _ in range(gpus)])
        report, ran_xml, checked_xml = (str(tmp_path / f"{gpus}-{n}") for n in ("r.json", "run.xml", "check.xml"))
        p = run("run", "--filter", "^bandwidth/memory_latency$|^storage/read_job$", "-a", "working_set=16KiB",
                *FAST, "--telemetry", "off", "-o", report, "--baseline", base, "--junit", ran_xml, env=env)
        assert p.returncode == (1 if want == "NOT RUN" else 0), p.stdout + p.stderr
        c = run("check", report, "-b", base, "--junit", checked_xml, env=env)
        assert c.returncode == p.returncode, c.stdout + c.stderr
        assert verdict_lines(p.stdout) == verdict_lines(c.stdout), (p.stdout, c.stdout)
        assert [v for v in verdict_lines(c.stdout) if " read-job" in v][0].startswith(want), c.stdout
        assert junit(ran_xml) == junit(checked_xml)
        assert ('type="not_run"' in "".join(junit(ran_xml))) == (want == "NOT RUN")


def verdict_lines(out):
    """Each rule's verdict and id, as the table prints them."""
    return [" ".join(line.split()[:3 if line.split()[0] == "NOT" else 2]) for line in out.splitlines()
            if line.strip().startswith(("PASS ", "FAIL ", "WAIVED ", "NOT RUN "))]


def junit(path):
    """The JUnit XML but the report's path (only `check` reads the report from a file)."""
    with open(path) as f:
        return [line for line in f if 'name="report"' not in line]


def test_roce_ports_and_ethernet_interfaces_are_in_the_inventory(tmp_path, monkeypatch):
    # A RoCE adapter sits in /sys/class/infiniband like an InfiniBand one, with link_layer
    # Ethernet, and its netdev in /sys/class/net: the fake 8-GPU node's adapter 7 made RoCE.
    def roce(root):
        sys = root / "sys"
        port = sys / "class" / "infiniband" / "mlx5_7" / "ports" / "1"
        (port / "link_layer").write_text("Ethernet\n")
        (port / "rate").write_text("200 Gb/sec (4X HDR)\n")
        net = sys / "class" / "net" / "ens7np0"
        net.mkdir(parents=True)
        (net / "device").symlink_to((sys / "class" / "infiniband" / "mlx5_7" / "device").resolve())
        for name, text in (("operstate", "up"), ("speed", "200000"), ("address", "b8:ce:f6:00:aa:07"),
                           ("mtu", "9000")):
            (net / name).write_text(text + "\n")
        lo = sys / "class" / "net" / "lo"  # no device behind it: not an adapter
        lo.mkdir()
        (lo / "operstate").write_text("unknown\n")

    real_tree = test_inventory.sysfs_tree
    monkeypatch.setattr(test_inventory, "sysfs_tree", lambda root, **kw: (real_tree(root, **kw), roce(root))[0])
    _, rep = node_report(tmp_path, "roce", [identity(i) for i in range(8)])
    dev = rep["hosts"][0]["devices"]
    ports = {p["device"]: p for p in dev["ib_ports"]}
    assert ports["mlx5_7"]["link_layer"] == "Ethernet" and ports["mlx5_7"]["rate_gbps"] == 200, ports["mlx5_7"]
    assert ports["mlx5_0"]["link_layer"] == "InfiniBand"
    assert [(n["name"], n["speed_mbps"], n["operstate"]) for n in dev["net_interfaces"]] == [("ens7np0", 200000, "up")]
    assert dev["counts"]["ib_rate_gbps"] == 200  # the slowest port: an expect of 400 fails this node
