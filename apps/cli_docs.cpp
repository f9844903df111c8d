// `infrabench completion bash|zsh` and the hidden `infrabench manpage`: shell completion and the
// man page written from the command line's own definition (the CLI11 App once every subcommand was
// added), so neither can drift from what the parser accepts. The package installs what the build
// wrote with them (apps/CMakeLists.txt); tests/e2e/test_cli_docs.py holds them to `--help`.
#include <cctype>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "infrabench/build_info.h"
#include "infrabench/cli_extension.h"

namespace {

namespace ib = infrabench;

// ---- the command tree, as the user sees it ------------------------------------------------------

// A visible command at any depth: its words after `infrabench` ("history check"; "" the top).
struct cli_command {
  std::string path;
  const CLI::App* app;
};

// Option groups are unnamed subcommands and hidden ones have no group: neither is a command.
std::vector<const CLI::App*> visible_subcommands(const CLI::App& app) {
  return app.get_subcommands(
      [](const CLI::App* s) { return !s->get_name().empty() && !s->get_group().empty(); });
}

void collect_commands(const CLI::App& app, const std::string& path, std::vector<cli_command>& out) {
  out.push_back({path, &app});
  for (const CLI::App* sub : visible_subcommands(app))
    collect_commands(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), out);
}

// Every visible command, the top level first, each followed by its subcommands.
std::vector<cli_command> all_commands(const CLI::App& root) {
  std::vector<cli_command> out;
  collect_commands(root, "", out);
  return out;
}

std::vector<const CLI::Option*> visible_options(const CLI::App& app) {
  return app.get_options([](const CLI::Option* o) { return !o->get_group().empty(); });
}

bool is_operand(const CLI::Option& o) {
  return !o.nonpositional();
}

// -o, --output: its spellings on the command line (none for an operand).
std::vector<std::string> spellings(const CLI::Option& o) {
  std::vector<std::string> out;
  for (const auto& s : o.get_snames()) out.push_back("-" + s);
  for (const auto& l : o.get_lnames()) out.push_back("--" + l);
  return out;
}

// The values of an option checked by CLI::IsMember, which names them in its type: "TEXT:{a,b}".
std::vector<std::string> choices(const CLI::Option& o) {
  const std::string type = o.get_type_name();
  const auto open = type.find(":{");
  const auto close = type.find('}', open);
  std::vector<std::string> out;
  if (open == std::string::npos || close == std::string::npos) return out;
  std::stringstream list(type.substr(open + 2, close - open - 2));
  for (std::string v; std::getline(list, v, ',');) out.push_back(v);
  return out;
}

