// The backend loader: finds libinfrabench_<id>.so relative to the executable, opens it with
// dlopen the first time a benchmark asks, checks its table, and turns the dynamic loader's error
// into a sentence. The table of known modules is the one place that says which were built.
#include "infrabench/backend_loader.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <utility>

#include "infrabench/benchmark.h"
#include "infrabench/compiled_in.h"
#include "infrabench/data_dirs.h"
#include "infrabench/modules/cuda_api.h"
#include "infrabench/modules/mpi_api.h"
#include "infrabench/modules/onednn_api.h"
#include "infrabench/modules/openblas_api.h"
#include "infrabench/modules/opencv_api.h"
#include "infrabench/simulation.h"
#include "infrabench/text_layout.h"

namespace infrabench::backends {

const std::vector<module_spec>& known_modules() {
  static const std::vector<module_spec> modules = {
      {"onednn", "oneDNN", INFRABENCH_ONEDNN_ABI_VERSION,
       build::compiled_in(build::backend::onednn), "apt-get install libdnnl2"},
      {"openblas", "OpenBLAS", INFRABENCH_OPENBLAS_ABI_VERSION,
       build::compiled_in(build::backend::openblas), "apt-get install libopenblas0"},
      {"opencv", "OpenCV", INFRABENCH_OPENCV_ABI_VERSION,
       build::compiled_in(build::backend::opencv),
       "apt-get install libopencv-core406 libopencv-imgproc406"},
      // Its benchmarks live in the module and register when it loads; MPI's own plugins need
      // libmpi's symbols global (as mpi4py loads it).
      {"mpi", "MPI", INFRABENCH_MPI_ABI_VERSION, build::compiled_in(build::backend::mpi),
       "apt-get install libopenmpi3", true},
      // The GPU benchmarks and the harness's GPU timing and probe, on cudart and cuBLAS(Lt).
      {"cuda", "CUDA", INFRABENCH_CUDA_ABI_VERSION, build::compiled_in(build::backend::cuda),
       "install the CUDA 13 runtime and cuBLAS, or put their directory on LD_LIBRARY_PATH", true},
      // The NCCL collectives call MPI too (NCCL's id goes out with MPI_Bcast): after both.
      {"nccl",
       "NCCL",
       INFRABENCH_NCCL_ABI_VERSION,
       build::compiled_in(build::backend::nccl) && build::compiled_in(build::backend::mpi),
       "install NCCL 2 for CUDA 13 (libnccl2), or put its directory on LD_LIBRARY_PATH",
       true,
       {"mpi", "cuda"}},
  };
  return modules;
}

const module_spec& spec_of(std::string_view id) {
  for (const auto& m : known_modules()) {
    if (m.id == id) return m;
  }
  throw std::logic_error("no backend module named '" + std::string(id) + "'");
}

std::string module_file_name(std::string_view id) {
  return "libinfrabench_" + std::string(id) + ".so";
}

std::vector<std::string> module_dirs() {
  if (const char* dir = std::getenv("INFRABENCH_MODULE_DIR"); dir != nullptr && *dir != '\0') {
    return {dir};
  }
  const auto dir = executable_dir();
  if (!dir) return {};
  return {*dir, (std::filesystem::path(*dir).parent_path() / "lib" / "infrabench").string()};
}

std::optional<std::string> locate(std::string_view id) {
  return locate_file(module_file_name(id));
}

std::optional<std::string> locate_file(const std::string& file) {
  for (const auto& dir : module_dirs()) {
    const std::string path = dir + "/" + file;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return path;
  }
  return std::nullopt;
}

namespace {

bool contains(std::string_view text, std::string_view what) {
  return text.find(what) != std::string_view::npos;
}

coded_reason not_found(const module_spec& spec) {
  const auto dirs = module_dirs();
  return {
      reason_code::unsupported,
      spec.library + " module " + module_file_name(spec.id) + " not found (looked in " +
          (dirs.empty() ? std::string("no directory: /proc/self/exe unreadable") : joined(dirs)) +
          ")"};
}

coded_reason not_built(const module_spec& spec) {
  return {reason_code::not_built, spec.library + " was not found when infrabench was built (" +
                                      spec.install_hint + " and its -dev package, then rebuild)"};
}

// Opens the module at `path` and checks its table.
loaded_module open_module(const module_spec& spec, const std::string& path) {
  loaded_module m;
  m.path = path;
  void* handle = dlopen(path.c_str(), RTLD_NOW | (spec.has_benchmarks ? RTLD_GLOBAL : RTLD_LOCAL));
  if (handle == nullptr) {
    const char* e = dlerror();
    m.reason = explain_load_error(spec, e != nullptr ? e : "dlopen failed");
    return m;
  }
  auto entry = reinterpret_cast<infrabench_module_entry_fn>(dlsym(handle, INFRABENCH_MODULE_ENTRY));
  const infrabench_module_header* table = entry != nullptr ? entry(spec.abi_version) : nullptr;
  if (table == nullptr || table->abi_version != spec.abi_version || table->id == nullptr ||
      spec.id != table->id) {
    m.reason = {reason_code::unsupported, path + " is not the " + spec.library +
                                              " module this infrabench expects (table " + spec.id +
                                              " version " + std::to_string(spec.abi_version) +
                                              "; a module from another build?)"};
    return m;  // left open: closing a library that may have started threads is not safe
  }
  if (table->error != nullptr) {
    m.reason = explain_load_error(spec, table->error);
    return m;
  }
  m.table = table;
  return m;
}

}  // namespace

std::string library_of_soname(std::string_view file) {
  // The part of "/dir/libcublasLt.so.13" between the last '/' and ".so".
  if (const auto slash = file.rfind('/'); slash != std::string_view::npos) {
    file.remove_prefix(slash + 1);
  }
  constexpr std::string_view so_suffix = ".so";
  const std::string_view stem = file.substr(0, file.find(so_suffix));
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 11> names = {{
      {"libcudart", "CUDA runtime"},
      {"libcublas", "cuBLAS"},
      {"libcublasLt", "cuBLAS"},
      {"libcudnn", "cuDNN"},
      {"libnccl", "NCCL"},
      {"libcuda", "NVIDIA driver (libcuda)"},
      {"libmpi", "MPI"},
      {"libopenblas", "OpenBLAS"},
      {"libdnnl", "oneDNN"},
      {"libopencv_core", "OpenCV"},
      {"libopencv_imgproc", "OpenCV"},
  }};
  for (const auto& [soname_stem, library] : names) {
    if (stem == soname_stem) return std::string(library);
  }
  return {};
}

// dlopen reports only text (dlerror, no errno): these are glibc's ld.so messages.
coded_reason explain_load_error(const module_spec& spec, std::string_view error) {
  const std::string detail = " (" + std::string(error) + ")";
  if (contains(error, "cannot open shared object file") ||
      contains(error, "No such file or directory")) {
    // "libcudart.so.13: cannot open ...": the file before the first ": " is the one missing.
    constexpr std::string_view after_file = ": ";
    const std::string named = library_of_soname(error.substr(0, error.find(after_file)));
    return {reason_code::unsupported,
            (named.empty() ? spec.library : named) + " not installed" + detail +
                (spec.install_hint.empty() ? "" : "; " + spec.install_hint)};
  }
  if (contains(error, "undefined symbol: _ZN10infrabench")) {  // one of ours, not the library's
    return {reason_code::unsupported,
            spec.library + " module is not from the build of this executable" + detail};
  }
  if (contains(error, "undefined symbol") || contains(error, "version `")) {
    return {reason_code::unsupported,
            spec.library + " installed is not the one this module was built for" + detail};
  }
  if (contains(error, "failed to map segment") || contains(error, "Cannot allocate memory") ||
      contains(error, "cannot allocate")) {
    return {reason_code::resources,
            spec.library + " could not be loaded: not enough address space or memory" + detail};
  }
  if (contains(error, "wrong ELF class") || contains(error, "invalid ELF header")) {
    return {reason_code::unsupported,
            spec.library + " library is not for this machine's architecture" + detail};
  }
  return {reason_code::unsupported, spec.library + " could not be loaded" + detail};
}

coded_reason unavailable_without_loading(std::string_view id) {
  const module_spec& spec = spec_of(id);
  if (!spec.compiled_in) return not_built(spec);
  if (!locate(id)) return not_found(spec);
  return {};
}

namespace req {
namespace {
// Plain functions, so the requirements are constant-initialised: benchmarks copy them while the
// program's static objects are still being made (INFRABENCH_REGISTER), in any order.
std::string check_openblas(const capabilities&) {
  return unavailable_without_loading("openblas").text;
}
reason_code code_openblas(const capabilities&) {
  return unavailable_without_loading("openblas").code;
}
std::string check_onednn(const capabilities&) {
  return unavailable_without_loading("onednn").text;
}
reason_code code_onednn(const capabilities&) {
  return unavailable_without_loading("onednn").code;
}
std::string check_opencv(const capabilities&) {
  return unavailable_without_loading("opencv").text;
}
reason_code code_opencv(const capabilities&) {
  return unavailable_without_loading("opencv").code;
}
}  // namespace
constinit const requirement openblas{"openblas", &check_openblas, &code_openblas};
constinit const requirement onednn{"onednn", &check_onednn, &code_onednn};
constinit const requirement opencv{"opencv", &check_opencv, &code_opencv};
}  // namespace req

namespace {
// The simulated node's shims, opened before the CUDA module when the user asks for them
// (simulation.h): the module's DT_NEEDED sonames then bind to them, never to the vendor's.
void load_simulation_shims(std::string_view id) {
  if (id == "cuda" && simulation::requested()) simulation::load_shims();
}
}  // namespace

const loaded_module& load(std::string_view id) {
  // Recursive: a module's needs are loaded from inside its own load.
  static std::recursive_mutex mutex;
  static std::map<std::string, loaded_module, std::less<>> loaded;
  const std::lock_guard lock(mutex);
  if (const auto it = loaded.find(id); it != loaded.end()) return it->second;
  const module_spec& spec = spec_of(id);
  loaded_module m;
  const module_spec* missing = nullptr;
  for (const auto& need : spec.needs) {
    if (!load(need).loaded()) {
      missing = &spec_of(need);
      break;
    }
  }
  if (missing != nullptr && spec.compiled_in) {
    const coded_reason& why = load(missing->id).reason;
    m.reason = {why.code, spec.library + " module needs the " + missing->library +
                              " module, which did not load: " + why.text};
  } else if (!spec.compiled_in) {
    m.reason = {reason_code::not_built,
                spec.library + " was not found when infrabench was built (" + spec.install_hint +
                    " and its -dev package, then rebuild)"};
  } else if (const auto path = locate(id)) {
    load_simulation_shims(id);
    m = open_module(spec, *path);
  } else {
    m.reason = not_found(spec);
  }
  return loaded.emplace(std::string(id), std::move(m)).first->second;
}

namespace {

// What each module registered when it was loaded (this process): its benchmarks' names.
std::map<std::string, std::vector<const benchmark*>, std::less<>>& registered_by() {
  static std::map<std::string, std::vector<const benchmark*>, std::less<>> names;
  return names;
}

// Not *.so*: tools that pack a tree's shared objects (../shared/gpu/bundle.sh) take it for one.
std::string manifest_file_name(std::string_view id) {
  return "libinfrabench_" + std::string(id) + ".benchmarks";
}

// The placeholders' requirement: the reason their module did not load. Requirements hold plain
// functions (constant-initialised, copied while static objects are made), so there is one per
// slot of known_modules(), chosen by the module's index.
template <std::size_t I>
std::string check_module_placeholder(const capabilities&) {
  return load(known_modules().at(I).id).reason.text;
}
template <std::size_t I>
reason_code code_module_placeholder(const capabilities&) {
  return load(known_modules().at(I).id).reason.code;
}
template <std::size_t... I>
constexpr auto placeholder_checks(std::index_sequence<I...>) {
  using check_fn = std::string (*)(const capabilities&);
  using code_fn = reason_code (*)(const capabilities&);
  return std::array<std::pair<check_fn, code_fn>, sizeof...(I)>{
      {{&check_module_placeholder<I>, &code_module_placeholder<I>}...}};
}
constexpr auto placeholder_slots = placeholder_checks(std::make_index_sequence<8>());

// The placeholders' requirement names ("cuda module"): a requirement holds a view of its name, so
// these live as long as the program, made once (thread-safe) and never changed.
const std::vector<std::string>& placeholder_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& m : known_modules()) out.push_back(m.id + " module");
    return out;
  }();
  return names;
}

