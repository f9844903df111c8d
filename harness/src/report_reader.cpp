// The report model's reader of a report's text (and of a live run's results): one streaming pass
// with nlohmann's SAX interface. Each result is read straight into its result_view, with every
// check the model makes of a result, named by its path ("results[3].metrics[0].value: expected a
// number"); the document's other sections are small and are built as JSON values for
// report_model.cpp's readers. A file is read in chunks, never held whole: memory grows with the
// typed model, not with the text (docs/reports.md, "Speed").
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/model/report.h"
#include "infrabench/model/result_record.h"
#include "infrabench/names.h"
#include "infrabench/report.h"
#include "infrabench/text_file.h"
#include "json_skim.h"
#include "report_reader.h"

namespace infrabench::model {
namespace {

using json = nlohmann::json;

std::string type_name_of(json::value_t type) {
  return json(type).type_name();
}

// ---- where the characters come from -----------------------------------------------------------

// A report's text as the parser reads it: a regular file in chunks (its text is never held
// whole), or a text already in memory. It knows how far the parser has read, so that an error
// (a nesting too deep, a syntax error) can say its line and column, which it finds only then.
class text_source {
 public:
  explicit text_source(std::string_view text) : m_chunk(text.data()), m_len(text.size()) {}
  text_source(int fd, std::string path, std::size_t max_bytes)
      : m_fd(fd), m_path(std::move(path)), m_max(max_bytes), m_buffer(std::size_t{1} << 20) {
    m_chunk = m_buffer.data();
  }
  text_source(const text_source&) = delete;
  text_source& operator=(const text_source&) = delete;
  ~text_source() {
    if (m_fd >= 0) ::close(m_fd);
  }

  // What nlohmann's iterator adapter reads through: one character at a time, a chunk refilled
  // when it runs out.
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;
    iterator() = default;
    explicit iterator(text_source* s) : m_s(s) {}
    const char& operator*() const { return m_s->m_chunk[m_s->m_pos]; }
    iterator& operator++() {
      ++m_s->m_pos;
      return *this;
    }
    bool operator==(const iterator& o) const { return at_end() == o.at_end(); }

   private:
    [[nodiscard]] bool at_end() const {
      return m_s == nullptr || (m_s->m_pos == m_s->m_len && !m_s->refill());
    }
    text_source* m_s = nullptr;
  };
  iterator begin() { return iterator(this); }
  static iterator end() { return iterator(); }

  // How many characters the parser has taken.
  [[nodiscard]] std::size_t consumed() const { return m_start + m_pos; }
  // The characters of the chunk in hand that the parser has not taken (what a skim may pass).
  [[nodiscard]] std::string_view unread() const { return {m_chunk + m_pos, m_len - m_pos}; }
  // Takes `n` of them past the parser, which reads on after them.
  void pass(std::size_t n) { m_pos += n; }
  // The text's length, once known (a file read to its end); until then the most a size can be.
  [[nodiscard]] std::size_t size() const {
    if (m_fd < 0) return m_len;
    return m_eof ? consumed() : static_cast<std::size_t>(-1);
  }
  // "line L, column C" of the character at `offset` (the text's end when past it).
  [[nodiscard]] std::string position_text(std::size_t offset) const;
  // Whether the text up to `offset` is only white space.
  [[nodiscard]] bool blank_before(std::size_t offset) const;

 private:
  bool refill();
  // Calls `see(chunk)` for the text from its start up to `offset`, in order.
  template <typename See>
  void scan(std::size_t offset, See see) const;

