"""The documentation: README.md and docs/*.md.

- every relative link resolves to a file, and every #anchor to a heading of that file;
- the README keeps its two setup commands word for word and fits on a screen (≤ 300 lines);
- every generated "Measured here" table (docs/measured/*.md) is exactly what
  docs/tools/measured_tables.py makes of its reports, rerun from the command it records;
- the script itself: tables from a real run of the binary and from a made-up report, several
  reports, bad input;
- the benchmark code quoted in docs/architecture.md is still in the file it is quoted from.
"""
import gzip
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FAST, load_report, run

ROOT = Path(os.environ.get("INFRABENCH_SOURCE_DIR", Path(__file__).resolve().parents[2]))
SCRIPT = ROOT / "docs" / "tools" / "measured_tables.py"
README = ROOT / "README.md"

# Pages other engineers are writing at the same time as this check (issue 17); the README links
# them already. Skipped only while they do not exist: once a page is merged, links to it (and
# their anchors) are checked like any other. Exactly these four names; do not add to this list.
PENDING_PAGES = {"docs/gpu.md", "docs/training-transformer.md", "docs/storage-checkpoint.md",
                 "docs/acceptance.md"}

FIRST_COMMAND = ("ci/install-deps.sh && cmake --preset default && cmake --build --preset default"
                 " && build/infrabench run")
SECOND_COMMAND = "ci/install-deps.sh && ci/test.sh"


def doc_files():
    return [README, *sorted((ROOT / "docs").glob("**/*.md"))]


