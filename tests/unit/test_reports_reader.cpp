// The streaming report reader (report_reader.cpp): a file read in chunks, a text in memory and a
// document already parsed (the live run's) go through one reader and must give the same view, and
// refuse the same input with the same one-line message.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "infrabench/error.h"
#include "infrabench/names.h"
#include "infrabench/reports/report_io.h"
#include "test_reports_util.h"

using namespace infrabench;
using namespace infrabench::reports;
using ib_test::json;

namespace {

namespace fs = std::filesystem;

// A scratch file, removed with the test.
class temp_file {
 public:
  explicit temp_file(const std::string& text) {
    m_path = (fs::temp_directory_path() / ("ib_reader_" + std::to_string(::getpid()) + "_" +
                                           std::to_string(++counter) + ".json"))
                 .string();
    std::ofstream(m_path, std::ios::binary) << text;
  }
  ~temp_file() { fs::remove(m_path); }
  temp_file(const temp_file&) = delete;
  temp_file& operator=(const temp_file&) = delete;
  [[nodiscard]] const std::string& path() const { return m_path; }

 private:
  static inline int counter = 0;
  std::string m_path;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string error_of(const std::function<void()>& read) {
  try {
    read();
  } catch (const user_error& e) {
    return e.what();
  }
  return "";
}

// The error each way of reading `text` gives, all named by the same origin (the file's path).
struct three_errors {
  std::string file, text, parsed;
};
three_errors errors_of(const std::string& text, bool also_parsed = true) {
  const temp_file f(text);
  three_errors out;
  out.file = error_of([&] { (void)load_report(f.path()); });
  out.text = error_of([&] { (void)parse_report(text, f.path()); });
  const json doc = also_parsed ? json::parse(text, nullptr, false) : json();
  out.parsed = !also_parsed || doc.is_discarded()
                   ? out.text
                   : error_of([&] { (void)report_from_json(doc, f.path()); });
  return out;
}

json sample() {
  return ib_test::report(json::array(
      {ib_test::result("bandwidth/host_memory", {{"kernel", "triad"}, {"array_size", 268435456}},
                       {{"bandwidth_gbps", "GB/s", 20.5}, {"latency_us", "us", 3, false}}),
       ib_test::result("gemm/cublas", {{"n", 4096}}, {}, "node1", 0, "skipped"),
       ib_test::result("gemm/cpu_fp32", {{"n", 512}}, {{"gflops", "GFLOP/s", 80}})}));
}

std::vector<fs::path> shipped_reports() {
  std::vector<fs::path> out;
  for (const char* dir : {"/corpus/report", "/../fixtures/roofline", "/../fixtures/telemetry"}) {
    for (const auto& e : fs::directory_iterator(std::string(INFRABENCH_FUZZ_DIR) + dir)) {
      if (e.path().extension() == ".json") out.push_back(e.path());
    }
  }
  return out;
}

}  // namespace

TEST(ReportsReader, FileTextAndParsedDocumentGiveTheSameViewOfEveryShippedReport) {
  std::size_t n = 0;
  for (const auto& path : shipped_reports()) {
    const std::string text = slurp(path.string());
    const std::string name = path.filename().string();
    if (name == "deep_nesting.json") {  // hostile by design: refused, the same way by both
      const auto e = errors_of(text, false);
      EXPECT_NE(e.file.find("nested deeper than 64 levels at line"), std::string::npos) << e.file;
      EXPECT_EQ(e.file, e.text);
      continue;
    }
    const report_view from_file = load_report(path.string());
    const report_view from_text = parse_report(text, path.string());
    const report_view from_doc = report_from_json(json::parse(text), path.string());
    EXPECT_EQ(from_file.label, path.stem().string());
    EXPECT_EQ(to_json(from_file), to_json(from_text)) << name;
    EXPECT_EQ(to_json(from_file), to_json(from_doc)) << name;
    EXPECT_EQ(from_file.results.size(), json::parse(text).at("results").size()) << name;
    EXPECT_EQ(from_file.notes, from_doc.notes) << name;
    ++n;
  }
  EXPECT_GE(n, 8u);  // the corpus and the fixtures are there
}

TEST(ReportsReader, MalformedResultsAreRefusedTheSameWayByEveryEntry) {
  const std::vector<std::pair<std::function<void(json&)>, std::string>> cases = {
      {[](json& d) { d["results"][0]["metrics"][0]["value"] = "fast"; },
       "results[0].metrics[0].value: expected a number, got string"},
      {[](json& d) { d["results"][1].erase("status"); }, "results[1]: missing \"status\""},
      {[](json& d) { d["results"][0]["metrics"][1].erase("better"); },
       "results[0].metrics[1]: missing \"better\""},
      {[](json& d) { d["results"][0]["metrics"][1]["name"] = "bandwidth_gbps"; },
       "results[0].metrics[1]: metric \"bandwidth_gbps\" appears twice"},
      {[](json& d) { d["results"][2]["axes"] = json::array(); },
       "results[2].axes: expected an object, got array"},
      {[](json& d) { d["results"][0]["axes"]["kernel"] = json::object(); },
       "results[0].axes.kernel: expected a number or a string, got object"},
      {[](json& d) {
         d["results"][0]["metrics"][0]["samples"] = {1, "a"};
       },
       "results[0].metrics[0].samples[1]: expected a number, got string"},
      {[](json& d) { d["results"][0]["warnings"] = json::object(); },
       "results[0].warnings: expected an array of strings, got object"},
      {[](json& d) { d["results"][0]["rank"] = -1; },
       "results[0].rank: expected a non-negative integer"},
      {[](json& d) { d["results"][0]["repetitions"] = {3}; },
       "results[0].repetitions[0]: expected an object, got number"},
      {[](json& d) { d["results"][0]["valid"] = nullptr; },
       "results[0].valid: expected true or false, got null"},
      {[](json& d) { d["results"][0]["benchmark"] = ""; },
       "results[0].benchmark: empty benchmark name"},
      {[](json& d) { d["results"][2] = 5; }, "results[2]: expected an object, got number"},
      {[](json& d) { d["results"] = json::object(); }, "results: expected an array, got object"},
      {[](json& d) { d.erase("results"); }, "top level: missing \"results\""},
      // The schema is judged before the results: a newer report says so, whatever its results.
      {[](json& d) {
         d["schema_version"] = "9.0.0";
         d["results"][0]["metrics"] = 7;
       },
       "upgrade infrabench"},
      {[](json& d) {
         d.erase("tool");
         d["results"][0] = 1;
       },
       "not an infrabench report"}};
  for (const auto& [mutate, message] : cases) {
    json doc = sample();
    mutate(doc);
    const auto e = errors_of(doc.dump());
    EXPECT_NE(e.file.find(message), std::string::npos) << e.file << " | wanted: " << message;
    EXPECT_EQ(e.file, e.text) << message;
    EXPECT_EQ(e.file, e.parsed) << message;
  }
}

// A status this version does not know is refused, in one line, by every entry (as it was when the
// views held the status as text); a reason code it does not know (another version's) is kept as
// written, matched by nothing, and written back (issue 42).
TEST(ReportsReader, AnUnknownStatusIsRefusedAnUnknownReasonCodeIsKept) {
  json doc = sample();
  doc["results"][1]["status"] = "waived";
  const auto e = errors_of(doc.dump());
  EXPECT_NE(e.file.find("results[1].status: expected passed, skipped or failed, got \"waived\""),
            std::string::npos)
      << e.file;
  EXPECT_EQ(e.file.find('\n'), std::string::npos) << e.file;
  EXPECT_EQ(e.file, e.text);
  EXPECT_EQ(e.file, e.parsed);

  json other = sample();
  other["results"][1]["reason_code"] = "from_a_newer_version";
  other["results"][2]["reason_code"] = "node_local";
  const report_view r = parse_report(other.dump(), "other.json");
  EXPECT_EQ(r.results[1].status, status::skipped);
  EXPECT_EQ(r.results[1].reason_code, reason_code::none);
  EXPECT_EQ(r.results[1].given_reason_code(), reason_code::none);  // given, but not known
  EXPECT_EQ(r.results[2].reason_code, reason_code::node_local);
  EXPECT_FALSE(r.results[0].given_reason_code().has_value());  // the report gives none
  const json back = to_json(r);
  EXPECT_EQ(back["results"][1]["reason_code"], "from_a_newer_version");
  EXPECT_EQ(back["results"][1]["status"], "skipped");
  EXPECT_EQ(back["results"][2]["reason_code"], "node_local");
  EXPECT_FALSE(back["results"][0].contains("reason_code"));
}

// Two results of one configuration (and rank) are refused by every entry (issue 40 item 13:
// compare used the first, check the worst, OpenMetrics emitted the series twice); one result per
// rank of a multi-rank report is not a duplicate.
TEST(ReportsReader, DuplicateConfigurationsAreRefusedOnePerRankIsNot) {
  json doc = sample();
  doc["results"].push_back(doc["results"][2]);
  doc["results"][3]["metrics"][0]["value"] = 70;
  const auto e = errors_of(doc.dump());
  EXPECT_NE(e.file.find("results[2] and results[3] are both gemm/cpu_fp32 n=512 (rank 0 on node1)"),
            std::string::npos)
      << e.file;
  EXPECT_EQ(e.file, e.text);
  EXPECT_EQ(e.file, e.parsed);
  json ranks = sample();
  ranks["run"]["world_size"] = 2;
  for (int i = 0; i < 3; ++i) {
    json other = ranks["results"][i];
    other["rank"] = 1;
    ranks["results"].push_back(other);
  }
  EXPECT_EQ(errors_of(ranks.dump()).file, "");
  ranks["results"].push_back(ranks["results"][4]);  // rank 1's gemm/cublas again
  EXPECT_NE(errors_of(ranks.dump()).file.find("are both gemm/cublas n=4096 (rank 1"),
            std::string::npos);
}

TEST(ReportsReader, TruncatedCorruptOrEmptyFilesSayWhereAsTheirTextDoes) {
  const std::string text = sample().dump(2);
  for (const std::string& bad :
       {text.substr(0, text.size() / 2), text.substr(0, 300) + "@" + text.substr(301),
        std::string("  \n "), std::string("[1, 2]"), text + "x"}) {
    const auto e = errors_of(bad);
    EXPECT_FALSE(e.file.empty()) << bad.substr(0, 40);
    EXPECT_EQ(e.file, e.text);
  }
  EXPECT_NE(errors_of(text.substr(0, 100)).file.find("truncated JSON (ends early), line"),
            std::string::npos);
  EXPECT_NE(errors_of(" \n ").file.find("empty file"), std::string::npos);
  // Past the first chunk the reader has read (1 MiB): the line is counted over the whole file.
  json big = sample();
  for (int i = 0; i < 3000; ++i) big["results"].push_back(big["results"][0]);
  std::string long_text = big.dump(1);
  ASSERT_GT(long_text.size(), std::size_t{3} << 19);  // past the first chunk by half of one
  long_text.insert(long_text.rfind('}'), ",,");
  const auto e = errors_of(long_text);
  EXPECT_NE(e.file.find("invalid JSON at line"), std::string::npos) << e.file;
  EXPECT_EQ(e.file, e.text);
}

TEST(ReportsReader, AKeyGivenTwiceCountsItsLastValueAsTheParsedDocumentDoes) {
  const json doc = sample();
  std::string text = doc.dump();
  // The first result says "status" twice and "metrics" twice: the last of each counts, as
  // nlohmann's own parser has it.
  const std::string from = "{\"axes\":{\"array_size\"";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), 1,
               "{\"status\":\"failed\",\"metrics\":[{\"name\":\"x\",\"value\":1,\"better\":"
               "\"lower\"}],");
  const report_view streamed = parse_report(text, "twice.json");
  const report_view parsed = report_from_json(json::parse(text), "twice.json");
  EXPECT_EQ(streamed.results[0].status, status::passed);
  ASSERT_EQ(streamed.results[0].metrics.size(), 2u);
  EXPECT_EQ(streamed.results[0].metrics[0].name, "bandwidth_gbps");
  EXPECT_EQ(to_json(streamed), to_json(parsed));
}