std::string joined_words(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// ---- shell completion ---------------------------------------------------------------------------

// A shell word in single quotes (the names are ours, but a quote in one must not end the word).
std::string sh_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// One lookup table of the script: `NAME KEY` prints the words of KEY (a command's path, or a path
// and an option), empty for a key it does not hold.
struct completion_table {
  std::string name, what;
  std::vector<std::pair<std::string, std::string>> rows;  // key, words
};

std::string table_function(const completion_table& t) {
  std::string out = "# " + t.what + "\n" + t.name + "() {\n  case \"$*\" in\n";
  for (const auto& [key, words] : t.rows)
    out += "    " + sh_quoted(key) + ") echo " + sh_quoted(words) + " ;;\n";
  return out + "  esac\n}\n";
}

std::vector<completion_table> completion_tables(const CLI::App& root) {
  completion_table subs{
      "_infrabench_subcommands", "the subcommands of a command ($1: its path)", {}};
  completion_table opts{
      "_infrabench_options", "the options of a command (help and version too)", {}};
  completion_table valued{"_infrabench_value_options", "the options that take a value", {}};
  completion_table operands{
      "_infrabench_operands", "the operands a command takes (file names)", {}};
  completion_table fixed{
      "_infrabench_choices", "the values of an option with a fixed set ($1 $2)", {}};
  for (const auto& c : all_commands(root)) {
    std::vector<std::string> sub_names, all, with_value, named;
    for (const CLI::App* s : visible_subcommands(*c.app)) sub_names.push_back(s->get_name());
    for (const CLI::Option* o : visible_options(*c.app)) {
      if (is_operand(*o)) named.push_back(o->get_name(true));
      const auto sp = spellings(*o);
      all.insert(all.end(), sp.begin(), sp.end());
      if (o->get_items_expected_max() > 0 && !is_operand(*o))
        with_value.insert(with_value.end(), sp.begin(), sp.end());
      if (const auto values = choices(*o); !values.empty())
        for (const auto& s : sp) fixed.rows.emplace_back(c.path + " " + s, joined_words(values));
    }
    if (!sub_names.empty()) subs.rows.emplace_back(c.path, joined_words(sub_names));
    if (!all.empty()) opts.rows.emplace_back(c.path, joined_words(all));
    if (!with_value.empty()) valued.rows.emplace_back(c.path, joined_words(with_value));
    if (!named.empty()) operands.rows.emplace_back(c.path, joined_words(named));
  }
  return {subs, opts, valued, operands, fixed};
}

// The logic both shells run, in what bash and zsh share: no compgen (zsh has none), word lists
// only from command substitutions (zsh splits those, not a variable's value), and no variable
// named `path` (zsh ties it to PATH). It fills COMPREPLY for the word COMP_CWORD of COMP_WORDS,
// and sets _infrabench_files=1 where a file name fits too (each shell completes those its way).
constexpr const char* completion_logic = R"SH(
# The words after $1 that start with $1, one a line.
_infrabench_matching() {
  local cur=$1 w
  shift
  for w in "$@"; do [[ $w == "$cur"* ]] && printf '%s\n' "$w"; done
  return 0
}

_infrabench_is_one_of() {
  local word=$1 w
  shift
  for w in "$@"; do [[ $w == "$word" ]] && return 0; done
  return 1
}

_infrabench_reply() {
  # zsh's arrays count from 1, bash's from 0.
  local b=0 i w at='' skip=0 opt=''
  [[ -n ${ZSH_VERSION-} ]] && b=1
  local cur=${COMP_WORDS[COMP_CWORD+b]} prev=${COMP_WORDS[COMP_CWORD-1+b]}
  COMPREPLY=()
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i+b]}
    if ((skip)); then
      skip=0
    elif [[ $w == -- ]]; then
      # What follows `--` is handed on (accept's options for run): file names, as anything else.
      _infrabench_files=1
      return 0
    elif _infrabench_is_one_of "$w" $(_infrabench_subcommands "$at"); then
      at=${at:+$at }$w
    elif _infrabench_is_one_of "$w" $(_infrabench_value_options "$at"); then
      skip=1
    fi
  done
  # bash splits `--opt=value` into three words.
  if [[ $cur == = ]]; then
    opt=$prev
    cur=''
  elif [[ $prev == = && $COMP_CWORD -ge 2 ]]; then
    opt=${COMP_WORDS[COMP_CWORD-2+b]}
  elif ((skip)); then
    opt=$prev
  fi
  _infrabench_word=$cur
  if [[ $opt == --filter ]]; then
    # A regex on group/name: the names themselves are the likeliest ones.
    COMPREPLY=($(_infrabench_matching "$cur" $("${COMP_WORDS[b]}" list --names 2>/dev/null)))
  elif [[ -n $opt ]]; then
    COMPREPLY=($(_infrabench_matching "$cur" $(_infrabench_choices "$at" "$opt")))
    [[ -n $(_infrabench_choices "$at" "$opt") ]] || _infrabench_files=1
  elif [[ $cur == -* ]]; then
    COMPREPLY=($(_infrabench_matching "$cur" $(_infrabench_options "$at")))
  elif [[ -n $(_infrabench_subcommands "$at") ]]; then
    COMPREPLY=($(_infrabench_matching "$cur" $(_infrabench_subcommands "$at")))
  elif [[ -n $(_infrabench_operands "$at") ]]; then
    _infrabench_files=1
  else
    COMPREPLY=($(_infrabench_matching "$cur" $(_infrabench_options "$at")))
  fi
  return 0
}
)SH";

constexpr const char* bash_entry = R"SH(
_infrabench() {
  local _infrabench_files=0 _infrabench_word='' f
  _infrabench_reply
  if ((_infrabench_files)); then
    compopt -o filenames 2>/dev/null
    while IFS= read -r f; do COMPREPLY+=("$f"); done < <(compgen -f -- "$_infrabench_word")
  fi
  return 0
}
complete -F _infrabench infrabench
)SH";

