"""Collectives under mpirun on one host (shared memory): MPI_Allreduce next to our ring and
recursive doubling, the other collectives, pairwise, verification, one result per collective,
node-local scheduling, bad input, and the harness's own fault handling (a killed rank, a stopped
rank hitting --op-timeout). The multi-host versions run in test_multinode.py (ci/multinode.sh)."""
import os
import re
import shutil
import signal
import subprocess
import threading
import time

import pytest

from conftest import BIN, FAST, load_report, one_line_error, run

HAS_MPI = os.environ.get("INFRABENCH_HAS_MPI") == "1" and shutil.which("mpirun")
needs_mpi = pytest.mark.skipif(not HAS_MPI, reason="built without MPI, or no mpirun")
built_with_mpi = pytest.mark.skipif(os.environ.get("INFRABENCH_HAS_MPI") != "1",
                                    reason="built without MPI: no collective is compiled in")


def mpirun_cmd(n, args, wrapper=None):
    cmd = ["mpirun", "--oversubscribe", "--mca", "btl", "self,vader", "--mca", "mpi_yield_when_idle", "1",
           "--timeout", "170", "-np", str(n), *([wrapper] if wrapper else []), BIN, *args]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    return cmd


def mpi_env():
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    return env


def mpirun(n, *args, timeout=180):
    return subprocess.run(mpirun_cmd(n, args), capture_output=True, text=True, timeout=timeout, env=mpi_env())


def by_bench(rep, name):
    return [r for r in rep["results"] if r["benchmark"] == name]


def metrics(r):
    return {m["name"]: m["value"] for m in r["metrics"]}


@built_with_mpi
def test_without_a_launcher_collectives_are_skipped_with_the_reason(report_path):
    p = run("run", "--filter", "^collectives/(mpi_allreduce|pairwise)$", "-a", "size=8", *FAST, "-o", report_path)
    assert p.returncode == 0, p.stderr
    rep = load_report(report_path)
    assert rep["results"] and all(r["status"] == "skipped" for r in rep["results"])
    assert all("needs at least 2 ranks" in r["reason"] for r in rep["results"])


@needs_mpi
def test_allreduce_algorithms_verified_one_result_per_configuration(tmp_path):
    out = str(tmp_path / "r.json")
    p = mpirun(2, "run", "--filter", "^collectives/mpi_allreduce$", "-a", "size=8,64KiB", "-a", "dtype=float32,float64",
               "-a", "placement=out_of_place,in_place", *FAST, "-o", out)
    assert p.returncode == 0, p.stdout + p.stderr
    rep = load_report(out)
    ar = by_bench(rep, "collectives/mpi_allreduce")
    # 2 sizes x 2 dtypes x 2 placements x 3 algorithms, recorded once each (by rank 0).
    assert len(ar) == 24 and all(r["rank"] == 0 for r in ar)
    assert {r["axes"]["algorithm"] for r in ar} == {"mpi", "ring", "recursive_doubling"}
    for r in ar:
        assert r["status"] == "passed", r
        assert not any("verification" in why for why in r["invalid_reasons"]), r["invalid_reasons"]
        assert r["timer"] == "steady_clock_batch_mean_max_over_ranks"
        m = metrics(r)
        assert m["busbw_gbps"] == pytest.approx(m["algbw_gbps"])  # 2(n-1)/n = 1 for 2 ranks
        assert m["algbw_gbps"] == pytest.approx(r["axes"]["size"] / r["time_s"]["median"] / 1e9, rel=1e-6)
        assert m["latency_us"] == pytest.approx(r["time_s"]["median"] * 1e6, rel=1e-6)


