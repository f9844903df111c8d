// Storage engines as tables, as fio's ioengine_ops are: each engine (psync, io_uring, ...) is one
// engine_ops entry that names itself, states its limits, lists its own options (self-describing:
// the benchmarks' axes, help text and refusals are generated from them) and makes its readers
// and writers. Adding an engine is its source file plus one line in engine_table() (engine.cpp);
// no benchmark changes.
//
// A read engine keeps queue_depth reads in flight on one file descriptor, takes offsets from an
// io_plan, and records each read's completion latency (fio's "clat": from the moment the read was
// handed to the kernel to the moment its completion was reaped) in a latency_histogram. A write
// engine writes a new file front to back the same way (a checkpoint shard).
#pragma once

#include <time.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/data_pattern.h"
#include "storage/io_plan.h"
#include "storage/latency_histogram.h"

namespace infrabench::kernels::storage {

class async_reader;

// One engine-specific option, described once: its name is also the benchmarks' axis name.
struct option_spec {
  std::string_view name;         // "fixed_buffers"
  std::string_view description;  // one line, for help text
  std::int64_t default_value = 0;
  std::int64_t min = 0;
  std::int64_t max = 1;  // [0, 1]: a switch
  [[nodiscard]] bool is_switch() const { return min == 0 && max == 1; }
};

// Values of engine-specific options, by name; an option not set has its default.
class option_values {
 public:
  void set(std::string_view name, std::int64_t value);
  [[nodiscard]] std::optional<std::int64_t> find(std::string_view name) const;
  [[nodiscard]] const std::vector<std::pair<std::string, std::int64_t>>& all() const {
    return m_values;
  }

 private:
  std::vector<std::pair<std::string, std::int64_t>> m_values;
};

struct engine_options {
  std::uint32_t queue_depth = 1;
  std::uint64_t block_size = 4096;
  std::uint32_t buffer_align = 4096;  // O_DIRECT needs aligned memory; a page covers every device
  bool direct = false;                // the descriptor has O_DIRECT (for error messages)
  // Check every byte read against the data pattern of this seed (scratch data only), or with
  // `verifier` when set (data of another pattern: checkpoints' stamped_pattern).
  bool verify = false;
  std::uint64_t verify_seed = 0;
  std::function<std::optional<pattern_mismatch>(std::uint64_t offset,
                                                std::span<const std::byte> data)>
      verifier;
  // The engine's own options (engine_ops::options); validate_engine_options checks them.
  option_values engine_specific;

  // An option's value: as set, else `fallback` (the engine passes its option_spec default).
  [[nodiscard]] std::int64_t option(std::string_view name, std::int64_t fallback = 0) const {
    return engine_specific.find(name).value_or(fallback);
  }
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
  // As run(), but never issues a read beyond the `ios` asked for (a file read once, front to
  // back: nothing is read past its end, no read is left in flight).
  virtual void run_exact(io_plan& plan, std::uint64_t ios, latency_histogram& hist) {
    run(plan, ios, hist);
  }
  // Waits for the reads still in flight (not counted, not recorded).
  virtual void drain() = 0;
  // What the engine actually set up ("io_uring: SINGLE_ISSUER|DEFER_TASKRUN").
  [[nodiscard]] virtual std::string describe() const = 0;

  [[nodiscard]] engine_counters& counters() { return m_counters; }

 protected:
  engine_counters m_counters;
};

// Produces the bytes of the file at [offset, offset + out.size()) just before they are written.
// `reused`: `out` already holds what an earlier call made for another offset (a multiple of
// block_size away), so a pattern that only differs in a few bytes can patch them
// (stamped_pattern::restamp) instead of writing the whole buffer again.
using fill_fn = std::function<void(std::uint64_t offset, std::span<std::byte> out, bool reused)>;

class write_engine {
 public:
  virtual ~write_engine() = default;
  // Writes bytes [0, size) of the (new, empty) file front to back in block_size pieces (the last
  // one shorter when size is not a multiple), keeping queue_depth writes in flight; `fill` makes
  // each piece's bytes before it is submitted, while earlier pieces are in flight. Each write's
  // completion latency goes into `hist`. Returns when every write completed (not synced). Throws
  // storage_error on an I/O error or a short write, naming the offset and the OS's reason (a full
  // disk: "No space left on device"); no write is in flight when it throws.
  virtual void write_file(std::uint64_t size, const fill_fn& fill, latency_histogram& hist) = 0;
  [[nodiscard]] virtual std::string describe() const = 0;
};

// One engine: its name, its limits and its options, and the factories. Stateless and constant.
struct engine_ops {
  std::string_view name;         // "io_uring"
  std::string_view description;  // one line
  // Most I/Os one instance keeps in flight, and why (psync: 1, it is synchronous).
  std::uint32_t max_queue_depth = 1;
  std::string_view queue_depth_limit;
  std::span<const option_spec> options;
  // Empty when compiled into this build; else why not ("INFRABENCH_WITH_IO_URING=OFF").
  std::string_view not_compiled_reason;
  // The run-time capability it needs (the harness probes it: "io_uring"), or empty.
  std::string_view capability;
  // Rules across settings that option ranges cannot state (IOPOLL needs O_DIRECT): the refusal,
  // or empty. May be null.
  std::string (*check)(const engine_options&) = nullptr;
  // Factories (only called when compiled in and validated). Call them on the thread that will
  // use the object: io_uring rings are set up single-issuer. They throw unsupported_error when
  // the kernel, device or a resource limit refuses a set-up option.
  std::unique_ptr<read_engine> (*make_reader)(int fd, const engine_options&) = nullptr;
  std::unique_ptr<write_engine> (*make_writer)(int fd, const engine_options&) = nullptr;
  std::unique_ptr<async_reader> (*make_async_reader)(std::uint32_t depth) = nullptr;

