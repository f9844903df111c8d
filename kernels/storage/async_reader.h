// A minimal asynchronous read interface for the data loader's reader threads: queue reads,
// submit them, wait for completions. Each engine of the table (engine.h) makes one: "io_uring"
// keeps them in flight in the kernel; "psync" performs each read with pread at submit (the
// synchronous baseline, one read at a time: its depth() is 1 whatever was asked).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace infrabench::kernels::storage {

struct read_request {
  int fd = -1;
  std::byte* buf = nullptr;
  std::uint32_t len = 0;
  std::uint64_t offset = 0;
  std::uint64_t tag = 0;
};

struct read_completion {
  std::uint64_t tag = 0;
  std::int64_t result = 0;  // bytes read, or -errno
};

class async_reader {
 public:
  virtual ~async_reader() = default;
  // At most depth() reads may be queued or in flight at once.
  virtual void queue(const read_request& r) = 0;
  virtual void submit() = 0;
  // Appends every available completion, waiting for at least one when reads are in flight.
  virtual void wait(std::vector<read_completion>& out) = 0;
  // Finishes or drops every queued and in-flight read (after an error), discarding results.
  virtual void drain() = 0;
  [[nodiscard]] virtual std::uint32_t in_flight() const = 0;
  [[nodiscard]] virtual std::uint32_t depth() const = 0;
};

// Create on the thread that will use it (io_uring rings are single-issuer). Throws
// std::invalid_argument for an unknown engine, unsupported_error when it is not compiled in or
// cannot be set up here.
[[nodiscard]] std::unique_ptr<async_reader> make_async_reader(std::string_view engine,
                                                              std::uint32_t depth);

namespace detail {
[[nodiscard]] std::unique_ptr<async_reader> make_io_uring_reader(std::uint32_t depth);
}  // namespace detail

}  // namespace infrabench::kernels::storage
