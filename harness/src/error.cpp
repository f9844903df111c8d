#include "infrabench/error.h"

#include <cerrno>
#include <string>

namespace infrabench {

void throw_errno(std::string_view what) {
  throw_errno(errno, what);
}

void throw_errno(int err, std::string_view what) {
  throw std::system_error(err, std::generic_category(), std::string(what));
}

}  // namespace infrabench
