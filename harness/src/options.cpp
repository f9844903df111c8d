#include "infrabench/options.h"

#include <filesystem>
#include <mutex>
#include <set>
#include <stdexcept>

namespace infrabench {
namespace {

std::mutex& cleanup_mutex() {
  static std::mutex mu;
  return mu;
}
std::set<std::string>& cleanup_paths() {
  static std::set<std::string> paths;
  return paths;
}

}  // namespace

option_registry& option_registry::instance() {
  static option_registry reg;
  return reg;
}

const run_option& option_registry::add(run_option opt) {
  for (const auto& o : m_options) {
    if (o->name == opt.name) {
      if (o->is_flag != opt.is_flag)
        throw std::logic_error("run option --" + opt.name + " registered twice, differently");
      return *o;
    }
  }
  m_options.push_back(std::make_unique<run_option>(std::move(opt)));
  return *m_options.back();
}

void register_cleanup_path(const std::string& path) {
  std::lock_guard lock(cleanup_mutex());
  cleanup_paths().insert(path);
}

void unregister_cleanup_path(const std::string& path) {
  std::lock_guard lock(cleanup_mutex());
  cleanup_paths().erase(path);
}

void run_cleanups() noexcept {
  // try_lock: this runs on the way out of a stuck process; never wait on a lock held elsewhere.
  std::unique_lock lock(cleanup_mutex(), std::try_to_lock);
  if (!lock.owns_lock()) return;
  for (const auto& p : cleanup_paths()) {
    std::error_code ec;
    std::filesystem::remove_all(p, ec);
  }
  cleanup_paths().clear();
}

}  // namespace infrabench
