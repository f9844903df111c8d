#include "shared/storage_scratch.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <variant>

#include "infrabench/cli_extension.h"
#include "infrabench/communicator.h"
#include "infrabench/error.h"
#include "infrabench/options.h"

INFRABENCH_RUN_OPTION(storage_scratch_option, "scratch", ".",
                      "directory in which storage benchmarks create their scratch data (in a new "
                      "infrabench-scratch-XXXXXX directory, removed at the end)");
INFRABENCH_RUN_FLAG(storage_keep_scratch_option, "keep-scratch",
                    "keep the storage benchmarks' scratch data (its path is in the report)");
INFRABENCH_RUN_OPTION(storage_scratch_reserve_option, "scratch-reserve", "",
                      "free space storage benchmarks leave on the --scratch filesystem, in bytes "
                      "(512MiB, 2GiB; 0 for a filesystem kept for scratch data); default "
                      "max(10%, 1GiB)");
INFRABENCH_RUN_FLAG(
    storage_verify_option, "verify",
    "storage benchmarks check every byte read against what was written (scratch data)");

namespace infrabench::storage_bench {
namespace {

// --scratch-reserve is refused as bad input (exit 2) before anything runs.
[[maybe_unused]] const bool reserve_checked = register_pre_run_hook([](const option_values& o) {
  const auto it = o.find("scratch-reserve");
  if (it == o.end() || it->second.empty()) return;
  try {
    if (parse_bytes(it->second) < 0) throw user_error("must not be negative");
  } catch (const user_error& e) {
    throw user_error("--scratch-reserve: " + std::string(e.what()));
  }
});

namespace fs = std::filesystem;

// --scratch must name a directory: refused (exit 2) before anything runs, rather than every
// storage configuration failing after the rest ran. (Whether files can be made there is each
// configuration's to find out: the default "." may be read-only for a run without storage.)
[[maybe_unused]] const bool scratch_checked = register_pre_run_hook([](const option_values& o) {
  const auto it = o.find("scratch");
  if (it == o.end()) return;
  const std::string& dir = it->second;
  if (dir.empty()) throw user_error("--scratch: empty path (give a directory; . is the default)");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw user_error("--scratch " + dir + ": " +
                     (fs::exists(dir, ec) ? "not a directory" : "no such directory"));
  }
});

// Scratch data made in this process, one entry per (parent directory, kind): a new request of the
// same kind in the same parent replaces the old data, so at most one file and one data set per
// directory exist at a time. Entries are removed when replaced, at the end of the run (the
// harness's cleanup list), or at exit; the harness removes them too if it must exit without
// unwinding (hang watchdog).
class scratch_cache {
 public:
  static scratch_cache& instance() {
    static scratch_cache cache;
    return cache;
  }

  struct made {
    std::string path;
    std::uint64_t seed = 0;
    bool created_now = false;
  };

  made get(const std::string& parent_in, const std::string& kind, const std::string& key,
           std::uint64_t bytes, bool keep, std::optional<std::uint64_t> reserve,
           const std::function<std::string(const std::string& dir, std::uint64_t seed)>& create) {
    std::lock_guard lock(m_mu);
    const std::string parent = fs::absolute(parent_in).lexically_normal().string();
    const std::string slot = parent + "\n" + kind;
    if (auto it = m_entries.find(slot); it != m_entries.end()) {
      std::error_code ec;
      if (it->second.key == key && fs::exists(it->second.path, ec)) {
        return {it->second.path, it->second.seed, false};
      }
      drop(it->second);
      m_entries.erase(it);
    }
    const ks::target_info where = ks::inspect_target(parent);
    if (where.kind != ks::target_kind::directory) {
      throw ks::storage_error("scratch location " + parent + " is not a directory");
    }
    if (auto refusal = ks::check_free_space(parent, ks::filesystem_space(parent), bytes, reserve);
        !refusal.empty()) {
      throw ks::storage_error(refusal);
    }
    entry e;
    e.dir = std::make_unique<ks::scratch_dir>(parent);
    e.key = key;
    e.keep = keep;
    e.seed =
        std::random_device{}() ^ (static_cast<std::uint64_t>(getpid()) << 32) ^
        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    if (!keep) register_cleanup_path(e.dir->path());
    try {
      e.path = create(e.dir->path(), e.seed);
    } catch (...) {
      drop(e);
      throw;
    }
    if (keep) e.dir->keep();
    made out{e.path, e.seed, true};
    m_entries.emplace(slot, std::move(e));
    return out;
  }

