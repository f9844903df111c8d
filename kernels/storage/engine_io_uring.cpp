// The io_uring engine (liburing): reader, writer and the table entry with its options. Set-up
// follows fio's io_uring engine: SINGLE_ISSUER and DEFER_TASKRUN (completion work runs when we
// reap, not as interrupts), dropped one at a time when the kernel refuses them; registered buffers
// and files, SQPOLL and IOPOLL on request. Every option the kernel or device refuses becomes an
// unsupported_error with the reason, never a guess.
#include <liburing.h>
#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "storage/async_reader.h"
#include "storage/engine.h"
#include "storage/engine_io_uring_options.h"
#include "storage/target.h"

namespace infrabench::kernels::storage::detail {
namespace {

// The settings a ring is made with, read once from the options.
struct ring_settings {
  std::uint32_t depth = 1;
  std::uint64_t block_size = 4096;
  bool direct = false;
  bool fixed_buffers = false;
  bool fixed_files = false;
  bool sqpoll = false;
  bool iopoll = false;
  std::uint32_t submit_batch = 0;  // 0: all prepared at once

  explicit ring_settings(const engine_options& o)
      : depth(o.queue_depth),
        block_size(o.block_size),
        direct(o.direct),
        fixed_buffers(o.option("fixed_buffers") != 0),
        fixed_files(o.option("fixed_files") != 0),
        sqpoll(o.option("sqpoll") != 0),
        iopoll(o.option("iopoll") != 0),
        submit_batch(static_cast<std::uint32_t>(o.option("submit_batch"))) {}
};

std::string memlock_limit_text() {
  rlimit rl{};
  if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0) return "unknown";
  if (rl.rlim_cur == RLIM_INFINITY) return "unlimited";
  return format_gib(static_cast<std::uint64_t>(rl.rlim_cur));
}

std::string flag_names(unsigned flags) {
  struct named {
    unsigned flag;
    const char* name;
  };
  static constexpr named all[] = {
      {IORING_SETUP_IOPOLL, "IOPOLL"},
      {IORING_SETUP_SQPOLL, "SQPOLL"},
      {IORING_SETUP_COOP_TASKRUN, "COOP_TASKRUN"},
      {IORING_SETUP_SINGLE_ISSUER, "SINGLE_ISSUER"},
      {IORING_SETUP_DEFER_TASKRUN, "DEFER_TASKRUN"},
  };
  std::string out;
  for (const auto& n : all) {
    if ((flags & n.flag) != 0) out += (out.empty() ? "" : "|") + std::string(n.name);
  }
  return out.empty() ? "none" : out;
}

// A ring with `depth` slots of block_size bytes each (slot s's buffer at s * block_size), set up
// and registered as the settings ask. Destroying it with I/O in flight leaks the buffers on
// purpose: the kernel may still write into them.
class uring {
 public:
  explicit uring(int fd, const ring_settings& s)
      : m_fd(fd), m_s(s), m_buf(static_cast<std::size_t>(s.block_size) * s.depth, 4096) {
    setup_ring();
    try {
      register_resources();
    } catch (...) {
      io_uring_queue_exit(&m_ring);
      throw;
    }
  }
  ~uring() {
    io_uring_queue_exit(&m_ring);
    if (m_leak) m_buf.leak();
  }
  uring(const uring&) = delete;
  uring& operator=(const uring&) = delete;

  [[nodiscard]] io_uring* get() { return &m_ring; }
  [[nodiscard]] std::byte* slot(std::uint32_t s) const {
    return m_buf.data() + static_cast<std::size_t>(s) * m_s.block_size;
  }
  // Marks the buffers as possibly still written by the kernel (I/O could not be drained).
  void leak_buffers() { m_leak = true; }

  // Prepares a read or write of `len` bytes at `offset` into/from slot `s`'s buffer.
  void prep(io_uring_sqe* sqe, bool write, std::uint32_t s, std::uint32_t len,
            std::uint64_t offset) const {
    const int fd = m_s.fixed_files ? 0 : m_fd;
    std::byte* buf = slot(s);
    if (m_s.fixed_buffers && write) {
      io_uring_prep_write_fixed(sqe, fd, buf, len, offset, static_cast<int>(s));
    } else if (m_s.fixed_buffers) {
      io_uring_prep_read_fixed(sqe, fd, buf, len, offset, static_cast<int>(s));
    } else if (write) {
      io_uring_prep_write(sqe, fd, buf, len, offset);
    } else {
      io_uring_prep_read(sqe, fd, buf, len, offset);
    }
    if (m_s.fixed_files) sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(sqe, s);
  }

