// Run options contributed by benchmark groups (fio's idea of self-describing engine options): a
// group registers `--scratch DIR` once, `infrabench run --help` lists it, and benchmarks read it
// from their state. The values in effect are written into the report.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace infrabench {

struct run_option {
  std::string name;           // without dashes: "scratch" -> --scratch
  std::string default_value;  // for flags: "false"
  std::string help;
  bool is_flag = false;
  // Set for an option that is a shorthand for `-a <axis>=VALUE` on the benchmarks whose names
  // start with axis_scope (--isa for preprocess/*): a group-wide knob that still changes the
  // configurations themselves, so the report's axes say what ran.
  std::string axis;
  std::string axis_scope;
  // A file the run reads (--baseline) or writes (--junit): `run` refuses, before measuring, an
  // output that is the same file as an input or another output (check_distinct_files).
  enum class file_use { none, input, output };
  file_use file = file_use::none;
};

class option_registry {
 public:
  static option_registry& instance();
  // Registers once; a second registration with the same name must agree on the kind.
  const run_option& add(run_option opt);
  [[nodiscard]] const std::vector<std::unique_ptr<run_option>>& all() const { return m_options; }

 private:
  std::vector<std::unique_ptr<run_option>> m_options;
};

// Name -> value (flags are "true"/"false"), every registered option present.
using option_values = std::map<std::string, std::string>;

// Deletes files and directories registered by benchmarks (scratch data) when the process has to end
// without unwinding: the hang watchdog, a second signal. Normal paths remove their own files
// (RAII) and unregister.
void register_cleanup_path(const std::string& path);
void unregister_cleanup_path(const std::string& path);
void run_cleanups() noexcept;

}  // namespace infrabench

// INFRABENCH_RUN_OPTION(scratch, "scratch", ".", "directory for scratch files");
#define INFRABENCH_RUN_OPTION(var, name, default_value, help)   \
  [[maybe_unused]] static const ::infrabench::run_option& var = \
      ::infrabench::option_registry::instance().add({name, default_value, help, false})
// INFRABENCH_RUN_FILE_OPTION(junit, "junit", output, "...");  a file the run reads or writes
#define INFRABENCH_RUN_FILE_OPTION(var, name, use, help)        \
  [[maybe_unused]] static const ::infrabench::run_option& var = \
      ::infrabench::option_registry::instance().add(            \
          {name, "", help, false, "", "", ::infrabench::run_option::file_use::use})
// INFRABENCH_AXIS_OPTION(isa, "isa", "preprocess/", "...");  --isa avx2 = -a isa=avx2 there
#define INFRABENCH_AXIS_OPTION(var, name, scope, help)          \
  [[maybe_unused]] static const ::infrabench::run_option& var = \
      ::infrabench::option_registry::instance().add({name, "", help, false, name, scope})
#define INFRABENCH_RUN_FLAG(var, name, help)                    \
  [[maybe_unused]] static const ::infrabench::run_option& var = \
      ::infrabench::option_registry::instance().add({name, "false", help, true})