 private:
  struct entry {
    std::unique_ptr<ks::scratch_dir> dir;
    std::string key;
    std::string path;
    std::uint64_t seed = 0;
    bool keep = false;
  };

  static void drop(entry& e) {
    if (!e.dir) return;
    if (!e.keep) {
      unregister_cleanup_path(e.dir->path());
      e.dir->remove();
    }
    e.dir.reset();
  }

  std::mutex m_mu;
  std::map<std::string, entry> m_entries;  // destroyed at exit: scratch_dir removes its files
};

}  // namespace

std::string resolve_scratch_files(infrabench::state& st, const std::string& kind,
                                  const std::string& key, std::uint64_t bytes,
                                  const std::function<void(const std::string& dir)>& create) {
  const bool keep = st.option_flag("keep-scratch");
  const auto made = scratch_cache::instance().get(st.option("scratch"), kind, key, bytes, keep,
                                                  scratch_reserve(st),
                                                  [&](const std::string& dir, std::uint64_t) {
                                                    create(dir);
                                                    return dir;
                                                  });
  if (keep) st.add_warning("scratch " + kind + " kept (--keep-scratch): " + made.path);
  return made.path;
}

bool verify_requested(const infrabench::state& st) {
  return st.option_flag("verify");
}

void check_direct_block_size(std::uint64_t block_size, const ks::target_info& info,
                             const std::string& path) {
  if (info.direct_align == 0 || block_size % info.direct_align == 0) return;
  throw ks::storage_error("block_size " + std::to_string(block_size) + " is not a multiple of " +
                          std::to_string(info.direct_align) + " bytes, the O_DIRECT alignment of " +
                          path + " (" + info.align_source +
                          "); use a multiple of it, or direct=0 for buffered reads");
}

namespace {

// An existing file or device, read as is (read-only): its first `size` bytes (0: all of it), with
// the warnings a reader of the numbers needs (mounted, --verify on unknown contents).
read_target existing_target(infrabench::state& st, const std::string& target,
                            const ks::target_info& info, std::uint64_t size, bool direct,
                            std::uint64_t block_size) {
  (void)ks::open_read_only(target, direct);  // unreadable, or O_DIRECT refused: say so now
  if (direct) check_direct_block_size(block_size, info, target);
  // Reading less than asked while the configuration says size=... would overstate what was
  // measured: refused, with what the target holds.
  if (size > info.size_bytes) {
    throw ks::storage_error("size=" + format_bytes(static_cast<std::int64_t>(size)) +
                            " is more than " + target + " holds (" +
                            format_bytes(static_cast<std::int64_t>(info.size_bytes)) +
                            "): give size=0 (all of it) or a size up to that");
  }
  read_target t;
  t.path = target;
  t.info = info;
  t.bytes = size == 0 ? info.size_bytes : size;
  if (!info.mounts.empty()) {
    std::string where;
    for (const auto& m : info.mounts) where += (where.empty() ? "" : ", ") + m;
    st.add_warning(target + " is mounted (" + where +
                   "): read-only access; other I/O to it changes these numbers");
  }
  if (verify_requested(st)) {
    st.add_warning("--verify checks only scratch data infrabench wrote; the contents of " + target +
                   " are unknown and were not checked");
  }
  return t;
}

// A scratch file this run (or rank 0) wrote: contents known (its pattern's seed), its O_DIRECT
// alignment checked against `block_size` when `direct`. The caller sets how much of it to read.
read_target scratch_file_target(const std::string& path, std::uint64_t seed, bool direct,
                                std::uint64_t block_size) {
  read_target t;
  t.path = path;
  t.info = ks::inspect_target(path);
  if (direct) check_direct_block_size(block_size, t.info, t.path);
  t.scratch = true;
  t.seed = seed;
  return t;
}

// A scratch file of `size` bytes in a new directory under `parent`, made once per run and reused.
read_target scratch_target(infrabench::state& st, const std::string& parent, std::uint64_t size,
                           bool direct, std::uint64_t block_size) {
  if (size == 0)
    throw ks::storage_error(
        "size=0 (the whole target) needs an existing file or device; scratch data needs a size");
  const bool keep = st.option_flag("keep-scratch");
  const auto made = scratch_cache::instance().get(
      parent, "file", std::to_string(size), size, keep, scratch_reserve(st),
      [&](const std::string& dir, std::uint64_t seed) {
        // A block size O_DIRECT cannot use is refused before the file is written (1 GiB takes
        // seconds), from an empty file in the same directory.
        if (direct) {
          check_direct_block_size(block_size, ks::inspect_new_file(dir), parent);
        }
        const std::string path = dir + "/data";
        ks::create_pattern_file(path, size, seed, st.interrupted_flag());
        return path;
      });
  // Checked on the file itself again: it may be an earlier configuration's, made without it.
  read_target t = scratch_file_target(made.path, made.seed, direct, block_size);
  t.bytes = size;
  if (keep) st.add_warning("scratch file kept (--keep-scratch): " + made.path);
  return t;
}

}  // namespace