@needs_mpi
def test_three_ranks_every_collective_verified(tmp_path):
    # 3 ranks: recursive doubling folds a rank in, ring segments are uneven (1000 B = 250 floats).
    out = str(tmp_path / "r.json")
    p = mpirun(3, "run", "--filter", "^collectives/mpi_", "-a", "size=8,1000,128KiB", "-a", "dtype=float64",
               "-a", "placement=out_of_place,in_place", *FAST, "-o", out)
    assert p.returncode == 0, p.stdout + p.stderr
    rep = load_report(out)
    names = {r["benchmark"] for r in rep["results"]}
    assert names == {f"collectives/mpi_{op}" for op in ("allreduce", "allgather", "reduce_scatter", "broadcast",
                                                         "alltoall", "reduce", "gather", "scatter", "sendrecv")}
    for r in rep["results"]:
        if r["status"] == "skipped":
            # 8 B of float64 is one element: fewer than one per rank for the block collectives.
            assert "less than one element per rank" in r["reason"] and r["axes"]["size"] == 8, r
            continue
        assert r["status"] == "passed", r
        assert not any("verification" in why for why in r["invalid_reasons"]), r
        # nccl-tests' bus factors (doc/PERFORMANCE.md) for 3 ranks.
        factor = {"allreduce": 4 / 3, "broadcast": 1.0, "reduce": 1.0, "sendrecv": 1.0}.get(
            r["benchmark"].split("_", 1)[1], 2 / 3)
        m = metrics(r)
        assert m["busbw_gbps"] == pytest.approx(m["algbw_gbps"] * factor)


