#include "topology/traffic.h"

#include <algorithm>

namespace infrabench::kernels::topology {
namespace {

[[nodiscard]] std::string end_text(const traffic_end& e) {
  return e.host ? "host node " + std::to_string(e.index) : "GPU " + std::to_string(e.index);
}

}  // namespace

std::string_view to_string(traffic_pattern p) {
  switch (p) {
    case traffic_pattern::host_to_all:
      return "host_to_all";
    case traffic_pattern::all_to_host:
      return "all_to_host";
    case traffic_pattern::all_to_one:
      return "all_to_one";
    case traffic_pattern::one_to_all:
      return "one_to_all";
    case traffic_pattern::host_to_all_bidirectional:
      return "host_to_all_bidirectional";
    case traffic_pattern::all_to_host_bidirectional:
      return "all_to_host_bidirectional";
  }
  return "?";
}

std::optional<traffic_pattern> parse_traffic_pattern(std::string_view name) {
  for (const auto p :
       {traffic_pattern::host_to_all, traffic_pattern::all_to_host, traffic_pattern::all_to_one,
        traffic_pattern::one_to_all, traffic_pattern::host_to_all_bidirectional,
        traffic_pattern::all_to_host_bidirectional}) {
    if (to_string(p) == name) return p;
  }
  return std::nullopt;
}

std::vector<planned_copy> plan_cell(traffic_pattern p, traffic_access a, int target,
                                    const std::vector<int>& gpus, int node,
                                    const std::function<bool(int, int)>& peer_ok) {
  std::vector<planned_copy> out;
  if (std::find(gpus.begin(), gpus.end(), target) == gpus.end()) return out;
  const traffic_end host{true, node};
  switch (p) {
    case traffic_pattern::host_to_all:
    case traffic_pattern::all_to_host: {
      // The measured GPU first; every other GPU copies in the same direction at the same time.
      const bool up = p == traffic_pattern::host_to_all;
      auto copy_of = [&](int g, bool counted) {
        const traffic_end gpu{false, g};
        return planned_copy{up ? host : gpu, up ? gpu : host, g, counted};
      };
      out.push_back(copy_of(target, true));
      for (int g : gpus) {
        if (g != target) out.push_back(copy_of(g, false));
      }
      break;
    }
    case traffic_pattern::host_to_all_bidirectional:
    case traffic_pattern::all_to_host_bidirectional: {
      // The measured direction of the target first; then the target's reverse direction and
      // both directions of every other GPU, each twice the size so that they still load the
      // links when the measured copy ends.
      const bool up = p == traffic_pattern::host_to_all_bidirectional;
      auto copy_of = [&](int g, bool to_gpu, bool counted) {
        const traffic_end gpu{false, g};
        return planned_copy{to_gpu ? host : gpu, to_gpu ? gpu : host, g, counted, counted ? 1 : 2};
      };
      out.push_back(copy_of(target, up, true));
      out.push_back(copy_of(target, !up, false));
      for (int g : gpus) {
        if (g == target) continue;
        out.push_back(copy_of(g, up, false));
        out.push_back(copy_of(g, !up, false));
      }
      break;
    }
    case traffic_pattern::all_to_one:
    case traffic_pattern::one_to_all: {
      // Every copy counts: the figure is the target's total inbound (all_to_one) or outbound
      // (one_to_all) bandwidth. The reading GPU needs access to the sender's memory, the writing
      // GPU to the receiver's.
      const bool inbound = p == traffic_pattern::all_to_one;
      for (int g : gpus) {
        if (g == target) continue;
        const traffic_end t{false, target}, peer{false, g};
        planned_copy c{inbound ? peer : t, inbound ? t : peer, 0, true};
        c.issuer = a == traffic_access::write ? c.src.index : c.dst.index;
        const int other = c.issuer == c.src.index ? c.dst.index : c.src.index;
        if (peer_ok && !peer_ok(c.issuer, other)) continue;
        out.push_back(c);
      }
      break;
    }
  }
  return out;
}

std::string pattern_skip_reason(traffic_pattern p, int gpu_count) {
  if (gpu_count >= 2) return {};
  const std::string have = "this machine has " + std::to_string(gpu_count) + " CUDA device" +
                           (gpu_count == 1 ? "" : "s");
  switch (p) {
    case traffic_pattern::host_to_all:
    case traffic_pattern::all_to_host:
      return std::string(to_string(p)) +
             " needs at least 2 GPUs: with one there is no other GPU to load the host; " + have +
             " (bandwidth/h2d and bandwidth/d2h measure one GPU alone)";
    case traffic_pattern::host_to_all_bidirectional:
    case traffic_pattern::all_to_host_bidirectional:
      return std::string(to_string(p)) +
             " needs at least 2 GPUs: with one there is no other GPU to load the host; " + have +
             " (bandwidth/bidirectional measures one GPU alone)";
    case traffic_pattern::all_to_one:
    case traffic_pattern::one_to_all:
      return std::string(to_string(p)) + " needs at least 2 GPUs (one and its peers); " + have;
  }
  return {};
}

double counted_bytes(const std::vector<planned_copy>& plan, double size) {
  double units = 0;
  for (const auto& c : plan) {
    if (c.counted) units += c.size_factor;
  }
  return size * units;
}

int copies_issued_by(const std::vector<planned_copy>& plan, int issuer) {
  return static_cast<int>(std::count_if(plan.begin(), plan.end(),
                                        [&](const planned_copy& c) { return c.issuer == issuer; }));
}

int size_units_on(const std::vector<planned_copy>& plan, int gpu) {
  int units = 0;
  for (const auto& c : plan) {
    if (!c.src.host && c.src.index == gpu) units += c.size_factor;
    if (!c.dst.host && c.dst.index == gpu) units += c.size_factor;
  }
  return units;
}

std::vector<int> issuers(const std::vector<planned_copy>& plan) {
  std::vector<int> out;
  for (const auto& c : plan) {
    if (c.counted && std::find(out.begin(), out.end(), c.issuer) == out.end()) {
      out.push_back(c.issuer);
    }
  }
  for (const auto& c : plan) {
    if (std::find(out.begin(), out.end(), c.issuer) == out.end()) out.push_back(c.issuer);
  }
  return out;
}

std::string describe_plan(const std::vector<planned_copy>& plan) {
  std::string counted, load;
  for (const auto& c : plan) {
    std::string t = end_text(c.src) + " -> " + end_text(c.dst);
    if (c.size_factor != 1) t += " (" + std::to_string(c.size_factor) + "x the size)";
    if (!c.src.host && !c.dst.host) {
      t += c.issuer == c.src.index ? " (pushed by GPU " : " (pulled by GPU ";
      t += std::to_string(c.issuer) + ")";
    }
    std::string& into = c.counted ? counted : load;
    into += (into.empty() ? "" : ", ") + t;
  }
  std::string out = counted;
  if (!load.empty())
    out += " measured while " + load + " run at the same time";
  else if (plan.size() > 1)
    out += ", all at once, summed";
  return out;
}

}  // namespace infrabench::kernels::topology
