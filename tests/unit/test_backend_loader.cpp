// The backend loader's pieces that need no module: the dynamic loader's errors as sentences that
// name the library, where modules are looked for, and the refusal of an unknown module.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

#include "infrabench/backend_loader.h"

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
  const std::string exe_dir = INFRABENCH_UNIT_TEST_DIR;  // this executable's directory
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

}  // namespace
