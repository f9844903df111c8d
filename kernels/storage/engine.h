// Read engines: the submission/completion loops storage/read times. An engine keeps queue_depth
// reads in flight on one file descriptor, takes offsets from an io_plan, and records each read's
// completion latency (fio's "clat": from the moment the read was handed to the kernel to the
// moment its completion was reaped) in a latency_histogram. Engines: "psync" (pread, one read in
// flight, the baseline) and "io_uring" (liburing; compiled in with INFRABENCH_WITH_IO_URING).
#pragma once

#include <time.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "storage/io_plan.h"
#include "storage/latency_histogram.h"

namespace infrabench::kernels::storage {

struct engine_options {
  std::uint32_t queue_depth = 1;
  std::uint64_t block_size = 4096;
  std::uint32_t buffer_align = 4096;  // O_DIRECT needs aligned memory; a page covers every device
  bool direct = false;                // the descriptor has O_DIRECT (for error messages)
  // io_uring set-up options; the psync engine refuses them.
  bool fixed_buffers = false;  // IORING_REGISTER_BUFFERS + READ_FIXED
  bool fixed_files = false;    // IORING_REGISTER_FILES + IOSQE_FIXED_FILE
  bool sqpoll = false;         // IORING_SETUP_SQPOLL: a kernel thread polls the submission queue
  bool iopoll = false;         // IORING_SETUP_IOPOLL: completions polled from the device
  // Check every byte read against the data pattern of this seed (scratch data only).
  bool verify = false;
  std::uint64_t verify_seed = 0;
};

struct engine_counters {
  std::uint64_t ios = 0;              // completions reaped
  std::uint64_t bytes = 0;            // bytes those completions returned
  double busy_s = 0;                  // time spent inside run()
  double inflight_integral = 0;       // integral of reads in flight over busy time (read-seconds)
  std::uint64_t verify_failures = 0;  // reads whose bytes differed from the pattern
  std::string first_verify_failure;

  void reset() { *this = {}; }
  // Time-weighted mean of reads in flight while the engine ran: the queue depth reached.
  [[nodiscard]] double mean_queue_depth() const {
    return busy_s > 0 ? inflight_integral / busy_s : 0;
  }
};

class read_engine {
 public:
  virtual ~read_engine() = default;
  // Reaps `ios` more completions, keeping queue_depth reads in flight; reads still in flight when
  // it returns carry over to the next call (so calls back to back run at a steady queue depth).
  // Each completion's latency goes into `hist`. Throws storage_error on an I/O error (with the
  // offset and the OS's reason) and unsupported_error when the device refuses a set-up option.
  virtual void run(io_plan& plan, std::uint64_t ios, latency_histogram& hist) = 0;
  // Waits for the reads still in flight (not counted, not recorded).
  virtual void drain() = 0;
  // What the engine actually set up ("io_uring: SINGLE_ISSUER|DEFER_TASKRUN").
  [[nodiscard]] virtual std::string describe() const = 0;

  [[nodiscard]] engine_counters& counters() { return m_counters; }

 protected:
  engine_counters m_counters;
};

// Engine names compiled into this build ("psync", and "io_uring" when built with liburing).
[[nodiscard]] std::vector<std::string> engine_names();
[[nodiscard]] bool engine_compiled_in(std::string_view name);

// Creates an engine reading `fd` (which the caller keeps open for the engine's lifetime). Call it
// on the thread that will call run(): io_uring rings are set up single-issuer. Throws
// unsupported_error when the engine is not compiled in or an option is not supported here, and
// std::invalid_argument for an unknown name.
[[nodiscard]] std::unique_ptr<read_engine> make_read_engine(std::string_view name, int fd,
                                                            const engine_options& opts);

namespace detail {
// CLOCK_MONOTONIC in nanoseconds (the vDSO: no system call).
[[nodiscard]] inline std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

[[nodiscard]] std::unique_ptr<read_engine> make_psync_engine(int fd, const engine_options& opts);
[[nodiscard]] std::unique_ptr<read_engine> make_io_uring_engine(int fd, const engine_options& opts);
[[nodiscard]] bool io_uring_compiled_in();

// Aligned, zero-filled I/O memory (free() on destruction).
struct aligned_buffer {
  aligned_buffer() = default;
  aligned_buffer(std::size_t bytes, std::size_t align);
  [[nodiscard]] std::byte* data() const { return m_data.get(); }
  [[nodiscard]] std::size_t size() const { return m_size; }
  // Gives up ownership without freeing (memory the kernel may still write into).
  void leak() { (void)m_data.release(); }

 private:
  struct free_deleter {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, free_deleter> m_data;
  std::size_t m_size = 0;
};

// The message for a failed read: offset, size, the OS's reason and, for EINVAL with O_DIRECT,
// the alignment rule.
[[nodiscard]] std::string read_error(int err, std::uint64_t offset, std::uint64_t bytes,
                                     bool direct);
// Checks a completed read against the pattern and records the first failure.
void verify_read(engine_counters& c, std::uint64_t seed, std::uint64_t offset,
                 const std::byte* data, std::uint64_t bytes);
}  // namespace detail

}  // namespace infrabench::kernels::storage