TEST(ReportsReader, AReportBeyondTheBoundIsRefusedBeforeItIsRead) {
  const temp_file f("");
  ASSERT_EQ(::truncate(f.path().c_str(), static_cast<off_t>(max_report_bytes) + 1), 0);  // sparse
  const std::string e = error_of([&] { (void)load_report(f.path()); });
  EXPECT_NE(e.find("larger than 512 MiB"), std::string::npos) << e;
}

TEST(ReportsReader, NamesLongerThanTheBoundAreRefusedInOneLine) {
  // A 40,000-character name overflowed the stack of a recursive std::regex matcher downstream
  // (SIGSEGV in report, check, baseline create): names are bounded where they are read.
  const std::string long_name(40'000, 'a');
  const std::vector<std::pair<std::function<void(json&)>, std::string>> cases = {
      {[&](json& d) { d["results"][0]["benchmark"] = "x/" + long_name; },
       "results[0].benchmark: benchmark name 'x/aaa"},
      {[&](json& d) { d["results"][0]["metrics"][0]["name"] = long_name; },
       "results[0].metrics[0].name: metric name 'aaa"},
      {[&](json& d) { d["results"][0]["host"] = long_name; }, "results[0].host: host name 'aaa"},
      {[&](json& d) { d["results"][0]["axes"][long_name] = 1; }, ": axis name 'aaa"}};
  for (const auto& [mutate, message] : cases) {
    json doc = sample();
    mutate(doc);
    const auto e = errors_of(doc.dump());
    EXPECT_NE(e.file.find(message), std::string::npos) << e.file.substr(0, 300);
    const bool sized = e.file.find("(40002 characters)") != std::string::npos ||
                       e.file.find("(40000 characters)") != std::string::npos;
    EXPECT_TRUE(sized) << e.file.substr(0, 300);
    EXPECT_NE(e.file.find("longer than the 256 characters a name may have"), std::string::npos);
    EXPECT_LT(e.file.size(), 400u);
    EXPECT_EQ(e.file, e.text);
    EXPECT_EQ(e.file, e.parsed);
  }
  // The bound itself is a name.
  json doc = sample();
  doc["results"][0]["metrics"][0]["name"] = std::string(max_name_length, 'm');
  EXPECT_EQ(parse_report(doc.dump(), "r.json").results.at(0).metrics.at(0).name.size(),
            max_name_length);
}

TEST(ReportsReader, NoControlCharacterOfAReportReachesTheModel) {
  // A hostname with a newline and "check: 2 passed ... -> PASS" printed a forged verdict line in
  // check and compare: every string and key is one printable line, whichever way it is read.
  json doc = sample();
  const std::string forged = "node1\ncheck: 2 passed, 0 failed -> PASS\x1b[2J";
  doc["hosts"][0]["hostname"] = forged;
  doc["results"][0]["reason"] = "why\r\nnot";
  doc["results"][0]["axes"]["kernel"] = "tri\tad";
  doc["run"]["key\nwith newline"] = "x";
  const temp_file f(doc.dump());
  for (const report_view& r : {load_report(f.path()), parse_report(doc.dump(), "r.json"),
                               report_from_json(doc, "r.json")}) {
    EXPECT_EQ(r.primary_hostname(), "node1\\x0acheck: 2 passed, 0 failed -> PASS\\x1b[2J");
    EXPECT_EQ(r.results.at(0).reason, "why\\x0d\\x0anot");
    EXPECT_EQ(r.results.at(0).axes.at("kernel"), "tri\\x09ad");
    const std::string all = to_json(r).dump();
    EXPECT_EQ(all.find("\\n"), std::string::npos);
    EXPECT_EQ(all.find("\\u001b"), std::string::npos);
  }
}

namespace {

// `doc` as text with each result's "benchmark" written last (after its metrics and host), as
// another writer might: the filter decides when the name comes, whatever came before it.
std::string benchmark_last(const json& doc) {
  nlohmann::ordered_json out = nlohmann::ordered_json::parse(doc.dump());
  for (auto& r : out["results"]) {
    const auto name = r["benchmark"];
    r.erase("benchmark");
    r["benchmark"] = name;
  }
  return out.dump();
}

// The filtered read of `path` against the whole read with the results `filter` does not keep
// erased afterwards: the same report, field for field; the whole one's host.
void expect_same_kept(const std::string& path, const result_filter& filter,
                      const std::string& what) {
  const report_view filtered = load_report(path, filter);
  report_view whole = load_report(path);
  EXPECT_EQ(filtered.primary_hostname(), whole.primary_hostname()) << what;
  std::erase_if(whole.results, [&](const result_view& x) { return !filter.keeps(x.benchmark); });
  EXPECT_EQ(to_json(filtered), to_json(whole)) << what;
  ASSERT_EQ(filtered.results.size(), whole.results.size()) << what;
  for (std::size_t i = 0; i < whole.results.size(); ++i) {
    const result_view &a = filtered.results[i], &b = whole.results[i];
    EXPECT_EQ(a.config_label(), b.config_label()) << what;
    EXPECT_EQ(a.host, b.host) << what;
    EXPECT_EQ(a.rank, b.rank) << what;
    EXPECT_EQ(a.status, b.status) << what;
    EXPECT_EQ(a.valid, b.valid) << what;
    EXPECT_EQ(a.samples_s, b.samples_s) << what;
    ASSERT_EQ(a.metrics.size(), b.metrics.size()) << what;
    for (std::size_t k = 0; k < a.metrics.size(); ++k) {
      EXPECT_EQ(a.metrics[k].name, b.metrics[k].name) << what;
      const double x = a.metrics[k].value, y = b.metrics[k].value;
      EXPECT_TRUE(std::isnan(x) ? std::isnan(y) : x == y) << what;
      EXPECT_EQ(a.metrics[k].samples, b.metrics[k].samples) << what;
    }
  }
  EXPECT_EQ(filtered.inventories.size(), whole.inventories.size()) << what;
}

}  // namespace

// A filtered read (load_report(path, filter): the fleet check's) builds exactly the results the
// whole read would keep, field for field, wherever a result names its benchmark; it counts what it
// left out and the hosts those named.
TEST(ReportsReader, AFilteredReadBuildsTheKeptResultsOfTheWholeRead) {
  json doc = sample();
  doc["results"][1]["host"] = "node2";  // gemm/cublas, left out below: its host is still named
  const result_filter filter{{"bandwidth/host_memory", "gemm/cpu_fp32"}};
  for (const std::string& text : {doc.dump(), benchmark_last(doc)}) {
    const temp_file f(text);
    expect_same_kept(f.path(), filter, text.substr(0, 60));
    const report_view filtered = load_report(f.path(), filter);
    EXPECT_EQ(filtered.results.size(), 2U);
    EXPECT_EQ(filtered.skipped.count, 1U);
    EXPECT_EQ(filtered.skipped.hosts, (std::set<std::string>{"node2"}));
    EXPECT_EQ(filtered.label, fs::path(f.path()).stem().string());
  }

  // Without inventories, the report's host is its first result's, left out or not.
  json bare = sample();
  bare["hosts"] = json::array();
  bare["results"][0]["host"] = "first";
  bare["results"][2]["host"] = "";
  const temp_file f(bare.dump());
  const result_filter not_first{{"gemm/cpu_fp32"}};
  expect_same_kept(f.path(), not_first, "bare");
  EXPECT_EQ(load_report(f.path(), not_first).primary_hostname(), "first");

  // Every shipped report, every other benchmark of it kept.
  for (const auto& path : shipped_reports()) {
    if (path.filename() == "deep_nesting.json") continue;
    const report_view whole = load_report(path.string());
    result_filter half;
    bool take = true;
    for (const auto& r : whole.results) {
      if (half.keeps(r.benchmark)) continue;
      if (take) half.benchmarks.insert(r.benchmark);
      take = !take;
    }
    expect_same_kept(path.string(), half, path.filename().string());
  }
}

// A kept result is checked as the whole read checks it, named by its index among all the results
// (those left out counted); a left-out one only up to its benchmark's name, and its host.
TEST(ReportsReader, AFilteredReadChecksWhatItKeeps) {
  const result_filter filter{{"gemm/cpu_fp32"}};
  json doc = sample();
  doc["results"][2]["metrics"][0]["value"] = "fast";
  const temp_file bad_kept(doc.dump());
  const std::string whole = error_of([&] { (void)load_report(bad_kept.path()); });
  EXPECT_NE(whole.find("results[2].metrics[0].value: expected a number"), std::string::npos)
      << whole;
  EXPECT_EQ(error_of([&] { (void)load_report(bad_kept.path(), filter); }), whole);

  json skipped = sample();
  skipped["results"][0]["metrics"][0]["value"] = "fast";  // after "benchmark": not read
  const temp_file bad_skipped(skipped.dump());
  EXPECT_EQ(load_report(bad_skipped.path(), filter).results.size(), 1U);
  skipped["results"][0]["host"] = json::array();  // its host is read
  const temp_file bad_host(skipped.dump());
  EXPECT_NE(error_of([&] {
              (void)load_report(bad_host.path(), filter);
            }).find("results[0].host: expected a string, got array"),
            std::string::npos);
  skipped["results"][0]["axes"] = 3;  // before "benchmark" (keys in name order): read and refused
  const temp_file bad_axes(skipped.dump());
  EXPECT_NE(error_of([&] {
              (void)load_report(bad_axes.path(), filter);
            }).find("results[0].axes: expected an object, got number"),
            std::string::npos);
}
