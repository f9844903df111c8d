// Optional backends built as modules (libinfrabench_<id>.so next to the executable) and loaded the
// first time a benchmark needs one: the executable itself links none of their libraries, so a
// library that starts threads or allocates when it loads (OpenBLAS does both) costs nothing to a
// command that does not use it, and a node without the library still starts and skips those
// benchmarks with the loader's reason. The one place that opens modules; the table of known
// modules (what was compiled in) lives in backend_loader.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "infrabench/module_abi.h"
#include "infrabench/reason.h"
#include "infrabench/state.h"

namespace infrabench::backends {

// One module the build knows about.
struct module_spec {
  std::string id;             // "openblas": the file is libinfrabench_openblas.so
  std::string library;        // "OpenBLAS": the library, as people name it
  std::uint32_t abi_version;  // the table layout this executable expects
  bool compiled_in;           // CMake found the library and built the module
  std::string install_hint;   // how to install the library ("apt-get install ...")
  // The module holds benchmarks of its own (MPI, CUDA, NCCL): loaded at start-up
  // (load_benchmark_modules), with its symbols global; the others hold a library's entry points
  // for benchmarks of the core.
  bool has_benchmarks = false;
  // Modules that must have loaded first (NCCL's collectives need MPI and CUDA): when one did not,
  // this one is not tried and its reason says which and why.
  std::vector<std::string> needs = {};
};

// Every module this executable knows, compiled in or not.
[[nodiscard]] const std::vector<module_spec>& known_modules();
// The spec of `id`; throws std::logic_error for an id no module has (a programming error).
[[nodiscard]] const module_spec& spec_of(std::string_view id);

// libinfrabench_<id>.so
[[nodiscard]] std::string module_file_name(std::string_view id);
// Where modules are looked for, in order: $INFRABENCH_MODULE_DIR alone when set (for tests),
// else the executable's directory (a build tree) and then <exe dir>/../lib/infrabench (an
// installed tree), both from /proc/self/exe so a copied or relocated tree finds its own.
[[nodiscard]] std::vector<std::string> module_dirs();
// The first module_dirs() entry holding the module's file (stat only: nothing is loaded).
[[nodiscard]] std::optional<std::string> locate(std::string_view id);
// The first module_dirs() entry holding `file`.
[[nodiscard]] std::optional<std::string> locate_file(const std::string& file);

struct loaded_module {
  const infrabench_module_header* table = nullptr;  // null when it could not be loaded
  std::string path;                                 // the module file, when found
  coded_reason reason;                              // why not, when table is null
  [[nodiscard]] bool loaded() const { return table != nullptr; }
};

// Opens the module (dlopen RTLD_NOW | RTLD_LOCAL) and checks its table, once per process, from
// any thread; later calls return the first outcome, failure included. Never unloaded: a library's
// threads (OpenBLAS's, OpenMP's) live as long as the process.
[[nodiscard]] const loaded_module& load(std::string_view id);

// The dynamic loader's (or the module's) error as a sentence that names the library:
// "libopenblas.so.0: cannot open shared object file: ..." -> "OpenBLAS not installed (...)". The
// library named is the one the error names when it is one we know ("libcublasLt.so.13: ..." from
// the CUDA module -> "cuBLAS not installed (...)"), else the module's.
[[nodiscard]] coded_reason explain_load_error(const module_spec& spec, std::string_view error);
// The library a shared object's file name belongs to, as people name it ("libcudart.so.13" ->
// "CUDA runtime", "/x/libnccl.so.2" -> "NCCL"); "" for one we do not know.
[[nodiscard]] std::string library_of_soname(std::string_view file);

// Why the module cannot be used, without loading it (empty when it may be): not compiled in
// (reason_code::not_built), or its file is in none of module_dirs() (unsupported). What `list`
// shows and the runner checks before a benchmark runs; whether its library loads is known only
// when it is loaded (require below).
[[nodiscard]] coded_reason unavailable_without_loading(std::string_view id);

// Requirements (capabilities.h) for benchmarks that need a module: unavailable_without_loading.
namespace req {
extern const requirement openblas;
extern const requirement onednn;
extern const requirement opencv;
}  // namespace req

// The module's table as `Api` (a struct starting with infrabench_module_header), loading it on
// first use; skips the configuration with the loader's reason when it cannot be loaded.
template <class Api>
const Api& require(state& st, std::string_view id) {
  const loaded_module& m = load(id);
  if (!m.loaded()) st.skip(m.reason.code, m.reason.text);
  if (m.table->size < sizeof(Api)) {
    st.skip(reason_code::unsupported,
            m.path +
                ": its table is smaller than this infrabench expects (a module from another "
                "build)");
  }
  return *reinterpret_cast<const Api*>(m.table);
}

// Loads every compiled-in module that holds benchmarks, so that they register before anything
// reads the registry (main, before the command line is parsed). When one cannot be loaded, the
// benchmarks its manifest names (libinfrabench_<id>.benchmarks, written by the build) are
// registered in its place and skipped with the loader's reason.
void load_benchmark_modules();
// Writes the names and descriptions of the benchmarks module `id` registered in this process to
// `path` (atomically): the build's manifest. False when the module is not loaded or on an error.
[[nodiscard]] bool write_module_manifest(std::string_view id, const std::string& path);

// ---- Entry points a module provides, for code outside it
// The core (and one module for another) calls code that lives in a module through these: a
// `hook<Fn>` names one entry point and fixes its type for both ends; the module sets it while it
// loads (a static initialiser, run inside dlopen), the caller takes its `_none` answer while it is
// unset. The store is the executable's, so every module meets the same one (a module's own
// symbols are hidden: its functions never replace the core's `_none` ones of the same name).
template <class Fn>
struct hook {
  const char* name;
};
namespace detail {
void set_hook(std::string_view name, void (*fn)());
[[nodiscard]] void (*get_hook(std::string_view name))();
}  // namespace detail
template <class Fn>
void provide(hook<Fn> h, Fn* fn) {
  detail::set_hook(h.name, reinterpret_cast<void (*)()>(fn));
}
template <class Fn>
[[nodiscard]] Fn* provided(hook<Fn> h) {
  return reinterpret_cast<Fn*>(detail::get_hook(h.name));
}

// For `infrabench --version`: one line per known module (compiled in, where its file is, and
// whether it loads here with its library's version). Whether it loads is tried in a forked child
// that exits without running the library's shutdown, so a library that starts threads when it
// loads (OpenBLAS) neither runs in this process nor can hang it; each probe is bounded in time.
[[nodiscard]] std::string describe_backends();

}  // namespace infrabench::backends