  [[nodiscard]] std::string describe() const {
    std::string d = "io_uring (setup flags: " + flag_names(m_flags) + ")";
    if (m_s.fixed_buffers) d += ", registered buffers";
    if (m_s.fixed_files) d += ", registered file";
    return d;
  }

 private:
  void setup_ring() {
    unsigned base = 0;
    if (m_s.sqpoll) base |= IORING_SETUP_SQPOLL;
    if (m_s.iopoll) base |= IORING_SETUP_IOPOLL;
    // Optional flags in the order they are given up when the kernel refuses them (as fio does).
    std::vector<unsigned> optional;
    if (!m_s.sqpoll) optional.push_back(IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
    optional.push_back(IORING_SETUP_COOP_TASKRUN);
    while (true) {
      unsigned extra = 0;
      for (unsigned f : optional) extra |= f;
      io_uring_params p{};
      p.flags = base | extra;
      if (m_s.sqpoll) p.sq_thread_idle = 1000;  // ms before the poll thread sleeps
      const int ret = io_uring_queue_init_params(m_s.depth, &m_ring, &p);
      if (ret == 0) {
        m_flags = p.flags;
        return;
      }
      if (ret == -EINVAL && !optional.empty()) {
        optional.erase(optional.begin());
        continue;
      }
      const std::string what = "io_uring_setup(" + std::to_string(m_s.depth) + " entries, " +
                               flag_names(base) + "): " + std::strerror(-ret);
      if (ret == -EINVAL && base != 0)
        throw unsupported_error(what + " (the kernel refuses these flags)");
      if (ret == -EINVAL)
        throw storage_error(what + " (is queue_depth beyond the kernel's ring limit?)");
      if ((ret == -EPERM || ret == -EACCES) && m_s.sqpoll) {
        throw unsupported_error(what + " (SQPOLL needs CAP_SYS_NICE on kernels before 5.11)");
      }
      if (ret == -ENOMEM) {
        throw unsupported_error(what + " (locked-memory limit " + memlock_limit_text() +
                                ": raise ulimit -l)");
      }
      throw unsupported_error(what);
    }
  }

  void register_resources() {
    if (m_s.fixed_buffers) {
      std::vector<iovec> iov(m_s.depth);
      for (std::uint32_t s = 0; s < m_s.depth; ++s) {
        iov[s].iov_base = slot(s);
        iov[s].iov_len = static_cast<std::size_t>(m_s.block_size);
      }
      const int ret = io_uring_register_buffers(&m_ring, iov.data(), m_s.depth);
      if (ret < 0) {
        std::string why = "registering " + format_gib(m_s.block_size * m_s.depth) +
                          " of buffers (IORING_REGISTER_BUFFERS) failed: " + std::strerror(-ret);
        if (ret == -ENOMEM) {
          why += " (the locked-memory limit is " + memlock_limit_text() +
                 "; raise ulimit -l, or use fixed_buffers=0)";
        }
        throw unsupported_error(why);
      }
    }
    if (m_s.fixed_files) {
      const int ret = io_uring_register_files(&m_ring, &m_fd, 1);
      if (ret < 0) {
        throw unsupported_error(
            std::string("registering the file (IORING_REGISTER_FILES) failed: ") +
            std::strerror(-ret));
      }
    }
  }

  int m_fd;
  ring_settings m_s;
  io_uring m_ring{};
  unsigned m_flags = 0;
  aligned_buffer m_buf;
  bool m_leak = false;
};

// Submits what is prepared; returns how many the kernel took (0 when it is short of resources
// and I/O is in flight: reap first). `retries` counts refusals in a row with nothing in flight.
int submit_prepared(io_uring* ring, std::uint32_t inflight, std::uint32_t& retries) {
  int ret;
  do {
    ret = io_uring_submit(ring);
  } while (ret == -EINTR);
  if (ret == -EAGAIN || ret == -EBUSY) {
    // With nothing in flight there is nothing to reap (waiting would hang): retry, not forever.
    if (inflight > 0) return 0;
    if (++retries > 10000) {
      throw storage_error(std::string("io_uring_submit: ") + std::strerror(-ret) +
                          " with no I/O in flight, 10000 times in a row");
    }
    sched_yield();
    return 0;
  }
  if (ret < 0) throw storage_error(std::string("io_uring_submit: ") + std::strerror(-ret));
  retries = 0;
  return ret;
}

// Waits for at least one completion.
void wait_one(io_uring* ring) {
  io_uring_cqe* cqe = nullptr;
  int ret;
  do {
    ret = io_uring_wait_cqe(ring, &cqe);
  } while (ret == -EINTR || ret == -EAGAIN);
  if (ret < 0) throw storage_error(std::string("io_uring_wait_cqe: ") + std::strerror(-ret));
}

class io_uring_reader final : public read_engine {
 public:
  io_uring_reader(int fd, const engine_options& opts)
      : m_opts(opts), m_settings(opts), m_ring(fd, m_settings), m_slots(opts.queue_depth) {
    m_free.reserve(opts.queue_depth);
    for (std::uint32_t s = opts.queue_depth; s-- > 0;) m_free.push_back(s);
    m_pending.reserve(opts.queue_depth);
  }

