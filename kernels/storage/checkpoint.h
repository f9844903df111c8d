// Checkpoint save and restore as MLPerf Storage v2.0 measures them: every rank writes its shard
// of a model's checkpoint as new files (synced: the time includes fsync/fdatasync), the page
// cache is taken out of the way (O_DIRECT, or the files' pages dropped), every rank reads its
// shard back and every byte is checked, then the files are removed. The job's figure is the total
// bytes over the slowest rank's time. Only files a run_directory created are written or removed.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "storage/data_pattern.h"
#include "storage/engine.h"
#include "storage/latency_histogram.h"
#include "storage/target.h"

namespace infrabench::kernels::storage {

// A model's checkpoint size, from MLPerf Storage v2.0's checkpointing workload.
struct model_preset {
  std::string_view name;           // "llama3-8b"
  std::uint64_t checkpoint_bytes;  // decimal: 105 GB = 105e9 bytes
};
[[nodiscard]] std::span<const model_preset> model_presets();
[[nodiscard]] const model_preset* find_model_preset(std::string_view name);

// How a job's checkpoint is cut into files: ranks x shards_per_rank files, each a whole number of
// `unit`s (the write size: every write is whole, and O_DIRECT-aligned when the unit is), sizes
// differing by at most one unit.
struct shard_plan {
  std::uint64_t job_bytes = 0;            // every rank's files together (after rounding)
  std::vector<std::uint64_t> file_bytes;  // this rank's files
  [[nodiscard]] std::uint64_t rank_bytes() const;
};
// Rounds `job_bytes` to the nearest whole number of units (at least one per file) and gives rank
// `rank` its files. Throws std::invalid_argument for zero ranks, shards or unit, or rank out of
// range.
[[nodiscard]] shard_plan plan_shards(std::uint64_t job_bytes, std::uint32_t ranks,
                                     std::uint32_t rank, std::uint32_t shards_per_rank,
                                     std::uint64_t unit);

// One rank's save and restore, and the job's figures from all of them.
struct rank_times {
  std::uint64_t bytes = 0;
  double save_s = 0;
  double restore_s = 0;
};
struct job_figures {
  std::uint64_t bytes = 0;       // every rank's shard together
  double save_s = 0;             // the slowest rank's save
  double restore_s = 0;          // the slowest rank's restore
  std::size_t slowest_save = 0;  // index of that rank
  std::size_t slowest_restore = 0;
  double write_gbps = 0;  // bytes / save_s, GB = 1e9 bytes (MLPerf Storage's checkpoint figure)
  double read_gbps = 0;   // bytes / restore_s
};
// Total bytes over the slowest rank's time (MLPerf Storage). Throws std::invalid_argument when
// `ranks` is empty or a time is not positive.
[[nodiscard]] job_figures job_figures_of(std::span<const rank_times> ranks);

enum class sync_mode { fsync, fdatasync };
[[nodiscard]] std::optional<sync_mode> parse_sync_mode(std::string_view name);

struct checkpoint_options {
  std::string engine = "psync";
  engine_options io;  // queue_depth, block_size (= the write size), direct, engine options
  sync_mode sync = sync_mode::fsync;
  std::uint64_t seed = 0;  // each file's data is a stamped_pattern of (seed, file index)
  const std::atomic<bool>* cancel = nullptr;  // polled between writes; set: interrupted
};

// How the read-back avoided the page cache.
struct cache_state {
  bool direct = false;         // read with O_DIRECT
  std::uint64_t pages = 0;     // pages of the shard's files
  std::uint64_t resident = 0;  // of them in the page cache when the read began (mincore)
  [[nodiscard]] std::string describe() const;
};

struct save_result {
  double seconds = 0;       // first file created -> last file synced
  double sync_seconds = 0;  // of which in fsync/fdatasync
  latency_histogram write_latency;
};
struct restore_result {
  double seconds = 0;         // first open -> last byte read and checked
  double verify_seconds = 0;  // CPU time checking bytes (inside `seconds`)
  std::uint64_t bytes = 0;
  std::uint64_t verify_failures = 0;  // blocks that differed
  std::string first_failure;
  cache_state cache;
};

// One rank's shard in a run_directory: save() writes its files, restore() reads them back and
// checks every byte, remove() deletes them (the directory stays, for the next save). Throws
// storage_error naming the file, the offset and the OS's reason; a failed save removes what it
// wrote before throwing.
class checkpoint_shard {
 public:
  checkpoint_shard(run_directory& dir, std::vector<std::uint64_t> file_bytes,
                   checkpoint_options opts);

  save_result save();
  // Drops the files' pages from the page cache (POSIX_FADV_DONTNEED, after their data is on the
  // device) when reading buffered; O_DIRECT needs nothing. Returns what the read will find.
  cache_state prepare_restore();
  restore_result restore();
  void remove() noexcept;

  [[nodiscard]] std::uint64_t bytes() const;
  [[nodiscard]] static std::string file_name(std::size_t index);

 private:
  void write_one(std::size_t index, save_result& out);
  void read_one(std::size_t index, restore_result& out);

  run_directory& m_dir;
  std::vector<std::uint64_t> m_files;
  checkpoint_options m_opts;
  cache_state m_cache;
};

}  // namespace infrabench::kernels::storage
