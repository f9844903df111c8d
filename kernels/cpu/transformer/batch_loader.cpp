#include "cpu/transformer/batch_loader.h"

#include <stdexcept>

namespace infrabench::kernels::transformer {

batch_loader::batch_loader(std::size_t slots, produce_fn produce, bool thread)
    : m_slots(slots), m_produce(std::move(produce)) {
  if (m_slots == 0) throw std::invalid_argument("batch_loader: no slots");
  if (thread) m_thread = std::thread([this] { loop(); });
}

batch_loader::~batch_loader() {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_stop = true;
  }
  m_cv.notify_all();
  if (m_thread.joinable()) m_thread.join();
}

void batch_loader::loop() {
  for (std::uint64_t step = 0;; ++step) {
    {
      std::unique_lock<std::mutex> lock(m_mutex);
      m_cv.wait(lock, [&] { return m_stop || step < m_released + m_slots; });
      if (m_stop) return;
    }
    try {
      m_produce(step, static_cast<std::size_t>(step % m_slots));
    } catch (...) {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_error = std::current_exception();
      m_cv.notify_all();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_produced = step + 1;
    }
    m_cv.notify_all();
  }
}

std::size_t batch_loader::acquire(std::uint64_t step) {
  const auto slot = static_cast<std::size_t>(step % m_slots);
  if (!m_thread.joinable()) {
    if (step >= m_released + m_slots) throw std::logic_error("batch_loader: slot not released");
    m_produce(step, slot);
    m_produced = step + 1;
    return slot;
  }
  std::unique_lock<std::mutex> lock(m_mutex);
  m_cv.wait(lock, [&] { return m_error || m_produced > step; });
  if (m_produced <= step) std::rethrow_exception(m_error);
  return slot;
}

void batch_loader::release(std::uint64_t step) {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_released = step + 1;
  }
  m_cv.notify_all();
}

}  // namespace infrabench::kernels::transformer
