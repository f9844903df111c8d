// The io_uring reader of the data loader: one ring per reader thread, set up like the read
// engine's (SINGLE_ISSUER|DEFER_TASKRUN where the kernel has them).
#include <liburing.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "storage/async_reader.h"
#include "storage/target.h"

namespace infrabench::kernels::storage::detail {
namespace {

class io_uring_reader final : public async_reader {
 public:
  explicit io_uring_reader(std::uint32_t depth) : m_depth(depth) {
    unsigned flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    while (true) {
      io_uring_params p{};
      p.flags = flags;
      const int ret = io_uring_queue_init_params(depth, &m_ring, &p);
      if (ret == 0) break;
      if (ret == -EINVAL && flags != 0) {
        flags = 0;
        continue;
      }
      throw unsupported_error("io_uring_setup(" + std::to_string(depth) +
                              " entries): " + std::strerror(-ret));
    }
  }
  ~io_uring_reader() override {
    try {
      drain();
    } catch (...) {
      // Nothing more to do; the ring's teardown cancels what is left.
    }
    io_uring_queue_exit(&m_ring);
  }
  io_uring_reader(const io_uring_reader&) = delete;
  io_uring_reader& operator=(const io_uring_reader&) = delete;

  void queue(const read_request& r) override {
    io_uring_sqe* sqe = io_uring_get_sqe(&m_ring);
    if (sqe == nullptr) throw std::logic_error("io_uring reader: more reads queued than its depth");
    io_uring_prep_read(sqe, r.fd, r.buf, r.len, r.offset);
    io_uring_sqe_set_data64(sqe, r.tag);
    ++m_queued;
  }
  void submit() override {
    if (m_queued == 0) return;
    int ret;
    do {
      ret = io_uring_submit(&m_ring);
    } while (ret == -EINTR);
    if (ret < 0) throw storage_error(std::string("io_uring_submit: ") + std::strerror(-ret));
    m_in_flight += static_cast<std::uint32_t>(ret);
    m_queued -= static_cast<std::uint32_t>(ret);
  }
  void wait(std::vector<read_completion>& out) override {
    if (m_in_flight == 0) return;
    io_uring_cqe* cqe = nullptr;
    int ret;
    do {
      ret = io_uring_wait_cqe(&m_ring, &cqe);
    } while (ret == -EINTR || ret == -EAGAIN);
    if (ret < 0) throw storage_error(std::string("io_uring_wait_cqe: ") + std::strerror(-ret));
    unsigned head = 0, seen = 0;
    io_uring_for_each_cqe(&m_ring, head, cqe) {
      out.push_back({io_uring_cqe_get_data64(cqe), cqe->res});
      ++seen;
    }
    io_uring_cq_advance(&m_ring, seen);
    m_in_flight -= seen;
  }
  void drain() override {
    // Queued reads are submitted too (they cannot be taken back from the ring), then everything
    // in flight is waited for: the reads write into the caller's buffers.
    submit();
    std::vector<read_completion> sink;
    while (m_in_flight > 0) {
      sink.clear();
      wait(sink);
    }
  }
  [[nodiscard]] std::uint32_t in_flight() const override { return m_in_flight + m_queued; }
  [[nodiscard]] std::uint32_t depth() const override { return m_depth; }

 private:
  io_uring m_ring{};
  std::uint32_t m_depth;
  std::uint32_t m_queued = 0;
  std::uint32_t m_in_flight = 0;
};

}  // namespace

std::unique_ptr<async_reader> make_io_uring_reader(std::uint32_t depth) {
  return std::make_unique<io_uring_reader>(depth);
}

}  // namespace infrabench::kernels::storage::detail
