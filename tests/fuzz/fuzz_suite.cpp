// libFuzzer target: the suite reader (run --suite FILE, a baseline's "suite") and what the plan
// does with what it accepts: each entry's filter compiled and searched in benchmark names, each
// axis list turned into the text -a takes. Refusals must be user_error; nothing else may escape,
// crash or overflow the stack (a filter or a JSON value nested deep).
#include <cstddef>
#include <cstdint>
#include <regex>
#include <string>

#include "infrabench/error.h"
#include "infrabench/suite.h"

using namespace infrabench;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const suite s = parse_suite(text, "fuzz.json");
    for (const auto& e : s.entries) {
      const std::regex re = compile_filter(e.filter, "suite filter");
      for (const char* name : {"bandwidth/host_memory", "gemm/cpu_fp32", "storage/io_uring_read"})
        (void)std::regex_search(name, re);
      for (const auto& [axis, values] : e.axes) (void)suite_axis_text(values);
    }
  } catch (const user_error&) {
  }
  return 0;
}
