"""Shell completion and the man page (issue 45 item 15) against the command line they describe: every
command and option that `--help` lists, walked from the top, is offered by the bash completion (and
the zsh one, where zsh is installed) and documented in the man page, so a subcommand or option added
without them fails here. Both are written by the binary from its own CLI11 definition
(apps/cli_docs.cpp); these tests hold that walk to what the parser shows a user."""
import re
import shlex
import shutil
import subprocess

import pytest

from conftest import BIN, one_line_error, run


def parse_help(text):
    """(subcommands, option spellings) of one command's --help (CLI11's layout: a section header
    at column 0 ending in ':', entries indented by two spaces, wrapped text by more)."""
    section, subs, opts = None, [], set()
    for line in text.splitlines():
        if line and not line.startswith(" "):
            section = line[:-1].strip().lower() if line.endswith(":") else None
            continue
        m = re.match(r"  (\S+)", line)
        if not m:
            continue
        if section == "subcommands":
            subs.append(m.group(1))
        elif section == "options" and m.group(1).startswith("-"):
            opts.update(m.group(1).split(","))
    return subs, opts


@pytest.fixture(scope="module")
def help_tree():
    """{"history check": (subcommands, options)} for every command `--help` leads to."""
    tree, todo = {}, [()]
    while todo:
        path = todo.pop()
        p = run(*path, "--help")
        assert p.returncode == 0, (path, p.stderr)
        subs, opts = parse_help(p.stdout)
        assert opts, (path, p.stdout)  # the parse found the options (--help at least)
        tree[" ".join(path)] = (subs, opts)
        todo += [path + (s,) for s in subs]
    # The walk reached the nested commands: a change of --help's layout cannot empty this test.
    assert {"run", "compare", "history check", "baseline create"} <= set(tree), sorted(tree)
    return tree


@pytest.fixture(scope="module")
def scripts(tmp_path_factory):
    d = tmp_path_factory.mktemp("completion")
    out = {}
    for shell in ("bash", "zsh"):
        p = run("completion", shell)
        assert p.returncode == 0 and p.stdout, p.stderr
        out[shell] = d / shell
        out[shell].write_text(p.stdout)
    return out


def queries_for(tree):
    """For each command: the words typed so far and the word being completed ('' and '-')."""
    return [(path, cur) for path in tree for cur in ("", "-")]


def words_of(path, cur):
    return [BIN] + (path.split() if path else []) + [cur]


def bash_replies(script, queries, cwd):
    lines = [f"source {shlex.quote(str(script))}"]
    for path, cur in queries:
        words = " ".join(shlex.quote(w) for w in words_of(path, cur))
        lines.append(f"COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); COMPREPLY=()"
                     "; _infrabench; echo \"= ${COMPREPLY[*]}\"")
    p = subprocess.run(["bash", "-c", "\n".join(lines)], capture_output=True, text=True,
                       timeout=120, cwd=cwd)
    assert p.returncode == 0 and not p.stderr, p.stderr
    return [set(line[2:].split()) for line in p.stdout.splitlines() if line.startswith("= ")]


def zsh_replies(script, queries, cwd):
    # zsh's completion system is not running: compadd prints what it is given, _files is a no-op.
    # Sourcing the file runs its trailing `_infrabench "$@"` once (words are empty then).
    lines = ["compadd() { [[ $1 == -- ]] && shift; print -r -- \"= $*\"; }", "_files() { :; }",
             "words=(infrabench run); CURRENT=2", f"source {shlex.quote(str(script))} >/dev/null"]
    for path, cur in queries:
        words = " ".join(shlex.quote(w) for w in words_of(path, cur))
        lines.append(f"words=({words}); CURRENT=${{#words}}; _infrabench")
    p = subprocess.run(["zsh", "-f", "-c", "\n".join(lines)], capture_output=True, text=True,
                       timeout=120, cwd=cwd)
    assert p.returncode == 0 and not p.stderr, p.stderr
    return [set(line[2:].split()) for line in p.stdout.splitlines() if line.startswith("= ")]


