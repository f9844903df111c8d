"""storage/read and storage/dataloader as a user runs them (issue #3): every byte read verified for
both engines, the safety rules (read-only targets, free-space margin, scratch removed after a
normal run, an error and SIGINT), each bad input, and runs as an unprivileged user."""
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time

import pytest

from conftest import BIN, FAST, load_report, run

SOURCE_DIR = os.environ.get("INFRABENCH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SMALL_READ = ["--filter", "^storage/read$", "-a", "size=8MiB", "-a", "block_size=4KiB,64KiB",
              "-a", "queue_depth=1,8"]
SMALL_LOADER = ["--filter", "^storage/dataloader$", "-a", "sample_size=16KiB", "-a", "samples=64",
                "-a", "files_per_dir=16", "-a", "batch_size=8", "-a", "compute_ms=2", "-a", "search=0"]
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def results_of(report, name):
    return [r for r in report["results"] if r["benchmark"] == name]


def axes(r):
    return dict(r["axes"])


def metrics(r):
    return {m["name"]: m["value"] for m in r["metrics"]}


def runnable(name):
    p = run("list", "--json", "--filter", name)
    assert p.returncode == 0, p.stderr
    return {b["name"]: b for b in json.loads(p.stdout)}[name]


def io_uring_available():
    p = run("sysinfo", "--json")
    return json.loads(p.stdout)["capabilities"]["io_uring"]["available"]


def scratch_left(d):
    return [n for n in os.listdir(d) if n.startswith("infrabench-scratch-")]