def strip_code(text):
    """The text without fenced code blocks and inline code spans (links there are not links)."""
    out, fence = [], None
    for line in text.split("\n"):
        m = re.match(r"^\s*(`{3,}|~{3,})", line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            out.append("")
            continue
        if m:
            fence = m.group(1)
            out.append("")
            continue
        out.append(re.sub(r"(`+)(?:(?!\1).)+?\1", "", line))
    return "\n".join(out)


def github_slug(heading):
    """The anchor GitHub gives a heading: formatting and punctuation dropped, spaces to '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links keep their text
    text = re.sub(r"<[^>]+>", "", text)                          # inline HTML
    text = text.replace("`", "").replace("*", "").replace("~", "")
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)  # \w is Unicode-aware, as GitHub's slugger
    return text.replace(" ", "-")


def anchors(path):
    """Every anchor a Markdown file defines: its headings (with GitHub's -1, -2 for repeats) and
    explicit <a id/name> tags."""
    text = path.read_text(encoding="utf-8")
    found, seen = set(), {}
    for line in strip_code_keep_headings(text):
        m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if m:
            slug = github_slug(m.group(2))
            n = seen.get(slug, 0)
            found.add(slug if n == 0 else f"{slug}-{n}")
            seen[slug] = n + 1
    found.update(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", text))
    return found


def strip_code_keep_headings(text):
    """Lines outside fenced code blocks (inline code kept: it is part of a heading's text)."""
    fence = None
    for line in text.split("\n"):
        m = re.match(r"^\s*(`{3,}|~{3,})", line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        yield line


LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def links(path):
    text = strip_code(path.read_text(encoding="utf-8"))
    found = LINK.findall(text)
    found += re.findall(r"<a\s+href=\"([^\"]+)\"", text)
    found += re.findall(r"^\s*\[[^\]]+\]:\s*(\S+)", text, flags=re.M)  # reference definitions
    return found


def test_relative_links_and_anchors_resolve():
    problems, checked = [], 0
    for doc in doc_files():
        for target in links(doc):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            path_part, _, anchor = target.partition("#")
            dest = (doc.parent / path_part).resolve() if path_part else doc
            rel = os.path.relpath(dest, ROOT)
            where = f"{os.path.relpath(doc, ROOT)}: ({target})"
            if rel in PENDING_PAGES and not dest.exists():
                continue
            checked += 1
            if not dest.exists():
                problems.append(f"{where}: {rel} does not exist")
                continue
            if anchor:
                if dest.is_dir() or dest.suffix != ".md":
                    problems.append(f"{where}: an anchor into a file that is not Markdown")
                elif anchor not in anchors(dest):
                    problems.append(f"{where}: no heading with anchor #{anchor} in {rel}")
    assert not problems, "\n".join(problems)
    assert checked > 30, f"only {checked} links found: is the link pattern still right?"


def test_link_checker_sees_what_it_should(tmp_path):
    # The checker's own parts, on text whose answers are known.
    assert github_slug("bandwidth/host_memory — STREAM") == "bandwidthhost_memory--stream"
    assert github_slug("`storage/read` axes, and *more*") == "storageread-axes-and-more"
    assert github_slug("Accept a node") == "accept-a-node"
    page = tmp_path / "p.md"
    page.write_text("# A\n\n```sh\n# not a heading [x](nowhere.md)\n```\n## A\n"
                    "see [b](other.md#x) and `[c](code.md)`\n", encoding="utf-8")
    assert anchors(page) == {"a", "a-1"}
    assert links(page) == ["other.md#x"]


def test_readme_keeps_its_two_commands_and_fits_on_a_screen():
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)\n```", text, flags=re.S)
    assert blocks[:2] == [FIRST_COMMAND, SECOND_COMMAND], blocks[:2]
    # .ci/run runs the second command.
    assert SECOND_COMMAND in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    n = len(text.split("\n")) - (1 if text.endswith("\n") else 0)
    assert n <= 300, f"README.md has {n} lines; keep it to 300 and move detail to docs/"


def test_readme_links_every_page():
    text = README.read_text(encoding="utf-8")
    pages = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")} | PENDING_PAGES
    missing = sorted(p for p in pages if f"]({p})" not in text)
    assert not missing, f"README.md does not link {missing}"


# ---- the generated tables ------------------------------------------------------------------------

def generated_pages():
    return sorted((ROOT / "docs" / "measured").glob("*.md"))


def recorded_command(page):
    for line in page.read_text(encoding="utf-8").split("\n"):
        if line.startswith("<!-- generated by: "):
            return shlex.split(line[len("<!-- generated by: "):-len(" -->")])
    return None


def test_measured_tables_are_generated_from_their_reports():
    pages = [p for p in generated_pages() if p.name != "README.md"]
    assert pages, "no generated tables under docs/measured/"
    for page in pages:
        cmd = recorded_command(page)
        assert cmd and cmd[0] == "docs/tools/measured_tables.py", f"{page}: no generating command"
        p = subprocess.run([sys.executable, *cmd], cwd=ROOT, capture_output=True, text=True,
                           timeout=120)
        assert p.returncode == 0, p.stderr
        assert p.stdout == page.read_text(encoding="utf-8"), (
            f"{page.relative_to(ROOT)} differs from what {shlex.join(cmd)} prints: regenerate it, "
            "do not edit it by hand")


def tables(*args, **kwargs):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=120, **kwargs)


def test_tables_from_a_real_run(tmp_path):
    out = tmp_path / "r.json"
    p = run("run", "--filter", "^bandwidth/(memory_latency|h2d)$", "-a", "working_set=16KiB,64KiB",
            *FAST, "-o", str(out))
    assert p.returncode == 0, p.stderr
    report = load_report(out)
    gz = tmp_path / "r.json.gz"
    gz.write_bytes(gzip.compress(out.read_bytes()))
    t = tables(str(out), str(gz), "--note", "a shared machine")
    assert t.returncode == 0, t.stderr
    md = t.stdout
    host = report["hosts"][0]
    assert host["build"]["git_commit"][:12] in md
    assert report["run"]["started_utc"] in md
    assert host["cpu"]["model"] in md
    assert "**a shared machine**" in md
    assert "## bandwidth" in md and "### bandwidth/memory_latency" in md
    assert "| working_set | status | n | rCV | reports | loads_per_s (loads/s) | ns_per_load (ns) |" \
        in md, md
    assert re.search(r"^\| 16KiB \| (passed|INVALID)", md, flags=re.M), md
    assert "2 of 2" in md  # two copies of one report: every configuration in both
    skipped = [r for r in report["results"] if r["status"] == "skipped"]
    for r in skipped:  # bandwidth/h2d without a GPU; both copies of a configuration count once
        n = sum(1 for s in skipped if s["benchmark"] == r["benchmark"] and s["reason"] == r["reason"])
        line = f"- skipped ({n} configuration{'s' if n != 1 else ''}): {r['reason']}"
        assert line in md.replace("\\|", "|"), md
    # Deterministic: the same input gives the same bytes.
    assert tables(str(out), str(gz), "--note", "a shared machine").stdout == md


def made_up_report(values, valid=True, commit="abc123def4567890", cpu="Test CPU 9000"):
    def result(ws, value):
        return {
            "benchmark": "bandwidth/memory_latency", "axes": {"working_set": ws, "seed": 1},
            "axes_display": {"working_set": f"{ws // 1024}KiB", "seed": "1"},
            "status": "passed", "valid": valid,
            "invalid_reasons": [] if valid else ["noisy: robust CV 12.0% > 10%"],
            "warnings": [], "rank": 0, "host": "h1", "elapsed_s": 1,
            "time_s": {"n": 10, "robust_cv": 0.01},
            "work_per_iteration": {"bytes_read": 0, "bytes_written": 0, "flops": 0, "items": 1,
                                   "item_name": "load"},
            "metrics": [
                {"name": "ns_per_load", "unit": "ns", "value": value, "best": value,
                 "better": "lower", "method": "m", "role": "performance", "samples": []},
                {"name": "verify_err_to_bound", "unit": "ratio", "value": 0.1, "best": 0.1,
                 "better": "lower", "method": "m", "role": "verification", "samples": []},
            ]}
    results = [result(16384, values[0]), result(65536, values[1])]
    results.append({"benchmark": "gemm/cublas", "axes": {"n": 512}, "axes_display": {},
                    "status": "skipped", "reason": "no CUDA device | none", "valid": True,
                    "invalid_reasons": [], "warnings": [], "rank": 0, "host": "h1",
                    "elapsed_s": 0, "work_per_iteration": {}, "metrics": []})
    return {
        "schema_version": "1.1.0", "tool": "infrabench", "units": "decimal",
        "run": {"started_utc": "2026-11-25T10:00:00Z", "world_size": 1,
                "suite": {"name": "quick", "filter": None}},
        "hosts": [{"hostname": "h1", "cpu": {"model": cpu, "logical_cpus_usable": 2},
                   "memory": {"total_bytes": 24 * 2**30}, "os": {"name": "Debian 12"},
                   "virtualization": {"hypervisor_vendor": "KVM"}, "gpus": [],
                   "build": {"git_commit": commit, "build_type": "Release"}}],
        "summary": {"configurations": 3, "passed": 2, "skipped": 1, "failed": 0, "invalid": 0},
        "capabilities": {}, "results": results}


def test_tables_from_made_up_reports(tmp_path):
    paths = []
    for i, (vals, valid) in enumerate([((1.0, 3.0), True), ((2.0, 5.0), True),
                                       ((9.0, 4.0), False)]):
        path = tmp_path / f"r{i}.json"
        path.write_text(json.dumps(made_up_report(vals, valid)), encoding="utf-8")
        paths.append(str(path))
    t = tables(*paths, "--title", "Test page")
    assert t.returncode == 0, t.stderr
    md = t.stdout
    assert md.startswith("# Test page\n\n<!-- generated by: docs/tools/measured_tables.py ")
    assert "Test CPU 9000, 2 CPUs usable; under KVM; 24 GiB; no GPU; Debian 12" in md
    assert "`abc123def456`" in md and "2026-11-25T10:00:00Z" in md
    assert "All rows: `seed=1`." in md
    # Medians over three reports: 16KiB -> 2, 64KiB -> 4; one of three was INVALID.
    assert "| 16KiB | passed (1 of 3 INVALID) | 10 | 1.0% | 3 of 3 | 2 | noisy: robust CV 12.0% > 10% |" in md, md
    assert "| 64KiB | passed (1 of 3 INVALID) | 10 | 1.0% | 3 of 3 | 4 |" in md
    assert "verify_err_to_bound" not in md  # verification metrics are not tables' business
    assert "- skipped (1 configuration): no CUDA device \\| none" in md
    assert "## bandwidth" in md and "## gemm" in md
    # --filter narrows; all INVALID says so.
    t = tables(paths[2], "--filter", "^bandwidth/")
    assert t.returncode == 0 and "## gemm" not in t.stdout
    assert "| 16KiB | INVALID |" in t.stdout


@pytest.mark.parametrize("content, needle", [
    ("{not json", "not JSON"),
    ('{"tool": "fio"}', "not an infrabench report"),
    ('{"tool": "infrabench", "run": {}, "hosts": [], "results": 3}', '"results" missing or malformed'),
])
def test_tables_bad_input(tmp_path, content, needle):
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    t = tables(str(bad))
    assert t.returncode == 2 and t.stdout == ""
    assert needle in t.stderr and len(t.stderr.strip().split("\n")) == 1, t.stderr
    t = tables(str(tmp_path / "missing.json"))
    assert t.returncode == 2 and "missing.json" in t.stderr
    t = tables(str(bad), "--filter", "(")
    assert t.returncode == 2 and "--filter" in t.stderr


# ---- the architecture page's example -------------------------------------------------------------

def normalise(code):
    return "\n".join(line.rstrip() for line in code.strip("\n").split("\n"))


def test_architecture_example_is_quoted_from_a_real_benchmark():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    quotes = re.findall(r"<!-- quoted from (\S+) -->\n```\w*\n(.*?)\n```", text, flags=re.S)
    assert len(quotes) >= 2, "the example is gone from docs/architecture.md"
    for path, code in quotes:
        source = normalise((ROOT / path).read_text(encoding="utf-8"))
        assert normalise(code) in source, (
            f"docs/architecture.md quotes code that {path} no longer contains: update the example")
