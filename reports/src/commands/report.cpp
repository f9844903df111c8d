// `infrabench report REPORT... -o FILE`: the self-contained HTML page (html_report.cpp) of one or
// more reports, or of one fleet's node reports.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "common.h"
#include "infrabench/cli_extension.h"
#include "infrabench/output_file.h"
#include "infrabench/reports/fleet.h"
#include "infrabench/reports/html_report.h"

namespace infrabench::reports::commands {

// Registered with the others by registration.cpp, in --help's order.
subcommand_spec report_command() {
  return {
      "report",
      "write a self-contained HTML report (charts, inventory, verdicts, comparison) of one or more "
      "reports",
      [](CLI::App& sub) -> std::function<int()> {
        struct opts {
          std::vector<std::string> reports;
          std::string output = "infrabench-report.html", baseline, title = "infrabench report";
          bool fleet = false;
        };
        auto o = std::make_shared<opts>();
        sub.add_option("REPORT", o->reports,
                       "reports; with several, the first is the reference of the comparison")
            ->required();
        sub.add_option("-o,--output", o->output, "HTML file to write")->capture_default_str();
        sub.add_option("--baseline,-b", o->baseline,
                       "also show each report's verdicts against this baseline");
        sub.add_option("--title", o->title, "page title")->capture_default_str();
        sub.add_flag("--fleet", o->fleet,
                     "the reports (files or directories) are one fleet's node reports: one page of "
                     "all the nodes, judged together as one cluster run's");
        return [o] {
          std::vector<report_view> reports;
          if (o->fleet) {
            fleet_options fo;
            fo.keep = fleet_keep::samples;
            reports.push_back(load_fleet(report_paths(o->reports), fo));
          } else {
            for (const auto& p : o->reports) reports.push_back(load_report(p));
          }
          assign_labels(reports);
          std::optional<baseline> b;
          if (!o->baseline.empty()) {
            b = load_baseline(o->baseline);
            auto known = known_benchmarks();  // a rule may name a benchmark any of the reports has
            for (const auto& r : reports) {
              for (const auto& x : r.results) known.insert(x.benchmark);
            }
            check_benchmarks_known(*b, known);
          }
          check_output_path(o->output);
          std::vector<std::string> inputs = o->reports;
          inputs.push_back(o->baseline);
          check_distinct_files(inputs, {o->output});
          html_options ho;
          ho.title = o->title;
          ho.checked_against = b ? &*b : nullptr;
          std::ostringstream page;
          printer_registry::instance()
              .find("html", document::page)
              .print(page, html_page{reports, ho});
          const std::string html = page.str();
          write_output(o->output, html);
          std::cerr << "HTML report (" << html.size() / 1024 << " KiB, self-contained) written to "
                    << std::filesystem::absolute(o->output).string() << std::endl;
          return exit_ok;
        };
      }};
}

}  // namespace infrabench::reports::commands
