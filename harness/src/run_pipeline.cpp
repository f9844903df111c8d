// `infrabench run` after parsing: plan -> run -> gather -> analyse -> write -> render -> exit code
// (run_pipeline.h). The normal end and the failure paths (a rank died, a configuration hung) share
// the gather/analyse/write/exit-code steps (run_pipeline_steps.cpp); a signal stops the runner and
// takes the normal end.
#include "infrabench/run_pipeline.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <utility>

#include "infrabench/benchmark.h"
#include "infrabench/canary.h"
#include "infrabench/capabilities.h"
#include "infrabench/cluster.h"
#include "infrabench/communicator.h"
#include "infrabench/console_header.h"
#include "infrabench/elapsed.h"
#include "infrabench/error.h"
#include "infrabench/model/rank_messages.h"
#include "infrabench/nvml_loader.h"
#include "infrabench/probe_detail.h"
#include "infrabench/process_streams.h"
#include "infrabench/progress.h"
#include "infrabench/sysinfo.h"
#include "infrabench/telemetry.h"
#include "infrabench/text_layout.h"

#include "run_pipeline_internal.h"

namespace infrabench {

using json = nlohmann::json;

using detail::count_results;
using detail::make_context;

namespace {

// The last run's communicator (current_job_position); size 0 until a run started.
std::atomic<int> g_job_rank{0};
std::atomic<int> g_job_size{0};

int env_int(const char* var, int fallback) {
  const char* v = std::getenv(var);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return *end == '\0' ? static_cast<int>(n) : fallback;
}

// What the launcher told this process (Open MPI, PMI/PMIx launchers, Slurm), as
// launched_by_mpi_launcher (communicator.h) reads it.
job_position launcher_position() {
  job_position p;
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (std::getenv(var)) {
      p.rank = env_int(var, 0);
      break;
    }
  }
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
    if (std::getenv(var)) {
      p.size = std::max(1, env_int(var, 1));
      break;
    }
  }
  return p;
}

// Whether this rank samples its host's telemetry: the first rank with its hostname. The report
// keys hosts by hostname (one inventory, one set of traces each), so the sampling rank is chosen by
// the same key; on a real cluster it is also the host's MPI node leader.
bool samples_host(const communicator& comm) {
  const auto names = comm.hostnames();
  const auto first = std::find(names.begin(), names.end(), comm.hostname());
  if (first == names.end()) return comm.rank() == comm.node_leader();
  return first - names.begin() == comm.rank();
}

}  // namespace

job_position current_job_position() {
  const int size = g_job_size.load();
  // A single-process communicator under a launcher (built without MPI) still is one of the
  // launcher's ranks: only a multi-rank communicator knows better than the launcher.
  if (size > 1) return {g_job_rank.load(), size};
  return launcher_position();
}

// ---- run: the session that the failure paths interrupt ------------------------------------------

namespace {

// run.coordination (issue 39, docs/scale.md): rank 0's time on the ranks rather than the
// benchmarks: starting each configuration run together (the slowest rank's lag included),
// agreeing on requirements and gathering collectives' outcomes, and the gather of every rank's
// results at the end.
json coordination_json(const coordination_time& c, double gather_s) {
  return {{"configuration_runs", c.steps},
          {"start_s", c.start_s},
          {"outcomes_s", c.outcomes_s},
          {"per_configuration_ms", c.per_step_s() * 1e3},
          {"gather_s", gather_s}};
}

// One run from the plan to the report: the state the failure paths (a rank died, a benchmark
// hung) share with the normal end.
class run_session {
 public:
  run_session(const run_request& req, report_context ctx, communicator& comm,
              const capabilities& caps, const option_values& options, std::vector<double> estimates)
      : m_req(req),
        m_ctx(std::move(ctx)),
        m_comm(comm),
        m_caps(caps),
        m_options(options),
        m_inventory(collect_system_inventory(caps)),
        m_progress(!req.quiet && comm.rank() == 0, std::move(estimates)),
        // Telemetry while the benchmarks run (one rank per host samples it): summaries on each
        // result, the traces in the report.
        m_sampler(telemetry::start_for_run(options, samples_host(comm), comm.hostname())) {}

