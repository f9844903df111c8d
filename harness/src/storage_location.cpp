// Where a storage benchmark measured (storage_location.h): mountinfo for the filesystem, sysfs
// for the block device, each fact recorded or said unknown with why.
#include "infrabench/storage_location.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "infrabench/error.h"
#include "infrabench/telemetry.h"

namespace infrabench {
namespace {

namespace fs = std::filesystem;

// The first line of a sysfs file, trailing blanks removed; nullopt when it cannot be read.
std::optional<std::string> first_line(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.pop_back();
  return line;
}

std::optional<std::string> whole_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// mountinfo escapes a space, tab, newline and backslash in a path as \ooo (octal).
std::string unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const bool octal = s[i] == '\\' && i + 4 <= s.size() &&
                       std::all_of(s.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                                   s.begin() + static_cast<std::ptrdiff_t>(i) + 4,
                                   [](char c) { return c >= '0' && c <= '7'; });
    if (!octal) {
      out += s[i];
      continue;
    }
    out += static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8));
    i += 3;
  }
  return out;
}

bool under(const std::string& path, const std::string& point) {
  if (point == "/") return true;
  return path == point ||
         (path.size() > point.size() && path.starts_with(point) && path[point.size()] == '/');
}

std::string majmin(unsigned major, unsigned minor) {
  return std::to_string(major) + ":" + std::to_string(minor);
}

// The queue facts of the device whose sysfs directory is `dir` (a partition has none: its disk's).
void read_queue(const fs::path& dir, storage_location& out) {
  if (const auto r = first_line(dir / "queue" / "rotational"); r && (*r == "0" || *r == "1"))
    out.rotational = *r == "1";
  else
    out.unknown["rotational"] = (dir / "queue" / "rotational").string() + " is not readable";
  try {
    if (const auto b = first_line(dir / "queue" / "logical_block_size"))
      out.logical_block_size = std::stoll(*b);
  } catch (const std::exception&) {
  }
  if (!out.logical_block_size)
    out.unknown["logical_block_size"] =
        (dir / "queue" / "logical_block_size").string() + " is not readable";
}

// The model and driver of the whole disk whose sysfs directory is `dir`.
void read_disk(const fs::path& dir, storage_location& out) {
  out.disk = dir.filename().string();
  std::error_code ec;
  if (!fs::exists(dir / "device", ec)) {
    // loop, zram, md, nbd: made by the kernel, no hardware behind the name to ask.
    const std::string why = out.disk + " has no device in sysfs (a virtual block device)";
    out.unknown["model"] = why;
    out.unknown["driver"] = why;
    return;
  }
  if (const auto m = first_line(dir / "device" / "model"); m && !m->empty()) out.model = *m;
  // NVMe names its driver one level up (the namespace's controller's PCI device).
  for (const fs::path& link : {dir / "device" / "driver", dir / "device" / "device" / "driver"}) {
    const fs::path real = fs::canonical(link, ec);
    if (!ec) {
      out.driver = real.filename().string();
      break;
    }
  }
  if (out.driver.empty())
    out.unknown["driver"] = (dir / "device" / "driver").string() + " is not readable";
  if (out.model.empty())
    out.unknown["model"] = "no " + out.disk + "/device/model in sysfs" +
                           (out.driver.empty() ? "" : " (" + out.driver + " does not report one)");
}

// A dm device's one underlying device, followed down to a whole disk (dm on dm, dm on a
// partition); several underneath: the disk is unknown, and why.
void read_dm_disk(fs::path dir, storage_location& out) {
  for (int depth = 0; depth < 8; ++depth) {
    std::vector<std::string> slaves;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir / "slaves", ec))
      slaves.push_back(e.path().filename().string());
    std::sort(slaves.begin(), slaves.end());
    if (slaves.size() != 1) {
      std::string names;
      for (const auto& s : slaves) names += (names.empty() ? "" : ", ") + s;
      const std::string why =
          dir.filename().string() + (slaves.empty() ? " has no underlying device in sysfs"
                                                    : " spans " + std::to_string(slaves.size()) +
                                                          " devices (" + names + "), not one disk");
      out.unknown["disk"] = out.unknown["model"] = out.unknown["driver"] = why;
      return;
    }
    dir = fs::canonical(dir / "slaves" / slaves.front(), ec);
    if (ec) break;
    if (fs::exists(dir / "partition", ec)) dir = dir.parent_path();
    if (!fs::exists(dir / "dm", ec)) return read_disk(dir, out);
  }
  out.unknown["disk"] = out.unknown["model"] = out.unknown["driver"] =
      "the devices under " + out.device + " cannot be followed in sysfs";
}

