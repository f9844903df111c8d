#include "topology/link.h"

#include "hardware/gpu.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace infrabench::kernels::topology {
namespace {

[[nodiscard]] std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

[[nodiscard]] std::string gen_width(const pcie_generation* g, std::optional<int> width) {
  std::string out = g ? "Gen" + std::to_string(g->gen) : std::string("Gen?");
  out += width ? " x" + std::to_string(*width) : std::string(" x?");
  return out;
}

[[nodiscard]] std::string rate_text(double gts) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GT/s", gts);
  return buf;
}

[[nodiscard]] std::optional<double> link_gbps(std::optional<double> gts, std::optional<int> width) {
  if (!gts || !width) return std::nullopt;
  const pcie_generation* g = pcie_generation_by_rate(*gts);
  if (!g) return std::nullopt;
  return g->lane_gbps() * *width;
}

}  // namespace

const pcie_generation* pcie_generation_by_number(int gen) {
  for (const auto& g : pcie_generations()) {
    if (g.gen == gen) return &g;
  }
  return nullptr;
}

const pcie_generation* pcie_generation_by_rate(double gigatransfers) {
  for (const auto& g : pcie_generations()) {
    if (std::fabs(gigatransfers - g.gigatransfers) <= 0.01 * g.gigatransfers) return &g;
  }
  return nullptr;
}

