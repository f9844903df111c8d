// Why a result was skipped, failed or marked invalid, as a code programs match on. The text beside
// it is for people and may be reworded at any time; the code is part of the report's schema
// (`reason_code`, `invalid_reason_codes`), so readers (the console table, compare, check, scripts)
// never match the start of a sentence.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace infrabench {

enum class reason_code {
  none,
  // ---- skipped
  unsupported,        // this CPU, OS or library lacks what the benchmark needs
  no_device,          // no GPU: no driver, no device, or the device lacks the feature
  not_built,          // the backend was not compiled into this binary
  needs_ranks,        // the run has fewer ranks than the benchmark needs
  node_local,         // another rank on this host measures it (one rank per host)
  not_on_every_rank,  // some rank cannot take part, and a multi-rank benchmark needs all
  resources,          // not enough memory, disk space or locked memory for this configuration
  // ---- failed
  error,           // the benchmark threw, or called fail()
  timeout,         // it ran past the configuration's time limit (--timeout)
  hung,            // it did not return from a call long after its time limit (the watchdog)
  no_measurement,  // it returned without measuring anything
  rank_failed,     // another rank of a collective failed
  interrupted,     // the run was interrupted before this configuration measured anything
  // ---- invalid (the result stays, marked INVALID)
  noisy,          // its samples spread more than --max-cv allows
  verify_failed,  // its output differs from the reference beyond the bound
  implausible,    // too slow to be a reference library at its best: no ratio is taken against it
  check_failed,   // another of the benchmark's own checks failed
};

[[nodiscard]] std::string_view to_string(reason_code c);
// The code a report names ("node_local"); nullopt for a name this version does not know.
[[nodiscard]] std::optional<reason_code> parse_reason_code(std::string_view name);
// Every code, in declaration order (the schema's enum lists the same names).
[[nodiscard]] const std::vector<reason_code>& all_reason_codes();

// A reason with its code: what unmet requirements and skips carry.
struct coded_reason {
  reason_code code = reason_code::none;
  std::string text;
  [[nodiscard]] bool empty() const { return text.empty(); }
};

}  // namespace infrabench
