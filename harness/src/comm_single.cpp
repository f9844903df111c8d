#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include "infrabench/backend_loader.h"
#include "infrabench/communicator.h"
#include "infrabench/error.h"
#include "infrabench/modules/mpi_api.h"

namespace infrabench {

// ---- communicator: the parts every backend shares
// ------------------------------------------------

void communicator::set_activity(std::string label, double config_timeout_s) {
  {
    std::lock_guard lock(m_mu);
    m_activity = std::move(label);
  }
  m_config_timeout_s.store(config_timeout_s);
  m_config_start_ns.store(now_ns());
}

std::string communicator::activity() const {
  std::lock_guard lock(m_mu);
  return m_activity;
}

double communicator::config_elapsed() const {
  const auto start = m_config_start_ns.load();
  return start == 0 ? 0.0 : static_cast<double>(now_ns() - start) * 1e-9;
}

void communicator::op_begin(double limit_s) noexcept {
  if (m_op_depth++ > 0) return;
  m_op_limit_s.store(limit_s, std::memory_order_relaxed);
  m_op_start_ns.store(now_ns(), std::memory_order_release);
}

void communicator::op_end() noexcept {
  if (--m_op_depth > 0) return;
  m_op_start_ns.store(0, std::memory_order_release);
}

double communicator::op_limit() const {
  const double own = m_op_limit_s.load(std::memory_order_relaxed);
  return own > 0 ? own : m_op_timeout_s.load(std::memory_order_relaxed);
}

void communicator::set_failure_handler(failure_handler fn) {
  std::lock_guard lock(m_mu);
  m_on_failure = std::move(fn);
}

void communicator::run_failure_handler(const std::string& diagnosis) {
  // Only the first failure is reported; a second one (another thread) waits for the exit.
  if (m_failing.exchange(true)) {
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  announce_failure(diagnosis);
  failure_handler fn;
  {
    std::lock_guard lock(m_mu);
    fn = m_on_failure;
  }
  if (fn) fn(diagnosis);
  std::cerr << "infrabench: error: " << diagnosis << std::endl;
  std::_Exit(1);
}

void communicator::fail_job(const std::string& why) {
  run_failure_handler(why);
}

namespace {

class single_communicator final : public communicator {
 public:
  single_communicator() {
    char buf[256] = {};
    if (gethostname(buf, sizeof(buf) - 1) == 0) m_host = buf;
    if (m_host.empty()) m_host = "localhost";
  }
  [[nodiscard]] int rank() const override { return 0; }
  [[nodiscard]] int size() const override { return 1; }
  [[nodiscard]] int local_rank() const override { return 0; }
  [[nodiscard]] const std::string& hostname() const override { return m_host; }
  [[nodiscard]] std::string backend() const override { return "single"; }
  void barrier() override {}
  [[nodiscard]] std::vector<std::string> gather_strings(const std::string& mine) override {
    return {mine};
  }
  [[nodiscard]] std::string broadcast_string(const std::string& from_root) override {
    return from_root;
  }
  [[nodiscard]] double allreduce_max(double v) override { return v; }
  void allreduce_sum(float* /*data*/, std::size_t /*n*/) override {}
  void allreduce_max(double* /*data*/, std::size_t /*n*/) override {}
  void abort(int code) override { std::_Exit(code); }

 private:
  std::string m_host;
};

}  // namespace

std::unique_ptr<communicator> make_single_communicator() {
  return std::make_unique<single_communicator>();
}

bool launched_by_mpi_launcher() {
  // Open MPI's mpirun, PMI/PMIx launchers (MPICH, srun --mpi=pmix) and Slurm all say so here.
  for (const char* var :
       {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS"}) {
    if (std::getenv(var)) return true;
  }
  return false;
}

std::optional<launcher_world> launcher_world_size() {
  // The job's size as the launcher states it: mpirun (Open MPI), PMI (MPICH, Intel MPI), an srun
  // job step. SLURM_NTASKS alone is also set in an sbatch script itself, which is one process.
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"}) {
    const char* v = std::getenv(var);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (*end == '\0' && n > 0) return launcher_world{var, static_cast<int>(n)};
  }
  // PMIx names the rank but not the size: assume several, the safe side.
  if (const char* v = std::getenv("PMIX_RANK"); v != nullptr && *v != '\0') {
    return launcher_world{"PMIX_RANK", 0};
  }
  return std::nullopt;
}

std::unique_ptr<communicator> make_communicator(int* argc, char*** argv) {
  // A plain `infrabench run` must not pay for (or depend on) MPI singleton start-up.
  if (!launched_by_mpi_launcher()) return make_single_communicator();
  const backends::loaded_module& m = backends::load("mpi");
  if (m.loaded()) {
    const auto& api = *reinterpret_cast<const infrabench_mpi_api*>(m.table);
    return std::unique_ptr<communicator>(
        static_cast<communicator*>(api.make_communicator(argc, argv)));
  }
  // Without MPI every rank would run alone and write its own report, each believing it is rank
  // 0: refuse before anything runs. A launcher that says one process is a single run.
  const auto world = launcher_world_size();
  if (world && world->size != 1) {
    throw user_error("launched by an MPI launcher (" + world->variable + " is set) but " +
                     m.reason.text + ": cannot run as one of several ranks");
  }
  return make_single_communicator();
}

}  // namespace infrabench