constexpr const char* zsh_entry = R"SH(
_infrabench() {
  local -a COMP_WORDS COMPREPLY
  local COMP_CWORD=$((CURRENT - 1)) _infrabench_files=0 _infrabench_word=''
  COMP_WORDS=("${words[@]}")
  _infrabench_reply
  compadd -- "${COMPREPLY[@]}"
  if ((_infrabench_files)); then _files; fi
}
_infrabench "$@"
)SH";

std::string completion_script(const CLI::App& root, const std::string& shell) {
  std::string out = shell == "zsh" ? "#compdef infrabench\n" : "";
  out += "# " + shell + " completion for infrabench " + INFRABENCH_VERSION +
         ", written by `infrabench completion " + shell +
         "` from its command line's own definition: regenerate it, do not edit it.\n";
  // Its word lists are split on purpose (a command substitution is what zsh splits too).
  if (shell == "bash") out += "# shellcheck disable=SC2046,SC2207\n";
  out += "\n";
  for (const auto& t : completion_tables(root)) out += table_function(t);
  out += completion_logic;
  out += shell == "zsh" ? zsh_entry : bash_entry;
  return out;
}

// ---- the man page -------------------------------------------------------------------------------

// Text for roff: a backslash printed as one, a '-' that starts an option a minus sign (\-) rather
// than a hyphen (so `--filter` can be searched for and copied), and a line that would start with
// a control character ('.' or '\'') made text.
std::string roff(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool line_start = i == 0 || text[i - 1] == '\n';
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-' && (i == 0 || !std::isalnum(static_cast<unsigned char>(text[i - 1])))) {
      out += "\\-";
    } else {
      out += c;
    }
  }
  return out;
}

std::string bold(const std::string& s) {
  return "\\fB" + roff(s) + "\\fR";
}
std::string italic(const std::string& s) {
  return "\\fI" + roff(s) + "\\fR";
}

bool repeatable(const CLI::Option& o) {
  return o.get_items_expected_max() > 1;
}

// The option's value as its --help names it: TEXT, FLOAT, INT (before any validator's ":...").
std::string value_name(const CLI::Option& o) {
  const std::string type = o.get_type_name();
  return type.substr(0, type.find(':'));
}

// What --help says after the description, in words: choices, default, required, repeatable.
std::string option_notes(const CLI::Option& o) {
  std::vector<std::string> notes;
  if (const auto values = choices(o); !values.empty()) {
    std::string list;
    for (const auto& v : values) list += (list.empty() ? "" : ", ") + v;
    notes.push_back("one of: " + list);
  }
  if (!o.get_default_str().empty()) notes.push_back("default: " + o.get_default_str());
  if (o.get_required()) notes.push_back("required");
  const bool said = o.get_description().find("repeatable") != std::string::npos;
  if (repeatable(o) && !is_operand(o) && !said) notes.push_back("repeatable");
  std::string out;
  for (const auto& n : notes) out += (out.empty() ? " (" : "; ") + n;
  return out.empty() ? out : out + ")";
}

std::string man_option(const CLI::Option& o) {
  std::string head;
  if (is_operand(o)) {
    head = italic(o.get_name(true)) + (repeatable(o) ? " ..." : "");
  } else {
    for (const auto& s : spellings(o)) head += (head.empty() ? "" : ", ") + bold(s);
    if (o.get_items_expected_max() > 0) head += " " + italic(value_name(o));
  }
  return ".TP\n" + head + "\n" + roff(o.get_description() + option_notes(o)) + "\n";
}

// help and version: every command takes them, and the page says so once.
bool everywhere(const CLI::App& app, const CLI::Option* o) {
  return o == app.get_help_ptr() || o == app.get_help_all_ptr() || o == app.get_version_ptr();
}