read_target resolve_read_target(infrabench::state& st, const std::string& target,
                                std::uint64_t size, bool direct, std::uint64_t block_size) {
  if (target == "scratch")
    return scratch_target(st, st.option("scratch"), size, direct, block_size);
  const ks::target_info info = ks::inspect_target(target);
  if (info.kind == ks::target_kind::directory)
    return scratch_target(st, target, size, direct, block_size);
  return existing_target(st, target, info, size, direct, block_size);
}

read_target shared_read_target(const scratch_data& made, std::uint64_t size, bool direct,
                               std::uint64_t block_size) {
  (void)ks::open_read_only(made.path, direct);  // unreadable here, or O_DIRECT refused: say so
  read_target t = scratch_file_target(made.path, made.seed, direct, block_size);
  t.bytes = std::min(size, t.info.size_bytes);
  return t;
}

std::string resolve_dataset(infrabench::state& st, const ks::dataset_layout& layout,
                            std::uint64_t& seed) {
  const bool keep = st.option_flag("keep-scratch");
  const std::string key = std::to_string(layout.samples) + "x" +
                          std::to_string(layout.sample_size) + "/" +
                          std::to_string(layout.files_per_dir);
  // Each file also costs a few KiB of metadata; count a block per file on top of the data.
  const std::uint64_t need = layout.total_bytes() + layout.samples * 4096;
  const auto made = scratch_cache::instance().get(
      st.option("scratch"), "dataset", key, need, keep, scratch_reserve(st),
      [&](const std::string& dir, std::uint64_t s) {
        ks::create_dataset(dir, layout, s, st.interrupted_flag());
        return dir;
      });
  seed = made.seed;
  if (keep) st.add_warning("scratch data set kept (--keep-scratch): " + made.path);
  return made.path;
}

infrabench::storage_location record_location(infrabench::state& st, const std::string& given,
                                             const std::string& path, const std::string& file) {
  infrabench::storage_location where =
      infrabench::locate_storage(given, path, infrabench::default_location_roots());
  where.file = file;
  st.set_storage_location(where);
  return where;
}

void report_disk_util(infrabench::state& st, const infrabench::disk_busy_meter& meter,
                      const infrabench::storage_location& where) {
  std::string why;
  const auto busy = meter.percent(&why);
  if (!busy) return st.withhold_metric("disk_util_percent", why);
  st.add_metric("disk_util_percent", "%", *busy, true,
                "time " + where.stat_device + " was busy (io_ticks, field 10 of " +
                    where.stat_file +
                    ", ms) over the wall time of the timed region, warm-up included, capped at "
                    "100 as fio's util=; it counts all I/O to the device, not only this run's",
                infrabench::metric_role::information);
}

benchmark& declare_disk_util(benchmark& b) {
  return b.produces("disk_util_percent", "%", infrabench::better::higher,
                    infrabench::metric_role::information);
}

