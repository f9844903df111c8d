// What the build stamps when it links (cmake/git_stamp.cmake), rather than when CMake configures:
// the commit of the source tree, "-dirty" when tracked files differ from it, "unknown" outside a
// git checkout.
#pragma once

namespace infrabench {

[[nodiscard]] const char* build_commit();

}  // namespace infrabench
