"""A shipped baseline is named, not found by path (`accept --baseline template-cpu-node` from any
directory), and `cmake --install` gives a relocatable tree whose binary finds its baselines and
modules beside itself. The Debian package (install, run from outside the checkout, remove) is
ci/package.sh's, run by ci/test.sh as root."""
import os
import pathlib
import subprocess

import pytest

from conftest import BIN, run

BUILD = pathlib.Path(BIN).resolve().parent


def test_a_shipped_baseline_is_found_by_name_from_any_directory(tmp_path):
    p = run("baseline", "lint", "template-cpu-node", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "template-cpu-node" in p.stdout
    # A path still works, and a name that is neither a file nor shipped is refused in one line
    # that says where it looked and what is shipped.
    src = os.environ.get("INFRABENCH_SOURCE_DIR", ".")
    assert run("baseline", "lint", f"{src}/configs/baselines/template-cpu-node.json").returncode == 0
    p = run("baseline", "lint", "template-gpu-nodes", cwd=tmp_path)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert "no shipped one of that name" in lines[0] and "template-cpu-node" in lines[0], lines[0]


def test_the_installed_tree_finds_its_baselines_and_modules_beside_itself(tmp_path):
    prefix = tmp_path / "prefix"
    p = subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(prefix)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    exe = prefix / "bin" / "infrabench"
    for f in ("share/infrabench/baselines/template-cpu-node.json",
              "share/infrabench/suites/quick.json", "share/doc/infrabench/README.md"):
        assert (prefix / f).is_file(), f
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    out = subprocess.run([str(exe), "baseline", "lint", "template-cpu-node"], cwd=cwd,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    # The installed share directory is searched first.
    out = subprocess.run([str(exe), "baseline", "lint", "no-such-baseline"], cwd=cwd,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    looked = out.stderr.split("looked in ", 1)[1]
    assert looked.startswith(str(prefix / "share" / "infrabench" / "baselines")), out.stderr
    # Modules are found in lib/infrabench of the tree, not in the build directory.
    env = {k: v for k, v in os.environ.items() if k != "INFRABENCH_MODULE_DIR"}
    ver = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=120,
                         env=env)
    assert ver.returncode == 0, ver.stderr
    modules = list((prefix / "lib" / "infrabench").glob("libinfrabench_*.so"))
    built = list(BUILD.glob("libinfrabench_*.so"))
    built = [m for m in built if "fake_nvml" not in m.name]
    if not built:
        pytest.skip("this build has no backend modules to install")
    assert len(modules) >= len(built), (modules, built)
    for m in modules:
        assert str(m) in ver.stdout, (m, ver.stdout)