benchmark& add_engine_axis(benchmark& b, const std::string& axis_name,
                           std::vector<std::string> defaults) {
  std::vector<std::string> choices = ks::all_engine_names();
  std::string text;
  for (const ks::engine_ops* e : ks::engine_table()) {
    text += (text.empty() ? "" : "; ") + std::string(e->name) + ": " + std::string(e->description);
  }
  return b.add_string_axis(axis_name, std::move(defaults), choice_axis(text, std::move(choices)));
}

benchmark& add_engine_option_axes(benchmark& b) {
  for (const ks::engine_ops* e : ks::engine_table()) {
    for (const ks::option_spec& o : e->options) {
      if (b.find_axis(o.name) != nullptr) continue;  // an option two engines share: one axis
      const std::string what = std::string(e->name) + " option: " + std::string(o.description);
      b.add_int64_axis(
          std::string(o.name), {o.default_value},
          o.is_switch() ? switch_axis(what)
                        : int_axis(what, static_cast<double>(o.min), static_cast<double>(o.max)));
    }
  }
  return b;
}

void read_engine_options(const infrabench::state& st, ks::engine_options& opts) {
  for (const ks::engine_ops* e : ks::engine_table()) {
    for (const ks::option_spec& o : e->options) {
      if (const axis_value* v = find_axis(st.get_config(), o.name)) {
        if (const auto* i = std::get_if<std::int64_t>(v)) opts.engine_specific.set(o.name, *i);
      }
    }
  }
}

std::string engine_refusal(const infrabench::state& st, const ks::engine_ops& ops,
                           const ks::engine_options& opts) {
  if (!ops.compiled_in()) return ks::validate_engine_options(ops, opts);
  // The harness probes each capability once; the requirement of the same name says why not.
  for (const requirement* r : {&req::io_uring}) {
    if (ops.capability != r->name) continue;
    if (auto why = r->check(st.caps()); !why.empty()) {
      return std::string(ops.name) + " unavailable: " + why;
    }
  }
  return ks::validate_engine_options(ops, opts);
}

const ks::engine_ops& require_engine(infrabench::state& st, const std::string& axis,
                                     const ks::engine_options& opts) {
  const ks::engine_ops* ops = ks::find_engine(st.get_string(axis));
  if (ops == nullptr) st.fail("unknown engine '" + st.get_string(axis) + "'");  // axis choices
  // Agreed by every rank of a multi-rank run: a rank that skipped alone would leave the others
  // waiting at the next agreement.
  const std::string mine = engine_refusal(st, *ops, opts);
  if (auto why = first_problem(st, mine); !why.empty()) st.skip(mine.empty() ? why : mine);
  return *ops;
}

std::optional<std::uint64_t> scratch_reserve(const infrabench::state& st) {
  const std::string v = st.option("scratch-reserve");
  if (v.empty()) return std::nullopt;
  return static_cast<std::uint64_t>(parse_bytes(v));  // validated before the run
}

namespace {
// How long a rank may wait for the others at an agreement point: the configuration's limit (the
// others may still be writing), with the margin the runner gives multi-rank configurations.
double agreement_limit(const communicator& comm) {
  const double config = comm.config_timeout() > 0 ? comm.config_timeout() * 1.25 + 5 : 0;
  return std::max(config, comm.op_timeout());
}
}  // namespace

std::string first_problem(infrabench::state& st, const std::string& mine) {
  communicator& comm = st.comm();
  if (comm.size() == 1) return mine;
  const op_scope scope(comm, agreement_limit(comm));
  if (comm.allreduce_max(mine.empty() ? 0.0 : 1.0) == 0) return {};
  const auto all = comm.gather_strings(mine);
  std::string first;
  const auto hosts = comm.hostnames();
  for (std::size_t r = 0; r < all.size() && first.empty(); ++r) {
    if (all[r].empty()) continue;
    first =
        "rank " + std::to_string(r) + " (" + (r < hosts.size() ? hosts[r] : "?") + "): " + all[r];
  }
  return comm.broadcast_string(first);
}

void max_over_ranks(infrabench::state& st, std::vector<double>& v) {
  communicator& comm = st.comm();
  if (comm.size() == 1) return;
  const op_scope scope(comm, agreement_limit(comm));
  comm.allreduce_max(v.data(), v.size());
}

}  // namespace infrabench::storage_bench
