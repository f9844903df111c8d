// The fake NVML's configuration for a test (sim/nvml/fake_nvml.cpp): written to a file of its own
// and named by $INFRABENCH_FAKE_NVML, which the library reads at nvmlInit; removed at the end.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace infrabench::test_support {

class fake_nvml_config {
 public:
  explicit fake_nvml_config(const nlohmann::json& config) {
    m_path = (std::filesystem::temp_directory_path() / ("fake-nvml-" + std::to_string(::getpid()) +
                                                        "-" + std::to_string(++s_count) + ".json"))
                 .string();
    std::ofstream(m_path) << config.dump();
    ::setenv("INFRABENCH_FAKE_NVML", m_path.c_str(), 1);
  }
  ~fake_nvml_config() { std::filesystem::remove(m_path); }
  fake_nvml_config(const fake_nvml_config&) = delete;
  fake_nvml_config& operator=(const fake_nvml_config&) = delete;

 private:
  static inline int s_count = 0;
  std::string m_path;
};

}  // namespace infrabench::test_support
