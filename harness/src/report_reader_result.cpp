// One result read from the parser's events (result_reader): its frames of open objects and
// arrays, the paths its messages name, the checks of a value's type, which container a member
// opens, and what is checked once a result, a metric or a timing summary closes. What each member
// holds is read by report_reader_members.cpp.
#include <algorithm>
#include <cmath>
#include <string>

#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "report_reader_internal.h"

namespace infrabench::model::detail {

void result_reader::begin(result_view& into, std::size_t index, std::string where) {
  m_result = &into;
  m_index = index;
  charge(grown(sizeof(result_view)));
  m_where = std::move(where);
  m_depth = 0;
  m_skipping = false;
}

void result_reader::too_much() const {
  throw user_error(
      m_origin + ": its results take more than " + std::to_string(max_report_results_bytes >> 30) +
      " GiB in memory: not a report (a real report's results take about 2.5 times its size)");
}

void result_reader::push(part kind, bool object) {
  if (m_depth == m_frames.size()) m_frames.emplace_back();
  frame& f = m_frames[m_depth++];
  f.kind = kind;
  f.object = object;
  f.member = field::other;
  f.index = f.count = 0;
  f.seen = 0;
  f.numbers = nullptr;
  f.strings = nullptr;
  f.indices = nullptr;
  f.texts = nullptr;
}

namespace {

// A key as a path shows it: a 40,000-character key shortened to its start.
std::string path_key(const std::string& key) {
  if (key.size() <= 80) return key;
  return key.substr(0, 60) + "...(" + std::to_string(key.size()) + " characters)";
}

}  // namespace

// The path of the frame at `depth` (1: the result itself): "results[3].metrics[0]".
std::string result_reader::where(std::size_t depth) const {
  std::string out = m_where.empty() ? "results[" + std::to_string(m_index) + "]" : m_where;
  for (std::size_t i = 0; i + 1 < depth; ++i) {
    const frame& parent = m_frames[i];
    out += parent.object ? "." + path_key(parent.key) : "[" + std::to_string(parent.index) + "]";
  }
  return out;
}

// The path of the member (or element) being read: "results[3].metrics[0].value".
std::string result_reader::member_where() const {
  const frame& f = m_frames[m_depth - 1];
  return where(m_depth) + (f.object ? "." + path_key(f.key) : "[" + std::to_string(f.index) + "]");
}

std::string result_reader::text(const scalar& v, const char* fallback) {
  if (v.is_null() && fallback != nullptr) return fallback;
  if (!v.is_string()) fail_here("expected a string, got " + v.type_name());
  charge(v.text->size());
  return *v.text;
}

// A number, or NaN for null (nlohmann writes NaN and infinities as null).
double result_reader::number(const scalar& v) const {
  if (v.is_null()) return std::nan("");
  if (!v.is_number()) fail_here("expected a number, got " + v.type_name());
  return v.number();
}

bool result_reader::boolean(const scalar& v) const {
  if (v.type != json::value_t::boolean) fail_here("expected true or false, got " + v.type_name());
  return v.flag;
}

// A member that holds a container given as a scalar: null stands for empty, anything else is
// refused as not being `expected` ("an array of strings").
void result_reader::null_or(const scalar& v, const char* expected) const {
  if (!v.is_null()) fail_here(std::string("expected ") + expected + ", got " + v.type_name());
}

void result_reader::key(const std::string& k) {
  frame& f = top();
  f.key = k;
  if (f.kind == part::result || f.kind == part::metric || f.kind == part::repetition ||
      f.kind == part::time)
    f.member = field_of(k);
}

void result_reader::value(const scalar& v) {
  frame& f = top();
  if (!f.object) f.index = f.count++;
  dispatch(v);
}

// A value for the member or element being read, checked and stored by what holds it.
void result_reader::dispatch(const scalar& v) {
  const frame& f = top();
  switch (f.kind) {
    case part::result:
      if (m_skipping) return skipped_member(v);
      return result_member(f.member, v);
    case part::metric:
      return metric_member(f.member, v);
    case part::repetition:
      return repetition_member(f.member, v);
    case part::time:
      return time_member(f.member, v);
    case part::location:
      return location_member(v);
    case part::load:
      return load_member(v);
    case part::skip:
      return;
    default:
      return element(v);
  }
}

void result_reader::open(bool object) {
  if (m_depth == 0) {
    // The result itself (its reader is only begun at an object): what it fills starts empty.
    push(part::result, true);
    return;
  }
  frame& f = top();
  if (!f.object) f.index = f.count++;
  if (f.kind == part::skip) return push(part::skip, object);
  // A skipped result's host given as a container is refused below as any host is.
  if (m_skipping && f.member != field::host) return push(part::skip, object);
  if (!open_member(object)) {
    // A container where a value was expected: refused as that value (or, for a member the
    // model does not read, skipped).
    scalar as_value;
    as_value.type = object ? json::value_t::object : json::value_t::array;
    dispatch(as_value);
    push(part::skip, object);
  }
}

bool result_reader::open_member(bool object) {
  const frame& f = top();
  const field member = f.member;
  switch (f.kind) {
    case part::result:
      return open_result_member(object);
    case part::metrics:
    case part::repetitions:
      open_element(object);
      return true;
    case part::metric:
      if (!object && member == field::gpus) return open_list(&m_result->metrics.back().gpus);
      if (object || (member != field::samples && member != field::repetitions)) return false;
      return open_list(member == field::samples ? &m_result->metrics.back().samples
                                                : &m_result->metrics.back().repetitions);
    case part::repetition:
      if (object || (member != field::invalid_reasons && member != field::invalid_reason_codes))
        return false;
      return open_list(member == field::invalid_reasons
                           ? &m_result->repetitions.back().invalid_reasons
                           : &m_result->repetitions.back().invalid_reason_codes);
    case part::location:
      if (!object || f.key != "unknown") return false;
      return open_names(part::location_unknown, &m_result->storage->unknown);
    case part::time:
      if (object || member != field::median_ci95) return false;
      m_time.ci95.clear();
      m_time.ci95_array = true;
      push(part::ci95, false);
      return true;
    default:
      return false;
  }
}

// An array of numbers or of strings, read into `into` (what it held before is replaced, as a
// member given twice is: the last one counts).
bool result_reader::open_list(std::vector<double>* into) {
  into->clear();
  push(part::numbers, false);
  top().numbers = into;
  return true;
}

bool result_reader::open_list(std::vector<std::string>* into) {
  into->clear();
  push(part::strings, false);
  top().strings = into;
  return true;
}

bool result_reader::open_list(std::vector<int>* into) {
  into->clear();
  push(part::indices, false);
  top().indices = into;
  return true;
}

bool result_reader::open_names(part kind, std::map<std::string, std::string>* into) {
  into->clear();
  push(kind, true);
  top().texts = into;
  return true;
}

bool result_reader::open_result_member(bool object) {
  result_view& r = *m_result;
  switch (top().member) {
    case field::axes:
      if (!object) return false;
      r.axes.clear();
      push(part::axes, true);
      return true;
    case field::axes_display:
      return object && open_names(part::axes_display, &r.axes_display);
    case field::withheld:
      return object && open_names(part::withheld, &r.withheld_metrics);
    case field::storage_location:
      if (!object) return false;
      r.storage.emplace();
      push(part::location, true);
      return true;
    case field::sampling_load:
      if (!object) return false;
      r.load.emplace();
      push(part::load, true);
      return true;
    case field::invalid_reasons:
      return !object && open_list(&r.invalid_reasons);
    case field::invalid_reason_codes:
      return !object && open_list(&r.invalid_reason_codes);
    case field::warnings:
      return !object && open_list(&r.warnings);
    case field::failed_gpus:
      return !object && open_list(&r.failed_gpus);
    case field::samples_s:
      return !object && open_list(&r.samples_s);
    case field::metrics:
      if (object) return false;
      r.metrics.clear();
      m_metric_names.clear();
      push(part::metrics, false);
      return true;
    case field::repetitions:
      if (object) return false;
      r.repetitions.clear();
      push(part::repetitions, false);
      return true;
    case field::time_s:
      if (!object) return false;
      m_time = {};
      push(part::time, true);
      return true;
    default:
      return false;
  }
}

// An element of "metrics" or "repetitions": an object, read into a new metric or repetition.
void result_reader::open_element(bool object) {
  if (!object) fail_here("expected an object, got array");
  if (top().kind == part::metrics) {
    charge(grown(sizeof(metric_view)));
    m_result->metrics.emplace_back();
    push(part::metric, true);
  } else {
    charge(grown(sizeof(repetition_view)));
    m_result->repetitions.emplace_back().status = "passed";  // what a repetition says by default
    push(part::repetition, true);
  }
}

void result_reader::close() {
  const frame& f = top();
  if (f.kind == part::result && !m_skipping) finish_result(f);
  if (f.kind == part::metric) finish_metric(f);
  if (f.kind == part::time) finish_time();
  --m_depth;
}

// What can be checked only once the result is whole: its required members, and each axis's
// display form (written since the display differed from the value; an axis without one shows
// its value).
void result_reader::finish_result(const frame& f) {
  if (!(f.seen & seen_benchmark)) fail(where(m_depth), "missing \"benchmark\"");
  if (!(f.seen & seen_status)) fail(where(m_depth), "missing \"status\"");
  result_view& r = *m_result;
  for (const auto& [k, v] : r.axes) {
    if (!r.axes_display.count(k))
      r.axes_display[k] = v.is_string() ? v.get<std::string>() : json_text(v);
  }
}

// A metric's required members, its best (its value when not given) and its name, once a result.
void result_reader::finish_metric(const frame& f) {
  if (!(f.seen & seen_name)) fail(where(m_depth), "missing \"name\"");
  if (!(f.seen & seen_value)) fail(where(m_depth), "missing \"value\"");
  if (!(f.seen & seen_better)) fail(where(m_depth), "missing \"better\"");
  metric_view& m = m_result->metrics.back();
  if (!(f.seen & seen_best)) m.best = m.value;
  if (!unique_name(m.name)) fail(where(m_depth), "metric \"" + m.name + "\" appears twice");
}

// Whether the metric just read is the first of its name. A result has a handful of metrics, so
// they are compared with each other; a set is built only for one with many (a hostile file's
// thousands would otherwise take quadratic time).
bool result_reader::unique_name(const std::string& name) {
  constexpr std::size_t few = 16;
  const auto& metrics = m_result->metrics;
  if (metrics.size() <= few) {
    return std::none_of(metrics.begin(), metrics.end() - 1,
                        [&](const metric_view& m) { return m.name == name; });
  }
  if (m_metric_names.size() + 1 < metrics.size()) {
    for (std::size_t i = m_metric_names.size(); i + 1 < metrics.size(); ++i)
      m_metric_names.insert(metrics[i].name);
  }
  return m_metric_names.insert(name).second;
}

void result_reader::finish_time() {
  if (!m_time.median) {
    m_result->time.reset();
    return;
  }
  time_view t;
  t.median = *m_time.median;
  const auto& ci = m_time.ci95;
  const bool has_ci = m_time.ci95_array && ci.size() == 2 && ci[0] && ci[1];
  t.ci95_lo = has_ci ? *ci[0] : t.median;
  t.ci95_hi = has_ci ? *ci[1] : t.median;
  t.cv = m_time.cv.value_or(0);
  t.robust_cv = m_time.robust_cv.value_or(t.cv);
  const double n = m_time.n.value_or(0);
  t.n = n > 0 ? static_cast<std::size_t>(std::min(n, 1e15)) : 0;  // a count, not a 1e300
  m_result->time = t;
}

}  // namespace infrabench::model::detail