// The block device a path's data is on: st_dev, or for a filesystem with anonymous device
// numbers (btrfs) the block device its mount names as source. 0:0 when there is none.
std::pair<unsigned, unsigned> device_of(const struct stat& st, storage_location& out) {
  if (S_ISBLK(st.st_mode)) return {major(st.st_rdev), minor(st.st_rdev)};
  if (major(st.st_dev) != 0) return {major(st.st_dev), minor(st.st_dev)};
  struct stat src {};
  if (out.mount_source.starts_with("/") && stat(out.mount_source.c_str(), &src) == 0 &&
      S_ISBLK(src.st_mode))
    return {major(src.st_rdev), minor(src.st_rdev)};
  const std::string why =
      "none: " + (out.filesystem.empty() ? std::string("the filesystem") : out.filesystem) +
      (out.mount_source.empty() ? "" : " (source " + out.mount_source + ")") +
      " is not on a local block device (its device number " +
      majmin(major(st.st_dev), minor(st.st_dev)) + " is anonymous)";
  for (const char* f : {"device", "disk", "model"}) out.unknown[f] = why;
  out.stat_missing = why;
  return {0, 0};
}

void locate_mount(const std::string& path, const location_roots& roots, storage_location& out) {
  const auto text = whole_text(roots.mountinfo);
  std::optional<mount_entry> m;
  if (text) m = mount_of(parse_mountinfo(*text), path);
  if (!m) {
    const std::string why =
        roots.mountinfo + (text ? " lists no mount holding " + path
                                : std::string(" is not readable: ") + std::strerror(errno));
    for (const char* f : {"filesystem", "mount_point", "mount_source"}) out.unknown[f] = why;
    return;
  }
  out.filesystem = m->fs_type;
  out.mount_point = m->mount_point;
  out.mount_source = m->source;
}

}  // namespace

std::vector<mount_entry> parse_mountinfo(const std::string& text) {
  std::vector<mount_entry> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    // id parent major:minor root mount-point options [optional fields] - type source superopts
    std::istringstream fields(line);
    std::string id, parent, dev, root, point, word;
    if (!(fields >> id >> parent >> dev >> root >> point)) continue;
    while (fields >> word && word != "-") {
    }
    mount_entry e{dev, unescape(point), "", ""};
    if (!(fields >> e.fs_type)) continue;
    fields >> e.source;
    e.source = unescape(e.source);
    out.push_back(std::move(e));
  }
  return out;
}

std::optional<mount_entry> mount_of(const std::vector<mount_entry>& mounts,
                                    const std::string& path) {
  const mount_entry* best = nullptr;
  for (const auto& m : mounts) {
    if (!under(path, m.mount_point)) continue;
    if (best == nullptr || m.mount_point.size() >= best->mount_point.size()) best = &m;
  }
  return best ? std::optional(*best) : std::nullopt;
}

void describe_block_device(unsigned major, unsigned minor, const std::string& sysfs_root,
                           storage_location& out) {
  out.device_number = majmin(major, minor);
  const fs::path link = fs::path(sysfs_root) / "dev" / "block" / out.device_number;
  std::error_code ec;
  const fs::path dir = fs::canonical(link, ec);
  if (ec) {
    const std::string why = link.string() + ": " + ec.message();
    for (const char* f : {"device", "disk", "model", "driver"}) out.unknown[f] = why;
    out.stat_missing = why;
    return;
  }
  out.device = dir.filename().string();
  const bool partition = fs::exists(dir / "partition", ec);
  const fs::path whole = partition ? dir.parent_path() : dir;
  read_queue(whole, out);
  out.stat_file = (whole / "stat").string();
  out.stat_device = whole.filename().string();
  if (const auto name = first_line(dir / "dm" / "name")) {
    out.device_mapper_name = *name;
    read_dm_disk(dir, out);
  } else {
    read_disk(whole, out);
  }
}

storage_location locate_storage(const std::string& given, const std::string& path,
                                const location_roots& roots) {
  storage_location out;
  out.given = given;
  std::error_code ec;
  const fs::path real = fs::canonical(path, ec);
  out.path = ec ? fs::absolute(path, ec).lexically_normal().string() : real.string();
  struct stat st {};
  if (stat(out.path.c_str(), &st) != 0) {
    out.unknown["device"] = out.stat_missing = out.path + ": " + std::strerror(errno);
    return out;
  }
  out.kind = S_ISDIR(st.st_mode)   ? location_kind::directory
             : S_ISBLK(st.st_mode) ? location_kind::block_device
                                   : location_kind::file;
  // A block device read raw has no filesystem: its mount facts do not apply.
  if (!S_ISBLK(st.st_mode)) locate_mount(out.path, roots, out);
  const auto [maj, min] = device_of(st, out);
  if (maj != 0) describe_block_device(maj, min, roots.sysfs, out);
  return out;
}

