"""Fleet acceptance without MPI across the fleet (issue 39, item 3): `check` takes the reports of
many nodes, each from its own run (a Slurm job array), and judges them together as one cluster
run's: a verdict per node, the drain list, OpenMetrics for every node, outliers across the nodes.
50 synthetic node reports made from one real report (ci/fleet_reports.py: hosts renamed, +-2%
apart, two 3x slow, one 1.3x off the others, one with a failed benchmark): exactly those four are
drained. ci/fleet-check.sh does the same with 1,000 (docs/scale.md)."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import FAST, one_line_error, run

SOURCE = os.environ.get("INFRABENCH_SOURCE_DIR", ".")
GENERATOR = os.path.join(SOURCE, "ci", "fleet_reports.py")
NODES = 50
SLOW, OUTLIER, FAILED = [3, 41], [17], [29]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet")
    real = str(root / "real.json")
    p = run("run", "--filter", "^bandwidth/memory_latency$", "-a", "working_set=16KiB,1MiB", *FAST,
            "--telemetry", "off", "-o", real)
    assert p.returncode == 0, p.stderr
    nodes = root / "nodes"
    base = str(root / "fleet.json")
    g = subprocess.run([sys.executable, GENERATOR, real, str(nodes), "--nodes", str(NODES),
                        "--slow", ",".join(map(str, SLOW)), "--outlier", ",".join(map(str, OUTLIER)),
                        "--failed", ",".join(map(str, FAILED)), "--baseline", base],
                       capture_output=True, text=True, timeout=120)
    assert g.returncode == 0, g.stderr
    return {"root": root, "nodes": nodes, "baseline": base, "drain": g.stdout.split()}


def node_files(fleet):
    return sorted(str(fleet["nodes"] / f) for f in os.listdir(fleet["nodes"]))


def test_the_degraded_nodes_and_only_they_are_drained(fleet):
    assert fleet["drain"] == ["node0003", "node0017", "node0029", "node0041"]
    p = run("check", "--baseline", fleet["baseline"], *node_files(fleet), "--format", "json")
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    assert len(doc["nodes"]) == NODES
    assert [d["host"] for d in doc["drain"]] == fleet["drain"], doc["drain"]
    verdicts = {n["host"]: n["verdict"] for n in doc["nodes"]}
    assert {h for h, v in verdicts.items() if v == "FAIL"} == set(fleet["drain"])
    by_host = {d["host"]: d["failed_rules"] for d in doc["drain"]}
    # 3x slow: below the threshold and off the others; 1.3x: within the threshold, but an outlier.
    assert any(not r.endswith("-outliers") for r in by_host["node0003"]), by_host
    assert all(r.endswith("-outliers") for r in by_host["node0017"]), by_host
    assert by_host["node0029"], by_host


def test_a_directory_is_the_same_fleet_and_the_table_names_every_node(fleet):
    p = run("check", "-b", fleet["baseline"], str(fleet["nodes"]))
    assert p.returncode == 1, p.stderr
    assert f"against {NODES} node reports" in p.stdout, p.stdout[:400]
    assert f"nodes: {NODES}, 4 to drain" in p.stdout, p.stdout
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\s+(node\d{4})\s+(PASS|FAIL)\b", p.stdout, re.M)}
    assert len(rows) == NODES
    assert sorted(h for h, v in rows.items() if v == "FAIL") == fleet["drain"]


def test_openmetrics_has_a_verdict_for_every_node(fleet):
    parser = pytest.importorskip("prometheus_client.openmetrics.parser")
    p = run("check", "-b", fleet["baseline"], str(fleet["nodes"]), "--format", "openmetrics")
    assert p.returncode == 1, p.stderr
    verdicts = {}
    for family in parser.text_string_to_metric_families(p.stdout):
        if family.name == "infrabench_node_verdict":
            for s in family.samples:
                if s.value == 1:
                    verdicts[s.labels["host"]] = s.labels["verdict"]
    assert len(verdicts) == NODES, sorted(verdicts)
    assert sorted(h for h, v in verdicts.items() if v == "FAIL") == fleet["drain"]


def test_a_healthy_fleet_passes(fleet, tmp_path):
    healthy = tmp_path / "healthy"
    healthy.mkdir()
    for f in node_files(fleet):
        if not any(h in f for h in fleet["drain"]):
            shutil.copy(f, healthy)
    p = run("check", "-b", fleet["baseline"], str(healthy))
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr
    assert f"nodes: {NODES - 4}, 0 to drain" in p.stdout, p.stdout


def test_two_reports_of_one_host_and_an_empty_directory_are_refused(fleet, tmp_path):
    files = node_files(fleet)
    copy = str(tmp_path / "again.json")
    shutil.copy(files[0], copy)
    p = run("check", "-b", fleet["baseline"], *files[:3], copy)
    one_line_error(p, "node0000", "two reports", "again.json")
    empty = tmp_path / "empty"
    empty.mkdir()
    p = run("check", "-b", fleet["baseline"], str(empty))
    one_line_error(p, "holds no report")


def test_report_fleet_is_one_page_of_every_node(fleet, tmp_path):
    out = str(tmp_path / "fleet.html")
    p = run("report", "--fleet", str(fleet["nodes"]), "-b", fleet["baseline"], "-o", out)
    assert p.returncode == 0, p.stderr
    with open(out) as f:
        page = f.read()
    assert f"{NODES} node reports" in page
    assert all(f"node{i:04d}" in page for i in range(NODES))
    # Without --fleet several reports are a comparison against the first, as before.
    files = node_files(fleet)[:2]
    p = run("report", *files, "-o", str(tmp_path / "compare.html"))
    assert p.returncode == 0, p.stderr