requirement module_loads(const module_spec& spec) {
  const auto& all = known_modules();
  const auto index = static_cast<std::size_t>(
      std::find_if(all.begin(), all.end(), [&](const module_spec& m) { return m.id == spec.id; }) -
      all.begin());
  if (index >= placeholder_slots.size()) {
    throw std::logic_error("backend_loader: more modules than placeholder slots");
  }
  return {placeholder_names().at(index), placeholder_slots[index].first,
          placeholder_slots[index].second};
}

// One manifest line's fields: name TAB axis,axis,... TAB description.
std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> out(1);
  for (char c : line) {
    if (c == '\t') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  out.resize(3);
  return out;
}

// The module's benchmarks, from the manifest the build wrote next to it, registered as skipped
// with the loader's reason. Their axes are there by name, as free strings (values unknown here),
// so that a suite or -a that narrows one still selects them. Without a manifest: nothing to list.
void register_placeholders(const module_spec& spec) {
  const auto path = locate_file(manifest_file_name(spec.id));
  if (!path) return;
  std::ifstream in(*path);
  const requirement loads = module_loads(spec);
  std::string line;
  while (std::getline(in, line)) {
    const auto f = split_fields(line);
    if (f[0].empty() || registry::instance().find(f[0]) != nullptr) continue;
    auto& b = registry::instance()
                  .add(f[0], [](state&) {})  // never runs: the requirement is unmet
                  .describe(f[2])
                  .require(loads);
    std::size_t start = 0;
    while (start < f[1].size()) {
      const auto comma = std::min(f[1].find(',', start), f[1].size());
      b.add_string_axis(f[1].substr(start, comma - start), {"-"},
                        choice_axis(spec.library + " module not loaded: values unknown", {}));
      start = comma + 1;
    }
  }
}

}  // namespace

