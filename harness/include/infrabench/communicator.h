// The process group a run belongs to: a single process, or every rank of an MPI job launched by
// mpirun/srun. Only rank 0 writes the report, which holds every rank's results.
//
// Multi-rank runs also get a per-operation timeout and a liveness channel: every communicating
// operation (a collective, a message exchange, the harness's own synchronisation) is bracketed by
// an op_scope; a monitor thread fails the job when one lasts longer than the operation timeout, or
// when a rank dies, and names the rank/host that stopped answering (see comm_mpi.cpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace infrabench {

class communicator {
 public:
  virtual ~communicator() = default;
  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int size() const = 0;
  [[nodiscard]] virtual int local_rank() const = 0;  // rank among the ranks on this host
  [[nodiscard]] virtual const std::string& hostname() const = 0;
  [[nodiscard]] virtual std::string backend() const = 0;  // "single" or "mpi"
  virtual void barrier() = 0;
  // Rank 0 receives every rank's string (in rank order); other ranks receive an empty vector.
  [[nodiscard]] virtual std::vector<std::string> gather_strings(const std::string& mine) = 0;
  // Rank 0's string, on every rank.
  [[nodiscard]] virtual std::string broadcast_string(const std::string& from_root) = 0;
  [[nodiscard]] virtual double allreduce_max(double v) = 0;
  // In place, element-wise over all ranks: the sum of `n` floats (data-parallel gradients), the
  // maximum of `n` doubles (a step's slowest rank and the configuration's elapsed time at once).
  virtual void allreduce_sum(float* data, std::size_t n) = 0;
  virtual void allreduce_max(double* data, std::size_t n) = 0;
  // Tears the whole job down after an unrecoverable error on one rank (MPI_Abort).
  virtual void abort(int code) = 0;

  // ---- hosts ("nodes") -------------------------------------------------------------------------
  [[nodiscard]] virtual int node_count() const { return 1; }
  // The world rank that is local rank 0 on this host: it runs the node-local benchmarks.
  [[nodiscard]] virtual int node_leader() const { return 0; }
  // Every rank's hostname, by rank.
  [[nodiscard]] virtual std::vector<std::string> hostnames() const { return {hostname()}; }

  // Every rank calls this at the start of each configuration with the same key (a hash of what it
  // is about to run). Returns when all ranks arrived, waiting without spinning so that the ranks
  // with nothing to do do not steal cycles from those measuring. Throws std::runtime_error when
  // the keys differ (the ranks would pair up wrong). `wait_limit_s`: how long a rank may wait
  // here for the others (they may still be measuring) before the job is failed. Returns true when
  // any rank passed `stop` (interrupted): all ranks then stop together.
  virtual bool sync_config(std::uint64_t /*key*/, double /*wait_limit_s*/, bool stop) {
    return stop;
  }

  // ---- per-operation timeout and liveness
  // -------------------------------------------------------- How long one operation may last
  // (seconds, 0 = no limit). Multi-rank runs only.
  void set_op_timeout(double seconds) { m_op_timeout_s.store(seconds); }
  [[nodiscard]] double op_timeout() const { return m_op_timeout_s.load(); }
  // What runs now (the configuration), shown when an operation times out, and that
  // configuration's own time limit, which benchmarks check consistently on every rank.
  void set_activity(std::string label, double config_timeout_s);
  [[nodiscard]] std::string activity() const;
  [[nodiscard]] double config_timeout() const { return m_config_timeout_s.load(); }
  [[nodiscard]] double config_elapsed() const;
  // Brackets one communicating operation (use op_scope). `limit_s` 0 = the operation timeout.
  // Called from the thread that calls MPI; nesting keeps the outermost.
  void op_begin(double limit_s = 0) noexcept;
  void op_end() noexcept;

  // Called from the monitor thread (or fail_job) with a one-line diagnosis when an operation timed
  // out or a rank died (rank 0), so the run can save what finished and end. It must not return.
  using failure_handler = std::function<void(const std::string& diagnosis)>;
  void set_failure_handler(failure_handler fn);
  // Ends the job because of `why` (e.g. a configuration hung on this rank): rank 0 runs the
  // failure handler; another rank tells rank 0 (which names it and writes the partial report)
  // and exits if rank 0 does not end the job soon.
  [[noreturn]] virtual void fail_job(const std::string& why);

  // Other ranks send rank 0 what they finished as they go (results, their inventory), so a partial
  // report after a failure still holds them. `kind`: 'R' result JSON, 'I' inventory JSON.
  virtual void publish(char /*kind*/, const std::string& /*payload*/) {}
  // Rank 0: what other ranks published so far, as (rank, payload), in arrival order.
  [[nodiscard]] virtual std::vector<std::pair<int, std::string>> published(char /*kind*/) const {
    return {};
  }

 protected:
  // Runs the failure handler once (later calls wait: the process is about to end).
  [[noreturn]] void run_failure_handler(const std::string& diagnosis);
  // Called first by run_failure_handler: a backend tells the other ranks the job is ending.
  virtual void announce_failure(const std::string& /*diagnosis*/) {}
  // Monitor side: the operation in progress, if any (start in steady-clock ns, 0 = none).
  [[nodiscard]] std::int64_t op_started_ns() const {
    return m_op_start_ns.load(std::memory_order_relaxed);
  }
  [[nodiscard]] double op_limit() const;
  [[nodiscard]] static std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

 private:
  std::atomic<double> m_op_timeout_s{0};
  std::atomic<double> m_op_limit_s{0};
  std::atomic<std::int64_t> m_op_start_ns{0};
  int m_op_depth = 0;  // only the MPI thread touches it
  std::atomic<double> m_config_timeout_s{0};
  std::atomic<std::int64_t> m_config_start_ns{0};
  mutable std::mutex m_mu;
  std::string m_activity;
  failure_handler m_on_failure;
  std::atomic<bool> m_failing{false};
};

// RAII bracket of one communicating operation.
class op_scope {
 public:
  explicit op_scope(communicator& c, double limit_s = 0) : m_c(c) { m_c.op_begin(limit_s); }
  ~op_scope() { m_c.op_end(); }
  op_scope(const op_scope&) = delete;
  op_scope& operator=(const op_scope&) = delete;

 private:
  communicator& m_c;
};

// MPI when launched by a launcher (OMPI_/PMI_/PMIX_/SLURM_ variables): the MPI module
// (libinfrabench_mpi.so) is loaded and initialises MPI; the object finalises it. Without a
// launcher, a single process. Throws user_error when the launcher says several ranks but the
// module or its MPI library cannot be loaded (the loader's reason): N independent "rank 0"s
// would each write a report.
[[nodiscard]] std::unique_ptr<communicator> make_communicator(int* argc, char*** argv);
[[nodiscard]] std::unique_ptr<communicator> make_single_communicator();

// True when the environment says a launcher started this process as one of several ranks.
[[nodiscard]] bool launched_by_mpi_launcher();

// The job size a launcher put in the environment, and the variable that said it; size 0 when
// the launcher names a rank but not the size (PMIx). nullopt without a launcher.
struct launcher_world {
  std::string variable;
  int size = 0;
};
[[nodiscard]] std::optional<launcher_world> launcher_world_size();

}  // namespace infrabench
