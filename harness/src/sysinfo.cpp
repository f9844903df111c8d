// The system inventory written into every report, and the sysfs/procfs text parsers behind it.
// Everything here reads; nothing may throw out of collect_system_inventory(): a section that
// fails is recorded with an "error" field, a value that cannot be read is null.
#include "infrabench/sysinfo.h"

#include "infrabench/devices.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <hwloc.h>

#include "infrabench/build_info.h"
#include "infrabench/build_stamp.h"
#include "infrabench/compiled_in.h"
#include "infrabench/machine_load.h"
#include "infrabench/report.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace infrabench::detail {
// Defined in probe_cuda.cpp (cudaGetDeviceProperties + PCIe link from sysfs) and in
// probe_cuda_none.cpp (an empty array), so this file needs no CUDA headers.
nlohmann::json describe_gpus();
}  // namespace infrabench::detail

namespace infrabench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string_view trim(std::string_view s) {
  const auto not_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) == 0; };
  const auto b = std::find_if(s.begin(), s.end(), not_space);
  const auto e = std::find_if(s.rbegin(), s.rend(), not_space).base();
  return b < e ? std::string_view(&*b, static_cast<std::size_t>(e - b)) : std::string_view();
}

// The whole file, or nothing when it is missing or unreadable (sysfs files vary by kernel,
// driver and container; absence is normal, not an error).
std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

// The first line, trimmed; null when the file is missing or empty.
json read_line(const fs::path& path) {
  const auto text = read_text(path);
  if (!text) return nullptr;
  const auto line = trim(std::string_view(*text).substr(0, text->find('\n')));
  if (line.empty()) return nullptr;
  return std::string(line);
}

std::optional<long long> to_integer(std::string_view text) {
  const std::string s(trim(text));
  if (s.empty()) return std::nullopt;
  try {
    std::size_t used = 0;
    const long long v = std::stoll(s, &used);
    if (used != s.size()) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

json read_integer(const fs::path& path) {
  const auto text = read_text(path);
  if (!text) return nullptr;
  const auto v = to_integer(*text);
  return v ? json(*v) : json();
}

json string_or_null(const std::string& s) {
  return s.empty() ? json() : json(s);
}

// Runs one part of the inventory; a failure becomes {"error": ...} instead of the whole
// inventory (and the report that embeds it) being lost.
template <class F>
void section(json& out, const char* key, F&& fill) {
  try {
    out[key] = fill();
  } catch (const std::exception& e) {
    out[key] = {{"error", e.what()}};
  } catch (...) {
    out[key] = {{"error", "unknown exception"}};
  }
}

// "key\t: value" lines of the first processor block of /proc/cpuinfo.
std::map<std::string, std::string> first_cpuinfo_block() {
  std::map<std::string, std::string> fields;
  const auto text = read_text("/proc/cpuinfo");
  if (!text) return fields;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    if (trim(line).empty()) {
      if (!fields.empty()) break;  // end of the first CPU's block
      continue;
    }
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    fields.emplace(std::string(trim(std::string_view(line).substr(0, colon))),
                   std::string(trim(std::string_view(line).substr(colon + 1))));
  }
  return fields;
}

json cpuinfo_field(const std::map<std::string, std::string>& f, const std::string& key) {
  const auto it = f.find(key);
  return it == f.end() || it->second.empty() ? json() : json(it->second);
}

json cpuinfo_int(const std::map<std::string, std::string>& f, const std::string& key) {
  const auto it = f.find(key);
  if (it == f.end()) return nullptr;
  const auto v = to_integer(it->second);
  return v ? json(*v) : json();
}

// RAII for an hwloc topology; load() throws with the hwloc call that failed.
class hwloc_topology {
 public:
  hwloc_topology() {
    if (hwloc_topology_init(&m_topo) != 0) throw std::runtime_error("hwloc_topology_init failed");
    // Instruction caches are filtered out by default; the inventory lists L1i too.
    hwloc_topology_set_icache_types_filter(m_topo, HWLOC_TYPE_FILTER_KEEP_ALL);
    if (hwloc_topology_load(m_topo) != 0) {
      hwloc_topology_destroy(m_topo);
      throw std::runtime_error("hwloc_topology_load failed");
    }
  }
  ~hwloc_topology() { hwloc_topology_destroy(m_topo); }
  hwloc_topology(const hwloc_topology&) = delete;
  hwloc_topology& operator=(const hwloc_topology&) = delete;

  [[nodiscard]] hwloc_topology_t get() const { return m_topo; }

 private:
  hwloc_topology_t m_topo = nullptr;
};

json count_objects(hwloc_topology_t topo, hwloc_obj_type_t type) {
  const int n = hwloc_get_nbobjs_by_type(topo, type);
  return n >= 0 ? json(n) : json();  // -1: objects of this type sit at several depths
}

const char* cache_type_name(hwloc_obj_cache_type_t t) {
  switch (t) {
    case HWLOC_OBJ_CACHE_DATA:
      return "data";
    case HWLOC_OBJ_CACHE_INSTRUCTION:
      return "instruction";
    case HWLOC_OBJ_CACHE_UNIFIED:
      return "unified";
  }
  return "unknown";
}

// One entry per distinct (level, type, size): {level 2, unified, 2 MiB, count 2} rather than a
// line for every core's private cache.
json describe_caches(hwloc_topology_t topo) {
  std::map<std::tuple<unsigned, int, std::uint64_t, unsigned>, int> groups;
  for (int t = HWLOC_OBJ_L1CACHE; t <= HWLOC_OBJ_L3ICACHE; ++t) {
    const auto type = static_cast<hwloc_obj_type_t>(t);
    if (hwloc_obj_type_is_cache(type) == 0) continue;
    hwloc_obj_t obj = nullptr;
    while ((obj = hwloc_get_next_obj_by_type(topo, type, obj)) != nullptr) {
      const auto& c = obj->attr->cache;
      ++groups[{c.depth, static_cast<int>(c.type), c.size, c.linesize}];
    }
  }
  json caches = json::array();
  for (const auto& [key, count] : groups) {
    const auto& [level, type, size, linesize] = key;
    caches.push_back({{"level", level},
                      {"type", cache_type_name(static_cast<hwloc_obj_cache_type_t>(type))},
                      {"size_bytes", size},
                      {"line_size_bytes", linesize > 0 ? json(linesize) : json()},
                      {"count", count}});
  }
  return caches;
}

json cpuset_to_list(hwloc_const_bitmap_t set) {
  json cpus = json::array();
  if (set == nullptr) return cpus;
  for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i)) cpus.push_back(i);
  return cpus;
}

