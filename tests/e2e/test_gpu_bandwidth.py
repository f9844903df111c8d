"""GPU data movement (issue 6) as a user sees it: the GPU bandwidth benchmarks are listed and, on a
machine without a GPU, skipped with the capabilities probe's reason; bandwidth/numa_matrix runs
here and gives a node x node matrix; bad input is refused or skipped with the count."""
import os

import pytest

from conftest import FAST, listing, load_report, run

GPU_BENCHMARKS = ["bandwidth/h2d", "bandwidth/d2h", "bandwidth/bidirectional", "bandwidth/d2d",
                  "bandwidth/p2p", "bandwidth/gpu_latency", "bandwidth/pinned_alloc",
                  "bandwidth/host_to_all", "bandwidth/all_to_host", "bandwidth/all_to_one",
                  "bandwidth/one_to_all", "bandwidth/host_to_all_bidirectional",
                  "bandwidth/all_to_host_bidirectional", "bandwidth/p2p_latency"]
GPU_FILTER = ("^bandwidth/(h2d|d2h|bidirectional|d2d|p2p|gpu_latency|pinned_alloc|host_to_all|"
              "all_to_host|all_to_one|one_to_all|host_to_all_bidirectional|"
              "all_to_host_bidirectional|p2p_latency)$")
HAS_CUDA = os.environ.get("INFRABENCH_HAS_CUDA", "0").upper() in ("1", "ON", "TRUE")
SMALL_NUMA = ["-a", "array_size=4MiB"]


def cuda_capability(report):
    return report["capabilities"]["cuda"]


def test_list_shows_gpu_benchmarks_with_requirement():
    names = listing("^bandwidth/")
    assert "bandwidth/numa_matrix" in names
    assert names["bandwidth/numa_matrix"]["runnable"] is True
    if not HAS_CUDA:
        # A build without CUDA leaves the GPU files out entirely.
        assert not set(GPU_BENCHMARKS) & set(names)
        return
    for b in GPU_BENCHMARKS:
        assert b in names, b
        assert "cuda" in names[b]["requires"]
        if not names[b]["runnable"]:
            assert names[b]["reason_code"] == "no_device", names[b]
            assert "insufficient" not in names[b]["reason"], names[b]


def test_p2p_axes_form_the_matrix():
    if not HAS_CUDA:
        pytest.skip("built without CUDA")
    axes = {a["name"]: a for a in listing("^bandwidth/p2p$")["bandwidth/p2p"]["axes"]}
    assert {"src", "dst", "access", "traffic", "copy", "size"} <= set(axes)
    assert axes["dst"]["defaults"] == ["-1"]
    assert axes["src"]["defaults"] == [str(i) for i in range(8)]


def test_gpu_benchmarks_skip_with_the_probes_reason(report_path):
    if not HAS_CUDA:
        pytest.skip("built without CUDA")
    p = run("run", "--filter", GPU_FILTER, "-a", "size=64KiB", *FAST, "-o", report_path)
    report = load_report(report_path)
    cuda = cuda_capability(report)
    seen = {r["benchmark"] for r in report["results"]}
    assert set(GPU_BENCHMARKS) <= seen
    if cuda["available"]:
        # A GPU machine: nothing may fail; a p2p row beyond the GPU count is skipped with it.
        assert p.returncode == 0, p.stderr
        for r in report["results"]:
            assert r["status"] in ("passed", "skipped"), r
        return
    assert p.returncode == 0, p.stderr
    for r in report["results"]:
        assert r["status"] == "skipped", r
        assert r["reason"] == cuda["reason"], r
        assert r["reason_code"] == "no_device", r
    # The console says each reason once, after the tables, with how many benchmarks it skipped.
    p = run("run", "--filter", "^bandwidth/(h2d|d2h)$", *FAST, "-o", report_path)
    lines = [l for l in p.stdout.splitlines() if l.startswith("2 benchmarks skipped")]
    assert len(lines) == 1 and cuda["reason"][:40] in lines[0], p.stdout


