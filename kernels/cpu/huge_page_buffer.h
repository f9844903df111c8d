// Host memory aligned to 2 MiB and advised for transparent huge pages, for the host-memory
// benchmarks (bandwidth/host_memory, bandwidth/memory_latency): a 256 MiB array then takes 128 TLB
// entries rather than 65536 and faults in 128 times rather than 65536, so what is measured is the
// memory, not page walks. The advice is only a hint; without THP the buffer still works, with
// 4 KiB pages.
#pragma once

#include <cstddef>
#include <memory>

namespace infrabench::kernels::cpu {

inline constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;

// `bytes` rounded up to whole huge pages: what a huge_page_buffer of `bytes` takes.
[[nodiscard]] constexpr std::size_t huge_page_rounded(std::size_t bytes) {
  return (bytes + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
}

class huge_page_buffer {
 public:
  // Throws std::runtime_error when the allocation fails. The memory is not touched.
  explicit huge_page_buffer(std::size_t bytes);
  [[nodiscard]] void* data() const { return m_data.get(); }
  [[nodiscard]] std::size_t bytes() const { return m_bytes; }

 private:
  struct free_deleter {
    void operator()(void* p) const;
  };
  std::size_t m_bytes;
  std::unique_ptr<void, free_deleter> m_data;
};

}  // namespace infrabench::kernels::cpu
