#include "infrabench/run_resources.h"

namespace infrabench {

void* run_resources::find(std::string_view key, const std::type_info& type) const {
  for (const auto& e : m_entries) {
    if (e.key != key) continue;
    if (e.type != std::type_index(type)) {
      throw std::logic_error("run resource '" + e.key + "' was made as " + e.type.name() +
                             " and asked for as " + type.name());
    }
    return e.object.get();
  }
  return nullptr;
}

void run_resources::clear() {
  std::lock_guard lock(m_mutex);
  // Reverse order of creation: what was made with an earlier object goes before it. Popped one by
  // one so that a destructor which asks for a resource sees only those still alive.
  while (!m_entries.empty()) {
    std::shared_ptr<void> last = std::move(m_entries.back().object);
    m_entries.pop_back();
    last.reset();
  }
}

std::size_t run_resources::size() const {
  std::lock_guard lock(m_mutex);
  return m_entries.size();
}

}  // namespace infrabench