  int m_fd = -1;
  std::string m_path;
  std::size_t m_max = 0;
  std::vector<char> m_buffer;
  const char* m_chunk = nullptr;
  std::size_t m_len = 0, m_pos = 0, m_start = 0;  // m_start: the chunk's offset in the text
  bool m_eof = false;
};

[[noreturn]] void report_too_large(const std::string& path, std::size_t max_bytes) {
  throw user_error("report " + path + ": larger than " + std::to_string(max_bytes >> 20) +
                   " MiB: not a report");
}

bool text_source::refill() {
  if (m_fd < 0 || m_eof) return false;
  m_start += m_len;
  m_pos = m_len = 0;
  while (true) {
    const ssize_t n = ::read(m_fd, m_buffer.data(), m_buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw user_error("cannot read report " + m_path + ": " + std::strerror(errno));
    if (n == 0) {
      m_eof = true;
      return false;
    }
    m_len = static_cast<std::size_t>(n);
    if (m_start + m_len > m_max) report_too_large(m_path, m_max);  // it grew while read
    return true;
  }
}

template <typename See>
void text_source::scan(std::size_t offset, See see) const {
  if (m_fd < 0) {
    see(std::string_view(m_chunk, std::min(offset, m_len)));
    return;
  }
  // Only on the way to an error: the file is read again from its start, once.
  std::vector<char> buf(std::size_t{1} << 20);
  for (std::size_t at = 0; at < offset;) {
    const ssize_t n =
        ::pread(m_fd, buf.data(), std::min(buf.size(), offset - at), static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    see(std::string_view(buf.data(), static_cast<std::size_t>(n)));
    at += static_cast<std::size_t>(n);
  }
}

std::string text_source::position_text(std::size_t offset) const {
  std::size_t line = 1, col = 1;
  scan(offset, [&](std::string_view part) {
    for (const char c : part) {
      if (c == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
  });
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

bool text_source::blank_before(std::size_t offset) const {
  bool blank = true;
  scan(offset, [&](std::string_view part) {
    blank = blank && part.find_first_not_of(" \t\r\n") == std::string_view::npos;
  });
  return blank;
}

// ---- one result, read as the parser goes ---------------------------------------------------

// A value as the parser hands it over, or (type object or array) a container opening where a
// scalar was expected: what a typed field is checked against.
struct scalar {
  json::value_t type = json::value_t::null;
  bool flag = false;
  std::int64_t integer = 0;
  std::uint64_t natural = 0;
  double real = 0;
  const std::string* text = nullptr;

  [[nodiscard]] bool is_null() const { return type == json::value_t::null; }
  [[nodiscard]] bool is_string() const { return type == json::value_t::string; }
  [[nodiscard]] bool is_integer() const {
    return type == json::value_t::number_integer || type == json::value_t::number_unsigned;
  }
  [[nodiscard]] bool is_number() const {
    return is_integer() || type == json::value_t::number_float;
  }
  [[nodiscard]] double number() const {
    if (type == json::value_t::number_integer) return static_cast<double>(integer);
    if (type == json::value_t::number_unsigned) return static_cast<double>(natural);
    return real;
  }
  [[nodiscard]] json value() const {
    switch (type) {
      case json::value_t::number_integer:
        return integer;
      case json::value_t::number_unsigned:
        return natural;
      case json::value_t::number_float:
        return real;
      case json::value_t::string:
        return *text;
      case json::value_t::boolean:
        return flag;
      default:
        return json(type);
    }
  }
  [[nodiscard]] std::string type_name() const { return type_name_of(type); }
};

// The members a result, a metric, a repetition and a timing summary have. A key is looked up
// once, when the parser gives it; a member the model does not read is skipped whole.
enum class field {
  other,
  benchmark,
  axes,
  axes_display,
  status,
  reason,
  reason_code,
  valid,
  invalid_reasons,
  warnings,
  withheld,
  rank,
  host,
  gpu,
  gpus,
  failed_gpus,
  storage_location,
  sampling_load,
  time_s,
  samples_s,
  metrics,
  repetitions,
  name,
  unit,
  value,
  best,
  better,
  method,
  samples,
  role,
  stop_reason,
  elapsed_s,
  invalid_reason_codes,
  median,
  median_ci95,
  cv,
  robust_cv,
  n
};

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

// What an open object or array is, and so what its members or elements fill.
enum class part {
  result,
  metric,
  repetition,
  metrics,
  repetitions,
  axes,
  axes_display,
  withheld,
  location,
  location_unknown,
  load,
  strings,
  numbers,
  indices,
  time,
  ci95,
  skip
};

struct frame {
  part kind = part::skip;
  bool object = true;
  std::string key;  // the member being read (objects)
  field member = field::other;
  std::size_t index = 0;  // the element being read (arrays)
  std::size_t count = 0;  // elements begun so far (arrays)
  unsigned seen = 0;      // which required members were given (see the seen_* flags)
  std::vector<double>* numbers = nullptr;
  std::vector<std::string>* strings = nullptr;
  std::vector<int>* indices = nullptr;
  std::map<std::string, std::string>* texts = nullptr;
};

// What an element of a vector takes, counted as its vector grows: capacity doubles, and while it
// moves the old and the new buffers are both held.
constexpr std::size_t grown(std::size_t element_bytes) {
  return 2 * element_bytes;
}

// What one entry of a result's map (an axis, a withheld metric) takes besides its key and value:
// the tree node and the allocator's own bookkeeping.
constexpr std::size_t map_node_bytes = 96;

constexpr unsigned seen_benchmark = 1, seen_status = 2, seen_name = 4, seen_value = 8,
                   seen_better = 16, seen_best = 32;

// A result's "time_s" as it is being read: read leniently (its timing is shown, never judged),
// so a summary of another shape is left out rather than making the report unreadable.
struct time_parts {
  std::optional<double> median, cv, robust_cv, n;
  std::vector<std::optional<double>> ci95;
  bool ci95_array = false;
};

// Reads one result from the parser's events, from the opening of its object to the closing:
// every field typed, every check made as the value arrives (a missing member when the object
// closes). Throws user_error naming the field by its path.
class result_reader {
 public:
  // With a filter, a result whose benchmark it does not keep is skipped from that member on.
  explicit result_reader(std::string origin, const result_filter* filter = nullptr)
      : m_origin(std::move(origin)), m_filter(filter) {}

  // Starts reading into `into`, named `results[index]` (or `where` when given) in messages.
  void begin(result_view& into, std::size_t index, std::string where = {});
  [[nodiscard]] bool done() const { return m_depth == 0; }
  // Whether the result read last is one the filter does not keep: what was built of it is to be
  // dropped (only its host is read after its benchmark, and it is not checked whole).
  [[nodiscard]] bool skipped() const { return m_skipping; }

  void open(bool object);
  void close();
  void key(const std::string& k);
  void value(const scalar& v);

 private:
  frame& top() { return m_frames[m_depth - 1]; }
  void push(part kind, bool object);
  [[nodiscard]] std::string where(std::size_t depth) const;
  [[nodiscard]] std::string member_where() const;
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw user_error(m_origin + ": " + where + ": " + what);
  }
  [[noreturn]] void fail_here(const std::string& what) const { fail(member_where(), what); }

  // A member's value checked against what the field must be.
  std::string text(const scalar& v, const char* fallback = nullptr);
  // Counts what the results take in memory, and refuses a report whose results would take more
  // than max_report_results_bytes: a hostile file of tiny objects ("repetitions": [{}, {}, ...])
  // is 50 times its text once typed, so the bound on the text alone would not cap memory. (A
  // 64-rank full-suite report of 209 MB counts 508 MB and peaks at 395 MB read.)
  void charge(std::size_t bytes) {
    m_used += bytes;
    if (m_used > max_report_results_bytes) too_much();
  }
  [[noreturn]] void too_much() const;
  double number(const scalar& v) const;
  bool boolean(const scalar& v) const;
  void null_or(const scalar& v, const char* expected) const;

  void result_member(field f, const scalar& v);
  void outcome_member(field f, const scalar& v);
  void placement_member(field f, const scalar& v);
  void metric_member(field f, const scalar& v);
  void repetition_member(field f, const scalar& v);
  void time_member(field f, const scalar& v);
  void location_member(const scalar& v);
  void load_member(const scalar& v);
  void dispatch(const scalar& v);
  void element(const scalar& v);
  bool open_member(bool object);
  bool open_list(std::vector<double>* into);
  bool open_list(std::vector<std::string>* into);
  bool open_list(std::vector<int>* into);
  bool open_names(part kind, std::map<std::string, std::string>* into);
  bool open_result_member(bool object);
  void open_element(bool object);
  void finish_result(const frame& f);
  void finish_metric(const frame& f);
  void finish_time();
  bool unique_name(const std::string& name);
  void skipped_member(const scalar& v);

  std::string m_origin;
  const result_filter* m_filter = nullptr;
  bool m_skipping = false;  // the result's benchmark is one the filter does not keep
  std::string m_where;      // the result's name when not results[index]
  std::size_t m_index = 0;
  result_view* m_result = nullptr;
  std::vector<frame> m_frames;  // kept between results: their keys keep their capacity
  std::size_t m_depth = 0;
  std::set<std::string> m_metric_names;
  time_parts m_time;
  std::size_t m_used = 0;  // what the results read so far take, about (charge)
};

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

// A key as a path shows it: a 40,000-character key shortened to its start.
std::string path_key(const std::string& key) {
  if (key.size() <= 80) return key;
  return key.substr(0, 60) + "...(" + std::to_string(key.size()) + " characters)";
}

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

// ---- the document ---------------------------------------------------------------------------

// A section other than the results (run, hosts, telemetry...), built as a JSON value for the
// model's readers of it: each is small beside the results.
class dom_builder {
 public:
  void begin(json& root) {
    m_root = &root;
    m_stack.clear();
  }
  void value(json v) { (void)place(std::move(v)); }
  void open(bool object) { m_stack.push_back(place(object ? json::object() : json::array())); }
  void key(const std::string& k) { m_key = k; }
  // Whether the section's own object or array is the one that closed.
  bool close() {
    m_stack.pop_back();
    return m_stack.empty();
  }

 private:
  // Where a value goes: the section itself, the next element of an array, or the member whose
  // key came last (a key given twice: the last value counts, as nlohmann's own parser has it).
  json* place(json v) {
    if (m_stack.empty()) {
      *m_root = std::move(v);
      return m_root;
    }
    json& parent = *m_stack.back();
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    json& slot = parent[m_key];
    slot = std::move(v);
    return &slot;
  }
  json* m_root = nullptr;
  std::vector<json*> m_stack;
  std::string m_key;
};

// nlohmann's message without its "[json.exception.parse_error.101] " prefix.
std::string reason_of(const nlohmann::detail::exception& e) {
  std::string what = e.what();
  constexpr std::string_view prefix_end = "] ";
  const auto close = what.find(prefix_end);
  if (close != std::string::npos) what = what.substr(close + 2);
  // "parse error at line L, column C: ": the parser's count, which leaves out what skim_result
  // passed; the message says where from the text itself (text_source::position_text).
  constexpr std::string_view at = "parse error at ";
  if (what.starts_with(at)) {
    constexpr std::string_view separator = ": ";
    const auto colon = what.find(separator);
    if (colon != std::string::npos) what = "parse error: " + what.substr(colon + 2);
  }
  // "; last read: '...'": the parser's token so far, which after a skim may start at the end of
  // the text it did not read; the position above points at it.
  constexpr std::string_view read = "; last read: '";
  if (const auto from = what.find(read); from != std::string::npos) {
    constexpr std::string_view then = "'; expected ";
    const auto expected = what.find(then, from + read.size());
    what.erase(from, expected == std::string::npos ? std::string::npos : expected + 1 - from);
  }
  return what;
}

// Every string of a report, and every key, reaches the model as one printable line: a hostname
// holding a newline and "check: 2 passed ... -> PASS" once printed a forged verdict line in
// check and compare, and an escape sequence could rewrite the terminal (names.h).
void printable_in_place(std::string& s) {
  if (has_control(s)) s = printable_line(s);
}

// The parser's events for a whole report: "results" to the result reader, one result at a time,
// every other top-level member to a JSON value; nesting bounded by max_json_depth, as every JSON
// input is (json_io.h).
class report_events {
 public:
  report_events(text_source& source, const std::string& origin, const result_filter* filter)
      : m_source(source), m_origin(origin), m_filter(filter), m_reader(origin, filter) {}
  json& document() { return m_doc; }
  detail::results_read& results() { return m_results; }

  bool null() { return on_value(scalar{}); }
  bool boolean(bool b) { return on_value(scalar{json::value_t::boolean, b}); }
  bool number_integer(std::int64_t i) {
    return on_value(scalar{json::value_t::number_integer, false, i});
  }
  bool number_unsigned(std::uint64_t u) {
    return on_value(scalar{json::value_t::number_unsigned, false, 0, u});
  }
  bool number_float(double d, const std::string& /*text*/) {
    return on_value(scalar{json::value_t::number_float, false, 0, 0, d});
  }
  bool string(std::string& s) {
    printable_in_place(s);
    return on_value(scalar{json::value_t::string, false, 0, 0, 0, &s});
  }
  bool binary(json::binary_t& /*bytes*/) { return true; }  // JSON text has none
  bool start_object(std::size_t /*size*/) { return open(true); }
  bool start_array(std::size_t /*size*/) { return open(false); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& k);
  bool parse_error(std::size_t byte, const std::string& /*token*/,
                   const nlohmann::detail::exception& e);

 private:
  // Where the next event goes. skip: a subtree nothing reads (an element of the results after
  // one was refused, "results" that is not an array), up to its close at m_skip_depth.
  enum class mode { start, top, section, results, result, skip, done };
  bool on_value(const scalar& v);
  bool open(bool object);
  bool close();
  void begin_result(bool object);
  void skim_result();
  void leave_out_last();
  // The index of the next element of "results", counting those the filter left out.
  [[nodiscard]] std::size_t next_index() const {
    return m_results.results.size() + m_results.skipped.count;
  }
  template <typename Step>
  void guarded(Step step);
  void refuse_results(const std::string& message);
  void skip_to(std::size_t depth, mode then) {
    m_skip_depth = depth;
    m_after_skip = then;
    m_mode = mode::skip;
  }
  // The sections other than "results" are built as JSON values, which take several times their
  // text: they are bounded as a baseline file is (max_input_bytes), as the whole report was
  // before it was streamed.
  void bound_sections() const {
    if (m_sections_read + (m_source.consumed() - m_section_start) > max_input_bytes) {
      throw user_error(m_origin + ": its sections other than \"results\" hold more than " +
                       std::to_string(max_input_bytes >> 20) + " MiB: not a report");
    }
  }
  [[noreturn]] void not_a_report(const std::string& type) const {
    throw user_error(m_origin + ": not an infrabench report (expected a JSON object, got " + type +
                     ")");
  }

  text_source& m_source;
  std::string m_origin;
  mode m_mode = mode::start, m_after_skip = mode::top;
  std::size_t m_depth = 0, m_skip_depth = 0;
  std::size_t m_section_start = 0, m_sections_read = 0;  // offsets in the text
  std::size_t m_skimmed = 0;  // characters passed by skim_result, which the parser did not count
  const result_filter* m_filter;
  std::string m_key;  // the top-level member being read
  json m_doc = json::object();
  dom_builder m_dom;
  result_reader m_reader;
  detail::results_read m_results;
};

// The results array is the top object's member: depth 2.
constexpr std::size_t results_depth = 2;

// A result the reader refused: kept (the first one only) for assemble_report to throw in its
// turn, and the rest of the results skipped.
void report_events::refuse_results(const std::string& message) {
  if (m_results.error.empty()) m_results.error = message;
  skip_to(results_depth, mode::top);
}

template <typename Step>
void report_events::guarded(Step step) {
  try {
    step();
  } catch (const user_error& e) {
    refuse_results(e.what());
  }
}

bool report_events::key(std::string& k) {
  printable_in_place(k);
  if (m_mode == mode::top) m_key = k;
  if (m_mode == mode::section) {
    bound_sections();
    m_dom.key(k);
  }
  if (m_mode == mode::result) guarded([&] { m_reader.key(k); });
  return true;
}

bool report_events::on_value(const scalar& v) {
  switch (m_mode) {
    case mode::start:
      not_a_report(v.type_name());
    case mode::top:
      if (m_key == "results") {
        m_results = {};
        m_results.given = true;
        m_results.type = v.type_name();
      } else {
        m_doc[m_key] = v.value();
      }
      break;
    case mode::section:
      bound_sections();
      m_dom.value(v.value());
      break;
    case mode::results:
      refuse_results(m_origin + ": results[" + std::to_string(next_index()) +
                     "]: expected an object, got " + v.type_name());
      break;
    case mode::result: {
      const bool was_skipping = m_reader.skipped();
      guarded([&] { m_reader.value(v); });
      // The value that made the reader skip the result is its benchmark's name, a member of the
      // result itself: the rest of the object may be skimmed.
      if (!was_skipping && m_mode == mode::result && m_reader.skipped()) skim_result();
      break;
    }
    default:
      break;
  }
  return true;
}

// A result the filter leaves out, from its benchmark's name on: passed at memory speed up to its
// closing brace when the skimmer is sure the text is well formed (else the parser reads it, as
// it would have), each "host" member it met handed to the reader as the parser would have.
void report_events::skim_result() {
  if (m_filter == nullptr || !m_filter->skim) return;
  const auto skimmed =
      detail::skim_object_rest(m_source.unread(), "host", max_json_depth - m_depth);
  if (!skimmed) return;
  m_source.pass(skimmed->end);
  m_skimmed += skimmed->end;
  for (const std::string_view host : skimmed->found) {
    std::string name = "host";
    key(name);
    (void)json::sax_parse(host, this);  // well formed: its events, as the parser's would be
  }
}

bool report_events::open(bool object) {
  if (++m_depth > max_json_depth) {
    throw user_error(m_origin + ": JSON nested deeper than " + std::to_string(max_json_depth) +
                     " levels at " + m_source.position_text(m_source.consumed() - 1) +
                     ": not an infrabench file");
  }
  switch (m_mode) {
    case mode::start:
      if (!object) not_a_report("array");
      m_mode = mode::top;
      break;
    case mode::top:
      if (m_key != "results") {
        m_section_start = m_source.consumed() - 1;
        m_dom.begin(m_doc[m_key]);
        m_dom.open(object);
        m_mode = mode::section;
        break;
      }
      m_results = {};  // "results" given twice: the last one counts
      m_results.given = true;
      m_results.type = object ? "object" : "array";
      if (object) skip_to(m_depth, mode::top);
      if (!object) m_mode = mode::results;
      break;
    case mode::section:
      bound_sections();
      m_dom.open(object);
      break;
    case mode::results:
      begin_result(object);
      break;
    case mode::result:
      guarded([&] { m_reader.open(object); });
      break;
    default:
      break;
  }
  return true;
}

void report_events::begin_result(bool object) {
  const std::size_t index = next_index();
  if (!object) {
    refuse_results(m_origin + ": results[" + std::to_string(index) +
                   "]: expected an object, got array");
    return;
  }
  m_reader.begin(m_results.results.emplace_back(), index);
  m_mode = mode::result;
  guarded([&] { m_reader.open(true); });
}

bool report_events::close() {
  switch (m_mode) {
    case mode::top:
      m_mode = mode::done;
      break;
    case mode::section:
      if (m_dom.close()) {
        m_sections_read += m_source.consumed() - m_section_start;
        m_mode = mode::top;
      }
      break;
    case mode::results:
      m_mode = mode::top;
      break;
    case mode::result:
      guarded([&] { m_reader.close(); });
      if (m_mode == mode::result && m_reader.done()) {
        m_mode = mode::results;
        if (m_reader.skipped()) leave_out_last();
      }
      break;
    case mode::skip:
      if (m_depth == m_skip_depth) m_mode = m_after_skip;
      break;
    default:
      break;
  }
  --m_depth;
  return true;
}

// The result just read is one the filter does not keep: its host noted, its view dropped.
void report_events::leave_out_last() {
  skipped_results& out = m_results.skipped;
  std::string host = std::move(m_results.results.back().host);
  m_results.results.pop_back();
  if (next_index() == 0) out.first_host = host;  // it was results[0]
  if (!host.empty()) out.hosts.insert(std::move(host));
  ++out.count;
}

// A text that is not JSON: where, and whether it ends early (a report cut off while written).
bool report_events::parse_error(std::size_t byte, const std::string& /*token*/,
                                const nlohmann::detail::exception& e) {
  if (e.id >= 400) {
    // A number beyond double's range (1e999): syntactically JSON, not a value we can hold.
    throw user_error(m_origin + ": unreadable JSON: " + reason_of(e));
  }
  // At the end the parser has asked for one character more than there are. It did not count
  // what skim_result passed.
  byte += m_skimmed;
  const bool truncated = byte > m_source.size();
  if (truncated && m_mode == mode::start && m_source.blank_before(m_source.size()))
    throw user_error(m_origin + ": empty file, expected JSON");
  throw user_error(m_origin + ": " +
                   (truncated ? "truncated JSON (ends early), " : "invalid JSON at ") +
                   m_source.position_text(byte == 0 ? 0 : byte - 1) + ": " + reason_of(e));
}

report_view read_report(text_source& source, const std::string& origin,
                        std::string_view reader_version, const result_filter* filter = nullptr) {
  report_events events(source, origin, filter);
  (void)json::sax_parse(source.begin(), text_source::end(), &events);
  return detail::assemble_report(events.document(), std::move(events.results()), origin,
                                 reader_version);
}

// ---- results already parsed (the live run's) -------------------------------------------------

scalar scalar_of(const json& j) {
  scalar v;
  v.type = j.type();
  if (j.is_boolean()) v.flag = j.get<bool>();
  if (j.is_number_integer() && !j.is_number_unsigned()) v.integer = j.get<std::int64_t>();
  if (j.is_number_unsigned()) v.natural = j.get<std::uint64_t>();
  if (j.is_number_float()) v.real = j.get<double>();
  if (j.is_string()) v.text = j.get_ptr<const std::string*>();
  return v;
}

// Hands `j` to the reader as the parser would have (the live run's results are JSON values:
// they are read by the same reader as a report's text).
void walk(const json& j, result_reader& reader) {
  if (j.is_object()) {
    reader.open(true);
    for (const auto& [k, v] : j.items()) {
      reader.key(k);
      walk(v, reader);
    }
    reader.close();
  } else if (j.is_array()) {
    reader.open(false);
    for (const auto& v : j) walk(v, reader);
    reader.close();
  } else {
    reader.value(scalar_of(j));
  }
}

void read_parsed_result(result_reader& reader, const json& r, result_view& into, std::size_t index,
                        const std::string& origin, const std::string& where) {
  if (!r.is_object()) {
    throw user_error(origin + ": " +
                     (where.empty() ? "results[" + std::to_string(index) + "]" : where) +
                     ": expected an object, got " + r.type_name());
  }
  reader.begin(into, index, where);
  walk(r, reader);
}

// A parsed "results", each element freed once read: the live run's document of a large run
// takes several times its text, and holding it whole beside the views doubled that.
detail::results_read parsed_results(json& results, const std::string& origin) {
  detail::results_read out;
  out.given = true;
  out.type = results.type_name();
  if (!results.is_array()) return out;
  result_reader reader(origin);
  out.results.reserve(results.size());
  try {
    for (std::size_t i = 0; i < results.size(); ++i) {
      read_parsed_result(reader, results[i], out.results.emplace_back(), i, origin, "");
      results[i] = nullptr;
    }
  } catch (const user_error& e) {
    out.error = e.what();
  }
  return out;
}

// The parsed document's strings and keys made printable, as report_events makes a text's: one
// view whichever way a report is read. A loop, not a recursion: the document may be deep.
void printable_strings(json& doc) {
  std::vector<json*> todo = {&doc};
  while (!todo.empty()) {
    json& j = *todo.back();
    todo.pop_back();
    if (j.is_string()) printable_in_place(j.get_ref<std::string&>());
    if (j.is_object() && std::any_of(j.items().begin(), j.items().end(),
                                     [](const auto& kv) { return has_control(kv.key()); })) {
      json fixed = json::object();
      for (auto it = j.begin(); it != j.end(); ++it)
        fixed[printable_line(it.key())] = std::move(*it);
      j = std::move(fixed);
    }
    if (j.is_object() || j.is_array())
      for (auto& v : j) todo.push_back(&v);
  }
}

report_view read_parsed_report(json doc, const std::string& origin,
                               std::string_view reader_version) {
  printable_strings(doc);
  if (!doc.is_object()) {
    throw user_error(origin + ": not an infrabench report (expected a JSON object, got " +
                     std::string(doc.type_name()) + ")");
  }
  detail::results_read results;
  json rest = json::object();
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() == "results") {
      results = parsed_results(it.value(), origin);
    } else {
      rest[it.key()] = std::move(it.value());
    }
  }
  return detail::assemble_report(rest, std::move(results), origin, reader_version);
}

}  // namespace

report_view report_from_json(json doc, const std::string& origin) {
  return read_parsed_report(std::move(doc), origin, report_schema_version);
}

result_view result_from_json(const json& r, const std::string& where) {
  const std::string origin = "the run's results";
  result_reader reader(origin);
  result_view out;
  read_parsed_result(reader, r, out, 0, origin, where);
  return out;
}

std::vector<result_view> results_from_json(const json& results) {
  if (!results.is_array()) throw user_error("the run's results: expected an array");
  std::vector<result_view> out;
  out.reserve(results.size());
  for (std::size_t i = 0; i < results.size(); ++i)
    out.push_back(result_from_json(results[i], "results[" + std::to_string(i) + "]"));
  return out;
}

report_view parse_report(std::string_view text, const std::string& origin,
                         std::string_view reader_version) {
  text_source source(text);
  return read_report(source, origin, reader_version);
}

report_view parse_report(std::string_view text, const std::string& origin) {
  return parse_report(text, origin, report_schema_version);
}

report_view parse_report(std::string_view text, const std::string& origin,
                         const result_filter& filter) {
  text_source source(text);
  return read_report(source, origin, report_schema_version, &filter);
}

namespace {

// A regular file is streamed, refused by its size before a byte is read; anything else (a pipe:
// `check <(zcat r.json.gz)`) is read whole by the bounded reader, with its waits and refusals.
report_view read_report_file(const std::string& path, const result_filter* filter) {
  // O_NONBLOCK: a FIFO put where the file was must not be waited on here.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  struct stat st {};
  if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    text_source source(fd, path, max_report_bytes);
    if (static_cast<std::uint64_t>(st.st_size) > max_report_bytes)
      report_too_large(path, max_report_bytes);
    return read_report(source, path, report_schema_version, filter);
  }
  if (fd >= 0) ::close(fd);
  const std::string text = read_text_file(path, "report", max_report_bytes);
  text_source source(text);
  return read_report(source, path, report_schema_version, filter);
}

report_view labelled(report_view rv, const std::string& path) {
  rv.path = path;
  rv.label = std::filesystem::path(path).stem().string();
  return rv;
}

}  // namespace

report_view load_report(const std::string& path) {
  return labelled(read_report_file(path, nullptr), path);
}

report_view load_report(const std::string& path, const result_filter& filter) {
  return labelled(read_report_file(path, &filter), path);
}

}  // namespace infrabench::model