def test_many_to_one_patterns_have_their_axes():
    """nvbandwidth's many-to-one tests: host patterns have a NUMA row and copy kinds; peer
    patterns also choose who issues the copies (write: the sender, read: the receiver)."""
    if not HAS_CUDA:
        pytest.skip("built without CUDA")
    names = listing("^bandwidth/(host_to_all|all_to_host|all_to_one|one_to_all)(_bidirectional)?$")
    assert set(names) == {"bandwidth/host_to_all", "bandwidth/all_to_host",
                          "bandwidth/all_to_one", "bandwidth/one_to_all",
                          "bandwidth/host_to_all_bidirectional",
                          "bandwidth/all_to_host_bidirectional"}
    for name, b in names.items():
        axes = {a["name"]: a for a in b["axes"]}
        assert {"size", "copy", "gpu"} <= set(axes), name
        if "host" in name:
            assert "numa_node" in axes, name
        else:
            assert axes["access"]["defaults"] == ["write", "read"], name


def test_numa_matrix_runs_here(report_path):
    p = run("run", "--filter", "^bandwidth/numa_matrix$", *SMALL_NUMA, *FAST, "-o", report_path)
    assert p.returncode == 0, p.stderr
    report = load_report(report_path)
    rows = [r for r in report["results"] if r["benchmark"] == "bandwidth/numa_matrix"]
    assert rows, report["results"]
    for r in rows:
        assert r["status"] == "passed", r
        metrics = {m["name"]: m for m in r["metrics"]}
        cells = [n for n in metrics if n.startswith("bandwidth_gbps_mem")]
        assert cells, metrics
        for c in cells:
            assert metrics[c]["unit"] == "GB/s"
            assert metrics[c]["value"] > 0
            assert "STREAM" in metrics[c]["method"]
        assert r["timer"] == "cpu_steady_clock"


def test_numa_matrix_copy_kernel_and_one_column(report_path):
    p = run("run", "--filter", "^bandwidth/numa_matrix$", *SMALL_NUMA, "-a", "kernel=copy",
            "-a", "mem_node=0", "-a", "cpu_node=0", "-a", "threads=1", *FAST, "-o", report_path)
    assert p.returncode == 0, p.stderr
    (r,) = load_report(report_path)["results"]
    assert r["status"] == "passed", r
    assert [m["name"] for m in r["metrics"] if m["name"].startswith("bandwidth")] == \
        ["bandwidth_gbps_mem0"]


def test_numa_node_that_does_not_exist_is_skipped_with_the_count(report_path):
    p = run("run", "--filter", "^bandwidth/numa_matrix$", *SMALL_NUMA, "-a", "cpu_node=63",
            *FAST, "-o", report_path)
    assert p.returncode == 0, p.stderr
    (r,) = load_report(report_path)["results"]
    assert r["status"] == "skipped"
    assert "NUMA node 63 does not exist: this machine has" in r["reason"], r
    p = run("run", "--filter", "^bandwidth/numa_matrix$", *SMALL_NUMA, "-a", "cpu_node=0",
            "-a", "mem_node=63", *FAST, "-o", report_path)
    (r,) = load_report(report_path)["results"]
    assert r["status"] == "skipped" and "NUMA node 63 does not exist" in r["reason"], r


@pytest.mark.parametrize("override", ["gpu=-2", "memory=mapped", "copy=dma", "traffic=both",
                                      "size=0"])
def test_bad_gpu_axis_values_are_refused(override):
    if not HAS_CUDA:
        pytest.skip("built without CUDA")
    p = run("run", "--filter", GPU_FILTER, "-a", override, *FAST)
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("infrabench: error: "), p.stderr
    assert override.split("=")[0] in lines[0]


def test_bad_numa_axis_values_are_refused():
    p = run("run", "--filter", "^bandwidth/numa_matrix$", "-a", "mem_node=-5", *FAST)
    assert p.returncode == 2, p.stderr
    assert "mem_node" in p.stderr
