// The reader factory and the psync reader (always compiled).
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <string>

#include "storage/async_reader.h"
#include "storage/engine.h"
#include "storage/target.h"

namespace infrabench::kernels::storage {
namespace {

// Each queued read is performed with pread at submit(); wait() hands back the results.
class psync_reader final : public async_reader {
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

std::unique_ptr<async_reader> make_async_reader(std::string_view engine, std::uint32_t depth) {
  if (depth == 0) throw std::invalid_argument("reader depth must be > 0");
  if (engine == "psync") return std::make_unique<psync_reader>();
  if (engine == "io_uring") return detail::make_io_uring_reader(depth);
  throw std::invalid_argument("unknown engine '" + std::string(engine) + "'");
}

}  // namespace infrabench::kernels::storage
