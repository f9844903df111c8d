// The io_uring engine (liburing). Set-up follows fio's io_uring engine: SINGLE_ISSUER and
// DEFER_TASKRUN (completion work runs when we reap, not as interrupts), dropped one at a time when
// the kernel refuses them; registered buffers and files, SQPOLL and IOPOLL on request. Every
// option the kernel or device refuses becomes an unsupported_error with the reason, never a guess.
#include <liburing.h>
#include <sched.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "storage/engine.h"
#include "storage/target.h"

namespace infrabench::kernels::storage::detail {
namespace {

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

class io_uring_engine final : public read_engine {
 public:
  io_uring_engine(int fd, const engine_options& opts)
      : m_fd(fd),
        m_opts(opts),
        m_slots(opts.queue_depth),
        m_buf(static_cast<std::size_t>(opts.block_size) * opts.queue_depth, opts.buffer_align) {
    if (opts.iopoll && !opts.direct) {
      throw unsupported_error(
          "IOPOLL needs O_DIRECT (direct=1): polled completions bypass the page cache");
    }
    setup_ring();
    try {
      register_resources();
    } catch (...) {
      io_uring_queue_exit(&m_ring);
      throw;
    }
    m_free.reserve(opts.queue_depth);
    for (std::uint32_t s = opts.queue_depth; s-- > 0;) m_free.push_back(s);
    m_pending.reserve(opts.queue_depth);
  }

  ~io_uring_engine() override {
    bool drained = false;
    try {
      drain();
      drained = true;
    } catch (...) {
      // Destruction must not throw (e.g. called from a thread other than the ring's issuer).
    }
    io_uring_queue_exit(&m_ring);
    // Reads still in flight may write into the buffers after the ring is gone: never hand that
    // memory back to the allocator for reuse.
    if (!drained) m_buf.leak();
  }

  io_uring_engine(const io_uring_engine&) = delete;
  io_uring_engine& operator=(const io_uring_engine&) = delete;

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

  [[nodiscard]] std::string describe() const override {
    std::string d = "io_uring (setup flags: " + flag_names(m_flags) + ")";
    if (m_opts.fixed_buffers) d += ", registered buffers";
    if (m_opts.fixed_files) d += ", registered file";
    return d;
  }

 private:
  struct slot {
    std::uint64_t offset = 0;
    std::uint64_t issued_ns = 0;
  };

