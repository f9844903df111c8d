"""The build a newcomer waits for (issue 41): `cmake --build --preset default` makes the binary and its
modules, not the tests (the unit tests were 42% of its compile time); the infrabench_tests target,
which ci/test.sh and ctest itself build, makes every test's; and ci/slowest-units.sh, which CI
prints after the default build, lists the slowest compile units of a build's .ninja_log."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import BIN

BUILD = os.path.dirname(os.path.abspath(BIN))
SOURCE = os.environ.get("INFRABENCH_SOURCE_DIR", os.getcwd())
SLOWEST = os.path.join(SOURCE, "ci", "slowest-units.sh")


def batched(path):
    """The files a generated batch includes (a unity file of cmake/infrabench_unity.cmake, a unit-test
    batch of tests/unit_batch.cmake), made first if the build has not made it yet."""
    path = path if os.path.isabs(path) else os.path.join(BUILD, path)
    if not os.path.exists(path):
        subprocess.run(["ninja", "-C", BUILD, os.path.relpath(path, BUILD)], capture_output=True,
                       timeout=120, check=True)
    with open(path) as f:
        return re.findall(r'#include "([^"]*\.(?:cpp|cxx|cu))"', f.read())


def compiled_sources(target):
    """The sources ninja compiles to build `target` in this build directory, each file of a unity
    batch (CMake's Unity/unity_N_cxx.cxx) named instead of the batch."""
    p = subprocess.run(["ninja", "-C", BUILD, "-t", "commands", target], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    out = set()
    for s in re.findall(r" -c (\S+)", p.stdout):
        out |= set(batched(s)) if re.search(r"/Unity/unity_\d+_\w+\.\w+$", s) else {s}
    return out


@pytest.mark.skipif(not os.path.exists(os.path.join(BUILD, "build.ninja")) or not shutil.which("ninja"),
                    reason="not a Ninja build directory, or no ninja")
def test_the_default_build_compiles_no_test_and_the_test_target_every_one():
    default = compiled_sources("all")
    in_tests = [s for s in default if re.search(r"/(tests|microbench)/", s)]
    assert not in_tests, f"{len(in_tests)} test sources in the default build: {sorted(in_tests)[:5]}"
    assert any(s.endswith("apps/main.cpp") for s in default), sorted(default)[:5]
    # Every library file is compiled, alone or in its batch (none lost to a unity build).
    for lib in ("harness/src/cli.cpp", "reports/src/commands/registration.cpp",
                "benchmarks/storage/read.cpp"):
        assert any(s.endswith(lib) for s in default), lib
    tests = compiled_sources("infrabench_tests")
    # Every unit-test file is compiled: alone, or in a batch (tests/unit_batch.cmake) that includes it.
    unit = {os.path.basename(s) for s in tests if re.search(r"tests/unit/test_\w+\.cpp$", s)}
    for batch in (s for s in tests if re.search(r"unit_batch_\d+\.cpp$", s)):
        unit |= {os.path.basename(i) for i in batched(batch) if re.search(r"test_\w+\.cpp$", i)}
    every = {f for f in os.listdir(os.path.join(SOURCE, "tests", "unit")) if re.match(r"test_\w+\.cpp$", f)}
    assert len(every) > 50 and every <= unit, sorted(every - unit)[:5]
    # Everything the default build makes, the test target makes too: the e2e tests run the binary
    # and load its modules.
    assert default <= tests, sorted(default - tests)[:5]


def batched_sources(target):
    """The sources ninja compiles inside a unity batch to build `target`."""
    p = subprocess.run(["ninja", "-C", BUILD, "-t", "commands", target], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    out = set()
    for s in re.findall(r" -c (\S+)", p.stdout):
        if re.search(r"/Unity/unity_\d+_\w+\.\w+$", s):
            out |= set(batched(s))
    return out


@pytest.mark.skipif(not os.path.exists(os.path.join(BUILD, "build.ninja")) or not shutil.which("ninja"),
                    reason="not a Ninja build directory, or no ninja")
def test_the_builds_backends_are_read_outside_every_batch():
    # The default, cpu-only and package builds differ in the backends compiled in. A batch holding
    # a file that reads them (or a file one build has and another not) differs between the builds,
    # and CI's compiler cache cannot serve the cpu-only build from the default one: it compiled nine
    # batches again for it. One file reads them (infrabench/compiled_in.h); it and the io_uring
    # probe (or its `_none` answer) are compiled alone.
    readers = []
    for top in ("harness", "reports", "apps", "benchmarks", "kernels", "tests", "modules", "sim"):
        for root, _, files in os.walk(os.path.join(SOURCE, top)):
            for f in files:
                if re.search(r"\.(cpp|h|cu|cuh)$", f):
                    with open(os.path.join(root, f), errors="replace") as text:
                        if '#include "infrabench/build_backends.h"' in text.read():
                            readers.append(os.path.relpath(os.path.join(root, f), SOURCE))
    assert readers == ["harness/src/compiled_in.cpp"], readers
    in_batches = batched_sources("all")
    for alone in ("harness/src/compiled_in.cpp", "harness/src/probe_io_uring.cpp",
                  "harness/src/probe_io_uring_none.cpp"):
        assert not any(s.endswith(alone) for s in in_batches), f"{alone} is in a unity batch"


def slowest(tmp_path, log, *args):
    (tmp_path / ".ninja_log").write_text(log, encoding="utf-8")
    return subprocess.run([SLOWEST, str(tmp_path), *args], capture_output=True, text=True,
                          timeout=60)


def test_slowest_units_lists_the_latest_compile_of_each_unit_slowest_first(tmp_path):
    log = ("# ninja log v5\n"
           "0\t5000\t1\tharness/CMakeFiles/infrabench_harness.dir/src/cli.cpp.o\ta\n"
           "0\t30000\t1\ttests/unit/CMakeFiles/infrabench_unit_tests.dir/test_a.cpp.o\tb\n"
           "0\t9000\t1\ttests/unit/CMakeFiles/infrabench_fake_nvml.dir/__/fake_nvml/f.cpp.o\tc\n"
           "0\t100\t1\tinfrabench\td\n"
           # cli.cpp compiled again later (an incremental build): its latest time counts.
           "10\t12010\t2\tharness/CMakeFiles/infrabench_harness.dir/src/cli.cpp.o\te\n")
    p = slowest(tmp_path, log, "2")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("==== slowest 2 of 3 compile units in "), lines
    assert "51 s in all" in lines[0], lines[0]
    assert lines[1].split() == ["30.0", "tests/unit/test_a.cpp"], lines
    assert lines[2].split() == ["12.0", "harness/src/cli.cpp"], lines
    p = slowest(tmp_path, log)
    assert p.stdout.splitlines()[3].split() == ["9.0", "tests/fake_nvml/f.cpp"], p.stdout


def test_slowest_units_refuses_a_missing_log_and_a_bad_count(tmp_path):
    p = subprocess.run([SLOWEST, str(tmp_path / "nowhere")], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and ".ninja_log not found" in p.stderr
    p = slowest(tmp_path, "# ninja log v5\n", "ten")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "got 'ten'" in p.stderr
