"""The build a newcomer waits for (issue 41): `cmake --build --preset default` makes the binary and its
modules, not the tests (the unit tests were 42% of its compile time); the infrabench_tests target,
which ci/test.sh and ctest itself build, makes every test's."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import BIN

BUILD = os.path.dirname(os.path.abspath(BIN))


def compiled_sources(target):
    """The sources ninja compiles to build `target` in this build directory."""
    p = subprocess.run(["ninja", "-C", BUILD, "-t", "commands", target], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return set(re.findall(r" -c (\S+)", p.stdout))


@pytest.mark.skipif(not os.path.exists(os.path.join(BUILD, "build.ninja")) or not shutil.which("ninja"),
                    reason="not a Ninja build directory, or no ninja")
def test_the_default_build_compiles_no_test_and_the_test_target_every_one():
    default = compiled_sources("all")
    in_tests = [s for s in default if re.search(r"/(tests|microbench)/", s)]
    assert not in_tests, f"{len(in_tests)} test sources in the default build: {sorted(in_tests)[:5]}"
    assert any(s.endswith("apps/main.cpp") for s in default), sorted(default)[:5]
    tests = compiled_sources("infrabench_tests")
    unit = [s for s in tests if re.search(r"tests/unit/test_\w+\.cpp$", s)]
    assert len(unit) > 50, len(unit)
    # Everything the default build makes, the test target makes too: the e2e tests run the binary
    # and load its modules.
    assert default <= tests, sorted(default - tests)[:5]
