"""preprocess/*: every stage and the pipeline run and verify with small images, the ISA axis skips
what the CPU lacks with the reason, the OpenCV comparison lands in the report, and bad input is a
one-line error (exit 2) or a failed configuration that names the sample while the run goes on."""
import base64
import json
import os

import pytest

from conftest import FAST, cpu_flags, listing, load_report, metric, results, run

NAMES = ["crop", "decode", "flip", "layout", "normalize", "pipeline", "pipeline_opencv", "resize"]

# Small images keep the run short; the code paths (windows, gathers, tails) are the same.
SMALL = ["-a", "batch=3", "-a", "width=67", "-a", "height=45", "-a", "resize=40", "-a", "crop=32"]

# A 24x16 quality-90 4:2:0 JPEG made with libjpeg-turbo.
SMALL_JPEG = base64.b64decode(
    "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAMCAgMCAgMDAwMEAwMEBQgFBQQEBQoHBwYIDAoMDAsKCwsNDhIQDQ4RDgsLEBYQERMU"
    "FRUVDA8XGBYUGBIUFRT/2wBDAQMEBAUEBQkFBQkUDQsNFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQU"
    "FBQUFBQUFBT/wAARCAAQABgDASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUF"
    "BAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVW"
    "V1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi"
    "4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAEC"
    "AxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVm"
    "Z2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq"
    "8vP09fb3+Pn6/9oADAMBAAIRAxEAPwD4b0D4Vbtv7n9K9J0D4Rbtv7n9K988L/Crdt/c/pXrnhf4Rbtv7n9K+FyzF/2rbW9z5nhb"
    "j/2fL7583+H/AINbtv7j9KK+19N+HcGnMsX2YzT4B2LwB9T2orqxWM4ZwNaWHxmJSqR3SjOVn2bjGSv3V7rqf1ZlPH9aWFTjLT1/"
    "4J//2Q==")


def test_list_shows_every_stage_and_the_pipeline():
    names = listing("^preprocess/")
    assert set(names) == {"preprocess/" + n for n in NAMES}
    for b in names.values():
        assert b["description"]
    # isa axis on every kernel benchmark, with the four choices.
    for n in ["crop", "flip", "layout", "normalize", "pipeline", "resize"]:
        axes = {a["name"]: a for a in names["preprocess/" + n]["axes"]}
        assert axes["isa"]["choices"] == ["auto", "scalar", "avx2", "avx512"]
        assert "threads" in axes and "batch" in axes


def test_every_stage_runs_and_verifies(report_path):
    p = run("run", "--filter", "^preprocess/", *FAST, *SMALL, "-a", "isa=scalar,auto",
            "-o", report_path, timeout=300)
    report = load_report(report_path)
    assert p.returncode == 0, p.stderr + json.dumps(report["summary"])
    runnable = {n for n, b in listing("^preprocess/").items() if b["runnable"]}
    for name in runnable:
        rs = results(report, name)
        assert rs, name
        for r in rs:
            if r["status"] == "skipped":
                continue  # e.g. parallel=opencv with one thread: the reason is checked below
            assert r["status"] == "passed", r
            # The check after timing against the scalar reference (or OpenCV vs ours) passed:
            # whatever makes a result invalid here is noise, never a wrong output.
            assert all(c == "noisy" for c in r["invalid_reason_codes"]), (name, r["invalid_reasons"])
            assert metric(r, "images_per_s") > 0, name
    # Vector results carry their speed-up over the scalar run with the same axes.
    auto = [r for r in results(report, "preprocess/resize") if r["axes"]["isa"] == "auto"]
    assert all(metric(r, "speedup_vs_scalar") for r in auto)
    skipped = [r for r in report["results"] if r["status"] == "skipped"]
    for r in skipped:
        assert r["reason"], r


