"""Issue 40, items 1-3, 6 and 7 ("nothing lost"): every signal that ends a run by default leaves the
partial report; a write past `ulimit -f` or onto a full disk is exit 3 with no temporary file left
and a true account of where the results are; a failed write to standard output is exit 3; the
health check prints one line and never OK when it did not finish."""
import glob
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import BIN, load_report, results, run, one_line_error

SRC = os.environ.get("INFRABENCH_SOURCE_DIR", ".")
CORPUS = os.path.join(SRC, "tests", "fuzz", "corpus")
SINGLE = os.path.join(CORPUS, "report", "synthetic_single.json")
BASELINE = os.path.join(CORPUS, "baseline", "minimal.json")
ROOFLINE = os.path.join(SRC, "tests", "fixtures", "roofline", "gpt2-tiny-throttled.json")

# One cheap configuration that samples until stopped (a signal) or for 60 s.
LONG = ["--filter", "^bandwidth/memory_latency$", "-a", "working_set=16KiB", "--min-time", "60",
        "--max-time", "120", "--target-ci", "0.000001"]
# One cheap configuration that ends at once.
SHORT = ["--filter", "^bandwidth/memory_latency$", "-a", "working_set=16KiB", "--min-time", "0",
         "--max-time", "0.02", "-q"]


