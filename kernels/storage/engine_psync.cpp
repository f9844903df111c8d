// The psync engine (always compiled): pread/pwrite, one I/O in flight, the baseline every other
// engine must beat. fio's psync engine.
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "storage/async_reader.h"
#include "storage/engine.h"
#include "storage/target.h"

namespace infrabench::kernels::storage::detail {
namespace {

class psync_reader final : public read_engine {
 public:
  psync_reader(int fd, const engine_options& opts)
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
      if (m_opts.verify) verify_read(m_counters, m_opts, offset, m_buf.data(), bs);
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

class psync_writer final : public write_engine {
 public:
  psync_writer(int fd, const engine_options& opts)
      : m_fd(fd),
        m_opts(opts),
        m_buf(static_cast<std::size_t>(opts.block_size), opts.buffer_align) {}

  void write_file(std::uint64_t size, const fill_fn& fill, latency_histogram& hist) override {
    for (std::uint64_t offset = 0; offset < size;) {
      const std::uint64_t len = std::min<std::uint64_t>(m_opts.block_size, size - offset);
      fill(offset, std::span(m_buf.data(), static_cast<std::size_t>(len)), offset > 0);
      const std::uint64_t t0 = now_ns();
      write_all(offset, len);
      const std::uint64_t t1 = now_ns();
      hist.record(t1 - t0);
      offset += len;
    }
  }

  [[nodiscard]] std::string describe() const override { return "psync (pwrite, 1 in flight)"; }

 private:
  // pwrite may take part of a write (a signal, the last blocks of a full disk): the rest is
  // written again, so that a full disk reports its error (ENOSPC) rather than a short count.
  void write_all(std::uint64_t offset, std::uint64_t len) {
    std::uint64_t done = 0;
    while (done < len) {
      const ssize_t n = pwrite(m_fd, m_buf.data() + done, static_cast<std::size_t>(len - done),
                               static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0)
        throw storage_error(io_error("write", errno, offset + done, len - done, m_opts.direct));
      if (n == 0) {
        throw storage_error("write of " + std::to_string(len - done) + " bytes at offset " +
                            std::to_string(offset + done) + " wrote nothing");
      }
      done += static_cast<std::uint64_t>(n);
    }
  }

  int m_fd;
  engine_options m_opts;
  aligned_buffer m_buf;
};

// The data loader's reader: each queued read is performed with pread at submit(); wait() hands
// back the results. Its depth is 1 whatever was asked (it is synchronous).
class psync_async_reader final : public async_reader {
 public:
  void queue(const read_request& r) override { m_queued.push_back(r); }
  void submit() override {
    for (const auto& r : m_queued) {
      ssize_t n;
      do {
        n = pread(r.fd, r.buf, r.len, static_cast<off_t>(r.offset));
      } while (n < 0 && errno == EINTR);
      m_done.push_back(
          {r.tag, n < 0 ? -static_cast<std::int64_t>(errno) : static_cast<std::int64_t>(n)});
    }
    m_queued.clear();
  }
  void wait(std::vector<read_completion>& out) override {
    out.insert(out.end(), m_done.begin(), m_done.end());
    m_done.clear();
  }
  void drain() override {
    m_queued.clear();
    m_done.clear();
  }
  [[nodiscard]] std::uint32_t in_flight() const override {
    return static_cast<std::uint32_t>(m_queued.size() + m_done.size());
  }
  [[nodiscard]] std::uint32_t depth() const override { return 1; }

 private:
  std::vector<read_request> m_queued;
  std::vector<read_completion> m_done;
};

}  // namespace

const engine_ops& psync_engine_ops() {
  static const engine_ops ops{
      .name = "psync",
      .description = "pread/pwrite, one I/O in flight (the baseline)",
      .max_queue_depth = 1,
      .queue_depth_limit = "psync is synchronous; use jobs for concurrency",
      .options = {},
      .not_compiled_reason = {},
      .capability = {},
      .check = nullptr,
      .make_reader = [](int fd, const engine_options& o) -> std::unique_ptr<read_engine> {
        return std::make_unique<psync_reader>(fd, o);
      },
      .make_writer = [](int fd, const engine_options& o) -> std::unique_ptr<write_engine> {
        return std::make_unique<psync_writer>(fd, o);
      },
      .make_async_reader = [](std::uint32_t) -> std::unique_ptr<async_reader> {
        return std::make_unique<psync_async_reader>();
      },
  };
  return ops;
}

}  // namespace infrabench::kernels::storage::detail
