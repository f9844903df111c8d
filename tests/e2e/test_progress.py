"""Progress of `run` on stderr (issue 8): plain "[i/n]" lines when stderr is a pipe or CI is set,
nothing with -q, and on a terminal one line rewritten in place (carriage return + erase line), also
redrawn while a configuration runs."""
import os
import pty
import re
import select
import subprocess
import time

from conftest import BIN, run

TINY = ["--filter", "^bandwidth/memory_latency$", "-a", "working_set=16KiB,32KiB,64KiB", "--min-time", "0.01",
        "--max-time", "0.05"]
LINE = re.compile(r"^\[(\d+)/(\d+)\] ")


def plain_lines(stderr):
    return [l for l in stderr.splitlines() if LINE.match(l)]


def test_piped_output_gets_one_plain_line_per_configuration(report_path):
    p = run("run", *TINY, "-o", report_path)
    assert p.returncode == 0, p.stderr
    lines = plain_lines(p.stderr)
    assert [LINE.match(l).groups() for l in lines] == [("1", "3"), ("2", "3"), ("3", "3")], p.stderr
    assert "bandwidth/memory_latency" in lines[0] and "working_set=16KiB" in lines[0]
    assert "s left" in lines[2]  # the estimate from the configurations already done
    assert "\r" not in p.stderr and "\x1b[" not in p.stderr


def test_quiet_prints_no_progress(report_path):
    p = run("run", *TINY, "-q", "-o", report_path)
    assert p.returncode == 0, p.stderr
    assert not plain_lines(p.stderr) and "\r" not in p.stderr, p.stderr


def run_on_tty(args, env, timeout=120):
    """Runs the binary with stderr (and stdout) on a pseudo-terminal; returns (rc, bytes written)."""
    master, slave = pty.openpty()
    full_env = {k: v for k, v in os.environ.items() if k != "CI"}  # CI may run this test
    full_env.update(env)
    proc = subprocess.Popen([BIN, *args], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=full_env)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    return proc.wait(timeout=10), out


def test_terminal_line_is_rewritten_in_place(report_path):
    rc, out = run_on_tty(["run", *TINY, "-o", report_path], {})
    assert rc == 0, out
    text = out.decode(errors="replace")
    assert text.count("\r\x1b[K[") >= 3, repr(text)  # each configuration redraws the same line
    assert "[3/3]" in text
    # The line is cleared before the run's closing messages, which start a line of their own.
    assert text.rindex("\r\x1b[K") > text.rindex("[3/3]"), repr(text)
    assert not re.search(r"\[\d+/\d+\][^\r\n]*\r?\n", text), repr(text)  # never a plain progress line


def test_terminal_line_ticks_while_a_configuration_runs(report_path):
    # One configuration of ~2.5 s: the line is redrawn with the elapsed time meanwhile.
    rc, out = run_on_tty(["run", "--filter", "^bandwidth/memory_latency$", "-a", "working_set=16KiB",
                          "--min-time", "2.5", "--max-time", "3", "-o", report_path], {})
    assert rc == 0, out
    text = out.decode(errors="replace")
    assert re.search(r"\[1/1\] [12] s elapsed", text), repr(text)


def test_ci_variable_means_plain_lines_even_on_a_terminal(report_path):
    rc, out = run_on_tty(["run", *TINY, "-o", report_path], {"CI": "1"})
    assert rc == 0, out
    text = out.decode(errors="replace")
    assert "\x1b[K" not in text, repr(text)
    assert len(re.findall(r"\[\d/3\] ", text)) == 3, repr(text)
