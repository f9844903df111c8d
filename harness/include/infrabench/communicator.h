// The process group a run belongs to: a single process, or every rank of an MPI job launched by
// mpirun/srun. Only rank 0 writes the report, which holds every rank's results.
#pragma once

#include <memory>
#include <string>
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
  // Tears the whole job down after an unrecoverable error on one rank (MPI_Abort).
  virtual void abort(int code) = 0;
};

// MPI when compiled with it and launched by a launcher (OMPI_/PMI_/PMIX_/SLURM_ variables);
// otherwise a single process. Initialises MPI when it is used; the object finalises it.
[[nodiscard]] std::unique_ptr<communicator> make_communicator(int* argc, char*** argv);
[[nodiscard]] std::unique_ptr<communicator> make_single_communicator();

// True when the environment says a launcher started this process as one of several ranks.
[[nodiscard]] bool launched_by_mpi_launcher();

}  // namespace infrabench
