// Reading an input file the user named (a suite, a report, a baseline): whole, and bounded.
#pragma once

#include <cstddef>
#include <string>

namespace infrabench {

// How long reading a pipe waits for its writer's next bytes before giving up.
inline constexpr double pipe_read_wait_s = 30;

// Reads `path` whole; `what` names it in errors ("report", "suite file"). Throws user_error (one
// line) when it cannot be opened or read, or holds more than `max_bytes` (a regular file is
// refused by its size, before a byte is read). Inputs are regular files: a directory, a device
// (/dev/zero, a terminal) or a socket is refused at once; a pipe (--suite <(generate-suite)) is
// read as it comes, each wait for more bounded by pipe_read_wait_s, and a FIFO that no process
// has open for writing is refused at once instead of waited on for ever.
[[nodiscard]] std::string read_text_file(const std::string& path, const std::string& what,
                                         std::size_t max_bytes);

}  // namespace infrabench
