#include "infrabench/reports/run_identity.h"

#include <bit>
#include <cstdint>
#include <cstdio>
#include <string_view>

namespace infrabench::reports {

namespace {

// FNV-1a: not a cryptographic hash (nothing here is adversarial: a collision would only merge two
// runs someone built to collide), but stable across builds and machines, as an id must be.
class fnv1a {
 public:
  void add(std::string_view s) {
    add_u64(s.size());  // length first: "ab"+"c" and "a"+"bc" differ
    for (const unsigned char c : s) byte(c);
  }
  void add(double v) { add_u64(std::bit_cast<std::uint64_t>(v)); }
  void add_u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) byte(static_cast<unsigned char>(v >> (8 * i)));
  }
  [[nodiscard]] std::string hex() const {
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(m_h));
    return out;
  }

 private:
  void byte(unsigned char c) {
    m_h ^= c;
    m_h *= 0x100000001b3ULL;
  }
  std::uint64_t m_h = 0xcbf29ce484222325ULL;
};

void add_metric(fnv1a& h, const model::metric_view& m) {
  h.add(m.name);
  h.add(m.unit);
  h.add(m.value);
  h.add_u64(m.samples.size());
  for (double s : m.samples) h.add(s);
  h.add_u64(m.repetitions.size());
  for (double r : m.repetitions) h.add(r);
}

}  // namespace

std::string run_content_id(const model::report_view& report) {
  fnv1a h;
  h.add(report.started_utc);
  h.add(report.finished_utc);
  h.add_u64(static_cast<std::uint64_t>(report.world_size));
  h.add_u64(report.inventories.size());
  for (const auto& host : report.inventories) h.add(host.hostname);
  h.add_u64(report.results.size());
  for (const auto& r : report.results) {
    h.add(result_identity(r.benchmark, r.axes, r.rank));
    h.add(r.host);
    h.add(to_string(r.status));
    h.add(r.reason);
    h.add_u64(r.valid ? 1 : 0);
    h.add_u64(r.metrics.size());
    for (const auto& m : r.metrics) add_metric(h, m);
  }
  return h.hex();
}

}  // namespace infrabench::reports
