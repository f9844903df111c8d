// Where a shipped baseline is found when a user names it rather than giving a path
// (`accept --baseline template-cpu-node`; suites need no lookup: the shipped ones are compiled in,
// and share/infrabench/suites holds copies to read and adapt): the installed tree beside the
// executable
// (<prefix>/bin/infrabench, <prefix>/share/infrabench/<kind>: a relocatable install, found from
// /proc/self/exe), then the source tree a build came from (configs/<kind>), so that a build tree
// behaves as an installed one. A packaged build leaves the source tree out (it is not on the
// machines the package goes to).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace infrabench {

// The directory of the running executable; nullopt when /proc/self/exe cannot be read.
[[nodiscard]] std::optional<std::string> executable_dir();

// The directories that may hold shipped files of `kind` ("baselines"), in the order they are
// searched; only those that exist.
[[nodiscard]] std::vector<std::string> data_dirs(std::string_view kind);

// `arg` when it looks like a path (has a '/', or ends in .json and exists); otherwise the shipped
// file `<arg>.json` (or `arg` itself when it ends in .json) of `kind` from data_dirs, and only
// when nothing shipped has that name, a regular file `arg` in the working directory (a directory
// or file ./template-cpu-node never shadows the shipped baseline). user_error with one line when
// it is none of these, naming where it looked and what is shipped.
[[nodiscard]] std::string resolve_data_file(const std::string& arg, std::string_view kind);

}  // namespace infrabench