std::optional<double> parse_link_speed(std::string_view text) {
  text = trim(text);
  // The number comes first: "16.0 GT/s PCIe" (Linux >= 4.20 adds " PCIe"), "8 GT/s" before that.
  std::size_t end = 0;
  while (end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.')) {
    ++end;
  }
  if (end == 0) return std::nullopt;
  std::string_view rest = trim(text.substr(end));
  if (!rest.starts_with("GT/s")) return std::nullopt;
  const std::string number(text.substr(0, end));
  char* stop = nullptr;
  const double value = std::strtod(number.c_str(), &stop);
  if (stop != number.c_str() + number.size() || !(value > 0) || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

std::optional<int> parse_link_width(std::string_view text) {
  text = trim(text);
  if (!text.empty() && (text.front() == 'x' || text.front() == 'X')) text.remove_prefix(1);
  int value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  static constexpr int valid[] = {1, 2, 4, 8, 12, 16, 32};
  if (std::find(std::begin(valid), std::end(valid), value) == std::end(valid)) return std::nullopt;
  return value;
}

pcie_link pcie_link::from_sysfs(std::string_view current_speed, std::string_view current_width,
                                std::string_view max_speed, std::string_view max_width) {
  pcie_link l;
  l.current_gts = parse_link_speed(current_speed);
  l.current_width = parse_link_width(current_width);
  l.max_gts = parse_link_speed(max_speed);
  l.max_width = parse_link_width(max_width);
  l.source = "sysfs";
  return l;
}

pcie_link pcie_link::from_generations(unsigned current_gen, unsigned current_width,
                                      unsigned max_gen, unsigned max_width) {
  pcie_link l;
  const auto rate = [](unsigned gen) -> std::optional<double> {
    const pcie_generation* g = pcie_generation_by_number(static_cast<int>(gen));
    return g ? std::optional<double>(g->gigatransfers) : std::nullopt;
  };
  const auto width = [](unsigned w) { return parse_link_width(std::to_string(w)); };
  l.current_gts = rate(current_gen);
  l.current_width = width(current_width);
  l.max_gts = rate(max_gen);
  l.max_width = width(max_width);
  l.source = "NVML";
  return l;
}

std::optional<double> pcie_link::current_gbps() const {
  return link_gbps(current_gts, current_width);
}
std::optional<double> pcie_link::max_gbps() const {
  return link_gbps(max_gts, max_width);
}

namespace {

[[nodiscard]] std::string describe_link(const std::optional<double>& gts,
                                        const std::optional<int>& width) {
  if (!gts || !width) return "PCIe link unknown";
  const pcie_generation* g = pcie_generation_by_rate(*gts);
  std::string out = "PCIe " + gen_width(g, width) + " (" + rate_text(*gts);
  if (g) out += std::string(", ") + g->encoding;
  return out + ")";
}

}  // namespace

std::string pcie_link::describe_current() const {
  return describe_link(current_gts, current_width);
}

std::string pcie_link::describe_max() const {
  return describe_link(max_gts, max_width);
}

std::optional<std::string> pcie_link::degraded_warning() const {
  if (!current_gts || !max_gts || !current_width || !max_width) return std::nullopt;
  const bool slower = *current_gts < *max_gts * 0.99;
  const bool narrower = *current_width < *max_width;
  if (!slower && !narrower) return std::nullopt;
  const pcie_generation* cur = pcie_generation_by_rate(*current_gts);
  const pcie_generation* max = pcie_generation_by_rate(*max_gts);
  std::string text = "PCIe link runs at " + gen_width(cur, current_width) + " (" +
                     rate_text(*current_gts) + "), below its maximum " + gen_width(max, max_width) +
                     " (" + rate_text(*max_gts) + ")";
  const auto now = current_gbps();
  const auto best = max_gbps();
  if (now && best) text += ": " + format_gbps(*now) + " instead of " + format_gbps(*best) + " GB/s";
  if (narrower) text += "; check the slot, riser or bifurcation setting";
  if (slower) text += "; check the slot generation and BIOS link speed setting";
  return text;
}

std::string normalize_pci_bus_id(std::string_view text) {
  text = trim(text);
  // [domain:]bus:device.function, all hexadecimal.
  auto hex = [](std::string_view s, unsigned long& out) {
    if (s.empty() || s.size() > 8) return false;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 16);
    return ec == std::errc() && ptr == s.data() + s.size();
  };
  const auto dot = text.rfind('.');
  if (dot == std::string_view::npos) return {};
  const std::string_view head = text.substr(0, dot);
  const std::string_view function = text.substr(dot + 1);
  const auto last_colon = head.rfind(':');
  if (last_colon == std::string_view::npos) return {};
  const std::string_view device = head.substr(last_colon + 1);
  std::string_view front = head.substr(0, last_colon);
  std::string_view domain = "0";
  std::string_view bus = front;
  if (const auto c = front.rfind(':'); c != std::string_view::npos) {
    domain = front.substr(0, c);
    bus = front.substr(c + 1);
  }
  unsigned long d = 0, b = 0, dev = 0, f = 0;
  if (!hex(domain, d) || !hex(bus, b) || !hex(device, dev) || !hex(function, f)) return {};
  if (d > 0xffff || b > 0xff || dev > 0x1f || f > 0x7) return {};
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04lx:%02lx:%02lx.%lx", d, b, dev, f);
  return buf;
}

namespace {

struct switch_counts {
  int active = 0, present = 0;
};

// Links of one GPU to NVSwitches: active, and present (an inactive link with an unknown far end
// counts when every link whose far end is known goes to a switch).
[[nodiscard]] switch_counts switch_links_of(const std::vector<nvlink_endpoint>& links) {
  switch_counts c;
  bool all_known_to_switch = false;
  int unknown_down = 0;
  for (const auto& l : links) {
    const bool known_far_end = l.kind != nvlink_peer_kind::other || !l.remote_bus_id.empty();
    if (l.kind == nvlink_peer_kind::nvswitch) {
      ++c.present;
      if (l.active) ++c.active;
      all_known_to_switch = true;
    } else if (!l.active && !known_far_end) {
      ++unknown_down;
    } else {
      all_known_to_switch = false;
      break;
    }
  }
  if (all_known_to_switch) {
    c.present += unknown_down;
  } else {
    c = {};
    for (const auto& l : links) {
      if (l.kind != nvlink_peer_kind::nvswitch) continue;
      ++c.present;
      if (l.active) ++c.active;
    }
  }
  return c;
}

}  // namespace

nvlink_pair nvlink_between(const std::vector<nvlink_endpoint>& links_of_a,
                           const std::vector<nvlink_endpoint>& links_of_b,
                           const std::string& bus_id_b) {
  nvlink_pair p;
  for (const auto& l : links_of_a) {
    if (l.kind != nvlink_peer_kind::gpu || l.remote_bus_id != bus_id_b) continue;
    ++p.direct_present;
    if (l.active) ++p.direct_links;
  }
  const switch_counts sa = switch_links_of(links_of_a);
  const switch_counts sb = switch_links_of(links_of_b);
  p.switch_links = std::min(sa.active, sb.active);
  p.switch_present = std::min(sa.present, sb.present);
  return p;
}

std::optional<double> memory_peak_gbps(long long memory_clock_khz, int bus_width_bits) {
  return hardware::memory_peak_from_clock_gbps(memory_clock_khz, bus_width_bits);
}

std::optional<double> efficiency_percent(double measured_gbps, double ceiling_gbps) {
  if (!(ceiling_gbps > 0) || !std::isfinite(ceiling_gbps)) return std::nullopt;
  if (!(measured_gbps >= 0) || !std::isfinite(measured_gbps)) return std::nullopt;
  return 100.0 * measured_gbps / ceiling_gbps;
}

bool exceeds_ceiling(double measured_gbps, double ceiling_gbps, double tolerance) {
  return ceiling_gbps > 0 && measured_gbps > ceiling_gbps * (1.0 + tolerance);
}

std::string format_gbps(double gbps) {
  char buf[32];
  const double a = std::fabs(gbps);
  if (a >= 100)
    std::snprintf(buf, sizeof buf, "%.0f", gbps);
  else if (a >= 10)
    std::snprintf(buf, sizeof buf, "%.1f", gbps);
  else
    std::snprintf(buf, sizeof buf, "%.2f", gbps);
  return buf;
}

}  // namespace infrabench::kernels::topology
