// The report model's reader of a report's text (and of a live run's results): one streaming pass
// with nlohmann's SAX interface. Each result is read straight into its result_view, with every
// check the model makes of a result, named by its path ("results[3].metrics[0].value: expected a
// number"); the document's other sections are small and are built as JSON values for
// report_model.cpp's readers. A file is read in chunks, never held whole: memory grows with the
// typed model, not with the text (docs/reports.md, "Speed").
//
// This file: the parser's events for a whole report (report_events) and the readers of a text
// and of a file. One result is read by report_reader_result.cpp and report_reader_members.cpp,
// the characters come from report_reader_source.cpp, and the live run's parsed results are read
// by report_reader_parsed.cpp (report_reader_internal.h is what they share).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/model/report.h"
#include "infrabench/names.h"
#include "infrabench/report.h"
#include "infrabench/text_file.h"
#include "json_skim.h"
#include "report_reader.h"
#include "report_reader_internal.h"

namespace infrabench::model::detail {

// Every string of a report, and every key, reaches the model as one printable line: a hostname
// holding a newline and "check: 2 passed ... -> PASS" once printed a forged verdict line in
// check and compare, and an escape sequence could rewrite the terminal (names.h).
void printable_in_place(std::string& s) {
  if (has_control(s)) s = printable_line(s);
}

namespace {

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

}  // namespace infrabench::model::detail

namespace infrabench::model {

report_view parse_report(std::string_view text, const std::string& origin,
                         std::string_view reader_version) {
  detail::text_source source(text);
  return detail::read_report(source, origin, reader_version);
}

report_view parse_report(std::string_view text, const std::string& origin) {
  return parse_report(text, origin, report_schema_version);
}

report_view parse_report(std::string_view text, const std::string& origin,
                         const result_filter& filter) {
  detail::text_source source(text);
  return detail::read_report(source, origin, report_schema_version, &filter);
}

report_view load_report(const std::string& path) {
  return detail::labelled(detail::read_report_file(path, nullptr), path);
}

report_view load_report(const std::string& path, const result_filter& filter) {
  return detail::labelled(detail::read_report_file(path, &filter), path);
}

}  // namespace infrabench::model