  // Step 2: runs the plan; every rank's finished results are also kept for a partial report.
  std::vector<result> run(const run_plan& plan) {
    // Other ranks send rank 0 their inventory and each result as they go, so that the partial
    // report written after a failure (a rank died, a link went down) still holds them.
    if (multi() && !root())
      m_comm.publish(model::published_inventory, model::encode_inventory(m_inventory));
    m_run_start = std::chrono::steady_clock::now();
    m_planned = plan.total_configs();
    print_header();
    catch_stop_signals();
    m_comm.set_failure_handler(
        [this](const std::string& diagnosis) { on_rank_failure(diagnosis); });
    m_timeout_s = plan.settings.timeout_s;
    m_repetitions = plan.repetitions;
    m_canary.seconds_each = canary_seconds_for(plan.settings.rule.min_time_s);
    measure_canary("start");
    runner run(m_caps, m_comm);
    std::vector<result> results = run.run(plan, callbacks(), &stop_requested());
    m_coordination = run.coordination();
    if (m_sampler) m_sampler->stop();
    if (!stop_requested().load()) measure_canary("end");
    m_progress.finish();
    run_cleanups();  // scratch a benchmark registered and did not remove (it should have)
    return results;
  }

  // Steps 3 to 7 at the normal end (also after a signal stopped the runner).
  int finish(const std::vector<result>& results) {
    // Read before the gather: every host's sampling rank sends its traces to rank 0.
    const json* telemetry = telemetry_json();
    const auto gather_start = std::chrono::steady_clock::now();
    std::optional<gathered_results> g =
        gather_results(m_comm, results, m_inventory, stop_requested().load(), telemetry);
    if (!g) return exit_ok;  // another rank: rank 0 writes the report
    const double gather_s = seconds_since(gather_start);
    run_outcome o;
    o.interrupted = g->interrupted;
    o.signal = stop_signal_received();
    report_context ctx = m_ctx;
    if (multi()) ctx.coordination = coordination_json(m_coordination, gather_s);
    ctx.interrupted = o.interrupted;
    if (o.interrupted) {
      ctx.interrupted_reason = std::string("signal ") +
                               (o.signal != 0 ? strsignal(o.signal) : "on another rank") +
                               ": results finished so far";
    }
    const render_settings rs = render_options();
    const analysed_results a = analyse_results(
        std::move(*g), m_repetitions, m_ctx.benchmark_metadata, multi() ? &rs.outliers : nullptr);
    const written_report w = write_report(ctx, a, telemetry, m_req.output);
    render_report(w, a, rs);
    o.report_where_asked = w.where_asked;
    o.failed = count_results(w.view).failed;
    const bool in_file = w.where_asked && !report_on_stdout(m_req.output);
    o.hook_code = run_post_run_hooks(w, in_file ? m_req.output : "", m_options);
    if (o.interrupted) print_error(ctx.interrupted_reason + "; the report is marked interrupted");
    return exit_code_of(o);
  }

 private:
  [[nodiscard]] bool root() const { return m_comm.rank() == 0; }
  [[nodiscard]] bool multi() const { return m_comm.size() > 1; }
  [[nodiscard]] bool sampled() const { return m_sampler != nullptr; }

  // The same-run canary (canary.h), on rank 0. At the start the other ranks wait for it (they
  // would share its CPUs and memory); at the end they are already waiting for rank 0 to gather
  // (a barrier there could meet a rank that a signal stopped). The report carries what was
  // measured so far, a partial report included.
  void measure_canary(const std::string& at) {
    if (root()) {
      m_canary.fma_isa = canary_fma_isa();
      m_canary.cache_bytes = canary_cache_bytes();
      try {
        m_canary.points.push_back(measure_canary_point(at, m_canary.seconds_each));
        // On every CPU at once only alone: other ranks on this host wait for rank 0 on those CPUs.
        if (!multi())
          m_canary.all_cpus =
              measure_all_cpus(m_canary.points.back(), m_canary.cache_bytes, m_canary.seconds_each);
      } catch (const std::exception& e) {
        // Under a memory or address-space limit (ulimit -v, a cgroup) its arrays may be refused,
        // under a thread limit its threads: the report says so, and the results measured before
        // the end point are not lost to it.
        if (!m_canary.not_measured.empty()) m_canary.not_measured += "; ";
        m_canary.not_measured += "the " + at + " point: " + e.what();
      }
      m_ctx.canary = m_canary.to_json();
    }
    if (multi() && at == "start") m_comm.barrier();
  }

