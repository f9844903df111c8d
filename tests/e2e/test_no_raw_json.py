"""One typed report model (issue 25): harness/src/report_model.cpp (with its pieces
report_model_*.cpp) is the one reader of a report's JSON, and the renderers (compare, the HTML page,
the subcommands) work on its typed views (infrabench/model/report.h), as does the run pipeline's
render step. This scans reports/src, harness/src and apps for raw JSON indexing by key (j["key"],
.at("key"), .value("key", ...), .contains("key"), .find("key")) and fails on any in a file not
listed below with its reason, and on any use of the raw JSON sections report_view once kept (hosts,
run, capabilities). Harness code that writes JSON (sysinfo, telemetry) or reads other inputs (suite
files, options, probes) is not report reading: such files are listed with what they read. The ranks'
messages are read and written only by their codec (rank_messages.cpp): the runner and the run
pipeline's gather step work on its typed structs."""
import os
import pathlib
import re

from conftest import strip_comment

SOURCE = pathlib.Path(os.environ.get("INFRABENCH_SOURCE_DIR", "."))
SCANNED = [SOURCE / "reports/src", SOURCE / "harness/src", SOURCE / "apps"]

# The count: an access to a JSON object by a literal key.
RAW = re.compile(r'\["[a-z_]+"\]|\.at\("|\.value\("|\.contains\("|\.find\("')

# Files that may index JSON by key, and why. Every other file under SCANNED must not.
KNOWN = {
    "harness/src/report_model.cpp": "the one reader (and writer) of a report's JSON",
    "harness/src/report_model_sections.cpp": "part of the one reader of a report's JSON "
                                              "(report_model.cpp): its hosts, run and telemetry",
    "harness/src/report_model_roofline.cpp": "part of the one reader and writer of a report's "
                                              "JSON (report_model.cpp): its roofline section",
    # Harness code that builds the report or reads JSON that is not a report:
    "harness/src/result_record.cpp": "the model's reader and writer of a result's record "
                                      "(model/result_record.h: result::to_json, "
                                      "result_from_record)",
    "harness/src/rank_messages.cpp": "the ranks' message codec (model/rank_messages.h): the one "
                                     "reader and writer of what ranks send each other",
    "harness/src/suite.cpp": "suite files (configs/suites, --suite FILE)",
    "harness/src/metric_decl.cpp": "a metric declaration's JSON form (the model's reader calls it "
                                   "for run.benchmark_metadata)",
    "harness/src/console_header.cpp": "this host's inventory (sysinfo) for the header printed "
                                      "before the run",
    "harness/src/devices.cpp": "the device inventory it builds (NVML and sysfs records)",
    "harness/src/energy.cpp": "this host's CUDA probe (describe_gpus: each GPU's PCI bus id, to "
                              "find its NVML counter), never a report",
    "harness/src/devices_counts.cpp": "counts in a devices inventory: the one derivation, which "
                                      "the model's reader calls for a report host's devices "
                                      "(model::device_counts)",
    "harness/src/sysinfo.cpp": "the capabilities JSON it turns into the inventory it writes",
    "reports/src/html_specs.cpp": "reads back the page's own chart specs (JSON html_planner*.cpp "
                                  "writes for the page), never a report",
    # Not a report: baseline.cpp judges reports from the model's views; its files are read here.
    "reports/src/baseline_file.cpp": "the reader of baseline files (configs/baselines/*.json, "
                                     "their own format and schema), never a report",
}

# Lines of a ported file that match the pattern but read no JSON by key, and why.
NOT_JSON = {
    ("reports/src/commands/common.cpp", 'printers.find("junit"'): "a printer registry lookup",
    ("reports/src/commands/common.cpp", 'printers.find("openmetrics"'): "a printer registry lookup",
    ("reports/src/commands/report.cpp", '.find("html", document::page)'): "a printer registry lookup",
    ("reports/src/commands/run_options.cpp", 'values.find("baseline")'): "the parsed options' map",
    ("reports/src/commands/run_options.cpp", 'values.find("junit")'): "the parsed options' map",
    ("reports/src/commands/run_options.cpp", 'values.find("openmetrics")'): "the parsed options' map",
    ("reports/src/commands/run_options.cpp", 'printers.find("openmetrics"'): "a printer registry lookup",
    ("reports/src/commands/run_options.cpp", 'values.find("baseline-partial")'): "the parsed options' map",
    ("harness/src/json_io.cpp", 'what.find("] ")'): "a search in nlohmann's error text",
    ("apps/cli_docs.cpp", 'type.find(":{")'): "a search in CLI11's type name (\"TEXT:{a,b}\")",
    ("harness/src/telemetry_run.cpp", 'options.find("telemetry-interval")'): "the run options' map",
    ("harness/src/telemetry_run.cpp", 'options.find("telemetry")'): "the run options' map",
    # history show-run prints the rows history.cpp returns from its database as JSON.
    ("reports/src/commands/history.cpp", 'd["value"].is_number()'): "history database rows, not a report",
    ("reports/src/commands/history.cpp", 'd["unit"].get<std::string>()'): "history database rows",
    ("reports/src/commands/history.cpp", 'std::string shown = d["status"]'): "history database rows",
    ("reports/src/commands/history.cpp", '!d["valid"].get<bool>()'): "history database rows",
    ("reports/src/commands/history.cpp", 'd["reason"].get<std::string>()'): "history database rows",
    ("reports/src/commands/history.cpp", 'rows.push_back({d["benchmark"]'): "history database rows",
}