void load_benchmark_modules() {
  // Before any module, and in a build without CUDA too (where it is refused): a simulation asked
  // for is made, or the process ends saying why, never a run on whatever else is there.
  if (simulation::requested()) simulation::load_shims();
  for (const auto& spec : known_modules()) {
    if (!spec.has_benchmarks || !spec.compiled_in) continue;
    // The registry keeps itself sorted: the module's are those that were not there before.
    std::set<const benchmark*> before;
    for (const auto& b : registry::instance().all()) before.insert(b.get());
    if (load(spec.id).loaded()) {
      auto& mine = registered_by()[spec.id];
      for (const auto& b : registry::instance().all()) {
        if (!before.contains(b.get())) mine.push_back(b.get());
      }
    } else {
      register_placeholders(spec);
    }
  }
}

namespace detail {

namespace {
std::mutex& hooks_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, void (*)(), std::less<>>& hooks() {
  static std::map<std::string, void (*)(), std::less<>> h;
  return h;
}
}  // namespace

void set_hook(std::string_view name, void (*fn)()) {
  const std::lock_guard lock(hooks_mutex());
  hooks()[std::string(name)] = fn;
}

void (*get_hook(std::string_view name))() {
  const std::lock_guard lock(hooks_mutex());
  const auto it = hooks().find(name);
  return it == hooks().end() ? nullptr : it->second;
}

}  // namespace detail

bool write_module_manifest(std::string_view id, const std::string& path) {
  const auto it = registered_by().find(id);
  if (it == registered_by().end()) return false;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const benchmark* b : it->second) {
      std::string text = b->description();
      for (char& c : text) {
        if (c == '\n' || c == '\t') c = ' ';
      }
      std::string axes;
      for (const auto& ax : b->axes()) axes += (axes.empty() ? "" : ",") + ax.name;
      out << b->name() << '\t' << axes << '\t' << text << '\n';
    }
    if (!out.flush()) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace infrabench::backends