json describe_numa(hwloc_topology_t topo) {
  json nodes = json::array();
  hwloc_obj_t obj = nullptr;
  while ((obj = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, obj)) != nullptr) {
    // The cpuset of a NUMA node holds PU OS indexes, the numbers taskset and numactl use.
    nodes.push_back({{"node", obj->os_index},
                     {"cpus", cpuset_to_list(obj->cpuset)},
                     {"memory_bytes", obj->attr->numanode.local_memory}});
  }
  return nodes;
}

json isa_names(const capabilities& caps) {
  json names = json::array();
  const json all = caps.to_json();  // named: a range-for over a temporary's member would dangle
  for (const auto& [name, present] : all.at("isa").items()) {
    if (name.rfind("os_saves_", 0) == 0) continue;  // OS state, not an instruction set
    if (present.is_boolean() && present.get<bool>()) names.push_back(name);
  }
  return names;
}

// `topo` is null when hwloc could not load the topology; `topo_error` then says why.
json describe_cpu(const capabilities& caps, const hwloc_topology* topo,
                  const std::string& topo_error) {
  json cpu;
  const auto info = first_cpuinfo_block();
  cpu["model"] = cpuinfo_field(info, "model name");
  cpu["vendor"] = cpuinfo_field(info, "vendor_id");
  cpu["family"] = cpuinfo_int(info, "cpu family");
  cpu["model_number"] = cpuinfo_int(info, "model");
  cpu["stepping"] = cpuinfo_int(info, "stepping");
  cpu["microcode"] = cpuinfo_field(info, "microcode");
  cpu["logical_cpus_usable"] = caps.logical_cpus;
  cpu["logical_cpus_online"] = caps.online_cpus;
  // The launcher's binding, said where a reader of the report looks for the CPUs it ran on.
  if (const std::string note =
          cpu_binding_note(caps.logical_cpus, caps.online_cpus, caps.world_size > 1);
      !note.empty())
    cpu["binding"] = note;
  // The cgroup CPU quota the run may use (CPUs; "none"): a quota is a different machine to a
  // benchmark, so compare lists it among the system differences (issue 44).
  if (const cgroup_cpu cg = current_cgroup_cpu(); cg.known)
    cpu["cgroup_cpu_quota"] = cg.quota_cpus > 0 ? json(cg.quota_cpus) : json("none");
  cpu["isa"] = isa_names(caps);

  // hwloc reports what this process may use (affinity, cgroup cpuset): the CPUs the
  // benchmarks actually ran on, not every CPU the host has.
  if (topo != nullptr) {
    cpu["sockets"] = count_objects(topo->get(), HWLOC_OBJ_PACKAGE);
    cpu["cores"] = count_objects(topo->get(), HWLOC_OBJ_CORE);
    cpu["threads"] = count_objects(topo->get(), HWLOC_OBJ_PU);
    cpu["caches"] = describe_caches(topo->get());
  } else {
    cpu["sockets"] = cpu["cores"] = cpu["threads"] = cpu["caches"] = nullptr;
    cpu["topology_error"] = topo_error;
  }

  const fs::path freq = "/sys/devices/system/cpu/cpu0/cpufreq";
  const json max_khz = read_integer(freq / "cpuinfo_max_freq");
  cpu["max_frequency_mhz"] = max_khz.is_number() ? json(max_khz.get<long long>() / 1000) : json();
  cpu["governor"] = read_line(freq / "scaling_governor");
  return cpu;
}

