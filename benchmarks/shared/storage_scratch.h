// What storage/read and storage/dataloader share: the run options (--scratch, --keep-scratch,
// --verify), where their data comes from (a scratch file or data set made once per run and
// removed at its end, or an existing file or device read as is), and axis helpers.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "infrabench/axis.h"
#include "infrabench/benchmark.h"
#include "infrabench/state.h"
#include "infrabench/storage_location.h"
#include "shared/storage_cluster.h"
#include "storage/engine.h"
#include "storage/target.h"

namespace infrabench::storage_bench {

namespace ks = infrabench::kernels::storage;

struct read_target {
  std::string path;
  ks::target_info info;     // of the path actually read (the scratch file for a directory)
  bool scratch = false;     // written by this run: contents known (verify) and removed at the end
  std::uint64_t seed = 0;   // its data pattern, when scratch
  std::uint64_t bytes = 0;  // how much of it to read
};

// "scratch": a scratch file of `size` bytes in a new directory under --scratch; a directory: the
// same, in that directory; a file or block device: read as is (read-only), its first `size` bytes
// (0 = all). Scratch data is made once and reused by later configurations of the run (it takes
// seconds to write). Warnings (kept scratch, mounted device, --verify on unknown data) go to
// the result. Throws ks::storage_error with a one-line reason.
// `direct`: the target is test-opened with O_DIRECT so a filesystem refusing it is named here,
// and `block_size` is checked against its O_DIRECT alignment (check_direct_block_size) before
// any scratch data is written: a 1 GiB scratch file takes seconds to write, a refusal should not.
[[nodiscard]] read_target resolve_read_target(infrabench::state& st, const std::string& target,
                                              std::uint64_t size, bool direct,
                                              std::uint64_t block_size);

// The scratch file another host (rank 0) made on a --scratch every host shares: its first `size`
// bytes, contents known (seed). Throws ks::storage_error when it cannot be read here.
[[nodiscard]] read_target shared_read_target(const scratch_data& made, std::uint64_t size,
                                             bool direct, std::uint64_t block_size);

// Throws ks::storage_error (one line, with the fix) when `block_size` is not a multiple of the
// O_DIRECT alignment `info` reports for `path`.
void check_direct_block_size(std::uint64_t block_size, const ks::target_info& info,
                             const std::string& path);

// A data set of sample files in a new directory under --scratch, made once per layout per run.
// Returns its root; `seed` receives its pattern seed.
[[nodiscard]] std::string resolve_dataset(infrabench::state& st, const ks::dataset_layout& layout,
                                          std::uint64_t& seed);

// Scratch files of another benchmark (the training step's JPEG data set): `create(dir)` writes at
// most `bytes` into a new directory under --scratch, once per (kind, key) per run, removed at the
// end like the storage benchmarks' own scratch data (kept with --keep-scratch). Returns the
// directory. Throws ks::storage_error when --scratch is not a directory or lacks the space.
[[nodiscard]] std::string resolve_scratch_files(
    infrabench::state& st, const std::string& kind, const std::string& key, std::uint64_t bytes,
    const std::function<void(const std::string& dir)>& create);
[[nodiscard]] bool verify_requested(const infrabench::state& st);

// ---- where it measured, as fio names its file and device -------------------------------------

// Records in the result where `path` is (storage_location.h): as the run named it (`given`),
// resolved, its filesystem, mount and block device; `file`: what is read or written under it
// (empty when `path` itself is). Returned for a disk_busy_meter over the timed region.
infrabench::storage_location record_location(infrabench::state& st, const std::string& given,
                                             const std::string& path, const std::string& file);
// The device's utilisation since `meter` was made, as fio's util=: the information metric
// disk_util_percent; withheld with the reason (absent, not 0) when there is no device to read.
void report_disk_util(infrabench::state& st, const infrabench::disk_busy_meter& meter,
                      const infrabench::storage_location& where);
// Declares disk_util_percent on a storage benchmark.
benchmark& declare_disk_util(benchmark& b);

// ---- engines: the axes and refusals generated from the engine table (kernels/storage/engine.h) --

// Adds the string axis `axis_name` choosing an engine of the table (values `defaults`).
benchmark& add_engine_axis(benchmark& b, const std::string& axis_name,
                           std::vector<std::string> defaults);
// Adds one int64 axis per engine option of the table, each at its default.
benchmark& add_engine_option_axes(benchmark& b);
// The engine options set on this configuration's axes (every engine's; validation sorts them).
void read_engine_options(const infrabench::state& st, ks::engine_options& opts);
// Why `ops` cannot run here with `opts` (not compiled in, its capability missing on this machine,
// an option it refuses): the table's generated refusal, or empty. Touches no disk.
[[nodiscard]] std::string engine_refusal(const infrabench::state& st, const ks::engine_ops& ops,
                                         const ks::engine_options& opts);
// The engine named by `axis`, skipping the configuration (st.skip) with engine_refusal's reason
// (in a multi-rank run: on every rank when any rank refuses; every rank must call it).
const ks::engine_ops& require_engine(infrabench::state& st, const std::string& axis,
                                     const ks::engine_options& opts);

// ---- multi-rank agreement: every rank calls these at the same point of a configuration --------
// Single process: trivial. Each waits for the slowest rank up to the configuration's own time
// limit, not only the operation timeout: another rank may still be writing its data.

// The first rank's problem ("rank r (host): <its text>") on every rank, empty when `mine` is
// empty on every rank. One all-reduce when no rank has one.
[[nodiscard]] std::string first_problem(infrabench::state& st, const std::string& mine);
// Element-wise maximum of `v` over the ranks, in place.
void max_over_ranks(infrabench::state& st, std::vector<double>& v);
// The free space storage benchmarks leave on --scratch's filesystem: --scratch-reserve, or the
// default rule (max(10%, 1 GiB)) when it is not given.
[[nodiscard]] std::optional<std::uint64_t> scratch_reserve(const infrabench::state& st);

}  // namespace infrabench::storage_bench