  ~io_uring_reader() override {
    try {
      drain();
    } catch (...) {
      // Destruction must not throw (e.g. called from a thread other than the ring's issuer).
      m_ring.leak_buffers();
    }
  }

  io_uring_reader(const io_uring_reader&) = delete;
  io_uring_reader& operator=(const io_uring_reader&) = delete;

  void run_exact(io_plan& plan, std::uint64_t ios, latency_histogram& hist) override {
    m_exact = true;
    try {
      run(plan, ios, hist);
    } catch (...) {
      m_exact = false;
      throw;
    }
    m_exact = false;
  }

  void run(io_plan& plan, std::uint64_t ios, latency_histogram& hist) override {
    const std::uint64_t start = now_ns();
    m_last_event = start;
    m_target += ios;
    while (m_reaped < m_target) {
      submit(plan);
      if (m_inflight > 0) reap(&hist);
    }
    account(now_ns());
    m_counters.busy_s += static_cast<double>(now_ns() - start) * 1e-9;
  }

  void drain() override {
    while (m_inflight > 0 || !m_pending.empty()) {
      if (!m_pending.empty()) flush_pending();
      if (m_inflight > 0) reap(nullptr);
    }
  }

  [[nodiscard]] std::string describe() const override { return m_ring.describe(); }

 private:
  struct slot {
    std::uint64_t offset = 0;
    std::uint64_t issued_ns = 0;
  };

  // Adds reads-in-flight x elapsed time since the last change to the queue-depth integral.
  void account(std::uint64_t now) {
    m_counters.inflight_integral +=
        static_cast<double>(m_inflight) * static_cast<double>(now - m_last_event) * 1e-9;
    m_last_event = now;
  }

  void submit(io_plan& plan) {
    const auto bs = static_cast<std::uint32_t>(m_opts.block_size);
    while (m_inflight + m_pending.size() < m_opts.queue_depth && !m_free.empty() &&
           (!m_exact || m_issued < m_target)) {
      io_uring_sqe* sqe = io_uring_get_sqe(m_ring.get());
      if (sqe == nullptr) break;
      const std::uint32_t s = m_free.back();
      m_free.pop_back();
      m_slots[s].offset = plan.next();
      m_ring.prep(sqe, false, s, bs, m_slots[s].offset);
      m_pending.push_back(s);
      ++m_issued;
      if (m_settings.submit_batch != 0 && m_pending.size() >= m_settings.submit_batch) {
        flush_pending();
      }
    }
    flush_pending();
  }

  void flush_pending() {
    if (m_pending.empty()) return;
    const int ret = submit_prepared(m_ring.get(), m_inflight, m_submit_retries);
    if (ret == 0) return;
    // Issue time is taken after the submit call returned, as fio does for its clat.
    const std::uint64_t now = now_ns();
    account(now);
    const std::size_t n = std::min(static_cast<std::size_t>(ret), m_pending.size());
    for (std::size_t i = 0; i < n; ++i) m_slots[m_pending[i]].issued_ns = now;
    m_pending.erase(m_pending.begin(), m_pending.begin() + static_cast<std::ptrdiff_t>(n));
    m_inflight += static_cast<std::uint32_t>(n);
  }

