// Objects that live for one run and are shared by every configuration that asks for them: a
// library opened once (OpenBLAS by dlopen), a communicator (NCCL), a scratch file or data set, a
// library handle (cuBLAS). Use this instead of a function-local static, which outlives the run
// (it is destroyed after main returns, after MPI_Finalize and the CUDA runtime's teardown it may
// depend on), cannot be reset between runs or tests, and hides which benchmarks share what.
//
// In a benchmark body, through the state:
//
//   const openblas_library& lib =
//       st.resource<openblas_library>("gemm/openblas", [] { return load_openblas(); });
//
// The first call for a key makes the object (`make` returns a T, or a std::unique_ptr<T> for
// types that cannot move); later calls, from any configuration or benchmark of the run, return the
// same object. Keys are shared by the whole run: prefix them with the benchmark group. When
// `make` throws, nothing is kept (the configuration fails; the next one tries again). At the end
// of the run the runner destroys every object in reverse order of creation, so an object made
// with another one (a NCCL communicator after the CUDA context it uses) is destroyed first.
// Asking for an existing key with another type is a bug in the benchmark (std::logic_error).
//
// A communicator or library handle that needs cleaning up owns it in its destructor, e.g. for the
// GPU benchmarks (one NCCL communicator per run, made on first use, destroyed before the CUDA
// runtime goes):
//
//   struct nccl_comm {
//     ncclComm_t comm = nullptr;
//     ~nccl_comm() { if (comm) ncclCommDestroy(comm); }
//   };
//   nccl_comm& c = st.resource<nccl_comm>("collectives/nccl", [&] {
//     auto made = std::make_unique<nccl_comm>();
//     check_nccl(ncclCommInitRank(&made->comm, world, id, rank));
//     return made;
//   });
#pragma once

#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeindex>
#include <utility>
#include <vector>

namespace infrabench {

class run_resources {
 public:
  run_resources() = default;
  run_resources(const run_resources&) = delete;
  run_resources& operator=(const run_resources&) = delete;
  ~run_resources() { clear(); }

  template <class T, class Make>
  T& get(std::string_view key, Make&& make) {
    // Recursive: `make` may ask for another resource it builds on.
    std::lock_guard lock(m_mutex);
    if (void* found = find(key, typeid(T))) return *static_cast<T*>(found);
    std::shared_ptr<T> made = wrap<T>(std::forward<Make>(make)());
    T& ref = *made;
    m_entries.push_back({std::string(key), std::type_index(typeid(T)), std::move(made)});
    return ref;
  }

  // Destroys every object, the most recently made first.
  void clear();
  [[nodiscard]] std::size_t size() const;

 private:
  struct entry {
    std::string key;
    std::type_index type;
    std::shared_ptr<void> object;
  };

  template <class T, class R>
  static std::shared_ptr<T> wrap(R&& made) {
    if constexpr (std::is_same_v<std::decay_t<R>, std::unique_ptr<T>>) {
      if (!made) throw std::logic_error("run resource factory returned a null pointer");
      return std::shared_ptr<T>(std::move(made));
    } else {
      return std::make_shared<T>(std::forward<R>(made));
    }
  }
  // The object stored under `key`, or nullptr; throws logic_error when it has another type.
  void* find(std::string_view key, const std::type_info& type) const;

  mutable std::recursive_mutex m_mutex;
  std::vector<entry> m_entries;
};

}  // namespace infrabench
