"""`infrabench roofline` on a report with known numbers (issue 30): the hops converted into the
job's samples/s, the limiting hop named, what-ifs, predicted against training/step's measured
rate, every input's source in the JSON, the HTML chart, the `roofline` section written into the
report, two reports side by side, and bad input refused with one line before anything runs.

The fixture is a real report (tests/fixtures/roofline/gpt2-tiny-throttled.json: storage/read at
the token loader's pattern and training/step of gpt2-tiny, measured with the scratch device's
reads throttled; docs/roofline.md) whose numbers the tests replace with round ones. Its
benchmark declarations carry the data-path hop each benchmark measures, as this build writes
them (added to the recorded report when the hops became declarations)."""
import copy
import json
import os
import pathlib

import pytest

from conftest import load_report, one_line_error, run

SOURCE = pathlib.Path(os.environ.get("INFRABENCH_SOURCE_DIR", "."))
FIXTURE = SOURCE / "tests/fixtures/roofline/gpt2-tiny-throttled.json"
JOB = ["--job", "gpt2-tiny", "--batch", "8"]


def set_metric(result, name, value):
    for m in result["metrics"]:
        if m["name"] == name:
            m["value"] = value
            return
    raise KeyError(name)


def known(tmp_path, storage_gbps=0.001056, phases=(5, 8, 1, 2), tokens_per_s=16000.0,
          name="known.json"):
    """The fixture with round numbers: storage 1.056 MB/s = 250 samples/s of 4224 B read each;
    a step of forward + backward + optimizer + other = 16 ms = 500 samples/s at batch 8."""
    doc = json.loads(FIXTURE.read_text())
    # A sequential-read result beside the loader's random one, far faster: never the one chosen.
    sequential = copy.deepcopy(next(r for r in doc["results"] if r["benchmark"] == "storage/read"))
    sequential["axes"]["pattern"] = "seq"
    sequential["axes_display"]["pattern"] = "seq"
    set_metric(sequential, "bandwidth_gbps", 9.0)
    doc["results"].append(sequential)
    for r in doc["results"]:
        if r["benchmark"] == "storage/read" and r["axes"]["pattern"] == "rand":
            set_metric(r, "bandwidth_gbps", storage_gbps)
        if r["benchmark"] == "training/step":
            for phase, v in zip(("forward_ms", "backward_ms", "optimizer_ms", "other_ms"), phases):
                set_metric(r, phase, v)
            set_metric(r, "tokens_per_s", tokens_per_s)
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def hop(doc, name):
    return next(h for h in doc["hops"] if h["hop"] == name)


