#include "storage/checkpoint.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace infrabench::kernels::storage {
namespace {

// MLPerf Storage v2.0 checkpointing: the checkpoint of each Llama 3 model (decimal bytes).
constexpr std::array<model_preset, 4> presets{{
    {"llama3-8b", 105'000'000'000ull},
    {"llama3-70b", 912'000'000'000ull},
    {"llama3-405b", 5'290'000'000'000ull},
    {"llama3-1t", 18'000'000'000'000ull},
}};

[[nodiscard]] std::string errno_text(int err) {
  return std::strerror(err);
}

[[nodiscard]] std::uint64_t file_seed(std::uint64_t seed, std::size_t index) {
  return sample_seed(seed, index);
}

// Pages of `fd` (size `bytes`) in the page cache, from mincore on a read-only mapping.
[[nodiscard]] std::uint64_t resident_pages(int fd, std::uint64_t bytes) {
  if (bytes == 0) return 0;
  const auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  void* map = mmap(nullptr, static_cast<std::size_t>(bytes), PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) throw storage_error("mmap for mincore: " + errno_text(errno));
  std::vector<unsigned char> vec(static_cast<std::size_t>((bytes + page - 1) / page));
  const int ret = mincore(map, static_cast<std::size_t>(bytes), vec.data());
  const int err = errno;
  munmap(map, static_cast<std::size_t>(bytes));
  if (ret != 0) throw storage_error("mincore: " + errno_text(err));
  std::uint64_t n = 0;
  for (unsigned char v : vec) n += v & 1u;
  return n;
}

}  // namespace

std::span<const model_preset> model_presets() {
  return presets;
}

const model_preset* find_model_preset(std::string_view name) {
  for (const auto& p : presets) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::uint64_t shard_plan::rank_bytes() const {
  std::uint64_t n = 0;
  for (std::uint64_t b : file_bytes) n += b;
  return n;
}

shard_plan plan_shards(std::uint64_t job_bytes, std::uint32_t ranks, std::uint32_t rank,
                       std::uint32_t shards_per_rank, std::uint64_t unit) {
  if (ranks == 0 || shards_per_rank == 0 || unit == 0) {
    throw std::invalid_argument("plan_shards: ranks, shards per rank and unit must be > 0");
  }
  if (rank >= ranks) throw std::invalid_argument("plan_shards: rank out of range");
  const std::uint64_t files = std::uint64_t{ranks} * shards_per_rank;
  // Nearest whole number of units, at least one per file.
  const std::uint64_t units = std::max(files, (job_bytes + unit / 2) / unit);
  shard_plan plan;
  plan.job_bytes = units * unit;
  for (std::uint64_t f = std::uint64_t{rank} * shards_per_rank;
       f < std::uint64_t{rank + 1} * shards_per_rank; ++f) {
    plan.file_bytes.push_back((units / files + (f < units % files ? 1 : 0)) * unit);
  }
  return plan;
}

job_figures job_figures_of(std::span<const rank_times> ranks) {
  if (ranks.empty()) throw std::invalid_argument("job_figures_of: no ranks");
  job_figures j;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const rank_times& t = ranks[r];
    if (!(t.save_s > 0) || !(t.restore_s > 0)) {
      throw std::invalid_argument("job_figures_of: rank " + std::to_string(r) +
                                  " has a time that is not positive");
    }
    j.bytes += t.bytes;
    if (t.save_s > j.save_s) {
      j.save_s = t.save_s;
      j.slowest_save = r;
    }
    if (t.restore_s > j.restore_s) {
      j.restore_s = t.restore_s;
      j.slowest_restore = r;
    }
  }
  j.write_gbps = static_cast<double>(j.bytes) / j.save_s / 1e9;
  j.read_gbps = static_cast<double>(j.bytes) / j.restore_s / 1e9;
  return j;
}

std::optional<sync_mode> parse_sync_mode(std::string_view name) {
  if (name == "fsync") return sync_mode::fsync;
  if (name == "fdatasync") return sync_mode::fdatasync;
  return std::nullopt;
}

std::string cache_state::describe() const {
  char buf[200];
  if (direct) {
    std::snprintf(
        buf, sizeof(buf), "read with O_DIRECT (%llu of %llu pages were in the page cache)",
        static_cast<unsigned long long>(resident), static_cast<unsigned long long>(pages));
  } else {
    std::snprintf(
        buf, sizeof(buf),
        "buffered read after dropping the files' pages (POSIX_FADV_DONTNEED): %llu of "
        "%llu pages still in the page cache (mincore)%s",
        static_cast<unsigned long long>(resident), static_cast<unsigned long long>(pages),
        resident > 0 ? "; a memory filesystem (tmpfs) keeps them: that is its storage" : "");
  }
  return buf;
}

checkpoint_shard::checkpoint_shard(run_directory& dir, std::vector<std::uint64_t> file_bytes,
                                   checkpoint_options opts)
    : m_dir(dir), m_files(std::move(file_bytes)), m_opts(std::move(opts)) {
  if (m_opts.io.block_size == 0) throw std::invalid_argument("checkpoint: write size must be > 0");
}

std::uint64_t checkpoint_shard::bytes() const {
  std::uint64_t n = 0;
  for (std::uint64_t b : m_files) n += b;
  return n;
}

std::string checkpoint_shard::file_name(std::size_t index) {
  char name[32];
  std::snprintf(name, sizeof(name), "shard-%05zu.bin", index);
  return name;
}

save_result checkpoint_shard::save() {
  save_result out;
  const std::uint64_t t0 = detail::now_ns();
  try {
    for (std::size_t i = 0; i < m_files.size(); ++i) write_one(i, out);
  } catch (...) {
    remove();  // a failed save leaves nothing behind
    throw;
  }
  out.seconds = static_cast<double>(detail::now_ns() - t0) * 1e-9;
  return out;
}

void checkpoint_shard::write_one(std::size_t index, save_result& out) {
  const std::string name = file_name(index);
  const std::string where = m_dir.path() + "/" + name;
  const unique_fd fd = m_dir.create_file(name, m_opts.io.direct ? O_DIRECT : 0);
  const stamped_pattern pattern(file_seed(m_opts.seed, index), m_opts.io.block_size);
  const std::atomic<bool>* cancel = m_opts.cancel;
  const fill_fn fill = [&](std::uint64_t offset, std::span<std::byte> buf, bool reused) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
      throw storage_error("interrupted while writing " + where);
    }
    if (reused) {
      pattern.restamp(offset, buf);
    } else {
      pattern.fill(offset, buf);
    }
  };
  try {
    const auto engine = make_write_engine(m_opts.engine, fd.get(), m_opts.io);
    engine->write_file(m_files[index], fill, out.write_latency);
  } catch (const storage_error& e) {
    throw storage_error(where + ": " + e.what());
  }
  const std::uint64_t s0 = detail::now_ns();
  const bool data_only = m_opts.sync == sync_mode::fdatasync;
  if ((data_only ? fdatasync(fd.get()) : fsync(fd.get())) != 0) {
    throw storage_error(std::string(data_only ? "fdatasync " : "fsync ") + where + ": " +
                        errno_text(errno));
  }
  out.sync_seconds += static_cast<double>(detail::now_ns() - s0) * 1e-9;
}

