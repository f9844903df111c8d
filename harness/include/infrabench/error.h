// Error types shared by the harness and the CLI.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace infrabench {

// Bad input from the user (command line, suite file, output path). The CLI prints the message as
// one line and exits with code 2; nothing has been run yet when one of these is thrown.
class user_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws std::system_error carrying errno and the call that failed ("open /x: No such file").
[[noreturn]] void throw_errno(std::string_view what);
[[noreturn]] void throw_errno(int err, std::string_view what);

}  // namespace infrabench
