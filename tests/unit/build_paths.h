#pragma once
// Paths in this build tree that some unit tests need. They are defined in build_paths.cpp, which
// CMake generates in each build directory (tests/unit/CMakeLists.txt). As compile definitions they
// made every test file's command differ between two build trees of the same sources, so the
// compiler cache served none of the cpu-only preset's unit tests from the default build; now that
// one small file is the only difference.
namespace infrabench::build_paths {
extern const char* const module_dir;     // the build tree's top, where the backend modules are
extern const char* const unit_test_dir;  // the unit-test executable's directory
extern const char* const fake_nvml;      // the fake NVML library (sim/nvml)
}  // namespace infrabench::build_paths