// `infrabench history check [options] REPORT ...`
std::string man_synopsis(const cli_command& c) {
  std::string out = bold("infrabench " + c.path);
  std::string operands;
  bool has_options = false;
  for (const CLI::Option* o : visible_options(*c.app)) {
    if (everywhere(*c.app, o)) continue;
    if (!is_operand(*o)) {
      has_options = true;
      continue;
    }
    const std::string word = italic(o->get_name(true)) + (repeatable(*o) ? " ..." : "");
    operands += " " + (o->get_required() ? word : "[" + word + "]");
  }
  if (!visible_subcommands(*c.app).empty()) out += " " + italic("COMMAND");
  if (has_options) out += " [" + italic("options") + "]";
  return out + operands + "\n";
}

std::string man_command(const cli_command& c) {
  std::string out = ".SS \"" + roff(c.path) + "\"\n" + man_synopsis(c) + ".PP\n" +
                    roff(c.app->get_description()) + "\n";
  for (const CLI::Option* o : visible_options(*c.app))
    if (!everywhere(*c.app, o)) out += man_option(*o);
  return out;
}

// The exit codes are cli.h's (exit_ok ... exit_output_failed in run_pipeline.h).
constexpr const char* man_tail = R"ROFF(.SH EXIT STATUS
.TP
0
success
.TP
1
a benchmark failed, a check against a baseline did not pass, or a rank died
.TP
2
bad input (one line on standard error says which); nothing was run
.TP
3
a report could not be written where asked
.TP
128 + \fIN\fR
interrupted by signal \fIN\fR
.SH FILES
.TP
\fIPREFIX\fR/share/infrabench/suites, \fIPREFIX\fR/share/infrabench/baselines
the suites (also compiled in, found by name) and the shipped baselines; \fIPREFIX\fR is /usr for
the Debian package
.TP
\fIPREFIX\fR/lib/infrabench
the backend modules (MPI, CUDA, NCCL), loaded at start\-up when their libraries are there
.SH SEE ALSO
The README and docs/ in /usr/share/doc/infrabench (the package), or the source tree.
)ROFF";

std::string man_head(const CLI::App& root) {
  // The top level's description is "infrabench: what it is"; NAME wants "infrabench \- what".
  std::string what = root.get_description();
  if (what.rfind("infrabench: ", 0) == 0) what = what.substr(std::string("infrabench: ").size());
  const std::string version = INFRABENCH_VERSION;
  return ".\\\" The man page of infrabench " + version +
         ", written by `infrabench manpage` from its command line's own\n"
         ".\\\" definition: regenerate it, do not edit it.\n"
         ".TH INFRABENCH 1 \"\" \"infrabench " +
         version + "\" \"User Commands\"\n.SH NAME\ninfrabench \\- " + roff(what) +
         "\n.SH SYNOPSIS\n" + bold("infrabench") + " " + italic("COMMAND") + " [" +
         italic("options") + "]\n.br\n" + bold("infrabench") + " " + bold("--help") + " | " +
         bold("--version") + "\n.SH DESCRIPTION\n" + bold("infrabench") + ": " + roff(what) +
         ".\nEvery command takes " + bold("--help") + " (its options, as listed here) and " +
         bold("--version") + ".\n";
}

std::string man_page(const CLI::App& root) {
  std::string out = man_head(root) + ".SH COMMANDS\n";
  for (const auto& c : all_commands(root))
    if (!c.path.empty()) out += man_command(c);
  return out + man_tail;
}

[[maybe_unused]] const bool completion_registered = ib::register_subcommand(
    {"completion",
     "print the shell completion script: `source <(infrabench completion bash)`; zsh: save it "
     "as _infrabench in a directory of $fpath",
     [](CLI::App& sub) -> std::function<int()> {
       auto shell = std::make_shared<std::string>();
       sub.add_option("SHELL", *shell, "the shell")
           ->required()
           ->check(CLI::IsMember({"bash", "zsh"}));
       const CLI::App* root = sub.get_parent();
       return [shell, root] {
         std::cout << completion_script(*root, *shell);
         return 0;
       };
     }});

// Hidden: the build writes the page with it (apps/CMakeLists.txt); `man infrabench` reads it.
[[maybe_unused]] const bool manpage_registered =
    ib::register_subcommand({"manpage", "",
                             [](CLI::App& sub) -> std::function<int()> {
                               const CLI::App* root = sub.get_parent();
                               return [root] {
                                 std::cout << man_page(*root);
                                 return 0;
                               };
                             },
                             true});

}  // namespace