  [[nodiscard]] bool compiled_in() const { return not_compiled_reason.empty(); }
  [[nodiscard]] const option_spec* find_option(std::string_view option) const;
};

// Every engine this source knows, compiled in or not, in the order help text lists them.
[[nodiscard]] std::span<const engine_ops* const> engine_table();
// The engine named `name`, or null.
[[nodiscard]] const engine_ops* find_engine(std::string_view name);
// Every engine name known / compiled into this build ("psync", and "io_uring" with liburing).
[[nodiscard]] std::vector<std::string> all_engine_names();
[[nodiscard]] std::vector<std::string> engine_names();
[[nodiscard]] bool engine_compiled_in(std::string_view name);

// The refusal for running `ops` with `opts`, generated from the table (empty when they suit it):
// not compiled in; queue depth beyond its limit; an option it does not have set to anything but
// that option's default (whose engine is named); one of its own options out of range; its own
// check(). Needs no file and touches no disk.
[[nodiscard]] std::string validate_engine_options(const engine_ops& ops,
                                                  const engine_options& opts);

// Help text of every engine and its options, generated from the table (one line each).
[[nodiscard]] std::string describe_engines();

// Creates an engine reading (writing) `fd`, which the caller keeps open for the engine's
// lifetime. Throws std::invalid_argument for an unknown name or a zero block size or queue
// depth, and unsupported_error when validate_engine_options refuses or the engine cannot be set
// up here.
[[nodiscard]] std::unique_ptr<read_engine> make_read_engine(std::string_view name, int fd,
                                                            const engine_options& opts);
[[nodiscard]] std::unique_ptr<write_engine> make_write_engine(std::string_view name, int fd,
                                                              const engine_options& opts);

// The simple public read API (token shards, checkpoints, any file a benchmark did not write
// itself): reads bytes [offset, offset + out.size()) of `path` into `out` with `engine`, at most
// `queue_depth` reads of at most `block_size` bytes in flight. direct: O_DIRECT (offset, sizes
// and out's address must then be multiples of the file's O_DIRECT alignment). Opens the file
// read-only. Throws storage_error (missing file, short file, I/O error) or unsupported_error.
struct read_range_options {
  std::string engine = "psync";
  std::uint32_t queue_depth = 1;
  std::uint64_t block_size = std::uint64_t{1} << 20;
  bool direct = false;
};
void read_range(const std::string& path, std::uint64_t offset, std::span<std::byte> out,
                const read_range_options& opts = {});

namespace detail {
// CLOCK_MONOTONIC in nanoseconds (the vDSO: no system call).
[[nodiscard]] inline std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

// The engines (each defined in its own file; engine_io_uring_none.cpp when not compiled in).
[[nodiscard]] const engine_ops& psync_engine_ops();
[[nodiscard]] const engine_ops& io_uring_engine_ops();

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

// The message for a failed read or write: offset, size, the OS's reason and, for EINVAL with
// O_DIRECT, the alignment rule.
[[nodiscard]] std::string io_error(std::string_view op, int err, std::uint64_t offset,
                                   std::uint64_t bytes, bool direct);
[[nodiscard]] inline std::string read_error(int err, std::uint64_t offset, std::uint64_t bytes,
                                            bool direct) {
  return io_error("read", err, offset, bytes, direct);
}
// Checks a completed read (opts.verifier, else the pattern of opts.verify_seed) and records the
// first failure.
void verify_read(engine_counters& c, const engine_options& opts, std::uint64_t offset,
                 const std::byte* data, std::uint64_t bytes);
}  // namespace detail

}  // namespace infrabench::kernels::storage
