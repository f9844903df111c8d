// The CPU node's telemetry sources: cpufreq, hwmon/thermal zones, RAPL, EDAC, /proc/interrupts.
#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "infrabench/telemetry.h"

namespace infrabench::telemetry {
namespace {

constexpr double no_reading = std::numeric_limits<double>::quiet_NaN();

// Entries of a directory whose names start with `prefix`, sorted (cpu0, cpu1, ..., mc0, ...).
std::vector<std::string> entries(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(prefix, 0) == 0 && name != "." && name != "..") out.push_back(name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

bool read_text(const std::string& path, std::string* out) {
  std::ifstream f(path);
  if (!f) return false;
  std::stringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  while (!out->empty() && (out->back() == '\n' || out->back() == ' ')) out->pop_back();
  return true;
}

double read_number(const std::string& path) {
  std::string s;
  if (!read_text(path, &s) || s.empty()) return no_reading;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  return end == s.c_str() ? no_reading : v;
}

bool exists(const std::string& path) {
  std::ifstream f(path);
  return static_cast<bool>(f);
}

}  // namespace

std::string sysfs_root() {
  const char* r = std::getenv("INFRABENCH_SYSFS_ROOT");
  return r && *r ? r : "/";
}

std::string under_root(const std::string& root, const std::string& path) {
  if (root.empty() || root == "/") return path;
  return (root.back() == '/' ? root.substr(0, root.size() - 1) : root) + path;
}

// Package temperature sensors: coretemp's "Package id N", k10temp's Tctl/Tdie, or x86_pkg_temp
// zones.
std::vector<std::string> package_temp_files(const std::string& root) {
  std::vector<std::string> files;
  const std::string hwmon = under_root(root, "/sys/class/hwmon");
  for (const auto& h : entries(hwmon, "hwmon")) {
    std::string name;
    if (!read_text(hwmon + "/" + h + "/name", &name)) continue;
    for (int k = 1; k <= 64; ++k) {
      const std::string base = hwmon + "/" + h + "/temp" + std::to_string(k);
      if (!exists(base + "_input")) continue;
      std::string label;
      read_text(base + "_label", &label);
      const bool package =
          (name == "coretemp" && label.rfind("Package id", 0) == 0) ||
          (name == "k10temp" && (label == "Tctl" || label == "Tdie" || (label.empty() && k == 1)));
      if (package) files.push_back(base + "_input");
    }
  }
  if (!files.empty()) return files;
  const std::string zones = under_root(root, "/sys/class/thermal");
  for (const auto& z : entries(zones, "thermal_zone")) {
    std::string type;
    if (read_text(zones + "/" + z + "/type", &type) && type == "x86_pkg_temp")
      files.push_back(zones + "/" + z + "/temp");
  }
  return files;
}

double read_sysfs_number(const std::string& path) {
  return read_number(path);
}

std::vector<rapl_package> find_rapl_packages(const std::string& root, std::string* why) {
  std::vector<rapl_package> out;
  const std::string powercap = under_root(root, "/sys/class/powercap");
  std::string reason = "not exposed: no RAPL package domain (" + powercap + "/intel-rapl:N)";
  for (const auto& p : entries(powercap, "intel-rapl:")) {
    if (p.find(':', 11) != std::string::npos) continue;  // intel-rapl:0:0 is a subzone
    rapl_package d;
    d.energy_file = powercap + "/" + p + "/energy_uj";
    d.max_range_uj = read_number(powercap + "/" + p + "/max_energy_range_uj");
    if (std::isnan(d.max_range_uj)) d.max_range_uj = 0;
    if (std::isnan(read_number(d.energy_file))) {
      // Since Linux 5.10 energy_uj is readable by root only (a side channel otherwise).
      reason = "not readable: " + d.energy_file + " (root only on Linux >= 5.10)";
      continue;
    }
    out.push_back(d);
  }
  if (out.empty() && why) *why = reason;
  return out;
}

cpu_source::cpu_source(std::string root) : m_root(std::move(root)) {
  const std::string cpus = under_root(m_root, "/sys/devices/system/cpu");
  for (const auto& c : entries(cpus, "cpu")) {
    if (c.size() < 4 || !std::isdigit(static_cast<unsigned char>(c[3]))) continue;
    const std::string f = cpus + "/" + c + "/cpufreq/scaling_cur_freq";
    if (exists(f)) m_freq_files.push_back(f);
  }
  m_sources["freq"] =
      m_freq_files.empty()
          ? "not exposed: no cpufreq (" + cpus + "/cpu*/cpufreq/scaling_cur_freq)"
          : std::to_string(m_freq_files.size()) + " cores, cpufreq scaling_cur_freq";

  m_temp_files = package_temp_files(m_root);
  m_sources["temp"] = m_temp_files.empty()
                          ? "not exposed: no coretemp/k10temp hwmon or x86_pkg_temp thermal zone"
                          : std::to_string(m_temp_files.size()) + " package sensor(s)";

  std::string power_why;
  for (const auto& p : find_rapl_packages(m_root, &power_why)) {
    rapl_domain d;
    d.energy_file = p.energy_file;
    d.max_range_uj = p.max_range_uj;
    m_rapl.push_back(d);
  }
  m_sources["power"] =
      m_rapl.empty() ? power_why : std::to_string(m_rapl.size()) + " RAPL package domain(s)";

  const std::string edac = under_root(m_root, "/sys/devices/system/edac/mc");
  for (const auto& mc : entries(edac, "mc")) {
    if (exists(edac + "/" + mc + "/ce_count")) m_edac_dirs.push_back(edac + "/" + mc);
  }
  m_sources["edac"] = m_edac_dirs.empty()
                          ? "not exposed: no EDAC memory controller (" + edac + "/mc*)"
                          : std::to_string(m_edac_dirs.size()) + " memory controller(s)";
  m_sources["mce"] = counters().count("mce_events")
                         ? "MCE line of " + under_root(m_root, "/proc/interrupts")
                         : "not exposed: no MCE line in " + under_root(m_root, "/proc/interrupts");
  m_last_power_t = std::chrono::steady_clock::now();
}

cpu_source::reading cpu_source::read() {
  reading r{no_reading, no_reading, no_reading, no_reading, no_reading};
  double sum = 0, lo = no_reading, hi = no_reading;
  std::size_t n = 0;
  for (const auto& f : m_freq_files) {
    const double khz = read_number(f);
    if (std::isnan(khz)) continue;
    const double mhz = khz / 1000;
    sum += mhz;
    lo = n == 0 ? mhz : std::min(lo, mhz);
    hi = n == 0 ? mhz : std::max(hi, mhz);
    ++n;
  }
  if (n > 0) {
    r.freq_mhz_mean = sum / static_cast<double>(n);
    r.freq_mhz_min = lo;
    r.freq_mhz_max = hi;
  }
  for (const auto& f : m_temp_files) {
    const double milli_c = read_number(f);
    if (!std::isnan(milli_c) && (std::isnan(r.package_temp_c) || milli_c / 1000 > r.package_temp_c))
      r.package_temp_c = milli_c / 1000;
  }
  const auto now = std::chrono::steady_clock::now();
  const double dt = std::chrono::duration<double>(now - m_last_power_t).count();
  double joules = 0;
  bool all = !m_rapl.empty();
  for (auto& d : m_rapl) {
    const double uj = read_number(d.energy_file);
    if (std::isnan(uj)) {
      all = false;
      continue;
    }
    if (d.last_uj < 0) {
      all = false;  // the first reading only sets the starting point
    } else {
      double delta = uj - d.last_uj;
      if (delta < 0 && d.max_range_uj > 0) delta += d.max_range_uj;  // the counter wrapped
      joules += delta / 1e6;
    }
    d.last_uj = uj;
  }
  if (all && dt > 0) r.package_power_w = joules / dt;
  m_last_power_t = now;
  return r;
}

counter_set cpu_source::counters() const {
  counter_set c;
  if (!m_edac_dirs.empty()) {
    double ce = 0, ue = 0;
    for (const auto& mc : m_edac_dirs) {
      const double x = read_number(mc + "/ce_count"), y = read_number(mc + "/ue_count");
      if (!std::isnan(x)) ce += x;
      if (!std::isnan(y)) ue += y;
    }
    c["edac_ce"] = ce;
    c["edac_ue"] = ue;
  }
  // "MCE:  0  0  Machine check exceptions": one count per CPU.
  std::ifstream f(under_root(m_root, "/proc/interrupts"));
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string tag;
    in >> tag;
    if (tag != "MCE:") continue;
    double total = 0, x = 0;
    while (in >> x) total += x;
    c["mce_events"] = total;
  }
  return c;
}

nlohmann::json cpu_source::sources() const {
  return m_sources;
}

}  // namespace infrabench::telemetry
