"""The full suite's widest tables fit the console's 120 columns (issue 25, item 7), as
test_console_screen.py checks of the quick suite's. Apart from that file because it times nothing:
it samples briefly and checks only the width of what is printed, so it may run beside the other
untimed files (tests/e2e/CMakeLists.txt) rather than alone (~38 s of CI's default stage)."""
from conftest import load_report, run
from test_console_screen import SANITIZED, too_wide


def test_full_suite_tables_fit_120_columns(tmp_path):
    # The full suite's widest tables (storage, training, preprocess sweeps), sampled briefly. Under
    # a sanitizer without training/step: the full suite trains gpt2-124m, minutes of instrumented
    # steps, and its table is rendered under the sanitizer by test_training.py's runs.
    benchmarks = "storage/read|storage/checkpoint|preprocess/pipeline|bandwidth/host_memory"
    if not SANITIZED:
        benchmarks += "|training/step"
    out = str(tmp_path / "full.json")
    p = run("run", "--suite", "full", "--min-time", "0.005", "--max-time", "0.01", "-q",
            "--filter", f"^({benchmarks})$", "-o", out, timeout=600)
    assert p.returncode in (0, 1), p.stderr
    assert len(load_report(out)["results"]) > 10
    assert not too_wide(p.stdout), "\n".join(too_wide(p.stdout))[:3000]
