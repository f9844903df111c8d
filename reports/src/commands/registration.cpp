// The subcommands of reports/ registered in one place, at static-init time (reports/ is an OBJECT
// library for this): one file registers them all, in this order, because the order of static
// initialisation across files is the link order's, which the unity batches and the build type
// change, and --help, completion and the man page list the subcommands in the order they register.
#include "common.h"

namespace infrabench::reports::commands {
namespace {

[[maybe_unused]] const bool reports_subcommands_registered = [] {
  for (auto* make :
       {&check_command, &baseline_command, &compare_command, &history_command, &report_command})
    register_subcommand(make());
  return true;
}();

}  // namespace
}  // namespace infrabench::reports::commands