  [[nodiscard]] render_settings render_options() const {
    render_settings rs;
    rs.format = m_req.format;
    rs.report_on_stdout = report_on_stdout(m_req.output);
    rs.multi = multi();
    rs.per_rank = m_planned;
    rs.repetitions = m_repetitions;
    rs.outliers = outlier_options(m_options);
    return rs;
  }

  // The traces, read once the sampler stopped (or, on a failure path, as far as it got).
  const json* telemetry_json() {
    if (!m_sampler) return nullptr;
    m_telemetry = m_sampler->to_json();
    return &m_telemetry;
  }

  run_callbacks callbacks() {
    run_callbacks cb;
    cb.on_start = [this](const planned_benchmark& item, const config& cfg, std::size_t i,
                         std::size_t n) {
      m_progress.start(describe_config(*item.bench, cfg), i, n);
      publish_telemetry();
      if (m_sampler) m_sampler->begin_window();
    };
    cb.on_finished = [this](result& r) {
      if (m_sampler) m_sampler->end_window(r);
    };
    cb.on_result = [this](const result& r) { keep(r); };
    cb.on_hung = [this](const planned_benchmark& item, const config& cfg, double running) {
      on_hung(item, cfg, running);
    };
    return cb;
  }

  // The machine and the world, before anything runs (rank 0, with the console table).
  void print_header() const {
    if (!root() || m_req.format != "table") return;
    std::ostream& console = report_on_stdout(m_req.output) ? std::cerr : std::cout;
    const auto facts =
        header_facts(m_inventory, m_caps, m_comm.size(), m_comm.hostnames(), m_comm.backend());
    for (const auto& line : format_header(facts, console_width)) console << line << '\n';
    console << std::endl;
  }

  // A sampling rank other than rank 0 sends rank 0 its traces so far, for the partial report a
  // failure would leave: before the first configuration, then at most every tenth of the time run
  // so far (and not more than once a second): the copies rank 0 keeps then add up to about ten
  // times the final trace however long the run, while a lost host's traces lag by a tenth.
  void publish_telemetry() {
    if (!m_sampler || !multi() || root()) return;
    const double now =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - m_run_start).count();
    if (m_last_publish_s >= 0 && now - m_last_publish_s < std::max(1.0, 0.1 * now)) return;
    m_last_publish_s = now;
    m_comm.publish(model::published_telemetry,
                   model::encode_telemetry({m_comm.hostname(), now, m_sampler->to_json()}));
  }

  void keep(const result& r) {
    {
      std::lock_guard lock(m_results_mu);
      m_finished.push_back(r);
    }
    if (multi() && !root()) m_comm.publish(model::published_result, model::encode_result(r));
  }

  [[nodiscard]] std::vector<result> finished_so_far() {
    std::lock_guard lock(m_results_mu);
    return m_finished;
  }

  // The failure path: gather what finished (with `extra`), write it as a partial report, end.
  [[noreturn]] void fail(const std::string& why, std::vector<result> extra) {
    std::vector<result> finished = finished_so_far();
    for (auto& r : extra) finished.push_back(std::move(r));
    const written_report w =
        write_partial_report(m_ctx, gather_published(m_comm, finished, m_inventory, sampled()),
                             m_repetitions, telemetry_json(), m_req.output, why);
    run_cleanups();
    run_outcome o;
    o.aborted = true;
    o.report_where_asked = w.where_asked;
    std::_Exit(exit_code_of(o));
  }

  // A rank died, stopped answering, or an operation timed out (multi-rank runs; called from the
  // communicator's monitor thread). Rank 0 saves what finished on every rank and names the
  // culprit; the process then ends (the job cannot continue without that rank).
  [[noreturn]] void on_rank_failure(const std::string& diagnosis) {
    if (root()) {
      std::vector<result> hung;
      {
        std::lock_guard lock(m_hung_mu);
        hung = m_hung_results;
      }
      fail(diagnosis, std::move(hung));
    }
    print_error(diagnosis);
    run_cleanups();
    std::_Exit(exit_failures);
  }

