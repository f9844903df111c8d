#include "io/write_all.h"

#include <poll.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>

namespace infrabench::kernels::io {

int write_all(int fd, const void* data, std::size_t n, std::optional<std::uint64_t> offset) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = offset ? ::pwrite(fd, p, n, static_cast<off_t>(*offset)) : ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        // A non-blocking pipe or terminal that is full: wait until it drains (a second a poll),
        // then write again, as a blocking descriptor would have.
        pollfd pfd{fd, POLLOUT, 0};
        (void)::poll(&pfd, 1, 1000);
        continue;
      }
      return errno;
    }
    if (w == 0) return ENOSPC;  // nothing written and no error: a full device, as write(2) says
    p += w;
    n -= static_cast<std::size_t>(w);
    if (offset) *offset += static_cast<std::uint64_t>(w);
  }
  return 0;
}

}  // namespace infrabench::kernels::io