# A result's status, reason code or axis kind compared as text (issue 42): the views carry them
# typed (infrabench::status, reason_code), parsed once by the readers, so code compares the enums.
STATUS_TEXT = re.compile(r'(\b(status|reason_code)|(\.|->)kind)\s*[!=]=\s*"'
                         r'|"\s*[!=]=\s*[\w.>-]*\b(status|reason_code)\b'
                         r'|reason_code\s*[!=]=\s*(std::string\()?to_string\(')

# report_view's sections as written, which it no longer keeps: the readers read the typed fields
# (inventories with their devices, run_info, caps, telemetry) instead.
RAW_SECTIONS = re.compile(r'\.(hosts|run|capabilities)\b(?!\s*\()')


def is_write(line, end):
    """Whether the access ending at `end` builds JSON (assigns or appends) rather than reads it."""
    rest = re.sub(r'^(\s*\[[^\]]*\])*', "", line[end:])  # further subscripts
    return bool(re.match(r'\s*=(?!=)', rest) or re.match(r'\.(push_back|emplace_back)\(', rest))


def raw_reads(path):
    rel = str(path.relative_to(SOURCE))
    for i, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        code = strip_comment(line)
        for m in RAW.finditer(code):
            if m.group(0).startswith("[") and is_write(code, m.end()):
                continue
            # A substring search on a std::string, not a JSON key lookup.
            if m.group(0) == '.find("' and "std::string::npos" in code:
                continue
            if any(rel == f and s in code for f, s in NOT_JSON):
                continue
            yield rel, i, code.strip()


def sources():
    return sorted(p for d in SCANNED for p in d.rglob("*")
                  if p.suffix in (".cpp", ".h") and p.is_file())


def test_no_raw_report_json_outside_the_reader():
    hits = []
    for path in sources():
        if str(path.relative_to(SOURCE)) in KNOWN:
            continue
        hits += [f"{rel}:{i}: {code}" for rel, i, code in raw_reads(path)]
    assert not hits, ("raw JSON indexing outside report_model.cpp (add a typed field to model/report.h "
                      "and read it there):\n" + "\n".join(hits))


def test_ported_files_use_the_typed_sections():
    hits = []
    commands = sorted(f"commands/{p.name}" for p in (SOURCE / "reports/src/commands").glob("*.cpp"))
    for name in ("compare.cpp", *commands, "html_report.cpp", "history.cpp", "history_gate.cpp",
                 "html_planner.cpp", "html_planner_charts.cpp", "html_charts.cpp",
                 "baseline.cpp", "expect.cpp", "node_verdicts.cpp"):
        path = SOURCE / "reports/src" / name
        for i, line in enumerate(path.read_text().splitlines(), 1):
            code = strip_comment(line)
            if RAW_SECTIONS.search(code):
                hits.append(f"{path.relative_to(SOURCE)}:{i}: {code.strip()}")
    assert not hits, "raw report sections (use inventories, run_info, telemetry):\n" + "\n".join(hits)


def test_the_lists_name_what_exists():
    # A stale entry would hide nothing today but exempt a file or line that comes back later.
    for rel in KNOWN:
        assert (SOURCE / rel).is_file(), f"{rel} is listed as known but does not exist"
    for rel, snippet in NOT_JSON:
        assert snippet in (SOURCE / rel).read_text(), f"{rel}: no line with {snippet!r} any more"


def test_the_scan_sees_a_raw_read():
    # The checker itself: a read is found, a write (building JSON) and a string search are not.
    line = 'x = r["status"].get<std::string>(); out["status"] = x; s.find("a") != std::string::npos'
    found = [m for m in RAW.finditer(line)
             if not (m.group(0).startswith("[") and is_write(line, m.end()))]
    assert [m.group(0) for m in found] == ['["status"]', '.find("']
    assert is_write('spec["datasets"].push_back(x)', len('spec["datasets"]'))
    assert is_write('c["a"]["b"] = 1', len('c["a"]'))
    assert is_write('j["cuda"]["driver_version"] =', len('j["cuda"]'))  # value on the next line
    assert not is_write('v = spec["x"]["min"].get<double>()', len('v = spec["x"]'))
    assert not is_write('if (d["valid"] == true)', len('if (d["valid"]'))


def test_no_status_compared_as_text():
    hits = []
    for d in ("harness", "reports", "apps"):
        for path in sorted((SOURCE / d).rglob("*")):
            if path.suffix not in (".cpp", ".h", ".cu", ".cuh") or not path.is_file():
                continue
            for i, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                code = strip_comment(line)
                if STATUS_TEXT.search(code):
                    hits.append(f"{path.relative_to(SOURCE)}:{i}: {code.strip()}")
    assert not hits, ("a status, reason code or kind compared as text (compare the enum the views "
                      "carry: status::passed, reason_code::node_local):\n" + "\n".join(hits))


def test_the_status_scan_sees_a_text_comparison():
    for line in ('if (r.status == "passed")', 'x->status != "skipped"', '"failed" == r.status',
                 'r.reason_code == to_string(reason_code::node_local)', 'a.kind == "int64"'):
        assert STATUS_TEXT.search(line), line
    for line in ('if (r.status == status::passed)', 'out["status"] = x;',
                 'r.reason_code == reason_code::node_local', 'h.status = hop_measured;',
                 'if (kind == "table")'):  # a chart spec's kind (html_specs.cpp), no axis's
        assert not STATUS_TEXT.search(line), line