  // Waits for at least one completion and reaps every one available; hist == nullptr drains.
  void reap(latency_histogram* hist) {
    wait_one(m_ring.get());
    const std::uint64_t now = now_ns();
    account(now);
    const std::uint64_t bs = m_opts.block_size;
    unsigned head = 0, seen = 0;
    int error = 0;
    std::uint64_t error_offset = 0, short_bytes = 0;
    io_uring_cqe* cqe = nullptr;
    io_uring_for_each_cqe(m_ring.get(), head, cqe) {
      ++seen;
      const auto s = static_cast<std::uint32_t>(io_uring_cqe_get_data64(cqe));
      const slot& sl = m_slots[s];
      if (cqe->res < 0 && error == 0) {
        error = -cqe->res;
        error_offset = sl.offset;
      } else if (cqe->res >= 0 && static_cast<std::uint64_t>(cqe->res) != bs && error == 0) {
        error = -1;
        error_offset = sl.offset;
        short_bytes = static_cast<std::uint64_t>(cqe->res);
      } else if (hist != nullptr && cqe->res >= 0) {
        hist->record(now - sl.issued_ns);
        if (m_opts.verify) verify_read(m_counters, m_opts, sl.offset, m_ring.slot(s), bs);
      }
      m_free.push_back(s);
    }
    io_uring_cq_advance(m_ring.get(), seen);
    m_inflight -= seen;
    if (hist == nullptr) return;  // draining: errors no longer matter
    m_reaped += seen;
    m_counters.ios += seen;
    m_counters.bytes += static_cast<std::uint64_t>(seen) * bs;
    if (error == -1) {
      throw storage_error("short read: " + std::to_string(short_bytes) + " of " +
                          std::to_string(bs) + " bytes at offset " + std::to_string(error_offset) +
                          " (did the target shrink?)");
    }
    if (error == EOPNOTSUPP && m_settings.iopoll) {
      throw unsupported_error(
          "the device does not support polled I/O (IOPOLL): " + std::string(std::strerror(error)) +
          " (its driver needs poll queues; for NVMe: nvme.poll_queues=N)");
    }
    if (error != 0) throw storage_error(read_error(error, error_offset, bs, m_opts.direct));
  }

  engine_options m_opts;
  ring_settings m_settings;
  uring m_ring;
  std::vector<slot> m_slots;
  std::vector<std::uint32_t> m_free;
  std::vector<std::uint32_t> m_pending;  // prepared, not yet accepted by the kernel
  std::uint32_t m_inflight = 0;
  std::uint64_t m_target = 0;  // completions owed to run() calls so far
  std::uint64_t m_reaped = 0;
  std::uint64_t m_issued = 0;  // reads prepared so far
  bool m_exact = false;        // run_exact: issue no read beyond m_target
  std::uint64_t m_last_event = 0;
  std::uint32_t m_submit_retries = 0;  // -EAGAIN/-EBUSY in a row with nothing in flight
};

// Writes a file front to back with queue_depth writes in flight: each free slot is filled and
// submitted, completions are reaped as they come. On an error the writes still in flight are
// waited for before throwing, so no buffer is written from after the engine is gone.
class io_uring_writer final : public write_engine {
 public:
  io_uring_writer(int fd, const engine_options& opts)
      : m_opts(opts), m_settings(opts), m_ring(fd, m_settings), m_slots(opts.queue_depth) {
    m_pending.reserve(opts.queue_depth);
  }
  ~io_uring_writer() override {
    // Only an error of the ring itself leaves writes in flight: keep their buffers alive.
    if (m_inflight > 0) m_ring.leak_buffers();
  }
  io_uring_writer(const io_uring_writer&) = delete;
  io_uring_writer& operator=(const io_uring_writer&) = delete;

