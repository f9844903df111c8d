// The MLPerf Storage idea, measured for real: a data set of sample files read in a random order
// each epoch by reader threads into a ring of host batch buffers, consumed by a simulated
// accelerator that spends a fixed compute time per batch (a busy-wait, so it is exact).
// Accelerator utilisation AU = compute time / wall time, the first step excluded (it includes
// filling the pipeline). The accelerator idles whenever its next batch is not complete.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "storage/async_reader.h"
#include "storage/engine.h"
#include "storage/target.h"

namespace infrabench::kernels::storage {

struct dataloader_options {
  std::string root;  // data set directory (dataset_layout's paths)
  dataset_layout layout;
  std::uint64_t seed = 0;  // its data pattern (verify)
  std::string engine = "io_uring";
  std::uint32_t batch_size = 32;
  std::uint32_t prefetch = 4;       // batches in the host ring (being filled or waiting)
  std::uint32_t readers = 1;        // reader threads, each with its own ring
  std::uint32_t reader_depth = 16;  // reads in flight per reader
  std::uint64_t max_read = std::uint64_t{1} << 20;  // a sample is read in pieces of at most this
  bool direct = true;
  std::uint32_t direct_align = 512;
  bool verify = false;
  // This loader reads part `part` of `parts` of the data set: samples part, part + parts, ...
  // (hosts sharing one data set read disjoint samples). 1 part: all of it.
  std::uint64_t part = 0;
  std::uint64_t parts = 1;
  // Samples this loader reads each epoch.
  [[nodiscard]] std::uint64_t samples_in_part() const {
    return layout.samples > part ? (layout.samples - part + parts - 1) / parts : 0;
  }
};

struct epoch_result {
  std::uint64_t steps = 0;       // batches consumed
  double first_batch_s = 0;      // epoch start -> first batch complete (excluded from AU)
  double window_s = 0;           // end of the warm-up steps' compute -> end of the last step's
  double compute_s = 0;          // accelerator busy inside the window (as measured)
  double nominal_compute_s = 0;  // (steps - 1) x compute time per batch
  double stall_s = 0;            // accelerator waiting for data inside the window
  std::uint64_t window_samples = 0;
  std::uint64_t window_bytes = 0;
  std::uint64_t verify_failures = 0;
  std::string first_verify_failure;
  [[nodiscard]] double utilisation() const { return window_s > 0 ? compute_s / window_s : 0; }
};

class dataloader {
 public:
  // Starts the reader threads (they set up their rings and wait for an epoch). Throws
  // unsupported_error / storage_error from a reader's set-up.
  explicit dataloader(dataloader_options opts);
  ~dataloader();
  dataloader(const dataloader&) = delete;
  dataloader& operator=(const dataloader&) = delete;

  // One epoch: every sample of steps_per_epoch() batches once, in the order of `epoch_seed`, or
  // only its first `max_steps` batches (0 = all). The first `warmup_steps` steps (at least 1: the
  // pipeline fill) are left out of the window; leaving out prefetch + 1 also removes the head
  // start the readers get while the first batches compute. The calling thread is the
  // accelerator. Throws the first reader error.
  epoch_result run_epoch(double compute_s_per_batch, std::uint64_t epoch_seed,
                         std::uint64_t max_steps = 0, std::uint64_t warmup_steps = 1);
  [[nodiscard]] std::uint64_t steps_per_epoch() const { return m_steps; }
  [[nodiscard]] std::uint64_t slot_bytes() const { return m_slot; }

 private:
  struct sample_io;
  struct reader_cursor;
  // What a reader does next when it wants to start a sample.
  enum class sample_start { started, not_yet, epoch_ended };
  void reader_main(std::uint32_t index);
  // A reader's epoch: issue reads, submit, reap, until every position is read (or it ends early).
  void reader_epoch(async_reader& io, std::vector<sample_io>& live);
  [[nodiscard]] bool issue_reads(reader_cursor& c);
  [[nodiscard]] sample_start start_next_sample(reader_cursor& c);
  [[nodiscard]] sample_start wait_for_batch_buffer(reader_cursor& c);
  sample_io* open_sample(reader_cursor& c, std::uint64_t position);
  void queue_next_piece(reader_cursor& c);
  void reap_completions(reader_cursor& c);
  void finish_sample(sample_io& s);
  // run_epoch's steps, on the accelerator's (the caller's) thread.
  void start_epoch(std::uint64_t epoch_seed);
  void consume_batches(std::uint64_t steps, std::uint64_t warmup, std::uint64_t compute_ns,
                       epoch_result& r);
  void end_epoch(std::uint64_t steps, epoch_result& r);
  void fail(const std::string& what);
  [[nodiscard]] std::byte* slot_ptr(std::uint64_t position) const;

  dataloader_options m_opts;
  std::uint64_t m_steps = 0;
  std::uint64_t m_slot = 0;  // bytes per sample in a batch buffer (aligned for O_DIRECT)
  detail::aligned_buffer m_ring;

  // Epoch state shared with the readers.
  std::uint64_t m_epoch_seed = 0;
  std::atomic<std::uint64_t> m_next_position{0};
  std::atomic<std::uint64_t> m_consumed{0};               // steps the accelerator finished
  std::unique_ptr<std::atomic<std::uint32_t>[]> m_ready;  // completed samples per ring slot
  std::atomic<std::uint64_t> m_verify_failures{0};

  std::mutex m_mu;
  std::condition_variable m_cv;
  std::uint64_t m_generation = 0;  // bumped to start an epoch
  std::uint32_t m_idle = 0;        // readers waiting for the next epoch
  std::uint32_t m_started = 0;     // readers whose set-up finished
  bool m_stop = false;
  std::atomic<bool> m_failed{false};
  std::atomic<bool> m_stopping{false};  // the accelerator ended the epoch early (max_steps)
  std::string m_error;
  bool m_error_unsupported = false;
  std::string m_first_verify_failure;
  std::vector<std::thread> m_threads;
};

}  // namespace infrabench::kernels::storage