json describe_memory() {
  json mem;
  const auto text = read_text("/proc/meminfo");
  const auto field = [&](const char* key) {
    const long long v = text ? sysfs::meminfo_bytes(*text, key) : -1;
    return v >= 0 ? json(v) : json();
  };
  mem["total_bytes"] = field("MemTotal");
  mem["available_bytes"] = field("MemAvailable");
  mem["hugepage_size_bytes"] = field("Hugepagesize");
  return mem;
}

json describe_os() {
  json os;
  auto release = read_text("/etc/os-release");
  if (!release) release = read_text("/usr/lib/os-release");  // the fallback os-release(5) names
  os["name"] = release ? string_or_null(sysfs::os_pretty_name(*release)) : json();
  utsname u{};
  if (uname(&u) == 0) {
    os["kernel"] = std::string(u.release) + " " + u.version;
    os["arch"] = u.machine;
  } else {
    os["kernel"] = os["arch"] = nullptr;
  }
  return os;
}

// The hypervisor's cpuid signature ("KVMKVMKVM", "Microsoft Hv", "VMwareVMware"), when the
// hypervisor bit is set; DMI strings name the platform when cpuid does not.
json describe_virtualization() {
  json v;
  bool hypervisor = false;
  json vendor;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) != 0 && ((c >> 31) & 1U) != 0) {
    hypervisor = true;
    __cpuid(0x40000000, a, b, c, d);
    char sig[13] = {};
    std::memcpy(sig + 0, &b, 4);
    std::memcpy(sig + 4, &c, 4);
    std::memcpy(sig + 8, &d, 4);
    const auto s = trim(std::string_view(sig, std::strlen(sig)));
    if (!s.empty()) vendor = std::string(s);
  }
#endif
  json hv_type = read_line("/sys/hypervisor/type");  // Xen guests
  json dmi_vendor = read_line("/sys/class/dmi/id/sys_vendor");
  json dmi_product = read_line("/sys/class/dmi/id/product_name");
  if (!hv_type.is_null()) hypervisor = true;
  if (!hypervisor && vendor.is_null() && dmi_vendor.is_null() && dmi_product.is_null()) {
    return nullptr;  // nothing to tell either way
  }
  v["hypervisor"] = hypervisor;
  v["hypervisor_vendor"] = vendor.is_null() ? hv_type : vendor;
  v["dmi_sys_vendor"] = dmi_vendor;
  v["dmi_product_name"] = dmi_product;
  return v;
}

