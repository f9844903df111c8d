"""A shipped baseline is named, not found by path (`accept --baseline template-cpu-node` from any
directory), and `cmake --install` gives a relocatable tree whose binary finds its baselines and
modules beside itself. The Debian package (install, run from outside the checkout, remove) is
ci/package.sh's, run by ci/test.sh as root."""
import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import BIN, FAST, load_report, one_line_error, run

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
              "share/infrabench/suites/quick.json", "share/doc/infrabench/README.md",
              "share/man/man1/infrabench.1.gz", "share/bash-completion/completions/infrabench",
              "share/zsh/vendor-completions/_infrabench", "share/doc/infrabench/copyright",
              "share/doc/infrabench/changelog.gz"):
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


# ---- MPI as a module (issue 29 item 1) ------------------------------------------------------------
# The communicator and the benchmarks that call MPI live in libinfrabench_mpi.so; the core links no
# MPI library, loads the module at start-up and, where it does not load, lists its benchmarks (from
# the manifest the build wrote beside it) as skipped with the loader's reason. Under a launcher
# that says several ranks, a module that does not load ends the run before anything runs: N
# processes that each believe they are rank 0 would each write a report.
HAS_MPI = os.environ.get("INFRABENCH_HAS_MPI") == "1"
CPU_RUN = ["run", "--filter", "^bandwidth/host_memory$", "-a", "array_size=1MiB", "-a",
           "threads=1", "-a", "kernel=triad"] + FAST
# Names and parts of the libraries the core must not link: MPI's, and the reference libraries'.
NOT_IN_CORE = ("libmpi", "libopen-pal", "libopen-rte", "libpmix", "openblas", "dnnl", "opencv",
               "libcudart", "libcublas", "libnccl", "libcudnn", "libcuda.so")