cache_state checkpoint_shard::prepare_restore() {
  cache_state c;
  c.direct = m_opts.io.direct;
  const auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  for (std::size_t i = 0; i < m_files.size(); ++i) {
    const unique_fd fd = m_dir.open_created(file_name(i));
    // The data is on the device (synced), so its pages are clean and may be dropped: only this
    // run's files, never the whole cache (drop_caches would slow every other user's I/O).
    if (!c.direct) (void)posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
    c.pages += (m_files[i] + page - 1) / page;
    c.resident += resident_pages(fd.get(), m_files[i]);
  }
  m_cache = c;
  return c;
}

restore_result checkpoint_shard::restore() {
  restore_result out;
  out.cache = m_cache;
  const std::uint64_t t0 = detail::now_ns();
  for (std::size_t i = 0; i < m_files.size(); ++i) {
    if (m_opts.cancel != nullptr && m_opts.cancel->load()) {
      throw storage_error("interrupted while reading the checkpoint back");
    }
    read_one(i, out);
  }
  out.seconds = static_cast<double>(detail::now_ns() - t0) * 1e-9;
  return out;
}

void checkpoint_shard::read_one(std::size_t index, restore_result& out) {
  const std::string name = file_name(index);
  const unique_fd fd = m_dir.open_created(name, m_opts.io.direct ? O_DIRECT : 0);
  const stamped_pattern pattern(file_seed(m_opts.seed, index), m_opts.io.block_size);
  engine_options io = m_opts.io;
  io.verify = true;
  std::uint64_t verify_ns = 0;
  io.verifier = [&](std::uint64_t offset, std::span<const std::byte> data) {
    const std::uint64_t v0 = detail::now_ns();
    auto bad = pattern.check(offset, data);
    verify_ns += detail::now_ns() - v0;
    return bad;
  };
  const std::uint64_t bs = io.block_size;
  const std::uint64_t blocks = m_files[index] / bs;
  latency_histogram unused;
  try {
    const auto engine = make_read_engine(m_opts.engine, fd.get(), io);
    io_plan plan(access_pattern::sequential, {0, blocks}, bs, 0);
    engine->run_exact(plan, blocks, unused);
    const auto& c = engine->counters();
    out.bytes += c.bytes;
    out.verify_failures += c.verify_failures;
    if (out.first_failure.empty() && !c.first_verify_failure.empty()) {
      out.first_failure = name + ": " + c.first_verify_failure;
    }
  } catch (const storage_error& e) {
    throw storage_error(m_dir.path() + "/" + name + ": " + e.what());
  }
  out.verify_seconds += static_cast<double>(verify_ns) * 1e-9;
}

void checkpoint_shard::remove() noexcept {
  for (std::size_t i = 0; i < m_files.size(); ++i) (void)m_dir.remove_file(file_name(i));
}

}  // namespace infrabench::kernels::storage