  void write_file(std::uint64_t size, const fill_fn& fill, latency_histogram& hist) override {
    std::vector<std::uint32_t> free_slots;
    for (std::uint32_t s = m_opts.queue_depth; s-- > 0;) free_slots.push_back(s);
    std::vector<bool> used(m_opts.queue_depth, false);
    std::uint64_t next = 0;
    std::uint32_t retries = 0;
    std::string error;
    std::exception_ptr fill_error;
    // On any error nothing more is prepared, but what is in flight is waited for.
    auto stopped = [&] { return !error.empty() || fill_error; };
    while ((next < size && !stopped()) || m_inflight > 0 || !m_pending.empty()) {
      while (next < size && !stopped() && !free_slots.empty()) {
        io_uring_sqe* sqe = io_uring_get_sqe(m_ring.get());
        if (sqe == nullptr) break;
        const std::uint32_t s = free_slots.back();
        const auto len =
            static_cast<std::uint32_t>(std::min<std::uint64_t>(m_opts.block_size, size - next));
        try {
          fill(next, std::span(m_ring.slot(s), len), used[s]);
        } catch (...) {
          // The sqe stays unused: an empty no-op, so the ring's tail stays consistent.
          io_uring_prep_nop(sqe);
          io_uring_sqe_set_data64(sqe, nop_tag);
          m_pending.push_back(nop_tag);
          fill_error = std::current_exception();
          break;
        }
        free_slots.pop_back();
        used[s] = true;
        m_slots[s] = {next, len, 0};
        m_ring.prep(sqe, true, s, len, next);
        m_pending.push_back(s);
        next += len;
      }
      if (!m_pending.empty()) {
        const auto n = static_cast<std::size_t>(submit_prepared(m_ring.get(), m_inflight, retries));
        // Issue time is taken after the submit call returned, as for reads (fio's clat).
        const std::uint64_t now = now_ns();
        for (std::size_t k = 0; k < n; ++k) {
          if (m_pending[k] != nop_tag) m_slots[m_pending[k]].issued_ns = now;
        }
        m_pending.erase(m_pending.begin(), m_pending.begin() + static_cast<std::ptrdiff_t>(n));
        m_inflight += static_cast<std::uint32_t>(n);
      }
      if (m_inflight > 0) reap(hist, free_slots, error);
    }
    if (fill_error) std::rethrow_exception(fill_error);
    if (!error.empty()) throw storage_error(error);
  }

  [[nodiscard]] std::string describe() const override { return m_ring.describe(); }

 private:
  struct slot {
    std::uint64_t offset = 0;
    std::uint32_t len = 0;
    std::uint64_t issued_ns = 0;
  };
  static constexpr std::uint32_t nop_tag = ~std::uint32_t{0};  // the no-op of a failed fill

  // Reaps every completion available (waiting for one); the first error is kept in `error`.
  void reap(latency_histogram& hist, std::vector<std::uint32_t>& free_slots, std::string& error) {
    wait_one(m_ring.get());
    const std::uint64_t now = now_ns();
    unsigned head = 0, seen = 0;
    io_uring_cqe* cqe = nullptr;
    io_uring_for_each_cqe(m_ring.get(), head, cqe) {
      ++seen;
      const auto tag = io_uring_cqe_get_data64(cqe);
      if (tag == nop_tag) continue;
      const auto s = static_cast<std::uint32_t>(tag);
      const slot& sl = m_slots[s];
      if (cqe->res < 0 && error.empty()) {
        error = io_error("write", -cqe->res, sl.offset, sl.len, m_opts.direct);
      } else if (cqe->res >= 0 && static_cast<std::uint32_t>(cqe->res) != sl.len && error.empty()) {
        // The device took part of the write: a full disk stops there.
        error = "short write: " + std::to_string(cqe->res) + " of " + std::to_string(sl.len) +
                " bytes at offset " + std::to_string(sl.offset) + " (is the disk full?)";
      } else if (cqe->res >= 0) {
        hist.record(now - sl.issued_ns);
      }
      free_slots.push_back(s);
    }
    io_uring_cq_advance(m_ring.get(), seen);
    m_inflight -= seen;
  }

  engine_options m_opts;
  ring_settings m_settings;
  uring m_ring;
  std::vector<slot> m_slots;
  std::vector<std::uint32_t> m_pending;  // prepared, not yet accepted by the kernel
  std::uint32_t m_inflight = 0;
};

std::string io_uring_check(const engine_options& o) {
  if (o.option("iopoll") != 0 && !o.direct) {
    return "IOPOLL needs O_DIRECT (direct=1): polled completions bypass the page cache";
  }
  return {};
}

}  // namespace

const engine_ops& io_uring_engine_ops() {
  static const engine_ops ops{
      .name = "io_uring",
      .description = io_uring_description,
      .max_queue_depth = 32768,  // IORING_MAX_ENTRIES
      .queue_depth_limit = "the kernel's ring limit (IORING_MAX_ENTRIES)",
      .options = io_uring_options,
      .not_compiled_reason = {},
      .capability = "io_uring",
      .check = &io_uring_check,
      .make_reader = [](int fd, const engine_options& o) -> std::unique_ptr<read_engine> {
        return std::make_unique<io_uring_reader>(fd, o);
      },
      .make_writer = [](int fd, const engine_options& o) -> std::unique_ptr<write_engine> {
        return std::make_unique<io_uring_writer>(fd, o);
      },
      .make_async_reader = [](std::uint32_t depth) -> std::unique_ptr<async_reader> {
        return make_io_uring_reader(depth);
      },
  };
  return ops;
}

}  // namespace infrabench::kernels::storage::detail
