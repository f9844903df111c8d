// `infrabench roofline REPORT --job MODEL ...`: the data-path roofline of a training job from one
// report's measurements (docs/roofline.md): each hop's rate in the job's samples/s, the predicted
// job rate, the limiting hop, what-ifs, and training/step's measured rate beside it. Several
// reports side by side (`REPORT A.json B.json`): one roofline each. Bad input: one line, exit 2,
// before anything is read or written.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "infrabench/cli_extension.h"
#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/output_file.h"
#include "infrabench/reports/roofline.h"
#include "infrabench/text_file.h"

namespace {

namespace ib = infrabench;
namespace rp = infrabench::reports;

struct roofline_options {
  std::vector<std::string> reports;
  std::string job, data, device = "auto", format = "table", output;
  int batch = 8, seq = 0, image = 0, ranks_per_node = 1, nodes = 1, cpu_threads = 0;
  std::vector<std::string> what_ifs;
  bool into_report = false;
};

rp::roofline_job job_of(const roofline_options& o) {
  rp::roofline_job j;
  j.model = o.job;
  j.batch = o.batch;
  j.seq = o.seq;
  j.image = o.image;
  j.ranks_per_node = o.ranks_per_node;
  j.nodes = o.nodes;
  j.cpu_threads = o.cpu_threads;
  if (o.data == "tokens") j.format = rp::data_format::tokens;
  if (o.data == "jpeg") j.format = rp::data_format::jpeg;
  j.device = o.device == "cpu"   ? rp::job_device::cpu
             : o.device == "gpu" ? rp::job_device::gpu
                                 : rp::job_device::automatic;
  return j;
}

// Writes the analysis into the report as its `roofline` section (the file replaced atomically).
void write_section(const std::string& path, const rp::roofline_analysis& a) {
  nlohmann::json doc =
      nlohmann::json::parse(ib::read_text_file(path, "report", rp::max_input_bytes));
  doc["roofline"] = rp::roofline_json(a);
  ib::write_output(path, doc.dump(2) + "\n");
  std::cerr << "roofline section written into " << path << std::endl;
}

int roofline(const roofline_options& o) {
  const rp::roofline_job job = job_of(o);
  rp::check_job(job);  // bad input refused before any report is read
  std::vector<rp::what_if> what_ifs;
  for (const auto& w : o.what_ifs) what_ifs.push_back(rp::parse_what_if(w));
  if (!o.output.empty()) {
    ib::check_output_path(o.output);
    ib::check_distinct_files(o.reports, {o.output});
  }
  if (o.into_report && o.reports.size() != 1)
    throw ib::user_error("--into-report writes one report's section: give one REPORT");
  std::vector<std::pair<std::string, rp::roofline_analysis>> analyses;
  std::vector<rp::report_view> views;
  for (const auto& p : o.reports) views.push_back(rp::load_report(p));
  rp::assign_labels(views);
  // Every report's what-ifs checked against its device before any is analysed (gpus=N on a CPU
  // job is refused: docs/roofline.md, "What-ifs").
  for (const auto& v : views) rp::check_what_ifs(v, job, what_ifs);
  for (const auto& v : views)
    analyses.emplace_back(v.label, rp::analyse_roofline(v, job, what_ifs));
  std::string out;
  if (o.format == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& [label, a] : analyses) {
      j.push_back(rp::roofline_json(a));
      j.back()["report"] = label;
    }
    out = (analyses.size() == 1 ? j.front() : j).dump(2) + "\n";
  } else if (o.format == "html") {
    out = rp::roofline_html(analyses);
  } else {
    for (const auto& [label, a] : analyses)
      out += (analyses.size() > 1 ? "== " + label + "\n" : "") + rp::roofline_text(a);
    if (analyses.size() > 1) {
      out += "side by side:";
      for (const auto& [label, a] : analyses)
        out += " " + label + " is " + rp::roofline_summary(a.base) + ";";
      out += "\n";
    }
  }
  if (o.output.empty())
    std::cout << out << std::flush;
  else
    ib::write_output(o.output, out);
  if (o.into_report) write_section(o.reports.front(), analyses.front().second);
  return 0;
}

[[maybe_unused]] const bool roofline_registered = ib::register_subcommand(
    {"roofline",
     "the data-path roofline of a training job from a report: each hop's rate in samples/s, the "
     "limiting hop, what-ifs, predicted against training/step's measured rate",
     [](CLI::App& sub) -> std::function<int()> {
       auto o = std::make_shared<roofline_options>();
       sub.add_option("REPORT", o->reports, "report(s) of infrabench run; several: side by side")
           ->required();
       sub.add_option("--job", o->job,
                      "the model preset of training/step: gpt2-tiny, gpt2-124m, "
                      "gpt2-350m, vit-tiny, vit-b16")
           ->required();
       sub.add_option("--batch", o->batch, "samples per GPU (rank) per step")
           ->capture_default_str();
       sub.add_option("--seq", o->seq, "GPT-2 tokens per sample (0: the preset's)");
       sub.add_option("--image", o->image, "ViT image side in pixels (0: the preset's)");
       sub.add_option("--data", o->data, "token shards or JPEG files (default: the model's)")
           ->check(CLI::IsMember({"tokens", "jpeg"}));
       sub.add_option("--ranks-per-node", o->ranks_per_node, "GPUs (ranks) per node")
           ->capture_default_str();
       sub.add_option("--nodes", o->nodes, "nodes")->capture_default_str();
       sub.add_option("--cpu-threads", o->cpu_threads,
                      "CPU threads per node for preprocessing (0: the report host's)");
       sub.add_option("--device", o->device,
                      "where the model computes (auto: a GPU when the "
                      "report has GPU results)")
           ->check(CLI::IsMember({"auto", "cpu", "gpu"}))
           ->capture_default_str();
       sub.add_option("--what-if", o->what_ifs,
                      "a change to recompute with: storage=2x, nics=400Gb/s, gpus=8, nodes=4, "
                      "cpu_threads=32 (comma-separated for one scenario; repeatable)");
       sub.add_option("--format", o->format, "output")
           ->check(CLI::IsMember({"table", "json", "html"}))
           ->capture_default_str();
       sub.add_option("-o,--output", o->output, "write to this file instead of stdout");
       sub.add_flag("--into-report", o->into_report,
                    "also write the analysis into the report as its `roofline` section");
       return [o] { return roofline(*o); };
     }});

}  // namespace
