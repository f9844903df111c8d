#include "infrabench/report.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "infrabench/error.h"

namespace infrabench {
namespace {

std::string parent_dir(const std::string& path) {
  const auto parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

// Creates a unique temporary file next to `path`; returns its fd and name.
int make_temp_beside(const std::string& path, std::string& temp_name) {
  const auto p = std::filesystem::path(path);
  temp_name = (std::filesystem::path(parent_dir(path)) / ("." + p.filename().string() + ".XXXXXX"))
                  .string();
  return mkstemp(temp_name.data());
}

}  // namespace

std::string utc_now_iso8601() {
  const auto now = std::chrono::system_clock::now();
  const auto secs = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

nlohmann::json make_report(const report_context& ctx, const nlohmann::json& results) {
  std::size_t passed = 0, skipped = 0, failed = 0, invalid = 0;
  for (const auto& r : results) {
    const auto st = r.at("status").get<std::string>();
    passed += st == "passed";
    skipped += st == "skipped";
    failed += st == "failed";
    invalid += st == "passed" && !r.at("valid").get<bool>();
  }
  nlohmann::json run = {{"command_line", ctx.command_line}, {"started_utc", ctx.started_utc},
                        {"finished_utc", ctx.finished_utc}, {"launcher", ctx.launcher},
                        {"world_size", ctx.world_size},     {"interrupted", ctx.interrupted},
                        {"suite", ctx.effective_suite},     {"settings", ctx.settings}};
  if (ctx.interrupted) run["interrupted_reason"] = ctx.interrupted_reason;
  return {{"schema_version", report_schema_version},
          {"tool", "infrabench"},
          {"units",
           "decimal: GB = 1e9 bytes, GB/s = 1e9 bytes/s; sizes in axes are binary (KiB = 1024 B)"},
          {"run", run},
          {"capabilities", ctx.capabilities},
          {"hosts", ctx.hosts},
          {"summary",
           {{"configurations", results.size()},
            {"passed", passed},
            {"skipped", skipped},
            {"failed", failed},
            {"invalid", invalid}}},
          {"results", results}};
}

void write_file_atomic(const std::string& path, const std::string& content) {
  std::string temp;
  const int fd = make_temp_beside(path, temp);
  if (fd < 0) throw_errno("cannot create a temporary file beside " + path);
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      throw_errno(err, "writing " + temp);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  // mkstemp creates 0600; a report is not secret, give it the usual 0644 (less the umask).
  const mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    throw_errno(err, "flushing " + temp);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    throw_errno(err, "renaming " + temp + " to " + path);
  }
}

void check_output_path(const std::string& path) {
  if (path.empty()) throw user_error("output path is empty");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw user_error("output " + path + " is a directory");
  const std::string dir = parent_dir(path);
  if (!std::filesystem::exists(dir, ec))
    throw user_error("output directory " + dir + " does not exist");
  if (!std::filesystem::is_directory(dir, ec))
    throw user_error("output directory " + dir + " is not a directory");
  // Try it: permissions, read-only mounts and quotas all show up here, before anything runs.
  std::string temp;
  const int fd = make_temp_beside(path, temp);
  if (fd < 0) {
    throw user_error("cannot write the report to " + path + ": " + std::strerror(errno));
  }
  ::close(fd);
  ::unlink(temp.c_str());
}

}  // namespace infrabench