@pytest.fixture
def shared_dir():
    """A directory an unprivileged user can use too (pytest's tmp_path is private to root)."""
    d = tempfile.mkdtemp(prefix="ib-storage-", dir="/tmp")
    os.chmod(d, 0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def as_nobody_or_skip():
    """The command prefix that drops to an unprivileged user, or skip with why it cannot."""
    if os.geteuid() != 0:
        return []  # already unprivileged
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv not installed: cannot run as an unprivileged user")
    p = subprocess.run(NOBODY + [BIN, "--version"], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip("the binary is not reachable by uid 65534: " + p.stderr.strip())
    return NOBODY


def run_as(prefix, *args, cwd=None, timeout=120):
    return subprocess.run(prefix + [BIN, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout)


# ---- listing and options -----------------------------------------------------------------------

def test_list_and_run_options():
    p = run("list", "--filter", "storage")
    assert p.returncode == 0, p.stderr
    assert "storage/read" in p.stdout and "storage/dataloader" in p.stdout
    assert "-a engine=io_uring,psync" in p.stdout
    h = run("run", "--help")
    for opt in ["--scratch", "--keep-scratch", "--verify"]:
        assert opt in h.stdout, h.stdout


# ---- every byte verified, both engines -----------------------------------------------------------

def check_read_results(report, expect_io_uring):
    rs = results_of(report, "storage/read")
    assert rs
    ran = set()
    for r in rs:
        a = axes(r)
        if a["engine"] == "psync" and a["queue_depth"] > 1:
            assert r["status"] == "skipped" and "synchronous" in r["reason"], r
            continue
        if a["engine"] == "io_uring" and not expect_io_uring:
            assert r["status"] == "skipped" and "io_uring" in r["reason"], r
            continue
        assert r["status"] == "passed", r
        # Timing noise may mark a result invalid; a verification failure must never.
        assert not any("verify" in x for x in r.get("invalid_reasons", [])), r
        m = metrics(r)
        for k in ["bandwidth_gbps", "ios_per_s", "latency_us_mean", "latency_us_p50", "latency_us_p90",
                  "latency_us_p99", "latency_us_p99_9", "latency_us_p99_99", "cpu_us_per_io",
                  "queue_depth_mean"]:
            assert k in m and m[k] > 0, (k, r)
        assert m["latency_us_p50"] <= m["latency_us_p99"] <= m["latency_us_p99_99"] <= m["latency_us_max"] * 1.004
        assert m["queue_depth_mean"] <= a["queue_depth"] + 1e-9
        # A call is a batch of reads (16 or more); none can complete faster than 50 ns a read. A
        # call timed from the wrong clock (e.g. the harness thread waking late) would.
        assert r["time_s"]["min"] >= r["work_per_iteration"]["items"] * 50e-9, r["time_s"]
        assert any("--verify" in w for w in r["warnings"]), r
        ran.add(a["engine"])
    return ran


def mount_type_of(path):
    """The filesystem type of the mount holding `path`, from /proc/self/mountinfo: the longest mount
    point it is under, the last of equals (findmnt's answer; `stat -f` says ext2/ext3 for ext4)."""
    best = ("", None)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), left.split()[4])
            if (point == "/" or path == point or path.startswith(point + "/")) and len(point) >= len(best[0]):
                best = (point, right.split()[0])
    return best[1]


def check_location(r, given, scratch):
    """Where a storage result says it measured (issue 45 item 3): the directory given, resolved,
    its filesystem, and a block device, or why there is none."""
    loc = r["storage_location"]
    real = os.path.realpath(scratch)
    assert loc["given"] == given and os.path.isabs(loc["path"]) and loc["path"] == real, loc
    assert loc["kind"] == "directory", loc
    assert loc["filesystem"] == mount_type_of(real), loc
    assert loc["mount_point"] and loc["mount_source"], loc
    assert loc.get("device") or loc["unknown"]["device"], loc
    for fact, why in loc.get("unknown", {}).items():
        assert why and fact not in loc, (fact, loc)
    m = metrics(r)
    if "disk_util_percent" in m:
        assert 0 <= m["disk_util_percent"] <= 100 and loc.get("device"), (m, loc)
    else:
        assert r["withheld"]["disk_util_percent"], r  # absent, not 0, and why
    return loc


@pytest.mark.parametrize("where", ["disk", "tmpfs"])
def test_read_records_where_it_measured(where, shared_dir, report_path):
    """--scratch . (the clone's directory, say) is recorded resolved, with its filesystem, mount and
    device; min/mean/stdev latency beside the percentiles, utilisation as fio's util=."""
    scratch = shared_dir if where == "disk" else tempfile.mkdtemp(prefix="ib-where-", dir="/dev/shm")
    try:
        p = run("run", "--filter", "^storage/read$", "-a", "size=8MiB", "-a", "block_size=64KiB", "-a",
                "queue_depth=1", "-a", "engine=psync", "-a", f"direct={int(where == 'disk')}",
                "--min-time", "0.01", "--max-time", "0.05", "--scratch", ".", "-o", report_path, cwd=scratch)
        assert p.returncode == 0, p.stdout + p.stderr
        (r,) = results_of(load_report(report_path), "storage/read")
        assert r["status"] == "passed", r
        loc = check_location(r, ".", scratch)
        assert loc["file"].startswith(loc["path"] + "/infrabench-scratch-"), loc
        if where == "tmpfs":
            assert loc["filesystem"] == "tmpfs" and "none" in loc["unknown"]["device"], loc
            assert "disk_util_percent" not in metrics(r), r
        m = metrics(r)
        assert 0 < m["latency_us_min"] <= m["latency_us_mean"] <= m["latency_us_max"], m
        assert m["latency_us_min"] <= m["latency_us_p50"] and m["latency_us_stdev"] >= 0, m
        roles = {x["name"]: x["role"] for x in r["metrics"]}
        assert roles["latency_us_min"] == roles["latency_us_stdev"] == roles["latency_us_p99"], roles
        assert roles.get("disk_util_percent", "information") == "information", roles
        # The console says where, once, above the benchmark's table.
        assert p.stdout.count("where: " + loc["path"] + " (given as .)") == 1, p.stdout
    finally:
        if where == "tmpfs":
            shutil.rmtree(scratch, ignore_errors=True)


def test_verify_reads_every_byte_for_both_engines(shared_dir, report_path):
    p = run("run", *SMALL_READ, *FAST, "--verify", "--scratch", shared_dir, "-o", report_path)
    assert p.returncode == 0, p.stderr
    ran = check_read_results(load_report(report_path), io_uring_available())
    assert "psync" in ran
    assert scratch_left(shared_dir) == []


def test_pinned_jobs_verify_every_byte(shared_dir, report_path):
    """Two pinned jobs, each with its own descriptor, ring and half of the file."""
    p = run("run", "--filter", "^storage/read$", "-a", "size=8MiB", "-a", "block_size=16KiB", "-a", "queue_depth=1",
            "-a", "jobs=2", "-a", "pin=1", *FAST, "--verify", "--scratch", shared_dir, "-o", report_path)
    assert p.returncode == 0, p.stderr
    report = load_report(report_path)
    assert "psync" in check_read_results(report, io_uring_available())
    for r in results_of(report, "storage/read"):
        if r["status"] == "passed":
            assert r["work_per_iteration"]["items"] % 2 == 0  # both jobs' shares
    assert scratch_left(shared_dir) == []


def test_dataloader_verified_and_au_threshold(shared_dir, report_path):
    p = run("run", *SMALL_LOADER, "-a", "reader_engine=io_uring,psync", "-a", "compute_ms=0,2", *FAST, "--verify",
            "--scratch", shared_dir, "-o", report_path)
    assert p.returncode == 0, p.stderr
    rs = results_of(load_report(report_path), "storage/dataloader")
    assert len(rs) == 4
    for r in rs:
        a = axes(r)
        if a["reader_engine"] == "io_uring" and not io_uring_available():
            assert r["status"] == "skipped", r
            continue
        assert r["status"] == "passed", r
        check_location(r, shared_dir, shared_dir)
        m = metrics(r)
        assert 0 <= m["accelerator_utilization_percent"] <= 100.0001
        assert m["samples_per_s"] > 0 and m["bandwidth_gbps"] > 0
        assert not any("verify" in x for x in r.get("invalid_reasons", [])), r
        if a["compute_ms"] == 0:
            # No compute: AU is 0, below the 90% threshold, so the result must be invalid.
            assert m["accelerator_utilization_percent"] == 0
            assert r["valid"] is False and any("AU" in x for x in r["invalid_reasons"]), r
    assert scratch_left(shared_dir) == []


def test_dataloader_search_reports_the_fastest_accelerator_fed(shared_dir, report_path):
    args = [a if a != "search=0" else "search=1" for a in SMALL_LOADER]
    p = run("run", *args, "-a", "reader_engine=psync", *FAST, "--scratch", shared_dir, "-o", report_path)
    assert p.returncode == 0, p.stderr
    (r,) = results_of(load_report(report_path), "storage/dataloader")
    m = metrics(r)
    assert m["loader_max_samples_per_s"] > 0
    # The ceiling is the best of several flat probes: one probe of this data set is a few
    # milliseconds, and one preemption made a single probe's ceiling a third of the loader's (CI,
    # d573373: an accelerator of 3.4 x the "ceiling" was then fed at AU >= 90%).
    (method,) = [x["method"] for x in r["metrics"] if x["name"] == "loader_max_samples_per_s"]
    probes = int(re.search(r"best of (\d+) probes", method).group(1))
    assert 3 <= probes <= 9, method
    # When loader-bound, AU >= 90% is reached up to about the loader's rate / 0.9. Well below it on
    # a busy 2-core host: the simulated accelerator's busy-wait takes a core from the readers while
    # the flat probes leave them both (0.22 x with two CPU hogs beside it).
    assert 0.1 * m["loader_max_samples_per_s"] < m["max_accelerator_samples_per_s_at_au"] < 3 * m["loader_max_samples_per_s"]


def test_unprivileged_user_reads_and_verifies(shared_dir):
    prefix = as_nobody_or_skip()
    out = os.path.join(shared_dir, "report.json")
    p = run_as(prefix, "run", *SMALL_READ, *FAST, "--verify", "--scratch", shared_dir, "-o", out, cwd=shared_dir)
    assert p.returncode == 0, p.stderr
    report = load_report(out)
    check_read_results(report, report["capabilities"]["io_uring"]["available"])
    assert scratch_left(shared_dir) == []


def test_registered_buffers_beyond_memlock_are_skipped_with_the_reason(shared_dir):
    """64 MiB of registered buffers: beyond an unprivileged user's 8 MiB memlock limit."""
    prefix = as_nobody_or_skip()
    if not io_uring_available():
        pytest.skip("io_uring unavailable here")
    out = os.path.join(shared_dir, "report.json")
    p = run_as(prefix, "run", "--filter", "^storage/read$", "-a", "engine=io_uring", "-a", "pattern=seq",
               "-a", "block_size=1MiB", "-a", "queue_depth=64", "-a", "fixed_buffers=1", "-a", "size=128MiB",
               *FAST, "--scratch", shared_dir, "-o", out, cwd=shared_dir)
    assert p.returncode == 0, p.stderr
    (r,) = results_of(load_report(out), "storage/read")
    limit = subprocess.run(prefix + ["sh", "-c", "ulimit -l"], capture_output=True, text=True).stdout.strip()
    if limit == "unlimited" or (limit.isdigit() and int(limit) >= 65536 + 1024):
        assert r["status"] == "passed", r  # the limit allows it here
    else:
        assert r["status"] == "skipped", r
        assert "locked-memory limit" in r["reason"], r
    assert scratch_left(shared_dir) == []


def test_io_uring_options(shared_dir, report_path):
    """Registered buffers and files, SQPOLL and IOPOLL: each passes, or is skipped with the reason."""
    if not io_uring_available():
        pytest.skip("io_uring unavailable here")
    p = run("run", "--filter", "^storage/read$", "-a", "engine=io_uring", "-a", "pattern=rand",
            "-a", "block_size=4KiB", "-a", "queue_depth=4", "-a", "size=8MiB", "-a", "fixed_buffers=0,1",
            "-a", "fixed_files=0,1", "-a", "sqpoll=0,1", "-a", "iopoll=0,1", *FAST, "--verify",
            "--scratch", shared_dir, "-o", report_path)
    assert p.returncode == 0, p.stderr
    rs = results_of(load_report(report_path), "storage/read")
    assert len(rs) == 16
    for r in rs:
        assert r["status"] in ("passed", "skipped"), r
        if r["status"] == "skipped":
            assert r["reason"], r
            assert axes(r)["iopoll"] == 1 or axes(r)["sqpoll"] == 1, r
        else:
            assert not any("verify" in x for x in r.get("invalid_reasons", [])), r


SECCOMP_NO_IO_URING = r"""
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
/* Runs argv[1..] with io_uring_setup failing with ENOSYS: a kernel without io_uring. */
int main(int argc, char** argv) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};
  if (argc < 2 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
    perror("seccomp");
    return 126;
  }
  execv(argv[1], argv + 1);
  perror("execv");
  return 127;
}
"""


def test_kernel_without_io_uring_skips_io_uring_and_runs_psync(tmp_path, report_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the seccomp helper")
    src = tmp_path / "no_io_uring.c"
    src.write_text(SECCOMP_NO_IO_URING)
    helper = str(tmp_path / "no_io_uring")
    subprocess.run([cc, "-O1", "-o", helper, str(src)], check=True)
    p = subprocess.run([helper, BIN, "run", *SMALL_READ, "-a", "queue_depth=1", *FAST, "--scratch", str(tmp_path),
                        "-o", report_path], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    report = load_report(report_path)
    assert report["capabilities"]["io_uring"]["available"] is False
    for r in results_of(report, "storage/read"):
        if axes(r)["engine"] == "io_uring":
            assert r["status"] == "skipped" and "io_uring" in r["reason"], r
        else:
            assert r["status"] == "passed", r


def test_buffered_reads_are_labelled_as_page_cache(shared_dir, report_path):
    engines = "io_uring,psync" if io_uring_available() else "psync"
    p = run("run", "--filter", "^storage/read$", "-a", "size=8MiB", "-a", f"engine={engines}", "-a", "queue_depth=1",
            "-a", "block_size=4KiB", "-a", "direct=0", *FAST, "--verify", "--scratch", shared_dir, "-o", report_path)
    assert p.returncode == 0, p.stderr
    ran = check_read_results(load_report(report_path), io_uring_available())
    assert ran == set(engines.split(","))
    for r in results_of(load_report(report_path), "storage/read"):
        assert any("page-cache measurement" in w for w in r["warnings"]), r
    assert scratch_left(shared_dir) == []


def test_directory_target_gets_its_own_scratch_file(shared_dir, report_path):
    """target=DIR: the scratch file is made in DIR (not under --scratch) and removed; DIR's own files
    are left alone."""
    target = os.path.join(shared_dir, "bench-here")
    os.mkdir(target)
    with open(os.path.join(target, "keep.me"), "w") as f:
        f.write("mine")
    args = ["run", "--filter", "^storage/read$", "-a", f"target={target}", "-a", "size=4MiB", "-a", "engine=psync",
            "-a", "queue_depth=1", "-a", "block_size=4KiB", "-a", "pattern=seq", *FAST, "--verify",
            "--scratch", shared_dir, "-o", report_path]
    p = run(*args)
    assert p.returncode == 0, p.stderr
    (r,) = results_of(load_report(report_path), "storage/read")
    assert r["status"] == "passed" and not r.get("invalid_reasons"), r
    assert any("--verify: every byte" in w for w in r["warnings"]), r  # scratch data: checked
    assert sorted(os.listdir(target)) == ["keep.me"]
    assert scratch_left(shared_dir) == []
    p = run(*args, "--keep-scratch")
    assert p.returncode == 0, p.stderr
    (r,) = results_of(load_report(report_path), "storage/read")
    kept = [w.split(": ", 1)[1] for w in r["warnings"] if w.startswith("scratch file kept")]
    assert len(kept) == 1 and os.path.dirname(os.path.dirname(kept[0])) == target, r
    assert scratch_left(shared_dir) == []
    with open(os.path.join(target, "keep.me")) as f:
        assert f.read() == "mine"


# ---- safety: targets are only read ---------------------------------------------------------------

def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_existing_file_is_read_only(shared_dir, report_path):
    target = os.path.join(shared_dir, "existing.bin")
    with open(target, "wb") as f:
        f.write(os.urandom(4 << 20))
    os.chmod(target, 0o444)
    before = (digest(target), os.stat(target).st_mtime_ns)
    p = run("run", "--filter", "^storage/read$", "-a", f"target={target}", "-a", "size=0", "-a", "queue_depth=1,4",
            *FAST, "--verify", "-o", report_path, cwd=shared_dir)
    assert p.returncode == 0, p.stderr
    for r in results_of(load_report(report_path), "storage/read"):
        assert r["status"] in ("passed", "skipped"), r
        if r["status"] == "passed":
            assert any("not checked" in w for w in r["warnings"]), r  # --verify cannot know its bytes
    assert (digest(target), os.stat(target).st_mtime_ns) == before
    assert scratch_left(shared_dir) == []


def test_existing_file_is_read_only_as_unprivileged_user(shared_dir):
    """The file is readable but not writable by the user: any write-open would fail the run."""
    prefix = as_nobody_or_skip()
    target = os.path.join(shared_dir, "existing.bin")
    with open(target, "wb") as f:
        f.write(os.urandom(1 << 20))
    os.chmod(target, 0o444)
    before = digest(target)
    out = os.path.join(shared_dir, "report.json")
    p = run_as(prefix, "run", "--filter", "^storage/read$", "-a", f"target={target}", "-a", "size=0",
               "-a", "queue_depth=1", *FAST, "-o", out, cwd=shared_dir)
    assert p.returncode == 0, p.stderr
    assert all(r["status"] in ("passed", "skipped") for r in load_report(out)["results"])
    assert digest(target) == before


def root_block_device():
    st = os.stat("/")
    dev = f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}/uevent"
    try:
        with open(dev) as f:
            name = dict(l.strip().split("=", 1) for l in f if "=" in l).get("DEVNAME")
    except OSError:
        return None
    path = f"/dev/{name}" if name else None
    return path if path and os.path.exists(path) and stat.S_ISBLK(os.stat(path).st_mode) else None


def test_mounted_block_device_is_only_read(report_path, tmp_path):
    dev = root_block_device()
    if dev is None:
        pytest.skip("the root filesystem's block device is not visible here")
    p = run("run", "--filter", "^storage/read$", "-a", f"target={dev}", "-a", "size=64MiB", "-a", "engine=psync",
            "-a", "queue_depth=1", "-a", "block_size=64KiB", *FAST, "-o", report_path, cwd=str(tmp_path))
    report = load_report(report_path)
    (r, *_) = results_of(report, "storage/read")
    try:
        os.close(os.open(dev, os.O_RDONLY))
        error = None
    except OSError as e:
        error = e.strerror  # not root, or a container's device rules
    if error is None:
        assert p.returncode == 0, p.stderr
        assert all(x["status"] == "passed" for x in results_of(report, "storage/read"))
        assert any("mounted" in w and "read-only" in w for w in r["warnings"]), r
    else:
        assert r["status"] == "failed" and error in r["reason"] and dev in r["reason"], r


def sh(*cmd):
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=60)


@pytest.fixture
def mounted_loop_disk(tmp_path):
    """A 32 MiB disk image on a loop device, formatted ext4 and mounted read-only: a mounted disk
    no other process writes to. With an MBR partition table where the kernel scans partitions
    (then the partition is formatted and mounted). Yields (disk, partition or None, mount point,
    image path); skips with the reason when loop devices or mounting are not available here."""
    if os.geteuid() != 0:
        pytest.skip("attaching a loop device and mounting need root")
    for tool in ("losetup", "mkfs.ext4", "mount", "umount"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not installed")
    img = tmp_path / "disk.img"
    with open(img, "wb") as f:
        f.write(os.urandom(32 << 20))
    # One Linux partition from sector 2048 to the end (MBR: entry at byte 446, signature 0x55AA).
    start, sectors = 2048, (32 << 20) // 512 - 2048
    entry = bytes([0, 0, 0, 0, 0x83, 0, 0, 0]) + start.to_bytes(4, "little") + sectors.to_bytes(4, "little")
    with open(img, "r+b") as f:
        f.seek(446)
        f.write(entry + bytes(48) + b"\x55\xaa")
    p = sh("losetup", "--find", "--show", "--partscan", str(img))
    if p.returncode != 0:
        pytest.skip("no loop device here: " + p.stderr.strip())
    disk = p.stdout.strip()
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    mounted = False
    try:
        part = disk + "p1"
        for _ in range(25):  # the partition's node appears shortly after the scan, if at all
            if os.path.exists(part):
                break
            time.sleep(0.02)
        fs_dev = part if os.path.exists(part) else disk  # no partition support: the whole disk
        p = sh("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", fs_dev)
        if p.returncode != 0:
            pytest.skip("mkfs.ext4 failed: " + p.stderr.strip())
        p = sh("mount", "-o", "ro", fs_dev, str(mnt))
        if p.returncode != 0:
            pytest.skip("cannot mount here: " + p.stderr.strip())
        mounted = True
        yield disk, (part if fs_dev == part else None), str(mnt), str(img)
    finally:
        if mounted:
            sh("umount", str(mnt))
        sh("losetup", "-d", disk)


def test_mounted_disk_is_only_read(mounted_loop_disk, shared_dir, report_path):
    """A real block device that is mounted (or whose partition is): the disk (and the partition)
    are read with both engines, O_DIRECT at the device's logical block size; the mount is named
    in a warning; not one byte of the device changes."""
    disk, part, mnt, img = mounted_loop_disk
    os.sync()
    before = digest(img)
    for target in [disk] + ([part] if part else []):
        p = run("run", "--filter", "^storage/read$", "-a", f"target={target}", "-a", "size=16MiB",
                "-a", "queue_depth=1,4", "-a", "block_size=4KiB", *FAST, "--verify", "-o", report_path,
                cwd=shared_dir)
        assert p.returncode == 0, p.stderr
        rs = results_of(load_report(report_path), "storage/read")
        assert any(r["status"] == "passed" for r in rs), rs
        for r in rs:
            if r["status"] == "skipped":
                continue
            assert r["status"] == "passed", r
            assert any(f"is mounted ({mnt})" in w and "read-only" in w for w in r["warnings"]), r
            assert any("not checked" in w for w in r["warnings"]), r  # --verify: contents unknown
    os.sync()
    assert digest(img) == before
    assert scratch_left(shared_dir) == []


# ---- scratch data: free space, cleanup after success, error and SIGINT, --keep-scratch -----------

def test_size_larger_than_free_space_is_refused(shared_dir, report_path):
    p = run("run", "--filter", "^storage/read$", "-a", "size=1000000GiB", "-a", "engine=psync",
            "-a", "queue_depth=1", "-a", "block_size=4KiB", "-a", "pattern=seq", *FAST,
            "--scratch", shared_dir, "-o", report_path)
    assert p.returncode == 1, p.stderr
    (r,) = results_of(load_report(report_path), "storage/read")
    assert r["status"] == "failed" and "refusing to create" in r["reason"] and "max(10%, 1 GiB)" in r["reason"], r
    assert os.listdir(shared_dir) == ["report.json"] or scratch_left(shared_dir) == []
    assert scratch_left(shared_dir) == []


def test_scratch_removed_after_an_error(shared_dir, report_path):
    # 8 MiB holds two 4 MiB blocks, too few for 4 jobs: found after the scratch file was made.
    p = run("run", "--filter", "^storage/read$", "-a", "size=8MiB", "-a", "block_size=4MiB", "-a", "jobs=4",
            "-a", "engine=psync", "-a", "queue_depth=1", "-a", "pattern=seq", *FAST, "--scratch", shared_dir,
            "-o", report_path)
    assert p.returncode == 1, p.stderr
    (r,) = results_of(load_report(report_path), "storage/read")
    assert r["status"] == "failed" and "holds 2" in r["reason"] and "\n" not in r["reason"], r
    assert scratch_left(shared_dir) == []


def test_misaligned_block_size_fails_before_writing_scratch(shared_dir, report_path):
    """O_DIRECT cannot use 1000-byte reads: refused from the scratch directory's alignment before a
    4 GiB scratch file (many seconds to write) is made, with nothing left behind."""
    size = 4 << 30
    vfs = os.statvfs(shared_dir)
    total, avail = vfs.f_blocks * vfs.f_frsize, vfs.f_bavail * vfs.f_frsize
    if avail < size + max(total // 10, 1 << 30):
        pytest.skip(f"{shared_dir} has too little free space for a 4 GiB scratch file and the margin")
    p = run("run", "--filter", "^storage/read$", "-a", "size=4GiB", "-a", "block_size=1000", "-a", "engine=psync",
            "-a", "queue_depth=1", "-a", "pattern=seq", *FAST, "--scratch", shared_dir, "-o", report_path)
    assert p.returncode == 1, p.stderr
    (r,) = results_of(load_report(report_path), "storage/read")
    assert r["status"] == "failed" and "not a multiple of" in r["reason"] and "direct=0" in r["reason"], r
    assert shared_dir in r["reason"] and "\n" not in r["reason"], r
    # The configuration's own time (the process's start-up probes can take seconds on a busy machine).
    assert r["elapsed_s"] < 2, f"took {r['elapsed_s']:.1f} s: the scratch file was written before the check"
    assert scratch_left(shared_dir) == []
    # The same for a directory target: nothing is made in it.
    target = os.path.join(shared_dir, "bench-here")
    os.mkdir(target)
    p = run("run", "--filter", "^storage/read$", "-a", f"target={target}", "-a", "size=4GiB", "-a", "block_size=1000",
            "-a", "engine=psync", "-a", "queue_depth=1", "-a", "pattern=seq", *FAST, "--scratch", shared_dir,
            "-o", report_path)
    assert p.returncode == 1, p.stderr
    (r,) = results_of(load_report(report_path), "storage/read")
    assert r["status"] == "failed" and "not a multiple of" in r["reason"] and target in r["reason"], r
    assert os.listdir(target) == [] and scratch_left(shared_dir) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_scratch_removed_on_signal(sig, shared_dir, report_path):
    proc = subprocess.Popen([BIN, "run", "--filter", "^storage/read$", "-a", "size=32MiB", "-a", "engine=psync",
                             "-a", "queue_depth=1", "-a", "block_size=4KiB", "--min-time", "30", "--max-time", "60",
                             "--scratch", shared_dir, "-o", report_path],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(
            os.path.exists(os.path.join(shared_dir, d, "data")) for d in scratch_left(shared_dir)):
        time.sleep(0.05)
    assert scratch_left(shared_dir), "the scratch file never appeared"
    time.sleep(0.5)  # inside the timed loop now
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert load_report(report_path)["run"]["interrupted"] is True
    assert scratch_left(shared_dir) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_scratch_removed_when_interrupted_while_writing_it(sig, shared_dir, report_path):
    """A 2 GiB scratch file takes a second or more to write; the signal arrives within milliseconds
    of its directory appearing, so creation stops part-way and what was written is removed."""
    size = 2 << 30
    vfs = os.statvfs(shared_dir)
    total, avail = vfs.f_blocks * vfs.f_frsize, vfs.f_bavail * vfs.f_frsize
    if avail < size + max(total // 10, 1 << 30):
        pytest.skip(f"{shared_dir} has too little free space for a 2 GiB scratch file and the margin")
    proc = subprocess.Popen([BIN, "run", "--filter", "^storage/read$", "-a", "size=2GiB", "-a", "engine=psync",
                             "-a", "queue_depth=1", "-a", "block_size=1MiB", "-a", "pattern=seq", *FAST,
                             "--scratch", shared_dir, "-o", report_path],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not scratch_left(shared_dir) and proc.poll() is None:
        time.sleep(0.002)
    assert scratch_left(shared_dir), "the scratch directory never appeared"
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    report = load_report(report_path)
    assert report["run"]["interrupted"] is True
    (r,) = results_of(report, "storage/read")
    assert "interrupted while creating scratch data" in (r.get("reason") or ""), r
    assert scratch_left(shared_dir) == []


# ---- the data set's scratch directory: removed on SIGINT/SIGTERM, after a failure, refused when too big

def dataset_complete(d):
    """The last of SMALL_LOADER's 64 samples exists: the data set is written."""
    return any(os.path.exists(os.path.join(d, s, "d00003", "s00000063.bin")) for s in scratch_left(d))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_dataset_removed_on_signal(sig, shared_dir, report_path):
    proc = subprocess.Popen([BIN, "run", *SMALL_LOADER, "-a", "reader_engine=psync", "--min-time", "30",
                             "--max-time", "60", "--scratch", shared_dir, "-o", report_path],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not dataset_complete(shared_dir) and proc.poll() is None:
        time.sleep(0.05)
    assert dataset_complete(shared_dir), "the data set never appeared"
    time.sleep(0.5)  # epochs are running now
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert load_report(report_path)["run"]["interrupted"] is True
    assert scratch_left(shared_dir) == []


def test_dataset_removed_when_interrupted_while_writing_it(shared_dir, report_path):
    """8192 samples of 128 KiB (1 GiB): the signal arrives within milliseconds of the data set's
    directory appearing, so creation stops part-way and what was written is removed."""
    vfs = os.statvfs(shared_dir)
    total, avail = vfs.f_blocks * vfs.f_frsize, vfs.f_bavail * vfs.f_frsize
    if avail < (1 << 30) + max(total // 10, 1 << 30):
        pytest.skip(f"{shared_dir} has too little free space for a 1 GiB data set and the margin")
    proc = subprocess.Popen([BIN, "run", "--filter", "^storage/dataloader$", "-a", "reader_engine=psync",
                             "-a", "sample_size=128KiB", "-a", "samples=8192", "-a", "files_per_dir=1024",
                             "-a", "search=0", *FAST, "--scratch", shared_dir, "-o", report_path],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not scratch_left(shared_dir) and proc.poll() is None:
        time.sleep(0.002)
    assert scratch_left(shared_dir), "the data set's directory never appeared"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGINT, err
    report = load_report(report_path)
    assert report["run"]["interrupted"] is True
    (r,) = results_of(report, "storage/dataloader")
    assert "interrupted while creating scratch data" in (r.get("reason") or ""), r
    assert scratch_left(shared_dir) == []


def test_dataset_removed_after_a_failed_configuration(shared_dir, report_path):
    # --timeout 1 with --min-time 30: the configuration fails in its epochs, after the data set was made.
    p = run("run", *SMALL_LOADER, "-a", "reader_engine=psync", "--min-time", "30", "--max-time", "60",
            "--timeout", "1", "-q", "--scratch", shared_dir, "-o", report_path)
    assert p.returncode == 1, p.stderr
    # Validated: a configuration that timed out after some samples still summarizes them.
    (r,) = results_of(load_report(report_path), "storage/dataloader")
    assert r["status"] == "failed" and "timed out" in r["reason"], r
    assert scratch_left(shared_dir) == []


def test_dataset_larger_than_free_space_is_refused(shared_dir, report_path):
    # 10^9 samples of 16 KiB: about 15 TiB of data set.
    args = ["samples=1000000000" if a == "samples=64" else a for a in SMALL_LOADER]
    p = run("run", *args, "-a", "reader_engine=psync", *FAST, "--scratch", shared_dir, "-o", report_path)
    assert p.returncode == 1, p.stderr
    (r,) = results_of(load_report(report_path), "storage/dataloader")
    assert r["status"] == "failed" and "refusing to create" in r["reason"] and "max(10%, 1 GiB)" in r["reason"], r
    assert "\n" not in r["reason"]
    assert os.listdir(shared_dir) == []


def test_keep_scratch_keeps_it_and_says_where(shared_dir, report_path):
    p = run("run", "--filter", "^storage/read$", "-a", "size=4MiB", "-a", "engine=psync", "-a", "queue_depth=1",
            "-a", "block_size=4KiB", "-a", "pattern=seq", *FAST, "--keep-scratch", "--scratch", shared_dir,
            "-o", report_path)
    assert p.returncode == 0, p.stderr
    (r,) = results_of(load_report(report_path), "storage/read")
    kept = [w.split(": ", 1)[1] for w in r["warnings"] if w.startswith("scratch file kept")]
    assert len(kept) == 1 and os.path.getsize(kept[0]) == 4 << 20, r
    assert os.stat(kept[0]).st_mode & 0o777 == 0o600


# ---- bad input -----------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", ["queue_depth=0", "queue_depth=40000", "direct=2", "engine=aio", "pattern=random",
                                  "block_size=0"])
def test_bad_axis_values_exit_2_with_one_line(axis, shared_dir):
    p = run("run", "--filter", "^storage/read$", "-a", axis, *FAST, "--scratch", shared_dir,
            "-o", os.path.join(shared_dir, "r.json"))
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("infrabench: error: "), p.stderr
    assert not os.path.exists(os.path.join(shared_dir, "r.json"))
    assert scratch_left(shared_dir) == []


def failed_reason(report_path, *args, cwd=None):
    p = run("run", "--filter", "^storage/read$", "-a", "engine=psync", "-a", "queue_depth=1", "-a", "pattern=seq",
            "-a", "block_size=4KiB", *args, *FAST, "-o", report_path, cwd=cwd)
    assert p.returncode == 1, p.stderr
    (r,) = results_of(load_report(report_path), "storage/read")
    assert r["status"] == "failed", r
    assert "\n" not in r["reason"]
    return r["reason"]


def test_missing_path(report_path, tmp_path):
    reason = failed_reason(report_path, "-a", "target=/nonexistent/infrabench.dat", cwd=str(tmp_path))
    assert "/nonexistent/infrabench.dat" in reason and "No such file" in reason


def test_filesystem_refusing_o_direct(report_path, tmp_path):
    # procfs refuses O_DIRECT.
    reason = failed_reason(report_path, "-a", "target=/proc/self/status", cwd=str(tmp_path))
    assert "refuses O_DIRECT" in reason and "direct=0" in reason


def test_path_without_read_permission(shared_dir):
    target = os.path.join(shared_dir, "secret.bin")
    with open(target, "wb") as f:
        f.write(b"\0" * 65536)
    os.chmod(target, 0o600 if os.geteuid() == 0 else 0o000)
    prefix = as_nobody_or_skip() if os.geteuid() == 0 else []
    out = os.path.join(shared_dir, "report.json")
    p = run_as(prefix, "run", "--filter", "^storage/read$", "-a", "engine=psync", "-a", "queue_depth=1",
               "-a", f"target={target}", *FAST, "-o", out, cwd=shared_dir)
    assert p.returncode == 1, p.stderr
    for r in results_of(load_report(out), "storage/read"):
        assert r["status"] == "failed" and "Permission denied" in r["reason"], r


def test_character_device_is_refused(report_path, tmp_path):
    reason = failed_reason(report_path, "-a", "target=/dev/zero", cwd=str(tmp_path))
    assert "not a regular file, directory or block device" in reason


# ---- the fio comparison script --------------------------------------------------------------------

def test_compare_fio_smoke(tmp_path):
    if shutil.which("fio") is None:
        pytest.skip("fio not installed (ci/install-deps.sh installs it)")
    script = os.path.join(SOURCE_DIR, "benchmarks", "storage", "compare_fio.sh")
    # fio's io_uring engine against infrabench's; the psync rows where infrabench has no io_uring.
    workload, label = ("rand4k_qd1", "| rand 4 KiB QD1") if io_uring_available() else \
        ("shm_psync_rand4k_qd1", "| tmpfs psync rand 4 KiB QD1")
    p = subprocess.run([script, "--bin", BIN, "--dir", str(tmp_path), "--size", "32M", "--runtime", "0.3",
                        "--alternations", "1", "--workloads", workload],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = [l for l in p.stdout.splitlines() if l.startswith(label + " |")]
    assert len(rows) == 1, p.stdout
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    ratios = [float(c) for c in cells if c.replace(".", "", 1).isdigit()]
    assert ratios and all(r > 0 for r in ratios), rows
    assert not os.listdir(tmp_path) or all(not n.startswith("compare-fio") for n in os.listdir(tmp_path))


# ---- storage/checkpoint (issue 20): save, restore, verify, remove; the write guard --------------

CKPT = ["--filter", "^storage/checkpoint$", "-a", "model=custom", "-a", "size=24MiB",
        "-a", "write_size=1MiB", "-a", "engine=psync", "-a", "queue_depth=1"]


def ckpt_metrics_ok(r, shard_bytes):
    assert r["status"] == "passed", r
    assert not any("verify" in x for x in r.get("invalid_reasons", [])), r
    m = metrics(r)
    for k in ["write_gbps", "read_gbps", "save_s", "restore_s", "write_latency_us_p50", "write_latency_us_p99",
              "write_latency_us_max"]:
        assert k in m and m[k] > 0, (k, r)
    assert m["shard_bytes"] == shard_bytes, m
    # GB/s is this rank's bytes over its median time (GB = 1e9 B).
    assert m["write_gbps"] == pytest.approx(shard_bytes / m["save_s"] / 1e9, rel=1e-6)
    assert m["read_gbps"] == pytest.approx(shard_bytes / m["restore_s"] / 1e9, rel=1e-6)
    assert m["write_latency_us_p50"] <= m["write_latency_us_p99"] <= m["write_latency_us_max"] * 1.004
    assert m["write_latency_us_min"] <= m["write_latency_us_p50"] * 1.004 and m["write_latency_us_stdev"] >= 0, m
    roles = {x["name"]: x.get("role", "performance") for x in r["metrics"]}
    assert roles["write_gbps"] == "performance" and roles["shard_bytes"] == "information", roles
    return m


@pytest.mark.parametrize("where", ["disk", "tmpfs"])
@pytest.mark.parametrize("engine,direct", [("psync", 0), ("psync", 1), ("io_uring", 0), ("io_uring", 1)])
def test_checkpoint_saved_restored_verified_and_removed(where, engine, direct, shared_dir, report_path):
    if engine == "io_uring" and not io_uring_available():
        pytest.skip("io_uring unavailable here")
    scratch = shared_dir if where == "disk" else tempfile.mkdtemp(prefix="ib-ckpt-", dir="/dev/shm")
    try:
        qd = 4 if engine == "io_uring" else 1
        p = run("run", *CKPT, "-a", f"engine={engine}", "-a", f"queue_depth={qd}", "-a", f"direct={direct}",
                *FAST, "--scratch", scratch, "-o", report_path)
        if direct and p.returncode == 1 and "refuses O_DIRECT" in p.stdout + p.stderr:
            pytest.skip("this kernel's tmpfs refuses O_DIRECT")
        assert p.returncode == 0, p.stdout + p.stderr
        (r,) = results_of(load_report(report_path), "storage/checkpoint")
        m = ckpt_metrics_ok(r, 24 << 20)
        check_location(r, scratch, scratch)
        cache = next(x for x in r["metrics"] if x["name"] == "page_cache_resident_percent")
        if direct:
            assert "O_DIRECT" in cache["method"], cache
        else:
            # Buffered: the files' pages were dropped before reading back; a disk's are gone, a
            # tmpfs keeps them (they are its storage), and the method says which.
            assert "POSIX_FADV_DONTNEED" in cache["method"], cache
            if where == "disk":
                assert m["page_cache_resident_percent"] < 50, cache
            else:
                assert m["page_cache_resident_percent"] > 50 and "tmpfs" in cache["method"], cache
        assert scratch_left(scratch) == []
    finally:
        if where == "tmpfs":
            shutil.rmtree(scratch, ignore_errors=True)


def test_checkpoint_presets_scale_and_shards(shared_dir, report_path):
    # llama3-8b (105 GB) x 2e-4 = 21 MB in 3 files of whole 1 MiB writes: 20 MiB (nearest).
    p = run("run", "--filter", "^storage/checkpoint$", "-a", "model=llama3-8b", "-a", "scale=0.0002",
            "-a", "shards_per_rank=3", "-a", "sync=fdatasync", *FAST, "--scratch", shared_dir, "-o", report_path)
    assert p.returncode == 0, p.stdout + p.stderr
    (r,) = results_of(load_report(report_path), "storage/checkpoint")
    m = ckpt_metrics_ok(r, 20 << 20)
    assert m["checkpoint_bytes"] == 20 << 20
    method = next(x["method"] for x in r["metrics"] if x["name"] == "checkpoint_bytes")
    assert "llama3-8b (105 GB) x 0.0002" in method, method
    assert scratch_left(shared_dir) == []
    # Without mpirun the job row says why it has nothing to add.
    p = run("run", "--filter", "^storage/checkpoint_job$", "-a", "model=custom", "-a", "size=4MiB", *FAST,
            "--scratch", shared_dir, "-o", report_path)
    assert p.returncode == 0, p.stderr
    (j,) = results_of(load_report(report_path), "storage/checkpoint_job")
    assert j["status"] == "skipped" and "2 ranks" in j["reason"], j


def test_checkpoint_larger_than_free_space_is_refused(shared_dir, report_path):
    p = run("run", *CKPT, "-a", "size=1000000GiB", *FAST, "--scratch", shared_dir, "-o", report_path)
    assert p.returncode == 1, p.stderr
    (r,) = results_of(load_report(report_path), "storage/checkpoint")
    assert r["status"] == "failed" and "refusing to create" in r["reason"] and "\n" not in r["reason"], r
    assert scratch_left(shared_dir) == []
    # --scratch-reserve changes the margin, and says so.
    p = run("run", *CKPT, "-a", "size=1000000GiB", *FAST, "--scratch", shared_dir, "--scratch-reserve", "0",
            "-o", report_path)
    (r,) = results_of(load_report(report_path), "storage/checkpoint")
    assert "the margin asked for" in r["reason"], r


@pytest.mark.parametrize("bad", [["--scratch-reserve", "lots"], ["--scratch-reserve", "-1GiB"],
                                 ["-a", "scale=0"], ["-a", "model=gpt-5"], ["-a", "write_size=100"],
                                 ["-a", "shards_per_rank=0"], ["-a", "sync=never"]])
def test_checkpoint_bad_input_exits_2_with_one_line(bad, shared_dir):
    p = run("run", *CKPT, *bad, *FAST, "--scratch", shared_dir, "-o", os.path.join(shared_dir, "r.json"))
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stderr.count("\n") == 1 and "error" in p.stderr, p.stderr
    assert scratch_left(shared_dir) == []


def test_checkpoint_unwritable_scratch_directory(shared_dir):
    prefix = as_nobody_or_skip()
    locked = os.path.join(shared_dir, "locked")
    os.mkdir(locked, 0o555)
    out = os.path.join(shared_dir, "r.json")
    p = run_as(prefix, "run", *CKPT, *FAST, "--scratch", locked, "-o", out, cwd=shared_dir)
    assert p.returncode == 1, p.stdout + p.stderr
    (r,) = results_of(load_report(out), "storage/checkpoint")
    assert r["status"] == "failed" and "Permission denied" in r["reason"] and locked in r["reason"], r
    assert os.listdir(locked) == []


def test_checkpoint_as_unprivileged_user(shared_dir):
    prefix = as_nobody_or_skip()
    out = os.path.join(shared_dir, "r.json")
    p = run_as(prefix, "run", *CKPT, *FAST, "--scratch", shared_dir, "-o", out, cwd=shared_dir)
    assert p.returncode == 0, p.stdout + p.stderr
    (r,) = results_of(load_report(out), "storage/checkpoint")
    ckpt_metrics_ok(r, 24 << 20)
    assert scratch_left(shared_dir) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_checkpoint_removed_on_signal(sig, shared_dir, report_path):
    proc = subprocess.Popen([BIN, "run", *CKPT, "-a", "size=256MiB", "--min-time", "30", "--max-time", "60",
                             "--scratch", shared_dir, "-o", report_path],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(
            os.listdir(os.path.join(shared_dir, d)) for d in scratch_left(shared_dir)):
        time.sleep(0.01)
    assert scratch_left(shared_dir), "no shard file appeared"
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert scratch_left(shared_dir) == []


# ---- under mpirun: every rank's shard, the job row; a disk filling up mid-write --------------------

def mpirun_or_skip(n, *args, timeout=180):
    if os.environ.get("INFRABENCH_HAS_MPI") != "1" or shutil.which("mpirun") is None:
        pytest.skip("built without MPI, or no mpirun")
    cmd = ["mpirun", "--oversubscribe", "--mca", "btl", "self,vader", "--mca", "mpi_yield_when_idle", "1",
           "--timeout", str(timeout - 10), "-np", str(n)]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    return subprocess.run(cmd + [BIN, *args], capture_output=True, text=True, timeout=timeout, env=env)


def test_checkpoint_two_ranks_and_the_job_row(shared_dir, report_path):
    p = mpirun_or_skip(2, "run", "--filter", "^storage/checkpoint(_job)?$", "-a", "model=custom",
                       "-a", "size=32MiB", "-a", "shards_per_rank=2", *FAST, "--scratch", shared_dir,
                       "-o", report_path)
    assert p.returncode == 0, p.stdout + p.stderr
    rep = load_report(report_path)
    rows = results_of(rep, "storage/checkpoint")
    assert sorted(r["rank"] for r in rows) == [0, 1]
    per_rank = {r["rank"]: ckpt_metrics_ok(r, 16 << 20) for r in rows}
    (job,) = results_of(rep, "storage/checkpoint_job")
    assert job["status"] == "passed" and job["rank"] == 0, job
    j = metrics(job)
    # MLPerf Storage's figure: total bytes / the slowest rank's time, not the sum of the rates.
    slowest_save = max(m["save_s"] for m in per_rank.values())
    assert j["save_s"] == pytest.approx(slowest_save)
    assert j["write_gbps"] == pytest.approx((32 << 20) / slowest_save / 1e9, rel=1e-6)
    assert j["read_gbps"] == pytest.approx((32 << 20) / max(m["restore_s"] for m in per_rank.values()) / 1e9,
                                           rel=1e-6)
    assert j["ranks"] == 2 and j["checkpoint_bytes"] == 32 << 20
    assert scratch_left(shared_dir) == []


def test_checkpoint_disk_full_mid_write_fails_every_rank_and_leaves_nothing(tmp_path, report_path):
    """Two ranks on a 48 MiB tmpfs, 32 MiB each: each passes the free-space check on its own
    (--scratch-reserve 0), together they fill it mid-write. The configuration fails on both ranks
    with the reason (no space), and nothing is left."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mnt = str(tmp_path / "small")
    os.mkdir(mnt)
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", mnt], capture_output=True, text=True)
    if m.returncode != 0:
        pytest.skip("mount tmpfs: " + m.stderr.strip())
    try:
        p = mpirun_or_skip(2, "run", "--filter", "^storage/checkpoint(_job)?$", "-a", "model=custom",
                           "-a", "size=64MiB", *FAST, "--scratch", mnt, "--scratch-reserve", "0", "-o", report_path)
        assert p.returncode == 1, p.stdout + p.stderr
        rep = load_report(report_path)
        rows = results_of(rep, "storage/checkpoint")
        assert sorted(r["rank"] for r in rows) == [0, 1], rows
        reasons = [r["reason"] for r in rows]
        assert all(r["status"] == "failed" for r in rows), rows
        assert any("No space left on device" in x or "is the disk full" in x for x in reasons), reasons
        assert all("\n" not in x for x in reasons), reasons
        (job,) = results_of(rep, "storage/checkpoint_job")
        assert job["status"] == "failed", job
        assert os.listdir(mnt) == [], os.listdir(mnt)
    finally:
        subprocess.run(["umount", mnt])
