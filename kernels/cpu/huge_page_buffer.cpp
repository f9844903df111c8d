#include "cpu/huge_page_buffer.h"

#include <sys/mman.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace infrabench::kernels::cpu {

huge_page_buffer::huge_page_buffer(std::size_t bytes) : m_bytes(huge_page_rounded(bytes)) {
  m_data.reset(std::aligned_alloc(huge_page_bytes, m_bytes));
  if (!m_data) {
    throw std::runtime_error("aligned_alloc of " + std::to_string(m_bytes) + " bytes failed");
  }
  (void)madvise(m_data.get(), m_bytes, MADV_HUGEPAGE);
}

void huge_page_buffer::free_deleter::operator()(void* p) const {
  std::free(p);
}

}  // namespace infrabench::kernels::cpu
