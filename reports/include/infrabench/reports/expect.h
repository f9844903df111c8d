// A baseline's "expect": the device inventory a node must have (issue 28), judged per host from
// the report's "devices" inventory. Each expectation is a rule of kind `inventory`, so it is
// printed, counted and written to JUnit like every other rule:
//   "expect": {"gpus": 8, "nvlinks_per_gpu": 18, "ib_ports_active": 8, "ib_rate_gbps": 400,
//              "nvme_drives": 8, "same_across_gpus": ["vbios", "power_limit_w"],
//              "gpu": {"persistence_mode": true, "ecc_enabled": true, "mig_enabled": false}}
// Counts and rates are minimums (a node with more passes); "gpu" values must hold on every GPU;
// "same_across_gpus" names GPU properties every GPU of a node must share.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/reports/baseline.h"

namespace infrabench::reports {

// The rules of an "expect" object. Throws user_error (one line) for an unknown key or a value of
// the wrong type.
[[nodiscard]] std::vector<rule> parse_expectations(const nlohmann::json& expect,
                                                   const std::string& origin);

// One inventory rule against every host of the report: FAIL names each host that falls short
// and what it has; WAIVED when the report carries no device inventory (written before it).
[[nodiscard]] verdict evaluate_expectation(const rule& r, const report_view& report);

}  // namespace infrabench::reports
