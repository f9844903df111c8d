"""The tsan preset builds only the unit-test files whose suites start threads (tests/unit/threads.txt,
INFRABENCH_UNIT_TESTS_THAT_START_THREADS): here every other file's suites run under strace, and a
suite that starts a thread fails this test, named, so that ThreadSanitizer never silently stops
looking at threaded code. (Fork and exec are not threads: a death test's child is not counted.)"""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import BIN

BUILD = os.path.dirname(os.path.abspath(BIN))
UNIT = os.path.join(BUILD, "tests", "unit", "infrabench_unit_tests")
SOURCE = pathlib.Path(os.environ.get("INFRABENCH_SOURCE_DIR", "."))
TESTS = SOURCE / "tests" / "unit"
SUITE = re.compile(r"^(?:TEST|TEST_F|TEST_P)\(\s*(\w+)\s*,", re.M)
INSTANTIATED = re.compile(r"^INSTANTIATE_TEST_SUITE_P\(\s*(\w+)\s*,\s*(\w+)", re.M)


def listed():
    return {line.strip() for line in (TESTS / "threads.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")}


def suites_of(path):
    text = path.read_text(encoding="utf-8")
    names = set(SUITE.findall(text))
    # A parameterised suite runs as Prefix/Suite; its TEST_P's bare name matches nothing then.
    for prefix, suite in INSTANTIATED.findall(text):
        names.discard(suite)
        names.add(f"{prefix}/{suite}")
    return names


def threads_started(gtest_filter, tmp_path):
    """(exit code, the clone calls that made a thread) of the unit tests matching the filter."""
    log = tmp_path / "strace.log"
    p = subprocess.run(["strace", "-f", "-qq", "-e", "trace=clone,clone3", "-e", "signal=none", "-o", str(log),
                        UNIT, "--gtest_brief=1", "--gtest_filter=" + gtest_filter],
                       capture_output=True, text=True, timeout=300)
    calls = [line for line in log.read_text().splitlines() if "CLONE_THREAD" in line]
    return p.returncode, p.stdout[-2000:] + p.stderr[-2000:], calls


def test_the_list_names_files_that_exist():
    missing = sorted(f for f in listed() if not (TESTS / f).exists())
    assert not missing, f"tests/unit/threads.txt names files that are gone: {missing}"


@pytest.mark.skipif(os.environ.get("INFRABENCH_SANITIZED") == "1",
                    reason="a sanitizer's runtime starts threads of its own; the default build answers")
@pytest.mark.skipif(not os.path.exists(UNIT), reason="no unit-test executable beside the binary")
def test_no_suite_outside_the_list_starts_a_thread(tmp_path):
    if not shutil.which("strace"):
        if os.environ.get("CI") == "true":
            pytest.fail("strace is not installed (ci/install-deps.sh installs it)")
        pytest.skip("strace is not installed (apt-get install strace)")
    threaded = listed()
    # A suite some listed file defines too runs in the TSan build already.
    covered = set().union(*(suites_of(TESTS / f) for f in threaded if (TESTS / f).exists()))
    others = set()
    for path in sorted(TESTS.glob("test_*.cpp")):
        if path.name not in threaded:
            others |= suites_of(path) - covered
    assert len(others) > 50, sorted(others)
    rc, out, calls = threads_started(":".join(f"{s}.*" for s in sorted(others)), tmp_path)
    assert rc == 0, out
    if calls:  # name the suites, one run each
        starting = [s for s in sorted(others) if threads_started(f"{s}.*", tmp_path)[2]]
        pytest.fail(f"suites outside tests/unit/threads.txt start threads: {starting}; add their files "
                    f"there, or ThreadSanitizer never runs them")
