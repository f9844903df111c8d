"""The default `infrabench run`: the quick suite covers every hop this machine can run, passes,
and (in an optimised build) stays under its 60 s budget on 2 cores."""
import os
import time

from conftest import load_report, run


def test_default_run_is_the_quick_suite(tmp_path):
    start = time.monotonic()
    p = run("run", cwd=str(tmp_path), timeout=300)
    elapsed = time.monotonic() - start
    assert p.returncode == 0, p.stderr
    report = load_report(tmp_path / "infrabench-report.json")
    assert report["run"]["suite"]["name"] == "quick"
    benchmarks = {r["benchmark"] for r in report["results"]}
    assert {"bandwidth/host_memory", "bandwidth/memory_latency"} <= benchmarks
    for r in report["results"]:
        assert r["status"] in ("passed", "skipped"), r
    assert report["summary"]["failed"] == 0
    print(f"quick suite: {elapsed:.1f} s")
    # Sanitizer builds are several times slower; the budget is for the shipped (Release) build.
    if os.environ.get("INFRABENCH_SANITIZED") != "1":
        assert elapsed < 60, f"the quick suite took {elapsed:.1f} s (budget 60 s)"