def started(*args, cwd, preexec_fn=None):
    return subprocess.Popen([BIN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=cwd, preexec_fn=preexec_fn)


def wait_until_sampling(procs):
    """Until each run has begun its configuration (its progress line "[1/1] ..." on stderr: the
    signals are caught from before then), and a little longer: past the warm-up."""
    for p in procs:
        while True:
            line = p.stderr.readline()
            assert line, "the run ended before its configuration began"
            if line.startswith("[1/"):
                break
    time.sleep(1.0)


def assert_partial_report(path, sig, err):
    rep = load_report(path)
    assert rep["run"]["interrupted"] is True, rep["run"]
    assert signal.strsignal(sig) in rep["run"]["interrupted_reason"], rep["run"]
    (r,) = results(rep, "bandwidth/memory_latency")
    assert r["valid"] is False and "interrupted" in r["invalid_reason_codes"], r


# ---- item 1: every signal that ends a run by default leaves the partial report -------------------

STOP_SIGNALS = [signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGXCPU,
                signal.SIGALRM, signal.SIGPIPE, signal.SIGTERM]


def test_each_stop_signal_leaves_the_partial_report_and_junit(tmp_path):
    # All at once (the numbers do not matter here): one run per signal, each with --baseline and
    # --junit as accept runs it.
    procs = {}
    for sig in STOP_SIGNALS:
        d = tmp_path / sig.name
        d.mkdir()
        procs[sig] = started("run", *LONG, "-o", "r.json", "--baseline", BASELINE,
                             "--junit", "j.xml", cwd=str(d))
    wait_until_sampling(procs.values())
    for sig, p in procs.items():
        p.send_signal(sig)
    for sig, p in procs.items():
        _, err = p.communicate(timeout=60)
        assert p.returncode == 128 + sig, (sig.name, p.returncode, err)
        assert_partial_report(str(tmp_path / sig.name / "r.json"), sig, err)
        assert (tmp_path / sig.name / "j.xml").stat().st_size > 0, sig.name


def test_the_first_signal_is_the_one_recorded(tmp_path):
    p = started("run", *LONG, "-o", "r.json", cwd=str(tmp_path))
    wait_until_sampling([p])
    p.send_signal(signal.SIGHUP)
    # The cleanup after a dropped ssh connection. Not at the same instant: two signals pending at
    # once may be handled by two threads in either order.
    time.sleep(0.2)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGHUP, err
    assert_partial_report(str(tmp_path / "r.json"), signal.SIGHUP, err)


def test_a_soft_cpu_time_limit_leaves_the_partial_report(tmp_path):
    # SIGXCPU at the soft limit, then again every CPU second: the report is written all the same.
    # The limit leaves the start-up (about 2 CPU seconds in the ASan build) time to reach the
    # configuration, so that the partial report holds the interrupted result.
    p = subprocess.run(["sh", "-c", f'ulimit -S -t 5; exec "$0" "$@"', BIN, "run", *LONG, "-q",
                        "-o", "r.json"], capture_output=True, text=True, cwd=str(tmp_path),
                       timeout=60)
    assert p.returncode == 128 + signal.SIGXCPU, p.stderr
    assert_partial_report(str(tmp_path / "r.json"), signal.SIGXCPU, p.stderr)


def test_accept_leaves_the_partial_report_on_sighup(tmp_path):
    baseline = {"infrabench_baseline": 1, "suite": "quick", "rules": [
        {"benchmark": "bandwidth/memory_latency", "metric": "ns_per_load", "max": 1000}]}
    (tmp_path / "b.json").write_text(json.dumps(baseline))
    p = started("accept", "-b", "b.json", "-o", "r.json", "--junit", "j.xml", "--", *LONG,
                cwd=str(tmp_path))
    wait_until_sampling([p])
    p.send_signal(signal.SIGHUP)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGHUP, err
    assert load_report(str(tmp_path / "r.json"))["run"]["interrupted"] is True
    assert (tmp_path / "j.xml").stat().st_size > 0


# ---- item 2: file-size limits and failed writes --------------------------------------------------

def limited(limit_kib, *args, cwd, stdout=subprocess.PIPE):
    """infrabench ARGS under `ulimit -f LIMIT_KIB` (bash counts in KiB; sh too)."""
    return subprocess.run(["sh", "-c", f'ulimit -f {limit_kib}; exec "$0" "$@"', BIN, *args],
                          stdout=stdout, stderr=subprocess.PIPE, text=True, cwd=cwd, timeout=120)


def leftovers(directory):
    return glob.glob(os.path.join(directory, ".*.infrabench-*")) + \
        glob.glob(os.path.join(directory, "infrabench-unsaved-*"))


def test_run_past_the_file_size_limit_exits_3_and_prints_the_report(tmp_path):
    p = limited(4, "run", *SHORT, "-o", "r.json", "--format", "csv", cwd=str(tmp_path))
    assert p.returncode == 3, (p.returncode, p.stderr)
    assert "printed on standard output instead" in p.stderr, p.stderr
    assert "File too large" in p.stderr, p.stderr
    # The whole report, then the csv rows.
    doc, _ = json.JSONDecoder().raw_decode(p.stdout)
    assert results(doc, "bandwidth/memory_latency"), doc
    assert not os.path.exists(tmp_path / "r.json")
    assert leftovers(str(tmp_path)) == []


@pytest.mark.parametrize("args", [
    ["report", SINGLE, "-o", "out.html"],
    ["baseline", "create", SINGLE, "-o", "out.json"],
])
def test_report_and_baseline_past_the_file_size_limit_exit_3_without_temporaries(tmp_path, args):
    p = limited(1, *args, cwd=str(tmp_path))
    one_line_error(p, "File too large", code=3)
    assert os.listdir(tmp_path) == []


def test_history_record_past_the_file_size_limit_leaves_no_database(tmp_path):
    p = limited(4, "history", "record", SINGLE, "--db", "h.db", cwd=str(tmp_path))
    assert p.returncode == 3, p.stderr
    assert os.listdir(tmp_path) == []


def test_report_on_stdout_past_the_file_size_limit_leaves_no_truncated_json(tmp_path):
    out = tmp_path / "out.json"
    with open(out, "w") as f:
        p = limited(4, "run", *SHORT, "-o", "-", cwd=str(tmp_path), stdout=f)
    assert p.returncode == 3, p.stderr
    assert out.stat().st_size == 0, out.read_text()[:200]
    assert "the results are lost" in p.stderr, p.stderr
    assert "printed on standard output" not in p.stderr, p.stderr
    assert leftovers(str(tmp_path)) == []


# ---- item 3: a full disk under -o - --------------------------------------------------------------

@pytest.fixture
def full_tmpfs(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    out = open(mnt / "out.json", "w")
    fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError:
        pass
    os.close(fd)
    yield mnt, out
    out.close()
    subprocess.run(["umount", "-l", str(mnt)])


def test_full_disk_under_stdout_says_the_results_are_lost(full_tmpfs):
    mnt, out = full_tmpfs
    p = subprocess.run([BIN, "run", *SHORT, "-o", "-"], stdout=out, stderr=subprocess.PIPE,
                       text=True, cwd=str(mnt), env={**os.environ, "TMPDIR": str(mnt)}, timeout=120)
    assert p.returncode == 3, p.stderr
    assert "printed on standard output" not in p.stderr, p.stderr
    assert "the results are lost" in p.stderr and "No space left on device" in p.stderr, p.stderr
    assert sorted(os.listdir(mnt)) == ["filler", "out.json"]
    assert (mnt / "out.json").stat().st_size == 0


# ---- item 6: a failed write to standard output is exit 3 -----------------------------------------

STDOUT_COMMANDS = [
    ["list"],
    ["check", SINGLE, "--baseline", BASELINE],
    ["compare", SINGLE, SINGLE],
    ["compare", SINGLE, SINGLE, "--format", "json"],
    ["sysinfo", "--json"],
    ["history", "show", "--db", "h.db"],
    ["roofline", ROOFLINE, "--job", "gpt2-tiny", "--batch", "8"],
]


@pytest.fixture(scope="module")
def history_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("history")
    assert run("history", "record", SINGLE, "--db", str(d / "h.db")).returncode == 0
    return str(d)


@pytest.mark.parametrize("args", STDOUT_COMMANDS, ids=lambda a: "_".join(a[:2]).replace("/", "_"))
def test_a_command_whose_stdout_is_full_exits_3(history_dir, args):
    # The exit code the command has with a working stdout (check: the baseline's verdict).
    good = run(*args, cwd=history_dir)
    assert good.returncode in (0, 1) and good.stdout, good.stderr
    with open("/dev/full", "w") as full:
        p = subprocess.run([BIN, *args], stdout=full, stderr=subprocess.PIPE, text=True,
                           cwd=history_dir, timeout=60)
    assert p.returncode == 3, (p.returncode, p.stderr)
    assert "cannot write standard output" in p.stderr, p.stderr


@pytest.mark.parametrize("args", STDOUT_COMMANDS[:3], ids=lambda a: a[0])
def test_a_command_whose_stdout_is_closed_exits_3(history_dir, args):
    p = subprocess.run(["sh", "-c", 'exec "$0" "$@" >&-', BIN, *args], stderr=subprocess.PIPE,
                       text=True, cwd=history_dir, timeout=60)
    assert p.returncode == 3, (p.returncode, p.stderr)
    assert "cannot write standard output" in p.stderr, p.stderr


# ---- item 7: health-check prints one line and exits 0 or 1 --------------------------------------

# Shorter health checks (the verdict, 0 or 1, does not matter here): ~1.5 s instead of ~8.
HC_FAST = ["--", "-a", "rounds=1", "-a", "pairs=2", "-a", "round_ms=50"]


def one_health_line(p):
    lines = p.stdout.splitlines()
    assert p.returncode in (0, 1) and len(lines) == 1, (p.returncode, p.stdout, p.stderr)
    return lines[0]


@pytest.mark.parametrize("output", ["/dev/null", "/dev/full"])
def test_health_check_with_its_report_on_a_device_prints_one_line(output, tmp_path):
    line = one_health_line(run("health-check", "-o", output, *HC_FAST, cwd=str(tmp_path)))
    assert line.startswith("OK: ") or ": DRAIN: " in line, line


@pytest.mark.parametrize("tmpdir", ["", "/nonexistent-infrabench-dir"])
def test_health_check_without_a_usable_tmpdir_prints_one_line(tmpdir, tmp_path):
    line = one_health_line(run("health-check", *HC_FAST, env={"TMPDIR": tmpdir},
                               cwd=str(tmp_path)))
    assert line.startswith("OK: ") or ": DRAIN: " in line, line


def test_health_check_names_a_host_of_64_characters(tmp_path):
    name = "n" * 64
    p = subprocess.run(["unshare", "--uts", "sh", "-c", f'hostname {name} && exec "$0" "$@"', BIN,
                        "health-check", "-o", "/dev/null", *HC_FAST], capture_output=True, text=True,
                       timeout=120, cwd=str(tmp_path))
    if p.returncode not in (0, 1) and "unshare" in p.stderr:
        pytest.skip("no UTS namespace here: " + p.stderr.strip())
    line = one_health_line(p)
    # The OK line may go on after the host with what was not judged ("; health/cpu_core_speed not
    # judged: ..." on a busy machine).
    assert line.endswith(" on " + name) or f" on {name}; " in line or line.startswith(name + ": "), line


def wait_until_catching(p, sig, bound_s=30.0):
    """Until process p catches `sig` (its handler is in place: the signal's bit in SigCgt of
    /proc/PID/status). Before that a signal ends it by the default action, which no code of ours
    can answer: a sanitized binary on a busy machine has taken over 0.3 s to reach main."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        assert p.poll() is None, ("ended before catching signal %d" % sig, p.communicate())
        try:
            status = open("/proc/%d/status" % p.pid).read()
        except FileNotFoundError:
            continue
        caught = int(next(l.split()[1] for l in status.splitlines() if l.startswith("SigCgt:")), 16)
        if caught & (1 << (sig - 1)):
            return
        time.sleep(0.01)
    raise AssertionError("signal %d not caught within %.0f s" % (sig, bound_s))


@pytest.mark.parametrize("delay", [0.0, 2.0])  # in start-up (the modules load); in the checks
def test_health_check_interrupted_is_never_ok(tmp_path, delay):
    # The health checks take seconds (~8 s on a 2-core VM): each delay, counted from when the
    # handler is in place (main's first lines), falls within them.
    p = started("health-check", "-o", "/dev/null", cwd=str(tmp_path))
    wait_until_catching(p, signal.SIGTERM)
    time.sleep(delay)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    lines = out.splitlines()
    assert p.returncode == 1 and len(lines) == 1, (p.returncode, out, err)
    assert ": NOT CHECKED: interrupted by signal 15" in lines[0], lines[0]