def test_fixture_as_measured_names_storage():
    p = run("roofline", str(FIXTURE), *JOB, "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["limit"] == "storage"
    ratio = doc["measured"]["predicted_over_measured"]
    assert 0.85 <= ratio <= 1.15, ratio


def test_known_numbers_table_and_json(tmp_path):
    report = known(tmp_path)
    p = run("roofline", report, *JOB)
    assert p.returncode == 0, p.stderr
    assert "<- limit" in p.stdout and "predicted: storage-bound at 250 samples/s" in p.stdout
    assert "predicted / measured = 1" in p.stdout
    doc = json.loads(run("roofline", report, *JOB, "--format", "json").stdout)
    assert doc["limit"] == "storage"
    assert doc["predicted_samples_per_s_job"] == pytest.approx(250)
    assert doc["predicted_tokens_per_s_job"] == pytest.approx(250 * 64)
    assert hop(doc, "compute")["samples_per_s_per_gpu"] == pytest.approx(500)
    assert hop(doc, "compute")["headroom"] == pytest.approx(2.0)
    src = hop(doc, "storage")["sources"][0]
    assert src["benchmark"] == "storage/read" and src["metric"] == "bandwidth_gbps"
    assert src["value"] == pytest.approx(0.001056) and src["unit"] == "GB/s"
    # The loader's pattern (random 4 KiB reads), not the faster sequential result beside it.
    assert "pattern=rand" in src["configuration"] and "block_size=4KiB" in src["configuration"]
    assert doc["measured"]["samples_per_s_job"] == pytest.approx(250)
    assert doc["measured"]["predicted_over_measured"] == pytest.approx(1.0)
    assert hop(doc, "preprocess")["status"] == "not applicable"
    assert hop(doc, "h2d")["status"] == "not applicable"


def test_what_ifs_name_the_next_limit(tmp_path):
    report = known(tmp_path)
    p = run("roofline", report, *JOB, "--format", "json", "--what-if", "storage=4x",
            "--what-if", "storage=4x,compute=4x")
    assert p.returncode == 0, p.stderr
    w = json.loads(p.stdout)["what_ifs"]
    assert [x["what_if"] for x in w] == ["storage=4x", "storage=4x,compute=4x"]
    assert w[0]["limit"] == "compute" and w[0]["predicted_samples_per_s_job"] == pytest.approx(500)
    assert w[1]["limit"] == "storage" and w[1]["predicted_samples_per_s_job"] == pytest.approx(1000)
    # A GPU job (--device gpu): two GPUs share the node's storage; their all-reduce was not
    # measured, so not invented.
    p = run("roofline", report, *JOB, "--device", "gpu", "--format", "json", "--what-if", "gpus=2")
    assert p.returncode == 0, p.stderr
    w = json.loads(p.stdout)["what_ifs"]
    assert w[0]["limit"] == "storage" and w[0]["predicted_samples_per_s_job"] == pytest.approx(250)
    assert hop(w[0], "allreduce")["status"] == "not measured"
    text = run("roofline", report, *JOB, "--what-if", "storage=4x").stdout
    assert "what-if storage=4x: compute-bound at 500 samples/s (2x)" in text


def test_gpus_what_if_on_a_cpu_report_is_refused(tmp_path):
    """The report has no GPU result: `--what-if gpus=8` would multiply a rate measured on the
    node's cores by eight GPUs it does not have. One line, exit 2, nothing written; the CPU's own
    what-ifs are taken."""
    report = known(tmp_path)
    out = tmp_path / "never.json"
    p = run("roofline", report, *JOB, "--what-if", "storage=2x", "--what-if", "gpus=8",
            "--format", "json", "-o", str(out))
    one_line_error(p, "--what-if gpus=8: the job computes on the CPU")
    assert not out.exists()
    one_line_error(run("roofline", report, *JOB, "--device", "cpu", "--what-if", "nodes=2,gpus=8"),
                   "--device cpu")
    p = run("roofline", report, *JOB, "--what-if", "nodes=2", "--what-if", "cpu_threads=4")
    assert p.returncode == 0, p.stderr


def test_cpu_rates_are_not_per_gpu(tmp_path):
    """A CPU job's per-rank rates are per node (one rank a node) or per rank, never per GPU; the
    JSON says which. A GPU job's are per GPU."""
    report = known(tmp_path)
    p = run("roofline", report, *JOB)
    assert p.returncode == 0, p.stderr
    assert "samples/s/node" in p.stdout and "GPU" not in p.stdout, p.stdout
    doc = json.loads(run("roofline", report, *JOB, "--format", "json").stdout)
    assert doc["device"] == "cpu" and doc["per_rank_unit"] == "node"
    p = run("roofline", report, *JOB, "--ranks-per-node", "2")
    assert "samples/s/rank" in p.stdout and "GPU" not in p.stdout, p.stdout
    p = run("roofline", report, *JOB, "--device", "gpu")
    assert "samples/s/GPU" in p.stdout, p.stdout


def test_html_chart_axes_invalid_and_one_scale(tmp_path):
    """The chart's axes carry titles with units; the fixture's INVALID training/step (noisy on a
    busy machine) hatches the compute bar grey with its reason; two reports side by side share
    one axis, though each alone spans other decades."""
    html = tmp_path / "one.html"
    p = run("roofline", str(FIXTURE), *JOB, "--format", "html", "-o", str(html))
    assert p.returncode == 0, p.stderr
    page = html.read_text()
    assert "samples/s, log scale</text>" in page and ">hop of the data path</text>" in page
    assert page.count("fill='url(#r0-invalid)'") == 1, page
    assert "INVALID input: training/step" in page and "Hatched grey" in page
    a = known(tmp_path, name="a.json")
    b = known(tmp_path, storage_gbps=1.0, tokens_per_s=32000.0, name="b.json")
    axes = []
    for reports in ([a], [b], [a, b]):
        html = tmp_path / "side.html"
        p = run("roofline", *reports, *JOB, "--format", "html", "-o", str(html))
        assert p.returncode == 0, p.stderr
        page = html.read_text()
        axes.append([page[i:page.index(">", i)] for i in range(len(page))
                     if page.startswith("data-axis-lo=", i)])
    assert axes[0] != axes[1], axes  # alone, each spans its own decades
    assert len(axes[2]) == 2 and axes[2][0] == axes[2][1], axes


def test_html_chart_and_section_in_report(tmp_path):
    report = known(tmp_path)
    html = tmp_path / "roofline.html"
    p = run("roofline", report, *JOB, "--format", "html", "-o", str(html))
    assert p.returncode == 0, p.stderr
    page = html.read_text()
    assert "<svg" in page and "(limit)" in page and "measured" in page
    assert "storage/read" in page  # the bar's source
    p = run("roofline", report, *JOB, "--into-report", "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = load_report(report)  # validated against the schema, which declares the section
    assert doc["roofline"]["limit"] == "storage"
    # The report is still a report: the command reads it back.
    assert run("roofline", report, *JOB).returncode == 0


def test_two_reports_side_by_side(tmp_path):
    a = known(tmp_path, name="a.json")
    # b's step runs at its compute's 500 samples/s: it waited for nothing, as a loader beside it
    # leaves when storage is far faster.
    b = known(tmp_path, storage_gbps=1.0, tokens_per_s=32000.0, name="b.json")
    p = run("roofline", a, b, *JOB)
    assert p.returncode == 0, p.stderr
    assert "side by side: a is storage-bound at 250 samples/s; b is compute-bound at 500 samples/s;" \
        in p.stdout


VIT = SOURCE / "tests/fixtures/roofline/vit-tiny-one-thread.json"
VIT_JOB = ["--job", "vit-tiny", "--batch", "8", "--cpu-threads", "1"]


def test_a_step_that_read_and_decoded_inside_itself_adds_them_up():
    """vit-tiny on one CPU thread, as measured (docs/roofline.md): the step read and decoded each
    JPEG itself, so its data wait is the loader's whole work and the prediction adds read, decode
    and compute; decode, the largest part, is the limit."""
    p = run("roofline", str(VIT), *VIT_JOB, "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["limit"] == "preprocess"
    assert hop(doc, "storage")["in_step"] and hop(doc, "preprocess")["in_step"]
    per_sample = sum(1 / hop(doc, h)["samples_per_s_per_gpu"]
                     for h in ("storage", "preprocess", "compute"))
    assert doc["predicted_samples_per_s_per_gpu"] == pytest.approx(1 / per_sample)
    assert any("in series with the step" in n for n in doc["notes"])
    assert 0.85 <= doc["measured"]["predicted_over_measured"] <= 1.15


def test_a_step_whose_loader_ran_beside_it_is_the_pipelines_minimum(tmp_path):
    """The same report with the step's rate made what a loader beside it gives (the decode's
    rate: it waited only for what compute did not hide): the pipeline's minimum, nothing added."""
    first = json.loads(run("roofline", str(VIT), *VIT_JOB, "--format", "json").stdout)
    decode = hop(first, "preprocess")["samples_per_s_per_gpu"]
    doc = json.loads(VIT.read_text())
    step = next(r for r in doc["results"] if r["benchmark"] == "training/step")
    rate = next(m for m in step["metrics"] if m["name"] == "tokens_per_s")
    rate["value"] = decode * 17  # vit-tiny: 17 tokens per image
    rate["repetitions"] = [rate["value"]] * len(rate["repetitions"])  # each repetition's too
    path = tmp_path / "beside.json"
    path.write_text(json.dumps(doc))
    out = json.loads(run("roofline", str(path), *VIT_JOB, "--format", "json").stdout)
    assert out["limit"] == "preprocess"
    assert not hop(out, "preprocess")["in_step"] and not hop(out, "storage")["in_step"]
    assert out["predicted_samples_per_s_per_gpu"] == pytest.approx(decode)
    assert any("beside the step" in n for n in out["notes"])


def test_hops_missing_from_the_report_are_not_measured(tmp_path):
    doc = json.loads(FIXTURE.read_text())
    doc["results"] = [r for r in doc["results"] if r["benchmark"] != "storage/read"]
    path = tmp_path / "no-storage.json"
    path.write_text(json.dumps(doc))
    out = json.loads(run("roofline", str(path), *JOB, "--format", "json").stdout)
    assert hop(out, "storage")["status"] == "not measured"
    assert hop(out, "storage")["samples_per_s_job"] is None
    assert out["limit"] == "compute"


def test_a_report_without_hop_declarations_is_not_read_by_name(tmp_path):
    """A report written before benchmarks declared their hop: its storage/read and training/step
    results are not taken by their names; every hop is not measured, and a note says why."""
    doc = json.loads(FIXTURE.read_text())
    for meta in doc["run"]["benchmark_metadata"].values():
        for decl in meta["metrics"]:
            decl.pop("hop", None)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    p = run("roofline", str(path), *JOB, "--format", "json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["limit"] == "none"
    assert hop(out, "storage")["status"] == "not measured"
    assert hop(out, "compute")["status"] == "not measured"
    assert any("declares no data-path hop" in n for n in out["notes"]), out["notes"]
    p = run("roofline", str(path), *JOB)
    assert p.returncode == 0 and "declares no data-path hop" in p.stdout, p.stdout


@pytest.mark.parametrize("args,needle", [
    (["--job", "gpt5"], "not a training/step model"),
    (["--job", "gpt2-tiny", "--batch", "0"], "--batch"),
    (["--job", "gpt2-tiny", "--seq", "65"], "--seq"),
    (["--job", "gpt2-tiny", "--data", "jpeg"], "--data jpeg"),
    (["--job", "vit-tiny", "--seq", "17"], "--seq is for GPT-2"),
    (["--job", "gpt2-tiny", "--what-if", "storage=2"], "storage=2"),
    (["--job", "gpt2-tiny", "--what-if", "disks=2x"], "unknown key"),
    (["--job", "gpt2-tiny", "--what-if", "nics=400"], "unit"),
    (["--job", "gpt2-tiny", "--nodes", "0"], "--nodes"),
])
def test_bad_input_one_line(tmp_path, args, needle):
    out = tmp_path / "never.html"
    p = run("roofline", str(FIXTURE), *args, "-o", str(out))
    one_line_error(p, needle)
    assert not out.exists()


def test_missing_report_one_line(tmp_path):
    one_line_error(run("roofline", str(tmp_path / "nope.json"), *JOB), "nope.json")


def test_section_shown_by_report_and_compare(tmp_path):
    """`--into-report`, then the report page draws the chart and `compare` names both limits, in
    text, markdown and HTML."""
    a = known(tmp_path, name="a.json")
    b = known(tmp_path, storage_gbps=1.0, tokens_per_s=32000.0, name="b.json")
    for path in (a, b):
        p = run("roofline", path, *JOB, "--into-report")
        assert p.returncode == 0, p.stderr
    page = tmp_path / "a.html"
    p = run("report", a, "-o", str(page))
    assert p.returncode == 0, p.stderr
    html = page.read_text()
    assert '<h2 id="roofline">' in html and "<svg" in html
    assert "a: storage-bound at 250 samples/s" in html and "250 (limit)" in html
    assert "measured 250" in html and "storage/read" in html
    p = run("compare", a, b)
    assert p.returncode == 0, p.stderr
    both = "roofline: a is storage-bound at 250 samples/s, b is compute-bound at 500 samples/s"
    assert both in p.stdout
    p = run("compare", a, b, "--format", "markdown")
    assert p.returncode == 0, p.stderr
    assert "#### Roofline" in p.stdout and "b is compute-bound at 500 samples/s" in p.stdout
    cmp_page = tmp_path / "cmp.html"
    p = run("compare", a, b, "--format", "html", "-o", str(cmp_page))
    assert p.returncode == 0, p.stderr
    html = cmp_page.read_text()
    assert html.count("<svg") == 2 and "b: compute-bound at 500 samples/s" in html
    # A report without the section: the page has no roofline, compare says nothing of one.
    plain = known(tmp_path, name="plain.json")
    p = run("compare", plain, plain)
    assert p.returncode == 0, p.stderr
    assert "roofline:" not in p.stdout