  void setup_ring() {
    unsigned base = 0;
    if (m_opts.sqpoll) base |= IORING_SETUP_SQPOLL;
    if (m_opts.iopoll) base |= IORING_SETUP_IOPOLL;
    // Optional flags in the order they are given up when the kernel refuses them (as fio does).
    std::vector<unsigned> optional;
    if (!m_opts.sqpoll) optional.push_back(IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
    optional.push_back(IORING_SETUP_COOP_TASKRUN);
    while (true) {
      unsigned extra = 0;
      for (unsigned f : optional) extra |= f;
      io_uring_params p{};
      p.flags = base | extra;
      if (m_opts.sqpoll) p.sq_thread_idle = 1000;  // ms before the poll thread sleeps
      const int ret = io_uring_queue_init_params(m_opts.queue_depth, &m_ring, &p);
      if (ret == 0) {
        m_flags = p.flags;
        return;
      }
      if (ret == -EINVAL && !optional.empty()) {
        optional.erase(optional.begin());
        continue;
      }
      const std::string what = "io_uring_setup(" + std::to_string(m_opts.queue_depth) +
                               " entries, " + flag_names(base) + "): " + std::strerror(-ret);
      if (ret == -EINVAL && base != 0)
        throw unsupported_error(what + " (the kernel refuses these flags)");
      if (ret == -EINVAL)
        throw storage_error(what + " (is queue_depth beyond the kernel's ring limit?)");
      if ((ret == -EPERM || ret == -EACCES) && m_opts.sqpoll) {
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
    if (m_opts.fixed_buffers) {
      std::vector<iovec> iov(m_opts.queue_depth);
      for (std::uint32_t s = 0; s < m_opts.queue_depth; ++s) {
        iov[s].iov_base = m_buf.data() + static_cast<std::size_t>(s) * m_opts.block_size;
        iov[s].iov_len = static_cast<std::size_t>(m_opts.block_size);
      }
      const int ret = io_uring_register_buffers(&m_ring, iov.data(), m_opts.queue_depth);
      if (ret < 0) {
        std::string why = "registering " + format_gib(m_opts.block_size * m_opts.queue_depth) +
                          " of buffers (IORING_REGISTER_BUFFERS) failed: " + std::strerror(-ret);
        if (ret == -ENOMEM) {
          why += " (the locked-memory limit is " + memlock_limit_text() +
                 "; raise ulimit -l, or use fixed_buffers=0)";
        }
        throw unsupported_error(why);
      }
    }
    if (m_opts.fixed_files) {
      const int ret = io_uring_register_files(&m_ring, &m_fd, 1);
      if (ret < 0) {
        throw unsupported_error(
            std::string("registering the file (IORING_REGISTER_FILES) failed: ") +
            std::strerror(-ret));
      }
    }
  }

  // Adds reads-in-flight x elapsed time since the last change to the queue-depth integral.
  void account(std::uint64_t now) {
    m_counters.inflight_integral +=
        static_cast<double>(m_inflight) * static_cast<double>(now - m_last_event) * 1e-9;
    m_last_event = now;
  }

  void submit(io_plan& plan) {
    const std::uint64_t bs = m_opts.block_size;
    while (m_inflight + m_pending.size() < m_opts.queue_depth && !m_free.empty()) {
      io_uring_sqe* sqe = io_uring_get_sqe(&m_ring);
      if (sqe == nullptr) break;
      const std::uint32_t s = m_free.back();
      m_free.pop_back();
      m_slots[s].offset = plan.next();
      std::byte* buf = m_buf.data() + static_cast<std::size_t>(s) * bs;
      const int fd = m_opts.fixed_files ? 0 : m_fd;
      if (m_opts.fixed_buffers) {
        io_uring_prep_read_fixed(sqe, fd, buf, static_cast<unsigned>(bs), m_slots[s].offset,
                                 static_cast<int>(s));
      } else {
        io_uring_prep_read(sqe, fd, buf, static_cast<unsigned>(bs), m_slots[s].offset);
      }
      if (m_opts.fixed_files) sqe->flags |= IOSQE_FIXED_FILE;
      io_uring_sqe_set_data64(sqe, s);
      m_pending.push_back(s);
    }
    flush_pending();
  }

  void flush_pending() {
    if (m_pending.empty()) return;
    int ret;
    do {
      ret = io_uring_submit(&m_ring);
    } while (ret == -EINTR);
    if (ret == -EAGAIN || ret == -EBUSY) {
      // The kernel is short of resources: reap first. With nothing in flight there is nothing to
      // reap (waiting would hang), so retry, but not forever.
      if (m_inflight > 0) return;
      if (++m_submit_retries > 10000) {
        throw storage_error(std::string("io_uring_submit: ") + std::strerror(-ret) +
                            " with no read in flight, 10000 times in a row");
      }
      sched_yield();
      return;
    }
    if (ret < 0) throw storage_error(std::string("io_uring_submit: ") + std::strerror(-ret));
    m_submit_retries = 0;
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
    io_uring_cqe* cqe = nullptr;
    int ret;
    do {
      ret = io_uring_wait_cqe(&m_ring, &cqe);
    } while (ret == -EINTR || ret == -EAGAIN);
    if (ret < 0) throw storage_error(std::string("io_uring_wait_cqe: ") + std::strerror(-ret));
    const std::uint64_t now = now_ns();
    account(now);
    const std::uint64_t bs = m_opts.block_size;
    unsigned head = 0, seen = 0;
    int error = 0;
    std::uint64_t error_offset = 0, short_bytes = 0;
    io_uring_for_each_cqe(&m_ring, head, cqe) {
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
        if (m_opts.verify) {
          verify_read(m_counters, m_opts.verify_seed, sl.offset,
                      m_buf.data() + static_cast<std::size_t>(s) * bs, bs);
        }
      }
      m_free.push_back(s);
    }
    io_uring_cq_advance(&m_ring, seen);
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
    if (error == EOPNOTSUPP && m_opts.iopoll) {
      throw unsupported_error(
          "the device does not support polled I/O (IOPOLL): " + std::string(std::strerror(error)) +
          " (its driver needs poll queues; for NVMe: nvme.poll_queues=N)");
    }
    if (error != 0) throw storage_error(read_error(error, error_offset, bs, m_opts.direct));
  }

  int m_fd;
  engine_options m_opts;
  io_uring m_ring{};
  unsigned m_flags = 0;
  std::vector<slot> m_slots;
  std::vector<std::uint32_t> m_free;
  std::vector<std::uint32_t> m_pending;  // prepared, not yet accepted by the kernel
  aligned_buffer m_buf;
  std::uint32_t m_inflight = 0;
  std::uint64_t m_target = 0;  // completions owed to run() calls so far
  std::uint64_t m_reaped = 0;
  std::uint64_t m_last_event = 0;
  std::uint32_t m_submit_retries = 0;  // -EAGAIN/-EBUSY in a row with nothing in flight
};

}  // namespace

bool io_uring_compiled_in() {
  return true;
}

std::unique_ptr<read_engine> make_io_uring_engine(int fd, const engine_options& opts) {
  return std::make_unique<io_uring_engine>(fd, opts);
}

}  // namespace infrabench::kernels::storage::detail
