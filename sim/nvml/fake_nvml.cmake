# The fake NVML (sim/nvml/fake_nvml.cpp): built next to the infrabench executable, where
# the telemetry and health tests load it (INFRABENCH_NVML_LIBRARY) and where the simulated GPU
# node finds it at run time (harness/src/simulation.cpp). Included by sim/ (so that a default
# build's INFRABENCH_SIM_NODE run has it) and by the unit tests (a build without CUDA); the first
# to include it defines the target.
include_guard(GLOBAL)
add_library(infrabench_fake_nvml SHARED ${PROJECT_SOURCE_DIR}/sim/nvml/fake_nvml.cpp)
target_link_libraries(infrabench_fake_nvml PRIVATE nlohmann_json::nlohmann_json)
set_target_properties(infrabench_fake_nvml PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}
                      CXX_VISIBILITY_PRESET hidden)
infrabench_set_warnings(infrabench_fake_nvml)
# It stands in for NVML, a C library: its entry points carry no C++ function type. Under clang's
# -fsanitize=function (the sanitizer builds) its own C++ struct types would be checked against the
# loader's, which declares NVML's structs itself (as it must for the real library): a mismatch of
# names, not of layout, that the real library could never show.
target_compile_options(infrabench_fake_nvml PRIVATE $<$<CXX_COMPILER_ID:Clang>:-fno-sanitize=function>)