namespace {
constexpr std::pair<location_kind, std::string_view> kind_names[] = {
    {location_kind::directory, "directory"},
    {location_kind::file, "file"},
    {location_kind::block_device, "block_device"}};
}  // namespace

std::string_view to_string(location_kind k) {
  for (const auto& [kind, name] : kind_names) {
    if (kind == k) return name;
  }
  return "file";
}

std::optional<location_kind> parse_location_kind(std::string_view text) {
  for (const auto& [kind, name] : kind_names) {
    if (name == text) return kind;
  }
  return std::nullopt;
}

location_roots default_location_roots() {
  const std::string root = telemetry::sysfs_root();
  return {telemetry::under_root(root, "/sys"), telemetry::under_root(root, "/proc/self/mountinfo")};
}

std::optional<std::uint64_t> io_ticks_of(const std::string& stat_text) {
  std::istringstream in(stat_text);
  std::uint64_t v = 0;
  for (int field = 1; field <= 10; ++field) {
    if (!(in >> v)) return std::nullopt;
  }
  return v;
}

disk_busy_meter::disk_busy_meter(const storage_location& l) : m_file(l.stat_file) {
  if (m_file.empty()) {
    m_why = l.stat_missing;
    return;
  }
  const auto text = whole_text(m_file);
  const auto ticks = text ? io_ticks_of(*text) : std::nullopt;
  if (!ticks) {
    m_why = m_file + (text ? " has no io_ticks field" : " is not readable");
    m_file.clear();
    return;
  }
  m_ticks = *ticks;
  m_start_s = now_s();
}

std::optional<double> disk_busy_meter::percent(std::string* why) const {
  if (m_file.empty()) {
    *why = m_why;
    return std::nullopt;
  }
  const auto text = whole_text(m_file);
  const auto ticks = text ? io_ticks_of(*text) : std::nullopt;
  const double wall_ms = (now_s() - m_start_s) * 1e3;
  if (!ticks || *ticks < m_ticks || wall_ms <= 0) {
    *why = m_file + ": io_ticks unreadable at the end, or went back";
    return std::nullopt;
  }
  return std::min(100.0, 100.0 * static_cast<double>(*ticks - m_ticks) / wall_ms);
}

std::string describe(const storage_location& l) {
  std::string out = l.path.empty() ? l.given : l.path;
  if (!l.given.empty() && l.given != l.path) out += " (given as " + l.given + ")";
  std::vector<std::string> parts;
  if (!l.filesystem.empty())
    parts.push_back(l.filesystem + " on " + l.mount_source + " at " + l.mount_point);
  if (l.kind == location_kind::block_device) parts.push_back("block device, read raw");
  std::string dev;
  if (!l.device.empty()) {
    dev = "device " + l.device +
          (l.device_mapper_name.empty() ? "" : " (" + l.device_mapper_name + ")");
    if (!l.disk.empty() && l.disk != l.device) dev += " on disk " + l.disk;
    if (!l.model.empty()) dev += " \"" + l.model + "\"";
    if (!l.driver.empty()) dev += ", " + l.driver;
    if (l.rotational) dev += *l.rotational ? ", rotational" : ", non-rotational";
    if (l.logical_block_size) dev += ", " + std::to_string(*l.logical_block_size) + " B blocks";
    parts.push_back(dev);
  }
  // Facts unknown for one reason (no block device: device, disk and model) said once.
  std::vector<std::pair<std::string, std::string>> by_reason;
  // Not a structured binding: clang 14 (the fuzz build) refuses one captured by the lambda.
  for (const auto& fact_why : l.unknown) {
    const std::string& why = fact_why.second;
    auto it = std::find_if(by_reason.begin(), by_reason.end(),
                           [&](const auto& g) { return g.second == why; });
    if (it == by_reason.end())
      by_reason.emplace_back(fact_why.first, why);
    else
      it->first += ", " + fact_why.first;
  }
  for (const auto& [facts, why] : by_reason) parts.push_back(facts + " unknown: " + why);
  std::string joined;
  for (const auto& p : parts) joined += (joined.empty() ? "" : "; ") + p;
  return joined.empty() ? out : out + ": " + joined;
}

}  // namespace infrabench
