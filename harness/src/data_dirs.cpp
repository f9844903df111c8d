#include "infrabench/data_dirs.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "infrabench/error.h"
#include "infrabench/text_layout.h"

namespace infrabench {
namespace {

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_regular_file(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

// The names of the shipped files of `kind`, for the message when a name matches none.
std::string shipped_names(const std::vector<std::string>& dirs) {
  std::vector<std::string> names;
  for (const auto& d : dirs) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(d, ec)) {
      const auto& p = e.path();
      // A JSON schema sits beside the baselines: it describes them, it is not one.
      if (p.extension() == ".json" && p.stem().extension() != ".schema")
        names.push_back(p.stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names.empty() ? "none" : joined(names);
}

}  // namespace

std::optional<std::string> executable_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec || exe.empty()) return std::nullopt;
  return exe.parent_path().string();
}

std::vector<std::string> data_dirs(std::string_view kind) {
  std::vector<std::string> candidates;
  if (const auto dir = executable_dir())
    candidates.push_back(*dir + "/../share/infrabench/" + std::string(kind));
#ifdef INFRABENCH_SOURCE_CONFIGS
  candidates.push_back(std::string(INFRABENCH_SOURCE_CONFIGS) + "/" + std::string(kind));
#endif
  std::vector<std::string> out;
  for (auto& c : candidates) {
    const std::string p = std::filesystem::path(c).lexically_normal().string();
    if (is_dir(p) && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  return out;
}

// A path (a '/') is taken as given. A name is a shipped file first, and a regular file of that
// name in the working directory only when nothing shipped has it: a directory ./acceptance once
// shadowed what `accept -b template-cpu-node` names (give ./NAME for the file).
std::string resolve_data_file(const std::string& arg, std::string_view kind) {
  if (arg.find('/') != std::string::npos) return arg;
  if (arg.ends_with(".json") && exists(arg)) return arg;
  const std::string file = arg.ends_with(".json") ? arg : arg + ".json";
  const auto dirs = data_dirs(kind);
  for (const auto& d : dirs) {
    const std::string p = d + "/" + file;
    if (exists(p)) return p;
  }
  if (is_regular_file(arg)) return arg;
  const std::string where = joined(dirs);
  throw user_error(std::string(kind.substr(0, kind.size() - 1)) + " \"" + arg +
                   "\": no such file, and no shipped one of that name (looked in " +
                   (where.empty() ? std::string("no directory: nothing is installed") : where) +
                   "; shipped: " + shipped_names(dirs) + ")");
}

}  // namespace infrabench