def test_the_core_executable_links_no_cuda_mpi_or_reference_library():
    p = subprocess.run(["ldd", BIN], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    for lib in NOT_IN_CORE:
        assert lib not in p.stdout, (lib, p.stdout)
    if HAS_MPI:
        mod = subprocess.run(["ldd", str(BUILD / "libinfrabench_mpi.so")], capture_output=True,
                             text=True)
        assert "libmpi.so" in mod.stdout, mod.stdout  # the module carries it instead


@pytest.mark.parametrize("var", ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"])
def test_under_a_launcher_a_missing_mpi_module_ends_the_run_before_anything_runs(tmp_path, var):
    # Before: a build without MPI ran every rank as a single process (N reports, each rank 0).
    empty = tmp_path / "no-modules"
    empty.mkdir()
    out = tmp_path / "r.json"
    env = {var: "2", "INFRABENCH_MODULE_DIR": str(empty)}
    p = run(*CPU_RUN, "-o", str(out), env=env)
    one_line_error(p, var, "MPI", "cannot run as one of several ranks")
    assert not out.exists()
    # A launcher that says one process is a single run.
    p = run(*CPU_RUN, "-o", str(out), env={var: "1", "INFRABENCH_MODULE_DIR": str(empty)})
    assert p.returncode in (0, 1), p.stderr
    assert load_report(str(out))["results"]


def module_without_its_library(dest):
    """The build's MPI module and manifest in `dest`, the module's libmpi.so.40 renamed in its
    dynamic section to a library no machine has: loading it fails as on a node without Open MPI."""
    data = (BUILD / "libinfrabench_mpi.so").read_bytes()
    assert b"libmpi.so.40\0" in data, "the module does not need libmpi.so.40"
    (dest / "libinfrabench_mpi.so").write_bytes(data.replace(b"libmpi.so.40\0",
                                                              b"libmpX.so.40\0"))
    (dest / "libinfrabench_mpi.benchmarks").write_bytes(
        (BUILD / "libinfrabench_mpi.benchmarks").read_bytes())


@pytest.mark.skipif(not HAS_MPI, reason="built without MPI (INFRABENCH_WITH_MPI=OFF)")
def test_where_mpi_does_not_load_its_benchmarks_are_skipped_with_the_loaders_reason(tmp_path):
    manifest = (BUILD / "libinfrabench_mpi.benchmarks").read_text().splitlines()
    names = [line.split("\t")[0] for line in manifest]
    assert "collectives/pairwise" in names and "collectives/mpi_allreduce" in names, names
    mods = tmp_path / "modules"
    mods.mkdir()
    module_without_its_library(mods)
    env = {"INFRABENCH_MODULE_DIR": str(mods)}
    listed = run("list", "--json", "--filter", "^collectives/", env=env)
    assert listed.returncode == 0, listed.stderr
    assert "MPI not installed (libmpX.so.40: cannot open shared object file" in listed.stdout
    # The quick suite still runs (its collectives entries narrow axes the stand-ins name), and
    # every MPI benchmark in it is skipped with the reason.
    out = tmp_path / "quick.json"
    p = run("run", "--filter", "^(collectives/(pairwise|mpi_allreduce)|bandwidth/host_memory)$",
            "-a", "array_size=1MiB", "-a", "threads=1", "-a", "kernel=triad", *FAST,
            "-o", str(out), env=env, timeout=300)
    assert p.returncode in (0, 1), p.stderr
    by = {}
    for r in load_report(str(out))["results"]:
        by.setdefault(r["benchmark"], []).append(r)
    assert all(r["status"] == "passed" for r in by["bandwidth/host_memory"]), by
    for name in ("collectives/pairwise", "collectives/mpi_allreduce"):
        assert by.get(name), (name, sorted(by))
        for r in by[name]:
            assert r["status"] == "skipped", r
            assert r["reason"].startswith("MPI not installed (libmpX.so.40: cannot open"), r
    ver = run("--version", env=env)
    assert ver.returncode == 0, ver.stderr
    assert re.search(r"^\s+MPI\s+compiled in; .*does not load here: MPI not installed", ver.stdout,
                     re.M), ver.stdout
    # Under a launcher the same module ends the run with that reason, exit 2.
    p = run(*CPU_RUN, "-o", str(tmp_path / "r.json"), env={**env, "OMPI_COMM_WORLD_SIZE": "2"})
    one_line_error(p, "MPI not installed (libmpX.so.40")


def test_version_lists_mpi_as_a_backend():
    p = run("--version")
    assert p.returncode == 0, p.stderr
    line = next((l for l in p.stdout.splitlines() if re.match(r"\s+MPI\s", l)), None)
    assert line, p.stdout
    if HAS_MPI:
        assert str(BUILD / "libinfrabench_mpi.so") in line and "loads here, version" in line, line
    else:
        assert "not compiled in" in line, line


# ---- CUDA and NCCL as modules (issue 29 item 1) ---------------------------------------------------
# The GPU benchmarks, the GPU timing and the CUDA probe live in libinfrabench_cuda.so; the NCCL
# collectives in libinfrabench_nccl.so, loaded once the MPI and CUDA modules have. Where they do not
# load, their benchmarks are listed (from the manifests beside them) as skipped with the loader's
# reason; where CUDA loads but there is no driver, the reasons are the probe's as before.
HAS_CUDA = os.environ.get("INFRABENCH_HAS_CUDA") == "1"
needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason="built without CUDA (INFRABENCH_WITH_CUDA=OFF)")
GPU_NAMES = ("gemm/cublas", "bandwidth/h2d", "stress/gpu")


def manifest_names(module_id):
    lines = (BUILD / f"libinfrabench_{module_id}.benchmarks").read_text().splitlines()
    return [line.split("\t")[0] for line in lines]


def listed_reasons(env, pattern):
    """`list --json`'s entries by name, and its text."""
    p = run("list", "--json", "--filter", pattern, env=env)
    assert p.returncode == 0, p.stderr
    return {b["name"]: b for b in json.loads(p.stdout)}, p.stdout


@needs_cuda
def test_the_gpu_benchmarks_are_the_cuda_modules():
    names = manifest_names("cuda")
    for n in GPU_NAMES:
        assert n in names, names
    mod = subprocess.run(["ldd", str(BUILD / "libinfrabench_cuda.so")], capture_output=True,
                         text=True)
    assert "libcudart.so" in mod.stdout, mod.stdout  # the module carries it instead of the core
    # cuBLAS(Lt) is opened at its first call (harness/src/cublas_loader.cpp), not needed to load
    # the module: the module names the libraries it opens.
    assert "libcublas" not in mod.stdout, mod.stdout
    data = (BUILD / "libinfrabench_cuda.so").read_bytes()
    assert b"libcublasLt.so.13\0" in data and b"libcublas.so.13\0" in data
    assert "libnccl" not in mod.stdout and "libmpi" not in mod.stdout, mod.stdout
    if (BUILD / "libinfrabench_nccl.so").exists():
        assert any(n.startswith("collectives/nccl_") for n in manifest_names("nccl"))


@needs_cuda
def test_where_cuda_does_not_load_the_gpu_benchmarks_are_skipped_with_the_loaders_reason(tmp_path):
    # The build's CUDA module with its libcudart.so.13 renamed in its dynamic section: loading it
    # fails as on a node without the CUDA toolkit. No MPI module there: NCCL's needs it.
    mods = tmp_path / "modules"
    mods.mkdir()
    data = (BUILD / "libinfrabench_cuda.so").read_bytes()
    assert b"libcudart.so.13\0" in data, "the module does not need libcudart.so.13"
    (mods / "libinfrabench_cuda.so").write_bytes(data.replace(b"libcudart.so.13\0",
                                                              b"libcudarX.so.13\0"))
    for mid in ("cuda", "nccl"):
        if (BUILD / f"libinfrabench_{mid}.benchmarks").exists():
            (mods / f"libinfrabench_{mid}.benchmarks").write_bytes(
                (BUILD / f"libinfrabench_{mid}.benchmarks").read_bytes())
    env = {"INFRABENCH_MODULE_DIR": str(mods)}
    listed, text = listed_reasons(env, "^(gemm|bandwidth|stress|collectives|training)/")
    # Every benchmark of the module is listed, not runnable, with the loader's reason.
    gpu = [n for n in manifest_names("cuda") if n.split("/")[0] in
           ("gemm", "bandwidth", "stress", "collectives", "training")]
    assert "gemm/cublas" in gpu, gpu
    for name in gpu:
        assert name in listed, (name, sorted(listed))
        assert not listed[name]["runnable"], listed[name]
        assert listed[name]["reason"].startswith(
            "CUDA not installed (libcudarX.so.13: cannot open shared object file"), listed[name]
    # One GPU benchmark run: skipped with the loader's reason; a CPU one beside it passes.
    out = tmp_path / "r.json"
    p = run("run", "--filter", "^(gemm/cublas|bandwidth/host_memory)$", "-a", "array_size=1MiB",
            "-a", "threads=1", "-a", "kernel=triad", *FAST, "-o", str(out), env=env, timeout=300)
    assert p.returncode in (0, 1), p.stderr
    by = {}
    for r in load_report(str(out))["results"]:
        by.setdefault(r["benchmark"], []).append(r)
    assert all(r["status"] == "passed" for r in by["bandwidth/host_memory"]), by
    assert by.get("gemm/cublas"), sorted(by)
    for r in by["gemm/cublas"]:
        assert r["status"] == "skipped", r
        assert r["reason"].startswith("CUDA not installed (libcudarX.so.13: cannot open"), r
    if (mods / "libinfrabench_nccl.benchmarks").exists():
        nccl = manifest_names("nccl")
        assert nccl
        for name in nccl:
            assert listed[name]["reason"].startswith(
                "NCCL module needs the MPI module, which did not load: "), listed[name]
    ver = run("--version", env=env)
    assert ver.returncode == 0, ver.stderr
    assert re.search(r"^\s+CUDA\s+compiled in; .*does not load here: CUDA not installed", ver.stdout,
                     re.M), ver.stdout


def unshare_hiding(directory):
    """A command prefix that runs in a mount namespace where `directory` is an empty one, or None
    where that cannot be done here (not root, no unshare)."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return None
    return ["unshare", "-m", "sh", "-c",
            f'mount -t tmpfs none "{directory}" && exec "$0" "$@"']


@needs_cuda
def test_without_the_cuda_toolkit_the_reason_names_the_cuda_runtime(tmp_path):
    mod = subprocess.run(["ldd", str(BUILD / "libinfrabench_cuda.so")], capture_output=True,
                         text=True)
    m = re.search(r"libcudart\.so\.13 => (\S+)", mod.stdout)
    assert m, mod.stdout
    toolkit_lib = os.path.dirname(os.path.realpath(m.group(1)))
    prefix = unshare_hiding(toolkit_lib)
    if prefix is None:
        pytest.skip("hiding the CUDA toolkit needs root and unshare")
    p = subprocess.run(prefix + [BIN, "list", "--filter", "^gemm/cublas$"], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "CUDA runtime not installed (libcudart.so.13: cannot open shared object file" in \
        p.stdout, p.stdout


@needs_cuda
def test_version_lists_the_cuda_module_with_its_libraries_versions():
    p = run("--version")
    assert p.returncode == 0, p.stderr
    line = next((l for l in p.stdout.splitlines() if re.match(r"\s+CUDA\s", l)), None)
    assert line, p.stdout
    assert str(BUILD / "libinfrabench_cuda.so") in line, line
    assert re.search(r"loads here, version cudart \d+\.\d+, cuBLAS \d+\.\d+\.\d+ \(built against; opened "
                     r"at its first call\)", line), line
    nccl = next((l for l in p.stdout.splitlines() if re.match(r"\s+NCCL\s", l)), None)
    assert nccl, p.stdout
    if (BUILD / "libinfrabench_nccl.so").exists():
        assert re.search(r"loads here, version NCCL \d+\.\d+", nccl), nccl
