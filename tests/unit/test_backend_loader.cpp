// The backend loader's pieces that need no module: the dynamic loader's errors as sentences that
// name the library, where modules are looked for, and the refusal of an unknown module.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

#include "build_paths.h"
#include "infrabench/backend_loader.h"
#include "infrabench/compiled_in.h"
#include "infrabench/probe_detail.h"

namespace bk = infrabench::backends;
using infrabench::reason_code;

namespace {

// Sets an environment variable for one test and restores it after.
class scoped_env {
 public:
  scoped_env(const char* name, const char* value) : m_name(name) {
    if (const char* old = std::getenv(name)) m_old = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~scoped_env() {
    if (m_old) {
      setenv(m_name, m_old->c_str(), 1);
    } else {
      unsetenv(m_name);
    }
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

 private:
  const char* m_name;
  std::optional<std::string> m_old;
};

TEST(BackendLoader, MissingLibraryBecomesNotInstalled) {
  const auto& spec = bk::spec_of("openblas");
  const auto r = bk::explain_load_error(
      spec, "libopenblas.so.0: cannot open shared object file: No such file or directory");
  EXPECT_EQ(r.code, reason_code::unsupported);
  EXPECT_EQ(r.text.rfind("OpenBLAS not installed (libopenblas.so.0: cannot open shared object "
                         "file: No such file or directory)",
                         0),
            0U)
      << r.text;
  EXPECT_NE(r.text.find(spec.install_hint), std::string::npos) << r.text;
}

TEST(BackendLoader, OtherLoaderErrorsNameTheLibraryAndKeepTheText) {
  const auto& cv = bk::spec_of("opencv");
  const auto sym =
      bk::explain_load_error(cv, "/x/libinfrabench_opencv.so: undefined symbol: _ZN2cv6resizeE");
  EXPECT_EQ(sym.code, reason_code::unsupported);
  EXPECT_EQ(sym.text.rfind("OpenCV installed is not the one this module was built for (", 0), 0U)
      << sym.text;
  EXPECT_NE(sym.text.find("undefined symbol: _ZN2cv6resizeE"), std::string::npos);

  const auto mem = bk::explain_load_error(bk::spec_of("onednn"),
                                          "libdnnl.so.2: failed to map segment from shared object");
  EXPECT_EQ(mem.code, reason_code::resources);
  EXPECT_EQ(mem.text.rfind("oneDNN could not be loaded: not enough address space or memory (", 0),
            0U)
      << mem.text;

  const auto other = bk::explain_load_error(cv, "something new");
  EXPECT_EQ(other.text, "OpenCV could not be loaded (something new)");
}

TEST(BackendLoader, ModulesAreLookedForBesideTheExecutableThenInLibInfrabench) {
  const scoped_env env("INFRABENCH_MODULE_DIR", nullptr);
  const auto dirs = bk::module_dirs();
  ASSERT_EQ(dirs.size(), 2U);
  const std::string exe_dir =
      infrabench::build_paths::unit_test_dir;  // this executable's directory
  EXPECT_EQ(dirs[0], exe_dir);
  EXPECT_EQ(dirs[1], exe_dir.substr(0, exe_dir.rfind('/')) + "/lib/infrabench");
}

TEST(BackendLoader, ModuleDirOverrideReplacesTheSearch) {
  const scoped_env env("INFRABENCH_MODULE_DIR", "/nonexistent-infrabench-modules");
  EXPECT_EQ(bk::module_dirs(), std::vector<std::string>{"/nonexistent-infrabench-modules"});
  EXPECT_FALSE(bk::locate("openblas").has_value());
  EXPECT_EQ(bk::module_file_name("openblas"), "libinfrabench_openblas.so");
}

TEST(BackendLoader, EveryKnownModuleHasASpecAndUnknownOnesAreRefused) {
  for (const auto& m : bk::known_modules()) EXPECT_EQ(bk::spec_of(m.id).library, m.library);
  EXPECT_THROW((void)bk::spec_of("no-such-backend"), std::logic_error);
}

// ---- CUDA and NCCL as modules (issue 29 item 1)

TEST(BackendLoader, AMissingCudaLibraryIsNamedByTheLibraryTheLoaderCouldNotOpen) {
  const auto& cuda = bk::spec_of("cuda");
  const auto rt = bk::explain_load_error(
      cuda, "libcudart.so.13: cannot open shared object file: No such file or directory");
  EXPECT_EQ(rt.code, reason_code::unsupported);
  EXPECT_EQ(rt.text.rfind("CUDA runtime not installed (libcudart.so.13: cannot open shared object "
                          "file: No such file or directory)",
                          0),
            0U)
      << rt.text;
  EXPECT_NE(rt.text.find(cuda.install_hint), std::string::npos) << rt.text;
  // cudart there, cuBLASLt not: the sentence names cuBLAS, not the runtime.
  const auto lt = bk::explain_load_error(
      cuda, "libcublasLt.so.13: cannot open shared object file: No such file or directory");
  EXPECT_EQ(lt.text.rfind("cuBLAS not installed (libcublasLt.so.13: ", 0), 0U) << lt.text;
  const auto nccl = bk::explain_load_error(
      bk::spec_of("nccl"),
      "libnccl.so.2: cannot open shared object file: No such file or directory");
  EXPECT_EQ(nccl.text.rfind("NCCL not installed (libnccl.so.2: ", 0), 0U) << nccl.text;
  // A library we do not know: the module's own name.
  const auto other = bk::explain_load_error(
      cuda, "libfoo.so.1: cannot open shared object file: No such file or directory");
  EXPECT_EQ(other.text.rfind("CUDA not installed (libfoo.so.1: ", 0), 0U) << other.text;
}

TEST(BackendLoader, SonamesMapToTheLibrariesPeopleName) {
  EXPECT_EQ(bk::library_of_soname("libcudart.so.13"), "CUDA runtime");
  EXPECT_EQ(bk::library_of_soname("/usr/local/cuda/lib/libcublasLt.so.13"), "cuBLAS");
  EXPECT_EQ(bk::library_of_soname("libcublas.so.13"), "cuBLAS");
  EXPECT_EQ(bk::library_of_soname("libnccl.so.2"), "NCCL");
  EXPECT_EQ(bk::library_of_soname("libcudnn.so.9"), "cuDNN");
  EXPECT_EQ(bk::library_of_soname("libmpi.so.40"), "MPI");
  EXPECT_EQ(bk::library_of_soname("libcudartX.so.13"), "");
  EXPECT_EQ(bk::library_of_soname(""), "");
}

TEST(BackendLoader, TheGpuModulesHoldBenchmarksAndNcclNeedsMpiAndCuda) {
  EXPECT_TRUE(bk::spec_of("cuda").has_benchmarks);
  EXPECT_TRUE(bk::spec_of("cuda").needs.empty());
  EXPECT_EQ(bk::spec_of("nccl").needs, (std::vector<std::string>{"mpi", "cuda"}));
  EXPECT_EQ(bk::spec_of("cuda").compiled_in,
            infrabench::build::compiled_in(infrabench::build::backend::cuda));
  // Modules are loaded in this order at start-up: a module's needs come before it.
  const auto& all = bk::known_modules();
  for (std::size_t i = 0; i < all.size(); ++i) {
    for (const auto& need : all[i].needs) {
      bool earlier = false;
      for (std::size_t j = 0; j < i; ++j) earlier = earlier || all[j].id == need;
      EXPECT_TRUE(earlier) << all[i].id << " needs " << need;
    }
  }
}

TEST(BackendLoader, ANeededModuleThatDidNotLoadIsTheReason) {
  // Nothing is found there: the MPI module is not, so the NCCL module is not even tried.
  const scoped_env env("INFRABENCH_MODULE_DIR", "/nonexistent-infrabench-modules");
  const auto& nccl = bk::load("nccl");
  EXPECT_FALSE(nccl.loaded());
  if (!bk::spec_of("nccl").compiled_in) {
    EXPECT_EQ(nccl.reason.code, reason_code::not_built) << nccl.reason.text;
    return;
  }
  EXPECT_EQ(nccl.reason.text.rfind("NCCL module needs the MPI module, which did not load: MPI "
                                   "module libinfrabench_mpi.so not found",
                                   0),
            0U)
      << nccl.reason.text;
  EXPECT_TRUE(nccl.path.empty());
}

TEST(BackendLoader, WithoutTheCudaModuleTheProbeSaysWhyAndListsNoGpu) {
  const scoped_env env("INFRABENCH_MODULE_DIR", "/nonexistent-infrabench-modules");
  ASSERT_EQ(bk::provided(infrabench::detail::probe_cuda_hook), nullptr);
  infrabench::capabilities caps;
  infrabench::detail::probe_cuda(caps);
  EXPECT_FALSE(caps.cuda.available);
  EXPECT_FALSE(caps.cublas.available);
  EXPECT_EQ(caps.cuda.compiled_in,
            infrabench::build::compiled_in(infrabench::build::backend::cuda));
  if (caps.cuda.compiled_in) {
    EXPECT_EQ(caps.cuda.reason, bk::load("cuda").reason.text);
    EXPECT_EQ(caps.cuda.reason.rfind("CUDA module libinfrabench_cuda.so not found", 0), 0U)
        << caps.cuda.reason;
  } else {
    EXPECT_EQ(caps.cuda.reason, "not compiled in (INFRABENCH_WITH_CUDA=OFF)");
  }
  EXPECT_EQ(infrabench::detail::bind_rank_gpu(caps, 0), -1);
}

int fake_bind(const infrabench::capabilities&, int local_rank) {
  return 40 + local_rank;
}

TEST(BackendLoader, AHookAModuleProvidesReplacesTheCoresAnswer) {
  constexpr bk::hook<int(const infrabench::capabilities&, int)> test_hook{"test.fake_bind"};
  EXPECT_EQ(bk::provided(test_hook), nullptr);
  bk::provide(test_hook, &fake_bind);
  ASSERT_NE(bk::provided(test_hook), nullptr);
  EXPECT_EQ(bk::provided(test_hook)(infrabench::capabilities{}, 2), 42);
}

}  // namespace