def check_replies(tree, replies):
    queries = queries_for(tree)
    assert len(replies) == len(queries), (len(replies), len(queries))
    for (path, cur), got in zip(queries, replies):
        subs, opts = tree[path]
        # An empty word offers the subcommands (a command without any: its options or files).
        expected = set(subs) if cur == "" else {o for o in opts if o.startswith("-")}
        assert expected <= got, (path or "(top)", cur, sorted(expected - got))


def test_bash_completion_offers_every_command_and_option(help_tree, scripts, tmp_path):
    check_replies(help_tree, bash_replies(scripts["bash"], queries_for(help_tree), tmp_path))


@pytest.mark.skipif(not shutil.which("zsh"), reason="zsh is not installed")
def test_zsh_completion_offers_every_command_and_option(help_tree, scripts, tmp_path):
    check_replies(help_tree, zsh_replies(scripts["zsh"], queries_for(help_tree), tmp_path))


def test_bash_completion_of_values(scripts, tmp_path):
    # --filter offers the benchmarks' names (from `list --names` of the binary typed); an option
    # checked against a fixed set offers that set; `--opt=` (three words in bash) as well.
    queries = [("run --filter", "bandwidth/host_m"), ("run --format", ""),
               ("compare --format", "j"), ("run --filter =", "bandwidth/host_m"), ("", "hi")]
    got = bash_replies(scripts["bash"], queries, tmp_path)
    assert got[0] == {"bandwidth/host_memory"}, got[0]
    assert {"table", "json"} <= got[1], got[1]
    assert got[2] and all(v.startswith("j") for v in got[2]), got[2]
    assert got[3] == {"bandwidth/host_memory"}, got[3]
    assert got[4] == {"history"}, got[4]


def test_the_hidden_manpage_command_is_offered_nowhere(scripts):
    top = run("--help").stdout
    assert "manpage" not in top
    assert "manpage" not in scripts["bash"].read_text().split("_infrabench_options")[0]
    p = run("manpagex")
    one_line_error(p, "unknown subcommand", "completion")
    assert "manpage" not in p.stderr.split("expected one of")[1], p.stderr


def test_completion_for_another_shell_is_refused():
    one_line_error(run("completion", "fish"), "fish")


def roff_escaped(option):
    """As the page writes it: a '-' that starts a word is a minus (\\-), one inside a hyphen."""
    return re.sub(r"(?<![A-Za-z0-9])-", r"\\-", option)


def man_sections(page):
    """{"history check": its section's text} of the man page's COMMANDS."""
    parts = re.split(r'^\.SS "(.*)"$', page, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_man_page_documents_every_command_and_option(help_tree):
    p = run("manpage")
    assert p.returncode == 0, p.stderr
    page = p.stdout
    assert page.startswith(".\\\"") and "\n.TH INFRABENCH 1 " in page
    sections = man_sections(page)
    assert set(sections) == set(help_tree) - {""}, sorted(set(sections) ^ (set(help_tree) - {""}))
    for path, (subs, opts) in help_tree.items():
        for o in opts - {"-h", "--help", "--version"}:
            assert roff_escaped(o) in sections[path], (path, o)
    # Every command takes these, said once at the top rather than in every section.
    assert "\\fB\\-\\-help\\fR" in page and "\\fB\\-\\-version\\fR" in page


@pytest.mark.skipif(not shutil.which("groff"), reason="groff is not installed")
def test_man_page_renders_without_warnings(help_tree, tmp_path):
    page = tmp_path / "infrabench.1"
    page.write_text(run("manpage").stdout)
    # -ww: every warning; plain ASCII text (no overstrike), lines long enough not to break names.
    p = subprocess.run(["groff", "-man", "-ww", "-Tascii", "-P-cbou", "-rLL=250n", str(page)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and not p.stderr.strip(), p.stderr
    text = p.stdout
    for heading in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXIT STATUS"):
        assert re.search(rf"^{heading}$", text, re.M), heading
    for path, (subs, opts) in help_tree.items():
        assert path in text, path
        for o in opts:
            assert o in text, (path, o)
