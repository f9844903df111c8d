// Output formats behind one interface, as nvbench's printer_base and google/benchmark's reporters:
// each format (table, json, csv, markdown, html, junit) is one class in one file that registers
// itself by name; a command asks the registry for the format the user named and hands it the
// document to print. Adding a format is one new file (plus its line in reports/CMakeLists.txt):
// every command's --format choices come from the registry.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/error.h"
#include "infrabench/model/report.h"

namespace infrabench {

// The documents of reports/ (declared there; the harness only passes them through).
namespace reports {
struct comparison;
struct check_outcome;
struct html_page;
}  // namespace reports

// What can be printed.
enum class document { run, comparison, verdicts, page };

// A run's results, as `infrabench run` shows them.
struct run_document {
  const nlohmann::json& report;  // the report as written: the json format prints it, none reads it
  // The rows to show, typed (a multi-rank run leaves node-local skips out).
  const std::vector<model::result_view>& results;
  bool show_host = false;  // a column per host (multi-rank runs)
  // The report's declarations per benchmark (a collective's table layout); null: none known.
  const std::map<std::string, model::benchmark_meta>* benchmarks = nullptr;
  // The whole report, typed (the build that measured, when the run ended); null: not given.
  const model::report_view* view = nullptr;
};

class printer {
 public:
  virtual ~printer() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  [[nodiscard]] virtual bool prints(document d) const = 0;
  // A format overrides the ones it prints; the registry never hands it another kind.
  virtual void print(std::ostream&, const run_document&) const { unsupported("run results"); }
  virtual void print(std::ostream&, const reports::comparison&) const {
    unsupported("comparisons");
  }
  virtual void print(std::ostream&, const reports::check_outcome&) const {
    unsupported("verdicts");
  }
  virtual void print(std::ostream&, const reports::html_page&) const { unsupported("pages"); }

 private:
  [[noreturn]] void unsupported(const char* what) const {
    throw user_error("format " + std::string(name()) + " does not print " + what);
  }
};

class printer_registry {
 public:
  static printer_registry& instance() {
    static printer_registry r;
    return r;
  }
  bool add(std::unique_ptr<printer> p) {
    m_printers.push_back(std::move(p));
    return true;
  }
  // The formats that print `d`, sorted: a command's --format choices.
  [[nodiscard]] std::vector<std::string> names(document d) const {
    std::vector<std::string> out;
    for (const auto& p : m_printers) {
      if (p->prints(d)) out.emplace_back(p->name());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // The printer called `name` that prints `d`; user_error naming the formats that do.
  [[nodiscard]] const printer& find(std::string_view name, document d) const {
    for (const auto& p : m_printers) {
      if (p->name() == name && p->prints(d)) return *p;
    }
    std::string known;
    for (const auto& n : names(d)) known += (known.empty() ? "" : ", ") + n;
    throw user_error("no output format \"" + std::string(name) + "\" here (formats: " + known +
                     ")");
  }

 private:
  std::vector<std::unique_ptr<printer>> m_printers;
};

}  // namespace infrabench

// INFRABENCH_REGISTER_PRINTER(csv_printer); at namespace scope in the format's file.
#define INFRABENCH_REGISTER_PRINTER(cls)                                                        \
  [[maybe_unused]] static const bool INFRABENCH_PRINTER_CONCAT(printer_registered_, __LINE__) = \
      ::infrabench::printer_registry::instance().add(std::make_unique<cls>())
#define INFRABENCH_PRINTER_CONCAT_INNER(a, b) a##b
#define INFRABENCH_PRINTER_CONCAT(a, b) INFRABENCH_PRINTER_CONCAT_INNER(a, b)
