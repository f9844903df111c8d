"""How ctest runs the unit tests (tests/unit_suites.cmake): one ctest test per gtest suite,
`unit.<Suite>`, and one for every suite the executable lists, so that no unit test is left out of
CI without anyone noticing (a suite the listing's parser missed would simply never run)."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import BIN

BUILD = os.path.dirname(os.path.abspath(BIN))
UNIT = os.path.join(BUILD, "tests", "unit", "infrabench_unit_tests")


@pytest.mark.skipif(not os.path.exists(UNIT) or not shutil.which("ctest"),
                    reason="no unit-test executable beside the binary, or no ctest")
def test_every_gtest_suite_is_one_ctest_test():
    listing = subprocess.run([UNIT, "--gtest_list_tests"], capture_output=True, text=True,
                             timeout=60)
    assert listing.returncode == 0, listing.stderr
    # A suite's line is "Suite." (a typed one adds "  # TypeParam = ..."), its tests indented
    # below; gtest_main's "Running main() from ..." comes first.
    suites = set(re.findall(r"^([^ #][^ ]*)\.(?: |$)", listing.stdout, re.M))
    assert len(suites) > 50, listing.stdout[:2000]
    # The ctest running this test built the targets already: a nested build in the same tree,
    # while other tests run, is slow under load and races ninja's log (tests/build_tests.cmake).
    env = dict(os.environ, INFRABENCH_CTEST_NO_BUILD="1")
    p = subprocess.run(["ctest", "--test-dir", BUILD, "-N", "-L", "^unit$"], capture_output=True,
                       text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    names = re.findall(r"Test +#\d+: (\S+)", p.stdout)
    grouped = {n[len("unit."):] for n in names if n.startswith("unit.")}
    assert suites <= grouped, f"suites ctest does not run: {sorted(suites - grouped)}"
    # One process per suite, not per test (`Suite.Test` names were gtest_discover_tests').
    per_test = [n for n in names if n.split(".")[0] in suites]
    assert not per_test, per_test[:5]
