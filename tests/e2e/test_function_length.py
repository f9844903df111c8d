"""Functions under 60 lines (issue 25; benchmarks/ and kernels/ since issue 42): a scan of harness/src,
reports/src, apps, benchmarks and kernels for every function and lambda body, counted in lines from its opening brace to its closing one (both included), that
fails on any over the limit and lists each by file:line, so a long function is split when it is
written, not found by a reader later. Lines of a body are counted as the file has them (comments and
blank lines too: they are what a reader holds in their head)."""
import functools
import os
import pathlib
import re

SOURCE = pathlib.Path(os.environ.get("INFRABENCH_SOURCE_DIR", "."))
SCANNED = [SOURCE / "harness/src", SOURCE / "reports/src", SOURCE / "apps", SOURCE / "benchmarks",
           SOURCE / "kernels"]
LIMIT = 60

# Functions that may be longer, and why (only what truly cannot be split, e.g. a generated table):
# "path:name" -> reason.
_TILED = ("a GPU kernel's register-tiled main loop: its tiles, fragments and accumulators live in "
          "registers only inside one function body; split, they would go through local memory")
EXEMPT = {
    "kernels/cuda/gemm_mma.cu:mma_gemm_kernel": _TILED,
    "kernels/cuda/gemm_simt.cu:simt_sgemm_kernel": _TILED,
    "kernels/cuda/gemm_wmma.cu:wmma_gemm_kernel": _TILED,
    "kernels/cuda/transformer/flash_attention.cu:flash_forward_k": _TILED,
    "kernels/cuda/transformer/flash_attention.cu:flash_backward_k": _TILED,
    "kernels/hardware/gpu.cpp:gpu_sku_table": "a data table, one row per GPU model with its sources",
    "benchmarks/collectives/model.h:collective_table": "a data table, one row per collective",
}

# A '{' after one of these keywords' parenthesis opens a block, not a function body.
CONTROL = {"if", "for", "while", "switch", "catch"}
# What may stand between a function's ')' and its '{': qualifiers and a trailing return type.
QUALIFIERS = re.compile(r"(\s*(const|noexcept|override|final|mutable|->\s*[\w:<>,\s*&()]+?))*\s*$")
# How far back from a '{' its function's head is looked for (a signature is never longer).
HEAD = 2000
# How far back qualifiers and a trailing return type may reach (far longer than any written).
TAIL = 300


def blank_out(text):
    """The text with comments, string and character literals replaced by spaces (newlines kept), so
    braces in them are not counted and line numbers stay."""
    out, i, n = [], 0, len(text)
    keep = lambda s: "".join(c if c == "\n" else " " for c in s)
    while i < n:
        raw = re.match(r'R"([^(\s]*)\(', text[i:i + 20]) if text[i] == "R" else None
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find(")" + raw.group(1) + '"', i)
            end = n if end < 0 else end + len(raw.group(1)) + 2
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i)
            end = n if end < 0 else end + 2
        elif text[i] in "\"'" and not (text[i] == "'" and i > 0 and text[i - 1].isalnum()):
            end = i + 1
            while end < n and text[end] != text[i] and text[end] != "\n":
                end += 2 if text[end] == "\\" else 1
            end += 1
        else:
            out.append(text[i])
            i += 1
            continue
        out.append(keep(text[i:end]))
        i = end
    return "".join(out)


def opener(code, brace):
    """The name of the function or lambda whose body opens at `brace`, or None for any other brace
    (a namespace, class, control block, initialiser)."""
    before = code[max(0, brace - HEAD):brace]
    # The qualifiers are searched for in the head's last TAIL characters only: a search tries every
    # start, and over the whole head it was most of this file's run time (11 of 13 s).
    tail = max(0, len(before) - TAIL)
    m = QUALIFIERS.search(before, tail)
    head = before[:m.start()] if m else before
    if head.endswith("]"):
        return "lambda"
    if not head.endswith(")"):
        return None
    depth, i = 0, len(head) - 1
    while i >= 0:
        depth += {")": 1, "(": -1}.get(head[i], 0)
        if depth == 0:
            break
        i -= 1
    word = re.search(r"([\w:~]+)\s*$", head[:i]) if i > 0 else None
    if word is None:
        return "lambda" if head[:i].rstrip().endswith("]") else None
    name = word.group(1)
    return None if name in CONTROL else name


@functools.lru_cache(maxsize=None)  # both scans of the tree below read each file once
def long_functions(path):
    """(line, name, length) of each function body in the file over LIMIT lines."""
    code = blank_out(path.read_text(encoding="utf-8", errors="replace"))
    found, stack = [], []
    for i, c in enumerate(code):
        if c == "{":
            stack.append((i, opener(code, i)))
        elif c == "}" and stack:
            start, name = stack.pop()
            if name is None:
                continue
            first = code.count("\n", 0, start) + 1
            length = code.count("\n", start, i) + 1
            if length > LIMIT:
                found.append((first, name, length))
    return found


def sources():
    for root in SCANNED:
        for p in sorted(root.rglob("*")):
            if p.suffix in (".cpp", ".h", ".hpp", ".cu", ".cuh"):
                yield p


def test_no_function_is_over_the_limit():
    offenders = []
    for p in sources():
        rel = p.relative_to(SOURCE).as_posix()
        for line, name, length in long_functions(p):
            if f"{rel}:{name}" not in EXEMPT:
                offenders.append(f"{rel}:{line}: {name} is {length} lines (limit {LIMIT})")
    assert not offenders, "functions over the limit; split them:\n" + "\n".join(offenders)


def test_every_exemption_is_still_needed():
    long = {f"{p.relative_to(SOURCE).as_posix()}:{name}" for p in sources()
            for _, name, _ in long_functions(p)}
    assert not set(EXEMPT) - long, f"exempt but no longer long: {sorted(set(EXEMPT) - long)}"


def test_the_scan_finds_a_long_function_and_a_long_lambda(tmp_path):
    body = "\n".join(f"  x += {i};  // {{ not a brace" for i in range(LIMIT))
    src = tmp_path / "long.cpp"
    src.write_text("namespace n {\nint f(int x) const {\n" + body + "\n  return x;\n}\n"
                   "auto g = [&](int y) -> std::function<int()> {\n" + body + "\n};\n"
                   "void h() {\n  if (true) {\n  }\n  const char* s = \"}{\";\n}\n}\n")
    found = long_functions(src)
    assert [(name, length) for _, name, length in found] == [("f", LIMIT + 3), ("lambda", LIMIT + 2)]
    assert found[0][0] == 2


def test_no_benchmark_group_includes_another_groups_files():
    """A benchmark group includes its own files, the harness, kernels and benchmarks/shared/ (issue
    42: training reached into storage, preprocess, gemm and collectives through `../group/x.h`)."""
    reaching = []
    for root in (SOURCE / "benchmarks", SOURCE / "kernels"):
        for p in sorted(root.rglob("*")):
            if p.suffix not in (".cpp", ".h", ".hpp", ".cu", ".cuh"):
                continue
            for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if re.match(r'\s*#\s*include\s+"\.\./', line):
                    reaching.append(f"{p.relative_to(SOURCE).as_posix()}:{n}: {line.strip()}")
    assert not reaching, "include another group's file through benchmarks/shared/ or kernels/:\n" + \
        "\n".join(reaching)
