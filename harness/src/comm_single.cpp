#include <unistd.h>

#include <cstdlib>
#include <memory>

#include "infrabench/communicator.h"

namespace infrabench {
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
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_NTASKS"}) {
    if (std::getenv(var)) return true;
  }
  return false;
}

}  // namespace infrabench
