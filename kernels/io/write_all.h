// The one write loop every file writer shares (reports, scratch data, training data sets): a
// write(2) may be interrupted by a signal or write less than asked, and a descriptor that is
// non-blocking (a pipe, a terminal) may refuse for a moment; each caller used to retry by hand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace infrabench::kernels::io {

// Writes all `n` bytes at `data` to `fd`: at the file position, or with pwrite at `offset` when
// given. Retries interrupted (EINTR) and short writes; a descriptor that would block (EAGAIN) is
// polled for up to a second at a time. Returns 0, or the errno of the write that failed (ENOSPC
// for a write that wrote nothing).
[[nodiscard]] int write_all(int fd, const void* data, std::size_t n,
                            std::optional<std::uint64_t> offset = std::nullopt);

}  // namespace infrabench::kernels::io
