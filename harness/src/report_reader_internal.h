// Between the pieces of the report model's streaming reader (private to the harness):
// report_reader.cpp (the parser's events for a whole report), report_reader_result.cpp (one
// result read from them), report_reader_members.cpp (each member of a result, checked as it
// arrives), report_reader_source.cpp (where the characters come from, and where an error is) and
// report_reader_parsed.cpp (the live run's results, already parsed).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/model/report.h"

namespace infrabench::model::detail {

using json = nlohmann::json;

inline std::string type_name_of(json::value_t type) {
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

[[noreturn]] void report_too_large(const std::string& path, std::size_t max_bytes);

// nlohmann's message without its "[json.exception.parse_error.101] " prefix.
std::string reason_of(const nlohmann::detail::exception& e);

// Every string of a report, and every key, reaches the model as one printable line (names.h).
void printable_in_place(std::string& s);

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

field field_of(const std::string& key);

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

}  // namespace infrabench::model::detail
