// What each member of a result, a metric, a repetition and a timing summary holds, checked as the
// parser hands it over (result_reader's *_member and element), and the fields they are looked up
// by.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "infrabench/error.h"
#include "infrabench/model/result_record.h"
#include "infrabench/names.h"
#include "infrabench/report.h"
#include "report_reader_internal.h"

namespace infrabench::model::detail {

field field_of(const std::string& key) {
  // A short list scanned by length first: cheaper than hashing every key of every result.
  static constexpr std::pair<std::string_view, field> fields[] = {
      {"benchmark", field::benchmark},
      {"axes", field::axes},
      {"axes_display", field::axes_display},
      {"status", field::status},
      {"reason", field::reason},
      {"reason_code", field::reason_code},
      {"valid", field::valid},
      {"invalid_reasons", field::invalid_reasons},
      {"warnings", field::warnings},
      {"withheld", field::withheld},
      {"rank", field::rank},
      {"host", field::host},
      {"gpu", field::gpu},
      {"gpus", field::gpus},
      {"failed_gpus", field::failed_gpus},
      {"storage_location", field::storage_location},
      {"sampling_load", field::sampling_load},
      {"time_s", field::time_s},
      {"samples_s", field::samples_s},
      {"metrics", field::metrics},
      {"repetitions", field::repetitions},
      {"name", field::name},
      {"unit", field::unit},
      {"value", field::value},
      {"best", field::best},
      {"better", field::better},
      {"method", field::method},
      {"samples", field::samples},
      {"role", field::role},
      {"stop_reason", field::stop_reason},
      {"elapsed_s", field::elapsed_s},
      {"invalid_reason_codes", field::invalid_reason_codes},
      {"median", field::median},
      {"median_ci95", field::median_ci95},
      {"cv", field::cv},
      {"robust_cv", field::robust_cv},
      {"n", field::n}};
  for (const auto& [name, f] : fields) {
    if (name.size() == key.size() && name == key) return f;
  }
  return field::other;
}

// A member of the result's "storage_location" (storage_location.h says what each is).
void result_reader::location_member(const scalar& v) {
  const std::string& key = top().key;
  charge(key.size() + (v.is_string() ? v.text->size() : 0));
  if (set_storage_location_member(*m_result->storage, key, v.value())) return;
  const char* expected = key == "rotational"           ? "true or false"
                         : key == "logical_block_size" ? "an integer"
                                                       : "a string";
  fail_here(std::string("expected ") + expected + ", got " + v.type_name());
}

// A member of the result's "sampling_load": the shares of the CPUs compare and check read
// (compare.cpp's busy machine, baseline.cpp's busy node) and whether the quota throttled it; the
// others (counts) are the record's, not read here.
void result_reader::load_member(const scalar& v) {
  const std::string& key = top().key;
  if (key == "throttled") {
    if (v.type != json::value_t::boolean) fail_here("expected true or false, got " + v.type_name());
    m_result->load->throttled = v.flag;
    return;
  }
  double* into = key == "cpus"           ? &m_result->load->cpus
                 : key == "own_cpus"     ? &m_result->load->own_cpus
                 : key == "other_cpus"   ? &m_result->load->other_cpus
                 : key == "waiting_cpus" ? &m_result->load->waiting_cpus
                                         : nullptr;
  if (into == nullptr) return;
  *into = number(v);
  if (!(*into >= 0) || !std::isfinite(*into)) fail_here("expected a number of CPUs >= 0");
}

// A value inside one of the result's objects of names or arrays of values.
void result_reader::element(const scalar& v) {
  frame& f = top();
  switch (f.kind) {
    case part::metrics:
    case part::repetitions:
      fail_here("expected an object, got " + v.type_name());
    case part::axes:
      if (!v.is_number() && !v.is_string())
        fail_here("expected a number or a string, got " + v.type_name());
      if (const auto problem = name_problem(f.key); !problem.empty())
        fail_here("axis name " + shown_name(f.key) + ": " + problem);
      // Twice: the axis and its display form (finish_result).
      charge(2 * (map_node_bytes + f.key.size() + (v.is_string() ? v.text->size() : 0)));
      m_result->axes[f.key] = v.value();
      return;
    case part::axes_display:
    case part::withheld:
    case part::location_unknown:
      charge(map_node_bytes + f.key.size());
      (*f.texts)[f.key] = text(v);
      return;
    case part::strings:
      charge(grown(sizeof(std::string)));
      f.strings->push_back(text(v));
      return;
    case part::numbers:
      if (v.is_null()) return;  // a NaN sample: nothing to use
      if (!v.is_number()) fail_here("expected a number, got " + v.type_name());
      charge(grown(sizeof(double)));
      if (std::isfinite(v.number())) f.numbers->push_back(v.number());
      return;
    case part::indices:
      if (!v.is_integer() || v.number() < 0 || v.number() > (1 << 20))
        fail_here("expected a GPU index (a non-negative integer), got " + v.type_name());
      charge(grown(sizeof(int)));
      f.indices->push_back(static_cast<int>(v.number()));
      return;
    case part::ci95:
      // Only whether it is two numbers matters: a third says it is not.
      if (m_time.ci95.size() < 3)
        m_time.ci95.push_back(v.is_number() ? std::optional(v.number()) : std::nullopt);
      return;
    default:
      return;
  }
}

void result_reader::result_member(field f, const scalar& v) {
  result_view& r = *m_result;
  switch (f) {
    case field::benchmark:
      r.benchmark = text(v);
      if (r.benchmark.empty()) fail_here("empty benchmark name");
      if (const auto problem = name_problem(r.benchmark); !problem.empty())
        fail_here("benchmark name " + shown_name(r.benchmark) + ": " + problem);
      top().seen |= seen_benchmark;
      // Decided by the name alone, as a rule names a benchmark: the rest of the result is
      // scanned, not built.
      m_skipping = m_filter != nullptr && !m_filter->keeps(r.benchmark);
      return;
    case field::axes:
      fail_here("expected an object, got " + v.type_name());
    case field::axes_display:
      null_or(v, "an object");
      r.axes_display.clear();
      return;
    case field::samples_s:
      null_or(v, "an array of numbers");
      r.samples_s.clear();
      return;
    case field::metrics:
      null_or(v, "an array");
      r.metrics.clear();
      return;
    case field::repetitions:
      null_or(v, "an array");
      r.repetitions.clear();
      return;
    case field::time_s:
      r.time.reset();
      return;  // not an object: no timing to show
    case field::elapsed_s:
      r.elapsed_s = v.is_number() && std::isfinite(v.number()) ? v.number() : 0;
      return;
    default:
      outcome_member(f, v);
      placement_member(f, v);
  }
}

namespace {

// A result's reason code, typed once here. A name this version does not know (a report of
// another version; "none" is no code a report names) is kept as written, matched by nothing.
void read_reason_code(result_view& r, const std::string& name) {
  const auto code = parse_reason_code(name);
  r.reason_code = code.value_or(reason_code::none);
  r.unknown_reason_code = r.reason_code == reason_code::none ? name : "";
}

}  // namespace

// The result's status and why: its reason, validity, warnings and withheld metrics.
void result_reader::outcome_member(field f, const scalar& v) {
  result_view& r = *m_result;
  switch (f) {
    case field::status: {
      const std::string word = text(v);
      const auto s = parse_status(word);
      if (!s) fail_here("expected passed, skipped or failed, got \"" + word + "\"");
      r.status = *s;
      top().seen |= seen_status;
      return;
    }
    case field::reason:
      r.reason = text(v, "");
      return;
    case field::reason_code:
      read_reason_code(r, text(v, ""));
      return;
    case field::valid:
      r.valid = boolean(v);
      return;
    case field::invalid_reasons:
      null_or(v, "an array of strings");
      r.invalid_reasons.clear();
      return;
    case field::invalid_reason_codes:
      null_or(v, "an array of strings");
      r.invalid_reason_codes.clear();
      return;
    case field::warnings:
      null_or(v, "an array of strings");
      r.warnings.clear();
      return;
    case field::withheld:
      null_or(v, "an object");
      r.withheld_metrics.clear();
      return;
    case field::storage_location:
      null_or(v, "an object");
      r.storage.reset();
      return;
    case field::sampling_load:
      null_or(v, "an object");
      r.load.reset();
      return;
    default:
      return;
  }
}

// Where the result ran: its rank, host and GPU.
void result_reader::placement_member(field f, const scalar& v) {
  result_view& r = *m_result;
  switch (f) {
    case field::rank:
      if (!v.is_integer() || (v.type == json::value_t::number_integer && v.integer < 0) ||
          (v.is_integer() && v.number() > (1 << 30)))
        fail_here("expected a non-negative integer");
      r.rank = static_cast<int>(v.number());
      return;
    case field::host:
      r.host = text(v, "");
      if (const auto problem = name_problem(r.host); !problem.empty())
        fail_here("host name " + shown_name(r.host) + ": " + problem);
      return;
    case field::failed_gpus:
      null_or(v, "an array of GPU indices");
      r.failed_gpus.clear();
      return;
    case field::gpu:
      if (v.is_null()) {
        r.gpu.reset();
        return;
      }
      if (!v.is_integer()) fail_here("expected an integer");
      r.gpu = static_cast<int>(v.type == json::value_t::number_integer
                                   ? v.integer
                                   : static_cast<std::int64_t>(v.natural));
      return;
    default:
      return;
  }
}

// A member of a result the filter does not keep: only its host is read (checked as any host is),
// since a fleet claims every host a node report names.
void result_reader::skipped_member(const scalar& v) {
  if (top().member == field::host) placement_member(field::host, v);
}

void result_reader::metric_member(field f, const scalar& v) {
  metric_view& m = m_result->metrics.back();
  frame& fr = top();
  switch (f) {
    case field::name:
      m.name = text(v);
      if (m.name.empty()) fail_here("empty metric name");
      if (const auto problem = name_problem(m.name); !problem.empty())
        fail_here("metric name " + shown_name(m.name) + ": " + problem);
      fr.seen |= seen_name;
      return;
    case field::unit:
      m.unit = text(v, "");
      return;
    case field::value:
      m.value = number(v);
      fr.seen |= seen_value;
      return;
    case field::best:
      m.best = number(v);
      fr.seen |= seen_best;
      return;
    case field::better: {
      const std::string better = text(v);
      if (better != "higher" && better != "lower")
        fail_here("expected \"higher\" or \"lower\", got \"" + better + "\"");
      m.higher_is_better = better == "higher";
      fr.seen |= seen_better;
      return;
    }
    case field::method:
      m.method = text(v, "");
      return;
    case field::samples:
      null_or(v, "an array of numbers");
      m.samples.clear();
      return;
    case field::repetitions:
      null_or(v, "an array of numbers");
      m.repetitions.clear();
      return;
    case field::gpus:
      null_or(v, "an array of GPU indices");
      m.gpus.clear();
      return;
    case field::role: {
      const std::string role = text(v, "performance");
      const auto parsed = parse_metric_role(role);
      if (!parsed)
        fail_here("expected \"performance\", \"information\" or \"verification\", got \"" + role +
                  "\"");
      m.role = *parsed;
      return;
    }
    default:
      return;
  }
}

// One repetition of the configuration (run --repetitions, schema 1.5): its outcome.
void result_reader::repetition_member(field f, const scalar& v) {
  repetition_view& rep = m_result->repetitions.back();
  switch (f) {
    case field::status:
      rep.status = text(v, "passed");
      return;
    case field::reason:
      rep.reason = text(v, "");
      return;
    case field::valid:
      rep.valid = boolean(v);
      return;
    case field::invalid_reasons:
      null_or(v, "an array of strings");
      rep.invalid_reasons.clear();
      return;
    case field::invalid_reason_codes:
      null_or(v, "an array of strings");
      rep.invalid_reason_codes.clear();
      return;
    case field::stop_reason:
      rep.stop_reason = text(v, "");
      return;
    case field::elapsed_s:
      rep.elapsed_s = number(v);
      return;
    default:
      return;
  }
}

void result_reader::time_member(field f, const scalar& v) {
  const std::optional<double> n = v.is_number() ? std::optional(v.number()) : std::nullopt;
  switch (f) {
    case field::median:
      m_time.median = n;
      return;
    case field::cv:
      m_time.cv = n;
      return;
    case field::robust_cv:
      m_time.robust_cv = n;
      return;
    case field::n:
      m_time.n = n;
      return;
    case field::median_ci95:
      m_time.ci95_array = false;
      return;
    default:
      return;
  }
}

}  // namespace infrabench::model::detail
