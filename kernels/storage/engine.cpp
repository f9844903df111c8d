// The engine factory, shared helpers and the psync engine (always compiled).
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "storage/data_pattern.h"
#include "storage/engine.h"
#include "storage/target.h"

namespace infrabench::kernels::storage {
namespace detail {

aligned_buffer::aligned_buffer(std::size_t bytes, std::size_t align) : m_size(bytes) {
  const std::size_t rounded = (bytes + align - 1) / align * align;
  m_data.reset(static_cast<std::byte*>(std::aligned_alloc(align, rounded == 0 ? align : rounded)));
  if (!m_data) throw std::bad_alloc();
  std::memset(m_data.get(), 0, rounded);  // first touch on the thread that will use it
}

void aligned_buffer::free_deleter::operator()(std::byte* p) const {
  std::free(p);
}

std::string read_error(int err, std::uint64_t offset, std::uint64_t bytes, bool direct) {
  std::string msg = "read of " + std::to_string(bytes) + " bytes at offset " +
                    std::to_string(offset) + " failed: " + std::strerror(err);
  if (err == EINVAL && direct) {
    msg +=
        " (O_DIRECT needs the block size and offsets to be multiples of the device's logical "
        "block size, and aligned memory)";
  }
  return msg;
}

void verify_read(engine_counters& c, std::uint64_t seed, std::uint64_t offset,
                 const std::byte* data, std::uint64_t bytes) {
  const auto bad = check_pattern(seed, offset, std::span(data, static_cast<std::size_t>(bytes)));
  if (!bad) return;
  if (c.verify_failures++ == 0) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "byte at offset %llu read as 0x%02x, written as 0x%02x",
                  static_cast<unsigned long long>(bad->offset), bad->found, bad->expected);
    c.first_verify_failure = buf;
  }
}

namespace {

// pread, one read in flight: the baseline every other engine must beat.
class psync_engine final : public read_engine {
 public:
  psync_engine(int fd, const engine_options& opts)
      : m_fd(fd),
        m_opts(opts),
        m_buf(static_cast<std::size_t>(opts.block_size), opts.buffer_align) {}

  void run(io_plan& plan, std::uint64_t ios, latency_histogram& hist) override {
    const std::uint64_t start = now_ns();
    const std::uint64_t bs = m_opts.block_size;
    for (std::uint64_t i = 0; i < ios; ++i) {
      const std::uint64_t offset = plan.next();
      const std::uint64_t t0 = now_ns();
      ssize_t n;
      do {
        n = pread(m_fd, m_buf.data(), static_cast<std::size_t>(bs), static_cast<off_t>(offset));
      } while (n < 0 && errno == EINTR);
      const std::uint64_t t1 = now_ns();
      if (n < 0) throw storage_error(read_error(errno, offset, bs, m_opts.direct));
      if (static_cast<std::uint64_t>(n) != bs) {
        throw storage_error("short read: " + std::to_string(n) + " of " + std::to_string(bs) +
                            " bytes at offset " + std::to_string(offset) +
                            " (did the target shrink?)");
      }
      hist.record(t1 - t0);
      m_counters.inflight_integral += static_cast<double>(t1 - t0) * 1e-9;
      if (m_opts.verify) verify_read(m_counters, m_opts.verify_seed, offset, m_buf.data(), bs);
    }
    m_counters.ios += ios;
    m_counters.bytes += ios * bs;
    m_counters.busy_s += static_cast<double>(now_ns() - start) * 1e-9;
  }

  void drain() override {}
  [[nodiscard]] std::string describe() const override { return "psync (pread, 1 in flight)"; }

 private:
  int m_fd;
  engine_options m_opts;
  aligned_buffer m_buf;
};

}  // namespace

std::unique_ptr<read_engine> make_psync_engine(int fd, const engine_options& opts) {
  if (opts.queue_depth != 1) {
    throw unsupported_error(
        "psync is synchronous: one read in flight per job (queue_depth=1); "
        "use jobs for concurrency");
  }
  if (opts.fixed_buffers || opts.fixed_files || opts.sqpoll || opts.iopoll) {
    throw unsupported_error("fixed_buffers, fixed_files, sqpoll and iopoll are io_uring options");
  }
  return std::make_unique<psync_engine>(fd, opts);
}

}  // namespace detail

std::vector<std::string> engine_names() {
  std::vector<std::string> names{"psync"};
  if (detail::io_uring_compiled_in()) names.emplace_back("io_uring");
  return names;
}

bool engine_compiled_in(std::string_view name) {
  return name == "psync" || (name == "io_uring" && detail::io_uring_compiled_in());
}

std::unique_ptr<read_engine> make_read_engine(std::string_view name, int fd,
                                              const engine_options& opts) {
  if (opts.block_size == 0 || opts.queue_depth == 0) {
    throw std::invalid_argument("block size and queue depth must be > 0");
  }
  if (name == "psync") return detail::make_psync_engine(fd, opts);
  if (name == "io_uring") return detail::make_io_uring_engine(fd, opts);
  throw std::invalid_argument("unknown engine '" + std::string(name) + "'");
}

}  // namespace infrabench::kernels::storage
