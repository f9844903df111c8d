// The history database (history.h): its schema and migrations, recording reports, and the queries
// `history show` and `trend` read. Judging its series (trend, the `history check` gate) is
// history_gate.cpp.
#include "infrabench/reports/history.h"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/output_file.h"
#include "infrabench/report.h"
#include "infrabench/reports/machine_drift.h"
#include "infrabench/reports/run_identity.h"

namespace infrabench::reports {
namespace {

using json = nlohmann::json;

// Long enough for a CI job to wait out several others recording at once.
constexpr int busy_timeout_ms = 30000;

struct migration {
  int to;
  const char* what;
  const char* sql;
};

// Append-only: a released migration is never edited; a change is a new entry.
const migration migrations[] = {
    {1, "runs, hosts, results, metrics",
     R"SQL(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  started_utc TEXT NOT NULL,
  finished_utc TEXT NOT NULL,
  host TEXT NOT NULL,
  world_size INTEGER NOT NULL,
  suite TEXT,
  schema_version TEXT NOT NULL,
  interrupted INTEGER NOT NULL,
  source TEXT,
  recorded_utc TEXT NOT NULL,
  UNIQUE (started_utc, finished_utc, host)
);
CREATE TABLE hosts (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  hostname TEXT NOT NULL,
  inventory TEXT NOT NULL
);
CREATE TABLE results (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  benchmark TEXT NOT NULL,
  config_key TEXT NOT NULL,
  axes TEXT NOT NULL,
  axes_label TEXT NOT NULL,
  host TEXT NOT NULL,
  rank INTEGER NOT NULL,
  node TEXT NOT NULL,
  status TEXT NOT NULL,
  reason TEXT,
  valid INTEGER NOT NULL
);
CREATE TABLE metrics (
  id INTEGER PRIMARY KEY,
  result_id INTEGER NOT NULL REFERENCES results(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  unit TEXT NOT NULL,
  better TEXT NOT NULL CHECK (better IN ('higher', 'lower')),
  value REAL,
  best REAL,
  samples TEXT NOT NULL
);
)SQL"},
    {2, "runs.git_commit, results.axes_display and indexes for trend queries",
     R"SQL(
ALTER TABLE runs ADD COLUMN git_commit TEXT;
UPDATE runs SET git_commit = (
  SELECT json_extract(h.inventory, '$.build.git_commit') FROM hosts h WHERE h.run_id = runs.id LIMIT 1);
ALTER TABLE results ADD COLUMN axes_display TEXT;
CREATE INDEX runs_by_time ON runs(started_utc);
CREATE INDEX results_by_run ON results(run_id);
CREATE INDEX results_by_config ON results(benchmark, config_key);
CREATE INDEX metrics_by_result ON metrics(result_id);
CREATE INDEX metrics_by_name ON metrics(name);
)SQL"},
    {3, "runs.content_id: a run is identified by what its report holds",
     R"SQL(
ALTER TABLE runs ADD COLUMN content_id TEXT;
)SQL"},
    {4, "runs.canary_fma_gflops, runs.canary_stream_gbps: the same-run canary (issue 44)",
     R"SQL(
ALTER TABLE runs ADD COLUMN canary_fma_gflops REAL;
ALTER TABLE runs ADD COLUMN canary_stream_gbps REAL;
)SQL"},
    {5, "runs.canary_cache_gbps: the canary's cache-level triad (issue 44)",
     R"SQL(
ALTER TABLE runs ADD COLUMN canary_cache_gbps REAL;
)SQL"},
    {6,
     "runs.canary_all_cpus, canary_fma_all_gflops, canary_cache_all_gbps: the canary on every "
     "CPU at once, per CPU; results.throttled: its own cgroup quota throttled it (issue 44)",
     R"SQL(
ALTER TABLE results ADD COLUMN throttled INTEGER;
ALTER TABLE runs ADD COLUMN canary_all_cpus INTEGER;
ALTER TABLE runs ADD COLUMN canary_fma_all_gflops REAL;
ALTER TABLE runs ADD COLUMN canary_cache_all_gbps REAL;
)SQL"},
};

class stmt {
 public:
  stmt(sqlite3* db, const char* sql, const std::string& path) : m_db(db), m_path(path) {
    if (sqlite3_prepare_v2(db, sql, -1, &m_s, nullptr) != SQLITE_OK) fail("prepare");
  }
  ~stmt() { sqlite3_finalize(m_s); }
  stmt(const stmt&) = delete;
  stmt& operator=(const stmt&) = delete;
  stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(m_s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  stmt& bind(int i, std::int64_t v) {
    sqlite3_bind_int64(m_s, i, v);
    return *this;
  }
  stmt& bind(int i, double v) {
    if (std::isfinite(v))
      sqlite3_bind_double(m_s, i, v);
    else
      sqlite3_bind_null(m_s, i);
    return *this;
  }
  // true: a row is there.
  bool step() {
    const int rc = sqlite3_step(m_s);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail("step");
  }
  void reset() {
    sqlite3_reset(m_s);
    sqlite3_clear_bindings(m_s);
  }
  [[nodiscard]] std::string text(int i) const {
    const auto* p = sqlite3_column_text(m_s, i);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  [[nodiscard]] std::int64_t integer(int i) const { return sqlite3_column_int64(m_s, i); }
  [[nodiscard]] double real(int i) const {
    return sqlite3_column_type(m_s, i) == SQLITE_NULL ? std::nan("")
                                                      : sqlite3_column_double(m_s, i);
  }

 private:
  [[noreturn]] void fail(const char* what) const;
  sqlite3* m_db;
  sqlite3_stmt* m_s = nullptr;
  const std::string& m_path;
};

[[noreturn]] void throw_sqlite(sqlite3* db, const std::string& path, const std::string& what) {
  const int code = db ? sqlite3_errcode(db) : SQLITE_ERROR;
  const std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
  switch (code & 0xff) {
    case SQLITE_NOTADB:
      throw user_error(path + " is not an infrabench history database (not an SQLite file: " + msg +
                       ")");
    case SQLITE_READONLY:
      throw user_error("history database " + path + " is read-only (" + msg + "): cannot record");
    case SQLITE_CORRUPT:
      throw user_error("history database " + path + " is corrupt: " + msg);
    case SQLITE_CANTOPEN:
      throw user_error("cannot open history database " + path + ": " + msg);
    case SQLITE_BUSY:
      throw std::runtime_error("history database " + path + " stayed locked for " +
                               std::to_string(busy_timeout_ms / 1000) + " s (" + what + ")");
    case SQLITE_FULL:
      // A write that could not be made, as a full disk under any other output: exit 3.
      throw output_error("history database " + path + ": disk full (" + what + ")");
    case SQLITE_IOERR:
      // In WAL mode a full disk often shows as an I/O error (the -shm or -wal file cannot grow).
      if (db != nullptr && sqlite3_system_errno(db) == ENOSPC)
        throw output_error("history database " + path + ": disk full (" + what + ")");
      // Past `ulimit -f` (SIGXFSZ is handled, process_streams.h): the OS's words, not "disk I/O".
      if (db != nullptr && sqlite3_system_errno(db) == EFBIG)
        throw output_error("history database " + path + ": " + std::strerror(EFBIG) + " (" + what +
                           ")");
      throw output_error("history database " + path + ": " + what + ": " + msg);
    default:
      throw std::runtime_error("history database " + path + ": " + what + ": " + msg);
  }
}

void stmt::fail(const char* what) const {
  throw_sqlite(m_db, m_path, what);
}

void exec(sqlite3* db, const std::string& path, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    sqlite3_free(err);
    throw_sqlite(db, path, sql);
  }
}

// BEGIN IMMEDIATE takes the write lock up front, so two writers queue on the busy timeout instead
// of one failing when it upgrades a read transaction (SQLITE_BUSY without waiting).
class write_transaction {
 public:
  write_transaction(sqlite3* db, const std::string& path) : m_db(db), m_path(path) {
    exec(db, path, "BEGIN IMMEDIATE");
  }
  ~write_transaction() {
    if (!m_done) sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  write_transaction(const write_transaction&) = delete;
  write_transaction& operator=(const write_transaction&) = delete;
  void commit() {
    exec(m_db, m_path, "COMMIT");
    m_done = true;
  }

 private:
  sqlite3* m_db;
  const std::string& m_path;
  bool m_done = false;
};

int pragma_int(sqlite3* db, const std::string& path, const char* sql) {
  stmt s(db, sql, path);
  return s.step() ? static_cast<int>(s.integer(0)) : 0;
}

}  // namespace

namespace {

// A path SQLite can hold a database at, for reading or recording (checked before SQLite creates
// or rewrites anything).
void check_database_path(const std::string& path, history_db::access mode) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  if (mode == history_db::access::read && !exists) {
    throw user_error("no history database at " + path +
                     " (record reports first: infrabench history record REPORT --db " + path + ")");
  }
  if (exists && fs::is_directory(path, ec))
    throw user_error("history database " + path + " is a directory");
  // SQLite writes journals beside the database and rewrites it in place: a device, FIFO or
  // socket given as the database would be written to or hang (and /dev/null-journal created).
  if (exists && !fs::is_regular_file(path, ec))
    throw user_error("history database " + path +
                     " is not a regular file (a device, FIFO or socket cannot hold a database)");
  if (mode == history_db::access::write) {
    const std::string dir = fs::path(path).parent_path().string();
    if (!dir.empty() && !fs::is_directory(dir, ec))
      throw user_error("directory " + dir + " of the history database does not exist");
    if (exists ? ::access(path.c_str(), W_OK) != 0
               : ::access(dir.empty() ? "." : dir.c_str(), W_OK) != 0) {
      throw user_error("history database " + path + " is read-only: cannot record");
    }
  }
}

// What sqlite3_open_v2 opens. A file we cannot write: reading a WAL database needs its -shm file,
// which a reader without write access to the directory cannot create; "immutable" reads the file
// as it is (no writer can run on it either, as nobody who cannot write it records into it).
std::string open_target(const std::string& path, bool writable) {
  if (writable) return path;
  std::string target = "file:";
  for (char ch : path) {
    if (ch == '%' || ch == '?' || ch == '#') {
      char buf[4];
      std::snprintf(buf, sizeof(buf), "%%%02X", static_cast<unsigned char>(ch));
      target += buf;
    } else {
      target += ch;
    }
  }
  return target + "?mode=ro&immutable=1";
}

// The schema version of an infrabench history; refuses another SQLite file and a newer version.
// Reading refuses a file with no schema at all (an empty file): opening it must not make it a
// database, as SQLite would on the first migration.
int checked_schema_version(sqlite3* db, const std::string& path, history_db::access mode) {
  // Reading the schema is the first thing that touches the file: a text file fails here.
  const int tables = pragma_int(db, path, "SELECT count(*) FROM sqlite_master");
  const int app = pragma_int(db, path, "PRAGMA application_id");
  if (mode == history_db::access::read && tables == 0 && app == 0) {
    throw user_error(path + " is not an infrabench history database (it holds no database): " +
                     "refusing to make it one (infrabench history record REPORT --db " + path +
                     " creates one)");
  }
  if (app != history_application_id && (app != 0 || tables > 0)) {
    throw user_error(path +
                     " is an SQLite database but not an infrabench history (application_id " +
                     std::to_string(app) + ", " + std::to_string(tables) +
                     " schema objects): refusing to touch it");
  }
  const int version = pragma_int(db, path, "PRAGMA user_version");
  if (version > history_schema_version) {
    throw user_error("history database " + path + " has schema version " + std::to_string(version) +
                     ", newer than this infrabench (" + std::to_string(history_schema_version) +
                     "): upgrade infrabench");
  }
  return version;
}

// WAL: readers never block the writer and a crash mid-write leaves the file consistent.
// Persistent once set; another process may hold a lock for a moment, so retry.
void use_wal(sqlite3* db, const std::string& path) {
  exec(db, path, "PRAGMA foreign_keys = ON");
  for (int attempt = 0;; ++attempt) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db, "PRAGMA journal_mode = WAL", nullptr, nullptr, &err);
    sqlite3_free(err);
    if (rc == SQLITE_OK) break;
    if ((rc & 0xff) != SQLITE_BUSY || attempt > 300)
      throw_sqlite(db, path, "PRAGMA journal_mode = WAL");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  exec(db, path, "PRAGMA synchronous = NORMAL");
}

}  // namespace

history_db::history_db(const std::string& path, access mode, int max_version) : m_path(path) {
  check_database_path(path, mode);
  std::error_code ec;
  m_writable = std::filesystem::exists(path, ec) ? ::access(path.c_str(), W_OK) == 0 : true;
  const int flags = m_writable ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
                               : SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
  if (sqlite3_open_v2(open_target(path, m_writable).c_str(), &m_db, flags | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    const std::string msg = m_db ? sqlite3_errmsg(m_db) : "out of memory";
    sqlite3_close(m_db);
    m_db = nullptr;
    throw user_error("cannot open history database " + path + ": " + msg);
  }
  try {
    sqlite3_busy_timeout(m_db, busy_timeout_ms);
    sqlite3_extended_result_codes(m_db, 0);
    const int version = checked_schema_version(m_db, path, mode);
    if (version < max_version) {
      if (!m_writable) {
        throw user_error(
            "history database " + path + " has schema version " + std::to_string(version) +
            " and is read-only, so it cannot be migrated to " + std::to_string(max_version));
      }
      migrate(max_version);
    }
    if (m_writable) use_wal(m_db, path);
  } catch (...) {
    sqlite3_close(m_db);
    m_db = nullptr;
    throw;
  }
}

history_db::~history_db() {
  sqlite3_close(m_db);
}

void history_db::migrate(int max_version) {
  write_transaction tx(m_db, m_path);
  // Another process may have migrated while we waited for the lock: read the version again.
  const int app = pragma_int(m_db, m_path, "PRAGMA application_id");
  const int tables = pragma_int(m_db, m_path, "SELECT count(*) FROM sqlite_master");
  if (app != history_application_id && (app != 0 || tables > 0)) {
    throw user_error(m_path +
                     " is an SQLite database but not an infrabench history: refusing to touch it");
  }
  int version = pragma_int(m_db, m_path, "PRAGMA user_version");
  m_created = app == 0 && tables == 0 && version == 0;
  for (const auto& m : migrations) {
    if (m.to <= version || m.to > max_version) continue;
    exec(m_db, m_path, m.sql);
    m_migrated.push_back(std::to_string(version) + " -> " + std::to_string(m.to) + ": " + m.what);
    version = m.to;
  }
  exec(m_db, m_path, ("PRAGMA application_id = " + std::to_string(history_application_id)).c_str());
  exec(m_db, m_path, ("PRAGMA user_version = " + std::to_string(version)).c_str());
  tx.commit();
}

int history_db::schema_version() const {
  return pragma_int(m_db, m_path, "PRAGMA user_version");
}

namespace {

// The run this report was recorded as before, or 0. A run is its times and host (the table's
// key) and what it holds: another report with the same times and host is refused, never taken
// for the recorded one (issue 40 item 16). A run recorded before content ids (NULL) cannot tell:
// it is taken to be the same, as it was then.
std::int64_t recorded_run(sqlite3* db, const std::string& path, const report_view& report,
                          const std::string& content_id) {
  stmt find(db,
            "SELECT id, coalesce(content_id, '') FROM runs WHERE started_utc = ?1 AND "
            "finished_utc = ?2 AND host = ?3",
            path);
  find.bind(1, report.started_utc).bind(2, report.finished_utc).bind(3, report.primary_hostname());
  if (!find.step()) return 0;
  const std::int64_t id = find.integer(0);
  const std::string recorded = find.text(1);
  if (!recorded.empty() && recorded != content_id) {
    throw user_error(report.path + ": another run of " + report.primary_hostname() +
                     " with the same start and finish (" + report.started_utc +
                     ") is recorded as run " + std::to_string(id) + " with different results (" +
                     recorded + " vs " + content_id +
                     "): not recorded; two runs of one host cannot share their times: was one "
                     "edited?");
  }
  return id;
}

std::int64_t insert_run(sqlite3* db, const std::string& path, const report_view& report,
                        const std::string& source, const std::string& content_id) {
  const std::string suite = report.run_info.suite ? report.run_info.suite->name() : "";
  stmt ins(db,
           "INSERT INTO runs (started_utc, finished_utc, host, world_size, suite, "
           "schema_version, interrupted, source, "
           "recorded_utc, git_commit, content_id, canary_fma_gflops, canary_stream_gbps, "
           "canary_cache_gbps, canary_all_cpus, canary_fma_all_gflops, canary_cache_all_gbps) "
           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
           path);
  ins.bind(1, report.started_utc).bind(2, report.finished_utc).bind(3, report.primary_hostname());
  ins.bind(4, static_cast<std::int64_t>(report.world_size))
      .bind(5, suite)
      .bind(6, report.schema_version);
  ins.bind(7, static_cast<std::int64_t>(report.interrupted))
      .bind(8, source)
      .bind(9, utc_now_iso8601());
  ins.bind(10, report.git_commit()).bind(11, content_id);
  // A brief canary (canary_view::judges_the_machine) is not kept: history judges steps by it.
  const auto& c = report.run_info.canary;
  const canary_view* canary = c && c->judges_the_machine() ? &*c : nullptr;
  ins.bind(12, canary ? canary->fma_gflops : std::nan(""))
      .bind(13, canary ? canary->stream_gbps : std::nan(""))  // NaN: NULL
      .bind(14, canary ? canary->cache_gbps : std::nan(""));
  const bool all = canary && canary->all_cpus > 0;
  ins.bind(15, all ? canary->all_cpus : std::nan(""))
      .bind(16, all ? canary->all_fma_gflops : std::nan(""))
      .bind(17, all ? canary->all_cache_gbps : std::nan(""));
  ins.step();
  return sqlite3_last_insert_rowid(db);
}

void insert_hosts(sqlite3* db, const std::string& path, const report_view& report,
                  std::int64_t run_id) {
  stmt ins(db, "INSERT INTO hosts (run_id, hostname, inventory) VALUES (?1, ?2, ?3)", path);
  for (const auto& h : report.inventories) {
    ins.bind(1, run_id).bind(2, h.hostname).bind(3, json_text(h.inventory));
    ins.step();
    ins.reset();
  }
}

// One result row (keyed by result_identity, as everywhere) and its metrics; the metric count.
std::size_t insert_result(sqlite3* db, stmt& res, stmt& met, const report_view& report,
                          const result_view& r, std::int64_t run_id) {
  json axes = json::object();
  for (const auto& [k, v] : r.axes) axes[k] = v;
  res.bind(1, run_id)
      .bind(2, r.benchmark)
      .bind(3, r.config_key())
      .bind(4, json_text(axes))
      .bind(5, r.axes_label());
  res.bind(6, r.host)
      .bind(7, static_cast<std::int64_t>(r.rank))
      .bind(8, report.node_of(r))
      .bind(9, std::string(to_string(r.status)));
  res.bind(10, r.reason).bind(11, static_cast<std::int64_t>(r.valid));
  json display = json::object();
  for (const auto& [k, v] : r.axes_display) display[k] = v;
  res.bind(12, json_text(display));
  res.bind(13, static_cast<std::int64_t>(r.load && r.load->throttled));
  res.step();
  res.reset();
  const std::int64_t result_id = sqlite3_last_insert_rowid(db);
  for (const auto& m : r.metrics) {
    met.bind(1, result_id)
        .bind(2, m.name)
        .bind(3, m.unit)
        .bind(4, std::string(m.higher_is_better ? "higher" : "lower"));
    met.bind(5, m.value).bind(6, m.best).bind(7, json_text(json(m.samples)));
    met.step();
    met.reset();
  }
  return r.metrics.size();
}

}  // namespace

history_db::record_outcome history_db::record(const report_view& report,
                                              const std::string& source) {
  return record({{&report, source}}).front();
}

std::vector<history_db::record_outcome> history_db::record(
    const std::vector<std::pair<const report_view*, std::string>>& reports) {
  if (!m_writable) throw user_error("history database " + m_path + " is read-only: cannot record");
  std::vector<record_outcome> out;
  write_transaction tx(m_db, m_path);
  for (const auto& [report, source] : reports) out.push_back(record_one(*report, source));
  tx.commit();
  return out;
}

history_db::record_outcome history_db::record_one(const report_view& report,
                                                  const std::string& source) {
  record_outcome out;
  // Recorded before (or earlier in this call): nothing to do.
  const std::string content_id = run_content_id(report);
  if ((out.run_id = recorded_run(m_db, m_path, report, content_id)) != 0) return out;
  out.run_id = insert_run(m_db, m_path, report, source, content_id);
  insert_hosts(m_db, m_path, report, out.run_id);
  stmt res(m_db,
           "INSERT INTO results (run_id, benchmark, config_key, axes, axes_label, host, rank, "
           "node, status, reason, valid, "
           "axes_display, throttled) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
           "?13)",
           m_path);
  stmt met(m_db,
           "INSERT INTO metrics (result_id, name, unit, better, value, best, samples) VALUES (?1, "
           "?2, ?3, ?4, ?5, ?6, ?7)",
           m_path);
  for (const auto& r : report.results) {
    out.metrics += insert_result(m_db, res, met, report, r, out.run_id);
    ++out.results;
  }
  out.inserted = true;
  return out;
}

std::vector<history_db::run_row> history_db::runs(std::size_t limit,
                                                  const std::string& host) const {
  stmt s(m_db,
         "SELECT r.id, r.started_utc, r.host, coalesce(r.suite, ''), coalesce(r.git_commit, ''), "
         "coalesce(r.source, ''), "
         "r.recorded_utc, r.interrupted, "
         "(SELECT count(DISTINCT node) FROM results x WHERE x.run_id = r.id), "
         "(SELECT count(*) FROM results x WHERE x.run_id = r.id AND x.status = 'passed'), "
         "(SELECT count(*) FROM results x WHERE x.run_id = r.id AND x.status = 'failed'), "
         "(SELECT count(*) FROM results x WHERE x.run_id = r.id AND x.status = 'skipped') "
         "FROM runs r WHERE (?1 = '' OR r.host = ?1 OR EXISTS (SELECT 1 FROM results x WHERE "
         "x.run_id = r.id AND x.host = ?1)) "
         "ORDER BY r.started_utc DESC, r.id DESC LIMIT ?2",
         m_path);
  s.bind(1, host).bind(2, static_cast<std::int64_t>(limit));
  std::vector<run_row> out;
  while (s.step()) {
    run_row r;
    r.id = s.integer(0);
    r.started_utc = s.text(1);
    r.host = s.text(2);
    r.suite = s.text(3);
    r.git_commit = s.text(4);
    r.source = s.text(5);
    r.recorded_utc = s.text(6);
    r.interrupted = s.integer(7) != 0;
    r.nodes = static_cast<int>(std::max<std::int64_t>(1, s.integer(8)));
    r.passed = static_cast<std::size_t>(s.integer(9));
    r.failed = static_cast<std::size_t>(s.integer(10));
    r.skipped = static_cast<std::size_t>(s.integer(11));
    out.push_back(std::move(r));
  }
  return out;
}

namespace {

// A row of history_db::trend's query as its point (the columns are that query's).
history_db::point trend_point(const stmt& s) {
  history_db::point p;
  p.run_id = s.integer(0);
  p.started_utc = s.text(1);
  p.git_commit = s.text(2);
  p.valid = s.integer(9) != 0;
  p.value = s.real(12);
  const json samples = parse_json_or_discarded(s.text(13));
  p.samples = samples.is_array() ? samples.size() : 0;
  p.canary_fma_gflops = s.real(15);
  p.canary_stream_gbps = s.real(16);
  p.canary_cache_gbps = s.real(17);
  p.canary_all_cpus = s.real(18);
  p.canary_all_fma_gflops = s.real(19);
  p.canary_all_cache_gbps = s.real(20);
  p.throttled = s.integer(21) != 0;
  return p;
}

}  // namespace

std::vector<history_db::series> history_db::trend(const std::string& metric,
                                                  const std::string& benchmark, const json& axes,
                                                  const std::string& host) const {
  stmt s(m_db,
         "SELECT r.id, r.started_utc, coalesce(r.git_commit, ''), x.benchmark, x.config_key, "
         "x.axes, x.axes_label, x.node, x.host, "
         "x.valid, m.unit, m.better, m.value, m.samples, coalesce(x.axes_display, '{}'), "
         "r.canary_fma_gflops, r.canary_stream_gbps, r.canary_cache_gbps, r.canary_all_cpus, "
         "r.canary_fma_all_gflops, r.canary_cache_all_gbps, coalesce(x.throttled, 0) "
         "FROM metrics m JOIN results x ON m.result_id = x.id JOIN runs r ON x.run_id = r.id "
         "WHERE m.name = ?1 AND x.status = 'passed' AND (?2 = '' OR x.benchmark = ?2) AND (?3 = '' "
         "OR x.host = ?3 OR x.node = ?3) "
         "ORDER BY r.started_utc, r.id",
         m_path);
  s.bind(1, metric).bind(2, benchmark).bind(3, host);
  std::map<std::string, std::size_t> index;
  std::vector<series> out;
  while (s.step()) {
    result_view probe;
    json ax = parse_json_or_discarded(s.text(5));
    if (!ax.is_object()) continue;
    const json disp = parse_json_or_discarded(s.text(14));
    for (const auto& [k, v] : ax.items()) {
      probe.axes[k] = v;
      const bool shown = disp.is_object() && disp.contains(k) && disp[k].is_string();
      probe.axes_display[k] = shown ? disp[k].get<std::string>()
                                    : (v.is_string() ? v.get<std::string>() : json_text(v));
    }
    if (!probe.axes_match(axes)) continue;
    const double value = s.real(12);
    if (!std::isfinite(value)) continue;
    const std::string key = s.text(4) + "@" + s.text(7);
    auto it = index.find(key);
    if (it == index.end()) {
      series se;
      se.benchmark = s.text(3);
      se.config_label = s.text(6);
      se.node = s.text(7);
      se.metric = metric;
      se.unit = s.text(10);
      se.higher_is_better = s.text(11) == "higher";
      se.axes = ax;
      it = index.emplace(key, out.size()).first;
      out.push_back(std::move(se));
    }
    out[it->second].points.push_back(trend_point(s));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> history_db::recorded_metrics(
    const std::string& benchmark) const {
  stmt s(m_db,
         "SELECT DISTINCT x.benchmark, m.name FROM metrics m JOIN results x ON m.result_id = x.id "
         "WHERE x.status = 'passed' AND (?1 = '' OR x.benchmark = ?1) ORDER BY x.benchmark, m.name",
         m_path);
  s.bind(1, benchmark);
  std::vector<std::pair<std::string, std::string>> out;
  while (s.step()) out.emplace_back(s.text(0), s.text(1));
  return out;
}

std::optional<std::string> history_db::run_started(std::int64_t run_id) const {
  stmt s(m_db, "SELECT started_utc FROM runs WHERE id = ?1", m_path);
  s.bind(1, run_id);
  if (!s.step()) return std::nullopt;
  return s.text(0);
}

json history_db::run_details(std::int64_t run_id) const {
  json out = json::array();
  stmt s(m_db,
         "SELECT x.benchmark, x.axes_label, x.node, x.status, coalesce(x.reason, ''), x.valid, "
         "m.name, m.unit, m.value "
         "FROM results x LEFT JOIN metrics m ON m.result_id = x.id WHERE x.run_id = ?1 ORDER BY "
         "x.id, m.id",
         m_path);
  s.bind(1, run_id);
  while (s.step()) {
    out.push_back({{"benchmark", s.text(0)},
                   {"configuration", s.text(1)},
                   {"node", s.text(2)},
                   {"status", s.text(3)},
                   {"reason", s.text(4)},
                   {"valid", s.integer(5) != 0},
                   {"metric", s.text(6)},
                   {"unit", s.text(7)},
                   {"value", std::isfinite(s.real(8)) ? json(s.real(8)) : json(nullptr)}});
  }
  return out;
}

namespace {

// Runs recorded in the database at `path` (read-only: a full disk still lets it be read); -1 when
// it is not an infrabench history or cannot be read.
std::int64_t recorded_runs(const std::string& path) {
  sqlite3* db = nullptr;
  std::int64_t runs = -1;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    const char* sql =
        "SELECT (SELECT count(*) FROM sqlite_master WHERE name = 'runs'), "
        "(SELECT count(*) FROM sqlite_master)";
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
      runs = sqlite3_column_int64(s, 0) == 1 ? -2 : (sqlite3_column_int64(s, 1) == 0 ? 0 : -1);
    sqlite3_finalize(s);
    if (runs == -2) {
      runs = -1;
      if (sqlite3_prepare_v2(db, "SELECT count(*) FROM runs", -1, &s, nullptr) == SQLITE_OK &&
          sqlite3_step(s) == SQLITE_ROW)
        runs = sqlite3_column_int64(s, 0);
      sqlite3_finalize(s);
    }
  }
  sqlite3_close(db);
  return runs;
}

}  // namespace

void remove_empty_history(const std::string& path) noexcept {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return;
  const auto size = fs::file_size(path, ec);
  if (ec || (size != 0 && recorded_runs(path) != 0)) return;
  for (const char* suffix : {"-wal", "-shm", "-journal"}) fs::remove(path + suffix, ec);
  fs::remove(path, ec);
}

}  // namespace infrabench::reports
