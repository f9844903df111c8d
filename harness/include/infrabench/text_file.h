// Reading an input file the user named (a suite, a report, a baseline): whole, and bounded.
#pragma once

#include <cstddef>
#include <string>

namespace infrabench {

// Reads `path` whole; `what` names it in errors ("report", "suite file"). Throws user_error when
// it is a directory, cannot be opened or read, or holds more than `max_bytes`: a device such as
// /dev/zero is refused at the bound rather than read until memory runs out. A pipe
// (<(generate-suite)) is read as it comes.
[[nodiscard]] std::string read_text_file(const std::string& path, const std::string& what,
                                         std::size_t max_bytes);

}  // namespace infrabench
