// MPI communicator: compiled only with INFRABENCH_WITH_MPI.
#include <mpi.h>

#include <algorithm>
#include <stdexcept>

#include "infrabench/communicator.h"

namespace infrabench {
namespace {

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw std::runtime_error(std::string(what) + ": " + text);
}

class mpi_communicator final : public communicator {
 public:
  mpi_communicator(int* argc, char*** argv) {
    int provided = 0;
    // FUNNELED: only the main thread calls MPI; worker threads of benchmarks never do.
    check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    // Errors come back as codes so they become failed results instead of aborting the job.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &m_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &m_size);
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    MPI_Get_processor_name(name, &len);
    m_host.assign(name, static_cast<std::size_t>(len));
    MPI_Comm local;
    check_mpi(
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, m_rank, MPI_INFO_NULL, &local),
        "MPI_Comm_split_type");
    MPI_Comm_rank(local, &m_local_rank);
    MPI_Comm_free(&local);
  }
  ~mpi_communicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
  [[nodiscard]] int rank() const override { return m_rank; }
  [[nodiscard]] int size() const override { return m_size; }
  [[nodiscard]] int local_rank() const override { return m_local_rank; }
  [[nodiscard]] const std::string& hostname() const override { return m_host; }
  [[nodiscard]] std::string backend() const override { return "mpi"; }
  void barrier() override { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

  [[nodiscard]] std::vector<std::string> gather_strings(const std::string& mine) override {
    const int len = static_cast<int>(mine.size());
    std::vector<int> lens(m_rank == 0 ? static_cast<std::size_t>(m_size) : 0);
    check_mpi(MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD),
              "MPI_Gather");
    std::vector<int> displs;
    std::string all;
    if (m_rank == 0) {
      displs.resize(lens.size());
      long long total = 0;
      for (std::size_t i = 0; i < lens.size(); ++i) {
        displs[i] = static_cast<int>(total);
        total += lens[i];
      }
      all.resize(static_cast<std::size_t>(total));
    }
    check_mpi(MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(),
                          MPI_CHAR, 0, MPI_COMM_WORLD),
              "MPI_Gatherv");
    std::vector<std::string> out;
    for (std::size_t i = 0; i < lens.size(); ++i) {
      out.push_back(
          all.substr(static_cast<std::size_t>(displs[i]), static_cast<std::size_t>(lens[i])));
    }
    return out;
  }

  [[nodiscard]] std::string broadcast_string(const std::string& from_root) override {
    int len = static_cast<int>(from_root.size());
    check_mpi(MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
    std::string out = m_rank == 0 ? from_root : std::string(static_cast<std::size_t>(len), '\0');
    check_mpi(MPI_Bcast(out.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
    return out;
  }

  [[nodiscard]] double allreduce_max(double v) override {
    double out = v;
    check_mpi(MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
    return out;
  }

  void abort(int code) override { MPI_Abort(MPI_COMM_WORLD, code); }

 private:
  int m_rank = 0, m_size = 1, m_local_rank = 0;
  std::string m_host;
};

}  // namespace

std::unique_ptr<communicator> make_communicator(int* argc, char*** argv) {
  // A plain `infrabench run` must not pay for (or depend on) MPI singleton start-up.
  if (!launched_by_mpi_launcher()) return make_single_communicator();
  return std::make_unique<mpi_communicator>(argc, argv);
}

}  // namespace infrabench