@needs_mpi
@pytest.mark.parametrize("ranks", [2, 3])
def test_every_dtype_and_op_verified(tmp_path, ranks):
    # nccl-tests' -d all -o all on the reductions: float16/bfloat16 through our own MPI_Op_create
    # operations, avg as a sum divided afterwards; 1000 B: 500 half-precision elements, uneven blocks.
    out = str(tmp_path / "r.json")
    p = mpirun(ranks, "run", "--filter", "^collectives/mpi_(allreduce|reduce|reduce_scatter)$", "-a", "size=1000",
               "-a", "dtype=float32,float64,float16,bfloat16,int32", "-a", "op=sum,max,min,avg",
               "-a", "placement=out_of_place,in_place", "-a", "algorithm=mpi", *FAST, "-o", out, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    results = load_report(out)["results"]
    assert len(results) == 3 * 5 * 4 * 2
    for r in results:
        assert r["status"] == "passed", r
        assert r["axes"]["group"] == "world"
        assert not r["invalid_reasons"] or not any("verification" in why for why in r["invalid_reasons"]), r
        m = metrics(r)
        factor = {"allreduce": 2 * (ranks - 1) / ranks, "reduce": 1.0}.get(r["benchmark"].split("_", 1)[1],
                                                                         (ranks - 1) / ranks)
        assert m["busbw_gbps"] == pytest.approx(m["algbw_gbps"] * factor)


@needs_mpi
def test_our_algorithms_refuse_what_they_cannot_reduce(tmp_path):
    out = str(tmp_path / "r.json")
    p = mpirun(2, "run", "--filter", "^collectives/mpi_allreduce$", "-a", "size=1KiB", "-a", "dtype=float16,float32",
               "-a", "op=sum,max", "-a", "algorithm=ring", "-a", "placement=out_of_place", *FAST, "-o", out)
    assert p.returncode == 0, p.stdout + p.stderr
    by = {(r["axes"]["dtype"], r["axes"]["op"]): r for r in load_report(out)["results"]}
    assert by[("float32", "sum")]["status"] == "passed"
    for key in (("float16", "sum"), ("float32", "max"), ("float16", "max")):
        assert by[key]["status"] == "skipped" and "sums float32 and float64 only" in by[key]["reason"], by[key]


def axis_line(listing, bench, axis):
    """The `-a axis=...` line of `bench` in `infrabench list`."""
    block = listing[listing.index(bench + "\n"):]
    block = block[:block.find("\n\n")]
    return next(line for line in block.splitlines() if line.strip().startswith(f"-a {axis}="))


@built_with_mpi
def test_fp8_is_offered_by_nccl_only(tmp_path):
    # MPI has no 8-bit float: an MPI run asking for one is refused before anything runs, and the
    # axis says why; NCCL's reductions offer both formats (compiled where NCCL is: default preset).
    out = str(tmp_path / "r.json")
    p = run("run", "--filter", "^collectives/mpi_allreduce$", "-a", "dtype=float8_e4m3", "-o", out)
    one_line_error(p, "'float8_e4m3' is not one of", "int32")
    assert not os.path.exists(out)
    listing = run("list").stdout
    for bench in ("collectives/mpi_allreduce", "collectives/mpi_reduce", "collectives/mpi_reduce_scatter"):
        line = axis_line(listing, bench, "dtype")
        assert "no 8-bit floats" in line and "|float8" not in line, line
    if "collectives/nccl_allreduce\n" in listing:
        for bench in ("collectives/nccl_allreduce", "collectives/nccl_reduce", "collectives/nccl_reduce_scatter"):
            line = axis_line(listing, bench, "dtype")
            assert "int32|float8_e4m3|float8_e5m2" in line and "compute capability 9.0" in line, line


@needs_mpi
def test_split_groups_on_one_host(tmp_path):
    # One host: its ranks are one intra_node group (the world's ranks); one rank per host or per
    # rail is a group of one, skipped with the reason on every rank rather than hanging.
    out = str(tmp_path / "r.json")
    p = mpirun(2, "run", "--filter", "^collectives/mpi_(allreduce|sendrecv)$", "-a", "size=4KiB",
               "-a", "group=world,intra_node,inter_node,rail", "-a", "algorithm=mpi,ring", "-a", "dtype=float32",
               "-a", "placement=out_of_place", *FAST, "-o", out)
    assert p.returncode == 0, p.stdout + p.stderr
    results = load_report(out)["results"]
    assert {r["axes"]["group"] for r in results} == {"world", "intra_node", "inter_node", "rail"}
    for r in results:
        if r["axes"]["group"] in ("world", "intra_node"):
            assert r["status"] == "passed", r
        else:
            assert r["status"] == "skipped", r
            assert f"group {r['axes']['group']} has a group of 1 rank(s)" in r["reason"], r


SHIM = r"""
#include <mpi.h>
/* Rank 0 of every MPI_Reduce of floats gets its first element wrong: a broken library or link. */
int MPI_Reduce(const void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c) {
  int rc = PMPI_Reduce(s, r, count, t, op, root, c), me = 0;
  MPI_Comm_rank(c, &me);
  if (me == root && t == MPI_FLOAT && count > 0) ((float*)r)[0] += 1.0f;
  return rc;
}
"""


@needs_mpi
@pytest.mark.skipif(not shutil.which("mpicc"), reason="no mpicc to build the fault shim")
def test_a_wrong_result_fails_and_keeps_no_number(tmp_path):
    src = tmp_path / "shim.c"
    src.write_text(SHIM)
    lib = tmp_path / "libwrong_reduce.so"
    subprocess.run(["mpicc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True, timeout=120)
    out = str(tmp_path / "r.json")
    cmd = mpirun_cmd(2, ["run", "--filter", "^collectives/mpi_(reduce|allreduce)$", "-a", "size=4KiB",
                         "-a", "dtype=float32", "-a", "placement=out_of_place", "-a", "algorithm=mpi", *FAST,
                         "-o", out])
    cmd[1:1] = ["-x", f"LD_PRELOAD={lib}"]
    env = mpi_env()
    # An ASan build refuses to start with the (uninstrumented) shim preloaded ahead of its runtime;
    # the shim only replaces MPI_Reduce, so the order does not matter here (ignored without ASan).
    env["ASAN_OPTIONS"] += ":verify_asan_link_order=0"
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)
    assert os.path.exists(out), p.stdout + p.stderr
    rep = load_report(out)
    by = {r["benchmark"]: r for r in rep["results"]}
    bad = by["collectives/mpi_reduce"]
    assert bad["status"] == "failed", bad
    assert "verification failed on rank 0: 1 of 1024 elements wrong; element 0 = " in bad["reason"], bad
    assert not any(m["name"] == "busbw_gbps" and m.get("value") for m in bad.get("metrics", [])), bad
    assert by["collectives/mpi_allreduce"]["status"] == "passed"  # not intercepted
    assert p.returncode != 0


@needs_mpi
def test_node_local_benchmarks_run_once_per_host(tmp_path):
    out = str(tmp_path / "r.json")
    p = mpirun(2, "run", "--filter", "^bandwidth/memory_latency$", "-a", "working_set=16KiB", *FAST, "-o", out)
    assert p.returncode == 0, p.stdout + p.stderr
    rep = load_report(out)
    [measured] = [r for r in rep["results"] if r["status"] == "passed"]
    [left] = [r for r in rep["results"] if r["status"] == "skipped"]
    assert measured["rank"] == 0 and left["rank"] == 1
    assert left["reason"].startswith("node-local: measured once per host")
    assert left["reason_code"] == "node_local"
    assert "cluster: 1 host" in p.stdout and "left to the one rank per host" in p.stdout


@needs_mpi
def test_pairwise_between_ranks_and_too_few_hosts(tmp_path):
    out = str(tmp_path / "r.json")
    p = mpirun(2, "run", "--filter", "^collectives/pairwise$", "-a", "between=ranks,nodes", "-a", "size=64KiB",
               *FAST, "-o", out)
    assert p.returncode == 0, p.stdout + p.stderr
    rep = load_report(out)
    by_ranks = [r for r in rep["results"] if r["axes"]["between"] == "ranks"]
    assert sorted(r["rank"] for r in by_ranks) == [0, 1]
    for r in by_ranks:
        peer = 1 - r["rank"]
        m = metrics(r)
        assert r["status"] == "passed" and m[f"bandwidth_gbps_to_rank_{peer}"] > 0 and m[f"latency_us_to_rank_{peer}"] > 0
    by_nodes = [r for r in rep["results"] if r["axes"]["between"] == "nodes"]
    # Needs more hosts than the run has: skipped, with the reason, on every rank (not a hang).
    assert by_nodes and all(r["status"] == "skipped" and "needs at least 2 hosts" in r["reason"] for r in by_nodes)


@needs_mpi
def test_one_rank_is_too_few(tmp_path):
    out = str(tmp_path / "r.json")
    p = mpirun(1, "run", "--filter", "^collectives/mpi_broadcast$", "-a", "size=8", *FAST, "-o", out)
    assert p.returncode == 0, p.stdout + p.stderr
    [r] = load_report(out)["results"]
    assert r["status"] == "skipped" and "needs at least 2 ranks (world size 1)" in r["reason"]
    assert r["reason_code"] == "needs_ranks"


@needs_mpi
def test_bad_input_exits_2_on_every_rank(tmp_path):
    out = str(tmp_path / "r.json")
    p = mpirun(2, "run", "--filter", "^collectives/mpi_allreduce$", "-a", "size=1MiB:8", "-o", out)
    assert p.returncode == 2 and "bounds inverted" in p.stderr, p.stdout + p.stderr
    p = mpirun(2, "run", "--filter", "^collectives/mpi_allreduce$", "--op-timeout", "soon", "-o", out)
    assert p.returncode == 2 and "--op-timeout 'soon'" in p.stderr, p.stdout + p.stderr
    assert not os.path.exists(out)


def mpmd(out, first, second):
    """An MPMD launch (mpirun -np 1 A : -np 1 B) of the same run with different extra arguments."""
    common = ["--oversubscribe", "--mca", "btl", "self,vader", "--mca", "mpi_yield_when_idle", "1", "--timeout", "100"]
    if os.geteuid() == 0:
        common.insert(0, "--allow-run-as-root")
    args = ["run", "--filter", "^collectives/mpi_allreduce$", "-a", "algorithm=ring", "-a", "dtype=float32",
            "-a", "placement=out_of_place", "-o", out]
    cmd = ["mpirun", *common, "-np", "1", BIN, *args, *first, ":", "-np", "1", BIN, *args, *second]
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=mpi_env())
    return p, time.monotonic() - start


def refused_with_one_line(p, elapsed, text):
    assert p.returncode == 2, p.stdout + p.stderr
    errors = [line for line in p.stderr.splitlines() if "infrabench: error:" in line]
    assert len(errors) == 1 and text in errors[0], p.stderr
    # Refused before the first configuration, not after --op-timeout (30 s) of a hang.
    assert elapsed < 20, elapsed


@needs_mpi
def test_mismatched_configurations_are_refused(tmp_path):
    out = str(tmp_path / "r.json")
    p, elapsed = mpmd(out, [*FAST, "-a", "size=8"], [*FAST, "-a", "size=16"])
    refused_with_one_line(p, elapsed, "disagree on the configurations")
    assert not os.path.exists(out)


@needs_mpi
def test_mismatched_timing_settings_are_refused(tmp_path):
    # Different --min-time: the ranks would stop sampling at different samples and hang in the
    # per-sample reduction.
    out = str(tmp_path / "r.json")
    p, elapsed = mpmd(out, ["-q", "-a", "size=8", "--min-time", "0.01", "--max-time", "0.05"],
                      ["-q", "-a", "size=8", "--min-time", "0.02", "--max-time", "0.05"])
    refused_with_one_line(p, elapsed, "ranks disagree on --min-time: rank 1")
    assert "has '0.02', rank 0 has '0.01'" in p.stderr
    assert not os.path.exists(out)


@needs_mpi
def test_mismatched_run_options_are_refused(tmp_path):
    # Different chunk sizes: the ring's ranks would post different messages and never match.
    out = str(tmp_path / "r.json")
    p, elapsed = mpmd(out, [*FAST, "-a", "size=1MiB", "--allreduce-chunk", "256KiB"],
                      [*FAST, "-a", "size=1MiB", "--allreduce-chunk", "1MiB"])
    refused_with_one_line(p, elapsed, "ranks disagree on --allreduce-chunk: rank 1")
    assert "has '1MiB', rank 0 has '256KiB'" in p.stderr
    assert not os.path.exists(out)


class background:
    def __init__(self, n, args, wrapper=None):
        self.proc = subprocess.Popen(mpirun_cmd(n, args, wrapper), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env=mpi_env(), start_new_session=True)
        self.lines = []
        threading.Thread(target=lambda: self.lines.extend(self.proc.stdout), daemon=True).start()

    def wait_for(self, text, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.proc.poll() is None:
            if text in "".join(self.lines):
                return True
            time.sleep(0.1)
        return False

    def rank_pid(self, rank):
        """The PID of one rank: a child of mpirun whose environment says so."""
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                if ppid != self.proc.pid:
                    continue
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if f"OMPI_COMM_WORLD_RANK={rank}".encode() in f.read().split(b"\0"):
                        return int(pid)
            except (OSError, ValueError, IndexError):
                continue
        return None

    def finish(self, timeout):
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            rc = None
        time.sleep(0.2)
        return rc, "".join(self.lines)


LONG_RUN = ["run", "--filter", "^collectives/mpi_allreduce$", "-a", "size=64KiB,256KiB", "-a", "dtype=float32",
            "-a", "algorithm=mpi,ring", "-a", "placement=out_of_place,in_place", "--min-time", "0.5",
            "--max-time", "0.5"]


def check_partial_report(out, text, rc, who):
    assert rc is not None and rc != 0, text
    assert who in text, text
    rep = load_report(out)
    assert rep["run"]["interrupted"] is True and who in rep["run"]["interrupted_reason"]
    assert any(r["status"] == "passed" for r in rep["results"])


@needs_mpi
def test_killed_rank_is_named_and_partial_report_written(tmp_path):
    out = str(tmp_path / "r.json")
    job = background(3, [*LONG_RUN, "-o", out])
    assert job.wait_for("[3/", 120), "".join(job.lines)
    pid = job.rank_pid(2)
    assert pid
    t0 = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    rc, text = job.finish(60)
    assert time.monotonic() - t0 < 30
    check_partial_report(out, text, rc, "rank 2 (host ")


def own_hostname_wrapper(tmp_path):
    """A launcher wrapper giving each rank a host name of its own (h<rank>, in a UTS namespace):
    to the report they are three hosts, each sampled by its own rank, while MPI still runs them
    over shared memory on this machine."""
    wrapper = tmp_path / "own-host.sh"
    wrapper.write_text('#!/bin/sh\nexec unshare --uts sh -c \'hostname "h$OMPI_COMM_WORLD_RANK" && '
                       'exec "$0" "$@"\' "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


@needs_mpi
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare (UTS namespaces)")
def test_partial_report_keeps_every_hosts_traces(tmp_path):
    # Issue 28: a complete multi-host run carries every host's traces (hosts[i].telemetry); a
    # partial one carried only rank 0's. Now each host's that reached rank 0, and the dead one's
    # traces as far as they were sent, or why there are none.
    out = str(tmp_path / "r.json")
    job = background(3, [*LONG_RUN, "--telemetry", "on", "--telemetry-interval", "0.1", "-o", out],
                     wrapper=own_hostname_wrapper(tmp_path))
    assert job.wait_for("[5/", 120), "".join(job.lines)
    time.sleep(0.5)  # rank 2's traces, sent as configuration 5 started, reach rank 0
    pid = job.rank_pid(2)
    assert pid
    os.kill(pid, signal.SIGKILL)
    rc, text = job.finish(60)
    check_partial_report(out, text, rc, "rank 2 (host h2)")
    rep = load_report(out)
    hosts = {h["hostname"]: h for h in rep["hosts"]}
    assert sorted(hosts) == ["h0", "h1", "h2"], sorted(hosts)
    assert rep["telemetry"]["cpu"]["trace"]["t_s"], "rank 0's host: the report's own traces"
    assert "telemetry" not in hosts["h0"]
    for name in ("h1", "h2"):  # both sent theirs before rank 2 died
        assert hosts[name]["telemetry"]["cpu"]["trace"]["t_s"], (name, hosts[name].get("telemetry_missing"))
        assert "the job ended before the rest reached rank 0" in hosts[name]["telemetry_partial"]


@needs_mpi
def test_stopped_rank_hits_the_operation_timeout(tmp_path):
    # A stopped process answers nothing (not even heartbeats): like a host gone silent.
    out = str(tmp_path / "r.json")
    job = background(2, [*LONG_RUN, "--op-timeout", "3", "-o", out])
    assert job.wait_for("[3/", 120), "".join(job.lines)
    pid = job.rank_pid(1)
    assert pid
    t0 = time.monotonic()
    os.kill(pid, signal.SIGSTOP)
    try:
        rc, text = job.finish(60)
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert time.monotonic() - t0 < 30
    check_partial_report(out, text, rc, "rank 1 (host ")
    assert "stopped answering" in text and "--op-timeout" in text, text


@needs_mpi
def test_console_prints_collectives_as_nccl_tests(tmp_path):
    """Issue 45 item 12: size, count, type, redop, root, then out-of-place and in-place
    time/algbw/busbw/#wrong side by side in one row per size, and "Avg bus bandwidth" computed from
    the results (the mean busbw of the VALID ones, INVALID ones said apart), in GB/s throughout."""
    out = str(tmp_path / "r.json")
    p = mpirun(2, "run", "--filter", "^collectives/mpi_allreduce$", "-a", "size=8,64KiB", "-a", "dtype=float32",
               "-a", "placement=out_of_place,in_place", "-a", "algorithm=mpi", *FAST, "-o", out)
    assert p.returncode == 0, p.stdout + p.stderr
    text = p.stdout[p.stdout.index("collectives/mpi_allreduce"):]
    assert all(len(line) <= 120 for line in text.splitlines()), text
    for word in ("out-of-place", "in-place", "size", "count", "type", "redop", "root", "#wrong", "(us)",
                 "(GB/s)"):
        assert word in text, (word, text)
    assert "MB/s" not in text, text  # fixed GB/s, as nccl-tests
    rows = [line.split() for line in text.splitlines()
            if line.split()[:1] in (["8"], ["64KiB"]) and line.split()[1].isdigit()]  # not its notes
    assert [r[:5] for r in rows] == [["8", "2", "float32", "sum", "-1"], ["64KiB", "16384", "float32", "sum", "-1"]]
    assert all(r[8] == "0" and r[12] == "0" for r in rows), rows  # #wrong of each placement
    results = load_report(out)["results"]
    busbw = [(metrics(r)["busbw_gbps"], r["valid"]) for r in results if r["status"] == "passed"]
    valid = [b for b, ok in busbw if ok]
    m = re.search(r"Avg bus bandwidth: (\S+) GB/s \(the mean busbw of (\d+) results?", text)
    if valid:
        assert m and int(m.group(2)) == len(valid), text
        assert float(m.group(1)) == pytest.approx(sum(valid) / len(valid), rel=0.01, abs=0.006), text
        if len(valid) < len(busbw):
            assert f"{len(busbw) - len(valid)} INVALID left out" in text, text
    else:
        assert "Avg bus bandwidth: INVALID: " in text, text
    assert "#wrong: 0 OK (4 results verified)" in text, text
