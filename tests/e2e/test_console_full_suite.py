"""The full suite's widest tables fit the console's 120 columns (issue 25, item 7), as
test_console_screen.py checks of the quick suite's. Apart from that file because it times nothing:
it samples briefly and checks only the width of what is printed, so it may run beside the other
untimed files (tests/e2e/CMakeLists.txt) rather than alone (~38 s of CI's default stage)."""
from conftest import load_report, run
from test_console_screen import SANITIZED, too_wide


def test_full_suite_tables_fit_120_columns(tmp_path):
    # The full suite's widest tables (storage, training, preprocess sweeps), sampled briefly.
    benchmarks = "storage/read|storage/checkpoint|preprocess/pipeline|bandwidth/host_memory"
    out = str(tmp_path / "full.json")
    p = run("run", "--suite", "full", "--min-time", "0.005", "--max-time", "0.01", "-q",
            "--filter", f"^({benchmarks})$", "-o", out, timeout=600)
    assert p.returncode in (0, 1), p.stderr
    assert len(load_report(out)["results"]) > 10
    assert not too_wide(p.stdout), "\n".join(too_wide(p.stdout))[:3000]


def test_full_suite_training_table_fits_120_columns(tmp_path):
    # The full suite's training/step row (its every axis) at gpt2-tiny, a name as long as the
    # suite's gpt2-124m and a table as wide (larger rates are, if anything, wider): the 124M step
    # took 28 of this file's 46 CPU s. Under a sanitizer the training table is rendered by
    # test_training.py's runs.
    if SANITIZED:
        return
    out = str(tmp_path / "train.json")
    p = run("run", "--suite", "full", "--min-time", "0.005", "--max-time", "0.01", "-q",
            "--filter", "^training/step$", "-a", "model=gpt2-tiny", "-o", out, timeout=600)
    assert p.returncode in (0, 1), p.stderr
    (result,) = load_report(out)["results"]
    assert result["axes"]["model"] == "gpt2-tiny", result["axes"]
    assert not too_wide(p.stdout), "\n".join(too_wide(p.stdout))[:3000]
