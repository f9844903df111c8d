// The system inventory written into every report: what machine and software produced the numbers.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/capabilities.h"

namespace infrabench {

// This host's inventory: hostname, CPU (model, sockets/cores/threads, ISA flags, caches), memory,
// NUMA layout (hwloc), OS and kernel, block devices, GPUs, library versions, build information.
// Never throws: a part that cannot be read is recorded as null (or with an "error" field).
[[nodiscard]] nlohmann::json collect_system_inventory(const capabilities& caps);

// Build information alone (version, git commit, compiler, flags, backends compiled in).
[[nodiscard]] nlohmann::json build_info_json();

// Parsers of sysfs/procfs text, separate so they are unit-tested with fixed strings.
namespace sysfs {
// "/proc/meminfo" text -> value of `key` in bytes (the file says kB), or -1 when absent.
[[nodiscard]] long long meminfo_bytes(const std::string& meminfo_text, const std::string& key);
// "/sys/block/X/queue/scheduler" text "mq-deadline [none] kyber" -> "none".
[[nodiscard]] std::string active_scheduler(const std::string& text);
// "/etc/os-release" text -> PRETTY_NAME, unquoted.
[[nodiscard]] std::string os_pretty_name(const std::string& os_release_text);
// "0-3,8,10-11" (a cpulist) -> {0,1,2,3,8,10,11}.
[[nodiscard]] std::vector<int> parse_cpulist(const std::string& text);
}  // namespace sysfs

}  // namespace infrabench