  // The benchmark is stuck in a call that will not return. Save what finished, name the stuck
  // configuration, and end the process: there is no safe way to unwind that thread.
  [[noreturn]] void on_hung(const planned_benchmark& item, const config& cfg, double running) {
    result hung = make_result(*item.bench, cfg, m_comm.rank(), m_comm.hostname());
    hung.set_status(status::failed, reason_code::hung,
                    "hung: no return after " + std::to_string(static_cast<int>(running)) +
                        " s (timeout " + std::to_string(m_timeout_s) + " s)");
    const std::string what = describe_config(*item.bench, cfg);
    if (multi()) {
      // Rank 0 writes the report for the job, naming this rank (and anything else it knows).
      if (root()) {
        std::lock_guard lock(m_hung_mu);
        m_hung_results.push_back(hung);
      }
      m_comm.fail_job("timeout: " + what + " did not return after " +
                      std::to_string(static_cast<int>(running)) + " s");
    }
    fail("timeout: " + what + " on " + m_comm.hostname() + " (rank " +
             std::to_string(m_comm.rank()) + ") did not return",
         {std::move(hung)});
  }

  const run_request& m_req;
  report_context m_ctx;  // run.canary is added as it is measured
  canary m_canary;
  coordination_time m_coordination;  // the runner's, once it returned
  communicator& m_comm;
  const capabilities& m_caps;
  const option_values& m_options;
  const json m_inventory;
  progress_display m_progress;
  std::size_t m_planned = 0;  // this rank's configurations (what the progress counter counts)
  std::unique_ptr<telemetry::session> m_sampler;
  json m_telemetry;
  std::chrono::steady_clock::time_point m_run_start = std::chrono::steady_clock::now();
  double m_last_publish_s = -1;  // when this rank last published its traces (publish_telemetry)
  double m_timeout_s = 0;
  std::size_t m_repetitions = 1;  // each configuration's results merge into one (repetitions.h)
  std::mutex m_results_mu;
  std::vector<result> m_finished;  // guarded by m_results_mu
  std::mutex m_hung_mu;
  std::vector<result> m_hung_results;  // the configuration the watchdog found stuck, if any
};

}  // namespace

namespace {

// What decides whether the node leader can open every GPU of its host (node_gpus_reason).
node_gpu_view node_gpus_of(const capabilities& caps, const communicator& comm) {
  node_gpu_view v;
  v.cuda_visible = caps.cuda_device_count;
  const nvml::library& lib = nvml::library::instance();
  if (lib.available()) v.nvml_count = static_cast<int>(lib.device_count());
  if (const char* env = std::getenv("CUDA_VISIBLE_DEVICES")) v.visible_env = env;
  v.exclusive_process = caps.exclusive_process_gpus;
  const auto hosts = comm.hostnames();
  v.ranks_on_host = static_cast<int>(std::count(hosts.begin(), hosts.end(), comm.hostname()));
  return v;
}

}  // namespace

int run_pipeline(const run_request& req, int* argc, char*** argv) {
  auto comm = make_communicator(argc, argv);
  g_job_rank.store(comm->rank());
  g_job_size.store(comm->size());
  capabilities caps = probe_capabilities(comm->size());
  // One rank per GPU: each rank's one-GPU work (GEMMs, the training step) runs on its own GPU,
  // made current (its context opened) only before the first benchmark that needs it (run_one).
  caps.rank_gpu =
      caps.cuda.available ? gpu_for_local_rank(comm->local_rank(), caps.cuda_device_count) : -1;
  caps.node_gpus_reason = node_gpus_reason(node_gpus_of(caps, *comm));

  planned_run p = plan_run(req, *comm, caps);
  if (!p.refused.empty()) {
    if (comm->rank() == 0 || !p.refused.from_another_rank) print_error(p.refused.text);
    return exit_bad_input;
  }
  // Multi-rank runs: a communicating operation that takes longer fails the job, naming the rank.
  comm->set_op_timeout(op_timeout_option(p.options));
  p.plan.settings.options = &p.options;
  run_session session(req, make_context(req.command_line, p.plan, p.options, *comm, caps), *comm,
                      caps, p.options, std::move(p.estimates));
  const std::vector<result> results = session.run(p.plan);
  return session.finish(results);
}

}  // namespace infrabench