json describe_block_devices() {
  json devices = json::array();
  std::error_code ec;
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator("/sys/block", ec)) entries.push_back(e.path());
  if (ec) return nullptr;
  std::sort(entries.begin(), entries.end());
  for (const auto& dir : entries) {
    const std::string name = dir.filename().string();
    // Loop, RAM and compressed-RAM disks are not storage a benchmark's data lives on.
    if (name.rfind("loop", 0) == 0 || name.rfind("ram", 0) == 0 || name.rfind("zram", 0) == 0) {
      continue;
    }
    json d;
    d["name"] = name;
    d["model"] = read_line(dir / "device" / "model");
    // /sys/block/X/size counts 512-byte sectors whatever the device's logical block size.
    const json sectors = read_integer(dir / "size");
    d["size_bytes"] = sectors.is_number() ? json(sectors.get<long long>() * 512) : json();
    const json rotational = read_integer(dir / "queue" / "rotational");
    d["rotational"] = rotational.is_number() ? json(rotational.get<long long>() != 0) : json();
    const auto scheduler = read_text(dir / "queue" / "scheduler");
    d["scheduler"] = scheduler ? string_or_null(sysfs::active_scheduler(*scheduler)) : json();
    d["logical_block_size"] = read_integer(dir / "queue" / "logical_block_size");
    d["physical_block_size"] = read_integer(dir / "queue" / "physical_block_size");
    devices.push_back(std::move(d));
  }
  return devices;
}

json describe_libraries(const capabilities& caps) {
  const auto version = [](const feature& f) { return string_or_null(f.version); };
  json libs;
  libs["liburing"] = version(caps.io_uring);
  libs["mpi"] = version(caps.mpi);
  libs["cuda_runtime"] = version(caps.cuda);
  libs["cuda_driver"] = string_or_null(caps.cuda_driver_version);
  libs["nccl"] = version(caps.nccl);
  libs["cublas"] = version(caps.cublas);
  // hwloc's API version (what we compiled against and what the loaded library implements can
  // differ; a mismatch in the major number means the topology may be misread).
  const auto api = [](unsigned v) {
    return std::to_string(v >> 16) + "." + std::to_string((v >> 8) & 0xFF) + "." +
           std::to_string(v & 0xFF);
  };
  libs["hwloc"] = {{"api_compiled", api(HWLOC_API_VERSION)},
                   {"api_runtime", api(hwloc_get_api_version())}};
  return libs;
}

json hostname() {
  // Room for a name of HOST_NAME_MAX (64) characters and its NUL: gethostname fails
  // (ENAMETOOLONG) when the buffer it is told of cannot hold both.
  char name[HOST_NAME_MAX + 2] = {};
  if (gethostname(name, sizeof name - 1) != 0) return nullptr;
  return std::string(name);
}

}  // namespace

json build_info_json() {
  return {
      {"version", INFRABENCH_VERSION},
      {"git_commit", build_commit()},
      {"build_type", INFRABENCH_BUILD_TYPE},
      {"compiler", INFRABENCH_CXX_COMPILER},
      {"cxx_flags", INFRABENCH_CXX_FLAGS},
      {"cuda_compiler", string_or_null(std::string(trim(build::cuda_compiler())))},
      {"cuda_architectures", string_or_null(std::string(build::cuda_architectures()))},
      {"backends",
       {
           {"io_uring", build::compiled_in(build::backend::io_uring)},
           {"mpi", build::compiled_in(build::backend::mpi)},
           {"cuda", build::compiled_in(build::backend::cuda)},
           {"nccl", build::compiled_in(build::backend::nccl)},
           // Modules: built beside the executable, loaded when a benchmark needs one.
           {"openblas", build::compiled_in(build::backend::openblas)},
           {"onednn", build::compiled_in(build::backend::onednn)},
           {"opencv", build::compiled_in(build::backend::opencv)},
       }},
  };
}