def test_opencv_comparison_is_in_the_report(report_path):
    b = listing("^preprocess/")["preprocess/pipeline_opencv"]
    if not b["runnable"]:
        assert "OpenCV" in b["reason"]
        pytest.skip(b["reason"])
    p = run("run", "--filter", "^preprocess/pipeline", *FAST, *SMALL, "-a", "threads=1",
            "-o", report_path, timeout=300)
    assert p.returncode == 0, p.stderr
    report = load_report(report_path)
    cv = [r for r in results(report, "preprocess/pipeline_opencv") if r["status"] == "passed"]
    assert cv
    for r in cv:
        assert metric(r, "infrabench_speedup_x") > 0, r
    assert "infrabench_speedup_x" in p.stdout  # the console table shows the ratio too


def test_isa_the_cpu_lacks_is_skipped_with_the_reason(report_path):
    flags = cpu_flags()
    have = {"avx2": {"avx2", "fma", "f16c"} <= flags,
            "avx512": {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512vbmi"} <= flags}
    p = run("run", "--filter", "^preprocess/flip$", *FAST, "-a", "batch=2", "-a", "crop=16",
            "-a", "threads=1", "-a", "isa=avx2,avx512", "-o", report_path)
    assert p.returncode == 0, p.stderr
    for r in results(load_report(report_path), "preprocess/flip"):
        isa = r["axes"]["isa"]
        if have[isa]:
            assert r["status"] == "passed", r
        else:
            assert r["status"] == "skipped" and "lacks" in r["reason"], r


def test_bf16_and_f16_outputs_and_streaming_stores(report_path):
    p = run("run", "--filter", "^preprocess/(normalize|pipeline)$", *FAST, *SMALL, "-a", "threads=1",
            "-a", "source=pixels", "-a", "dtype=f32,bf16,f16", "-a", "stores=regular,nontemporal",
            "-a", "isa=scalar,auto", "-o", report_path, timeout=300)
    assert p.returncode == 0, p.stderr
    report = load_report(report_path)
    for r in report["results"]:
        if r["axes"]["isa"] == "scalar" and r["axes"]["stores"] == "nontemporal":
            assert r["status"] == "skipped" and "non-temporal" in r["reason"], r
        else:
            assert r["status"] == "passed", r


def test_memory_bound_stages_carry_the_roofline_of_the_same_run(report_path):
    # bandwidth/host_memory (copy) runs first (name order); the memory-bound stages divide their
    # GB/s by its bandwidth. Without it, each says how to get the metric instead.
    stages = "crop|flip|normalize|layout|resize"
    p = run("run", "--filter", "^(bandwidth/host_memory|preprocess/(" + stages + "))$", *FAST,
            *SMALL, "-a", "threads=1", "-a", "kernel=copy", "-a", "array_size=8MiB",
            "-o", report_path, timeout=300)
    assert p.returncode == 0, p.stderr
    report = load_report(report_path)
    copy = results(report, "bandwidth/host_memory")
    assert copy and copy[0]["status"] == "passed", copy
    copy_gbps = metric(copy[0], "bandwidth_gbps")
    for name in ["crop", "flip", "normalize", "layout"]:
        rs = results(report, "preprocess/" + name)
        assert rs, name
        for r in rs:
            fraction = metric(r, "memory_bandwidth_fraction")
            assert fraction is not None and fraction > 0, r
            moved = metric(r, "input_gbps") + metric(r, "output_gbps")
            assert fraction == pytest.approx(moved / copy_gbps, rel=1e-6), (r, copy_gbps)
    # Compute-bound: no roofline.
    for r in results(report, "preprocess/resize"):
        assert metric(r, "memory_bandwidth_fraction") is None, r

    p = run("run", "--filter", "^preprocess/flip$", *FAST, "-a", "batch=3", "-a", "crop=32",
            "-a", "threads=1", "-o", report_path)
    assert p.returncode == 0, p.stderr
    for r in results(load_report(report_path), "preprocess/flip"):
        assert metric(r, "memory_bandwidth_fraction") is None, r
        assert any("bandwidth/host_memory" in w for w in r["warnings"]), r


@pytest.mark.parametrize("args,needle", [
    (["-a", "crop=0"], "crop"),
    (["-a", "batch=-1"], "batch"),
    (["-a", "isa=avx1024"], "isa"),
    (["-a", "dtype=f64"], "dtype"),
])
def test_bad_axis_values_are_one_line_errors(args, needle):
    p = run("run", "--filter", "^preprocess/", *FAST, *args)
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("infrabench: error: "), p.stderr
    assert needle in lines[0]


def test_crop_larger_than_the_image_fails_that_configuration_only(report_path):
    # resize=40 gives a 59x40 image: a 48-pixel crop does not fit, a 16-pixel one does.
    p = run("run", "--filter", "^preprocess/(crop|pipeline)$", *FAST, "-a", "batch=2", "-a",
            "width=67", "-a", "height=45", "-a", "resize=40", "-a", "crop=16,48", "-a", "threads=1",
            "-a", "source=pixels", "-o", report_path)
    assert p.returncode == 1, p.stderr
    report = load_report(report_path)
    for r in report["results"]:
        if r["axes"]["crop"] == 48:
            assert r["status"] == "failed", r
            assert "larger than" in r["reason"] or "does not fit" in r["reason"], r
        else:
            assert r["status"] == "passed", r


def test_corrupt_jpeg_names_the_sample_and_the_run_goes_on(tmp_path, report_path):
    if not listing("^preprocess/")["preprocess/decode"]["runnable"]:
        pytest.skip("built without libturbojpeg")
    good = tmp_path / "good"
    good.mkdir()
    (good / "a.jpg").write_bytes(SMALL_JPEG)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "a.jpg").write_bytes(SMALL_JPEG)
    (bad / "b.jpg").write_bytes(SMALL_JPEG[: len(SMALL_JPEG) // 2])  # truncated
    (bad / "notes.txt").write_text("not an image")

    p = run("run", "--filter", "^preprocess/(decode|pipeline)$", *FAST, "-a", "batch=4",
            "-a", "resize=12", "-a", "crop=8", "-a", "threads=1", "--jpeg-dir", str(good),
            "-o", report_path)
    assert p.returncode == 0, p.stderr
    report = load_report(report_path)
    for r in report["results"]:
        assert r["status"] == "passed", r
        assert any("--jpeg-dir" in w for w in r["warnings"]), r

    p = run("run", "--filter", "^preprocess/(decode|flip)$", *FAST, "-a", "batch=4",
            "-a", "crop=8", "-a", "threads=1", "--jpeg-dir", str(bad), "-o", report_path)
    assert p.returncode == 1, p.stderr
    report = load_report(report_path)
    decode = results(report, "preprocess/decode")
    assert decode and all(r["status"] == "failed" for r in decode)
    for r in decode:
        assert "b.jpg" in r["reason"] and "corrupt JPEG" in r["reason"], r["reason"]
    # The configurations after the failed one still ran.
    assert all(r["status"] == "passed" for r in results(report, "preprocess/flip"))


def test_missing_jpeg_dir_is_refused_before_running(tmp_path, report_path):
    # Issue 24: every configuration used to fail with the path after the rest ran; a --jpeg-dir
    # that cannot give images is bad input, one line and exit 2 before anything runs.
    missing = str(tmp_path / "nope")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("no images here")
    for d, why in [(missing, "no such directory"), (str(empty), "no .jpg or .jpeg files")]:
        p = run("run", "--filter", "^preprocess/decode$", *FAST, "-a", "threads=1", "--jpeg-dir", d,
                "-o", report_path)
        assert p.returncode == 2, p.stderr
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and d in lines[0] and why in lines[0], p.stderr
        assert not os.path.exists(report_path)


def test_corrupt_jpeg_fails_the_pipelines_naming_the_sample(tmp_path, report_path):
    # source=jpeg decodes --jpeg-dir files; a corrupt one fails each configuration that needs it,
    # named, and the run goes on to the next configuration and benchmark (exit code 1).
    names = listing("^preprocess/")
    if not names["preprocess/decode"]["runnable"]:
        pytest.skip("built without libturbojpeg")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "a.jpg").write_bytes(SMALL_JPEG)
    (bad / "b.jpg").write_bytes(SMALL_JPEG[: len(SMALL_JPEG) // 2])  # truncated
    p = run("run", "--filter", "^preprocess/(flip|pipeline|pipeline_opencv)$", *FAST,
            "-a", "batch=4", "-a", "resize=12", "-a", "crop=8", "-a", "threads=1",
            "-a", "source=jpeg", "-a", "dtype=f32,f16", "--jpeg-dir", str(bad),
            "-o", report_path, timeout=300)
    assert p.returncode == 1, p.stderr
    report = load_report(report_path)
    checked = ["preprocess/pipeline"]
    if names["preprocess/pipeline_opencv"]["runnable"]:
        checked.append("preprocess/pipeline_opencv")
    for name in checked:
        failed = [r for r in results(report, name) if r["status"] == "failed"]
        # pipeline: both dtypes; pipeline_opencv: parallel=images for both dtypes (parallel=opencv
        # with one thread is skipped before any data is read).
        assert len(failed) == 2, (name, results(report, name))
        for r in failed:
            assert r["reason"].startswith("sample 1 (") and "b.jpg" in r["reason"], r["reason"]
            assert "corrupt JPEG" in r["reason"], r["reason"]
        assert not [r for r in results(report, name) if r["status"] == "passed"], name
    # pipeline_opencv (after pipeline in name order) still ran, and so did the unaffected stage.
    assert results(report, "preprocess/pipeline_opencv")
    flip = results(report, "preprocess/flip")
    assert flip and all(r["status"] == "passed" for r in flip), flip


def best_isa(flags):
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512vbmi"} <= flags:
        return "avx512"
    if {"avx2", "fma", "f16c"} <= flags:
        return "avx2"
    return "scalar"


def test_isa_option_sets_the_isa_axis_of_preprocess_benchmarks(report_path):
    p = run("run", "--filter", "^preprocess/(flip|resize)$", *FAST, *SMALL, "-a", "threads=1",
            "--isa", "scalar", "-o", report_path)
    assert p.returncode == 0, p.stderr
    report = load_report(report_path)
    assert report["run"]["settings"]["options"]["isa"] == "scalar"
    for b in report["run"]["suite"]["benchmarks"]:
        assert b["axes"]["isa"] == ["scalar"], b
    for name in ["preprocess/flip", "preprocess/resize"]:
        rs = results(report, name)
        assert rs, name
        for r in rs:
            assert r["axes"]["isa"] == "scalar" and r["status"] == "passed", r
            assert r["axes_display"]["isa"] == "scalar", r

    # A list, like -a; the other benchmark groups' isa axes are not touched.
    p = run("run", "--filter", "^(bandwidth/host_memory|preprocess/flip)$", *FAST, "-a", "batch=2",
            "-a", "crop=16", "-a", "threads=1", "-a", "kernel=copy", "-a", "array_size=1MiB",
            "--isa", "scalar,auto", "-o", report_path)
    assert p.returncode == 0, p.stderr
    report = load_report(report_path)
    assert sorted(r["axes"]["isa"] for r in results(report, "preprocess/flip")) == ["auto", "scalar"]
    copy = results(report, "bandwidth/host_memory")
    assert copy and all(r["axes"]["isa"] == "auto" for r in copy), copy


@pytest.mark.parametrize("args,needles", [
    (["--filter", "^preprocess/flip$", "--isa", "avx2", "-a", "isa=scalar"],
     ["--isa avx2", "-a isa", "give one"]),
    (["--filter", "^preprocess/flip$", "--isa", "avx1024"], ["--isa", "avx1024"]),
    (["--filter", "^preprocess/decode$", "--isa", "scalar"], ["--isa", "preprocess/", "isa"]),
])
def test_isa_option_misuse_is_a_one_line_error(args, needles):
    p = run("run", *FAST, *args)
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("infrabench: error: "), p.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_auto_records_the_isa_it_ran(report_path):
    p = run("run", "--filter", "^preprocess/flip$", *FAST, "-a", "batch=2", "-a", "crop=16",
            "-a", "threads=1", "-a", "isa=auto,scalar", "--format", "table", "-o", report_path)
    assert p.returncode == 0, p.stderr
    best = best_isa(cpu_flags())
    rs = {r["axes"]["isa"]: r for r in results(load_report(report_path), "preprocess/flip")}
    assert rs["auto"]["axes_display"]["isa"] == "auto (" + best + ")", rs["auto"]
    assert rs["scalar"]["axes_display"]["isa"] == "scalar", rs["scalar"]
    # Recorded where the axis is shown, not as a warning.
    assert not any("isa" in w for w in rs["auto"]["warnings"]), rs["auto"]["warnings"]
    assert "auto (" + best + ")" in p.stdout


def test_cpu_disable_masks_isas_for_what_if_runs(report_path):
    # INFRABENCH_CPU_DISABLE makes the skip path and the auto fallback testable on a CPU that has
    # every variant.
    hardware = best_isa(cpu_flags())
    if hardware == "scalar":
        pytest.skip("this CPU lacks AVX2: nothing to mask")
    p = run("run", "--filter", "^preprocess/flip$", *FAST, "-a", "batch=2", "-a", "crop=16",
            "-a", "threads=1", "-a", "isa=auto,avx2,avx512", "-o", report_path,
            env={"INFRABENCH_CPU_DISABLE": "avx512"})
    assert p.returncode == 0, p.stderr
    rs = {r["axes"]["isa"]: r for r in results(load_report(report_path), "preprocess/flip")}
    assert rs["avx512"]["status"] == "skipped", rs["avx512"]
    assert "lacks avx512" in rs["avx512"]["reason"], rs["avx512"]
    if hardware == "avx512":  # the reason says the CPU has it and only the knob took it away
        assert "INFRABENCH_CPU_DISABLE" in rs["avx512"]["reason"], rs["avx512"]
    assert rs["auto"]["status"] == "passed", rs["auto"]
    assert rs["auto"]["axes_display"]["isa"] == "auto (avx2)", rs["auto"]
    assert rs["avx2"]["status"] == "passed", rs["avx2"]

    p = run("run", "--filter", "^preprocess/flip$", *FAST, "-a", "batch=2", "-a", "crop=16",
            "-a", "threads=1", "-a", "isa=auto,avx2", "-o", report_path,
            env={"INFRABENCH_CPU_DISABLE": "avx512,avx2"})
    assert p.returncode == 0, p.stderr
    rs = {r["axes"]["isa"]: r for r in results(load_report(report_path), "preprocess/flip")}
    assert rs["auto"]["axes_display"]["isa"] == "auto (scalar)", rs["auto"]
    assert rs["avx2"]["status"] == "skipped" and "lacks avx2" in rs["avx2"]["reason"], rs["avx2"]

    # A typo must not quietly test the real CPU: every configuration fails naming it.
    p = run("run", "--filter", "^preprocess/flip$", *FAST, "-a", "batch=2", "-a", "crop=16",
            "-a", "threads=1", "-o", report_path, env={"INFRABENCH_CPU_DISABLE": "avx3"})
    assert p.returncode == 1, p.stderr
    for r in results(load_report(report_path), "preprocess/flip"):
        assert r["status"] == "failed" and "'avx3'" in r["reason"], r