json collect_system_inventory(const capabilities& caps) {
  json inv = json::object();
  try {
    // One topology load serves the CPU and NUMA sections (loading walks all of sysfs).
    std::unique_ptr<hwloc_topology> topo;
    std::string topo_error;
    try {
      topo = std::make_unique<hwloc_topology>();
    } catch (const std::exception& e) {
      topo_error = e.what();
    }
    section(inv, "hostname", [] { return hostname(); });
    section(inv, "cpu", [&] { return describe_cpu(caps, topo.get(), topo_error); });
    section(inv, "memory", [] { return describe_memory(); });
    section(inv, "numa", [&] {
      return topo ? describe_numa(topo->get()) : json{{"error", topo_error}};
    });
    section(inv, "os", [] { return describe_os(); });
    section(inv, "virtualization", [] { return describe_virtualization(); });
    section(inv, "block_devices", [] { return describe_block_devices(); });
    section(inv, "gpus",
            [&] { return caps.cuda.available ? detail::describe_gpus() : json::array(); });
    section(inv, "devices", [] { return devices::collect(); });
    section(inv, "libraries", [&] { return describe_libraries(caps); });
    section(inv, "build", [] { return build_info_json(); });
    section(inv, "timestamp_utc", [] { return json(utc_now_iso8601()); });
  } catch (...) {
    // Only allocation failure can get here (section() catches the rest); keep what we have.
  }
  return inv;
}

namespace sysfs {

long long meminfo_bytes(const std::string& meminfo_text, const std::string& key) {
  std::istringstream in(meminfo_text);
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos || trim(std::string_view(line).substr(0, colon)) != key) {
      continue;
    }
    std::istringstream value(line.substr(colon + 1));
    long long n = 0;
    std::string unit;
    if (!(value >> n) || n < 0) return -1;
    value >> unit;
    if (unit.empty()) return n;         // counts such as HugePages_Total carry no unit
    if (unit == "kB") return n * 1024;  // the kernel writes kB and means KiB
    return -1;
  }
  return -1;
}

std::string active_scheduler(const std::string& text) {
  const auto open = text.find('[');
  if (open != std::string::npos) {
    const auto close = text.find(']', open);
    if (close == std::string::npos) return {};
    return std::string(trim(std::string_view(text).substr(open + 1, close - open - 1)));
  }
  // Devices without a choice (some virtual and NVMe queues on older kernels) print one bare name.
  const auto t = trim(text);
  if (t.empty() || t.find_first_of(" \t") != std::string_view::npos) return {};
  return std::string(t);
}

std::string os_pretty_name(const std::string& os_release_text) {
  std::istringstream in(os_release_text);
  std::string line;
  std::string result;
  while (std::getline(in, line)) {
    const auto l = trim(line);
    constexpr std::string_view key = "PRETTY_NAME=";
    if (l.substr(0, key.size()) != key) continue;
    const auto v = l.substr(key.size());
    // os-release(5) values are shell-style: double quotes allow \" \\ \$ \` escapes, single
    // quotes none; later assignments win.
    result.clear();
    if (!v.empty() && (v.front() == '"' || v.front() == '\'')) {
      const char q = v.front();
      for (std::size_t i = 1; i < v.size() && v[i] != q; ++i) {
        if (q == '"' && v[i] == '\\' && i + 1 < v.size()) ++i;
        result += v[i];
      }
    } else {
      result = std::string(v);
    }
  }
  return result;
}

std::vector<int> parse_cpulist(const std::string& text) {
  // Far above any real machine; stops a corrupt "0-2147483647" from allocating gigabytes.
  constexpr long long max_cpu = 1 << 20;
  std::vector<int> cpus;
  const auto body = trim(text);
  if (body.empty()) return cpus;
  const auto number = [&](std::string_view s) {
    const auto v = to_integer(s);
    if (!v || *v < 0 || *v >= max_cpu || trim(s).empty() ||
        !std::isdigit(static_cast<unsigned char>(trim(s).front()))) {
      throw std::invalid_argument("parse_cpulist: bad CPU number '" + std::string(s) + "' in '" +
                                  std::string(body) + "'");
    }
    return static_cast<int>(*v);
  };
  std::size_t pos = 0;
  while (pos <= body.size()) {
    const auto comma = std::min(body.find(',', pos), body.size());
    const auto item = trim(body.substr(pos, comma - pos));
    if (const auto dash = item.find('-'); dash != std::string_view::npos) {
      const int first = number(item.substr(0, dash));
      const int last = number(item.substr(dash + 1));
      if (last < first) {
        throw std::invalid_argument("parse_cpulist: descending range '" + std::string(item) +
                                    "' in '" + std::string(body) + "'");
      }
      for (int c = first; c <= last; ++c) cpus.push_back(c);
    } else {
      cpus.push_back(number(item));
    }
    pos = comma + 1;
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

}  // namespace sysfs

}  // namespace infrabench
