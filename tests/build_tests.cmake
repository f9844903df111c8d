# Included by ctest when it starts, before the unit suites are listed (tests/unit/CMakeLists.txt
# names it, with IB_CMAKE, IB_BUILD_DIR and IB_CTEST_BUILDS set): builds the targets the tests need.
# `cmake --build --preset default` builds the binary and its modules only (a newcomer's first run
# does not wait for 88 unit-test files), so without this a `ctest` after it would find no unit-test
# executable, or an old one, and test code that is not the code built. A build that is up to date
# costs ninja's check (~0.1 s). INFRABENCH_CTEST_BUILDS (cache) names the targets: the tsan preset
# builds the unit tests only, which are all it runs; empty builds nothing.
# INFRABENCH_CTEST_NO_BUILD (environment): a ctest started from inside a test of this tree
# (test_unit_suites lists the suites), whose outer ctest built everything already.
if(IB_CTEST_BUILDS STREQUAL "" OR DEFINED ENV{INFRABENCH_CTEST_NO_BUILD})
  return()
endif()
string(REPLACE ";" " " _ib_targets "${IB_CTEST_BUILDS}")
message(STATUS "ctest: building ${_ib_targets} in ${IB_BUILD_DIR}")
execute_process(COMMAND "${IB_CMAKE}" --build "${IB_BUILD_DIR}" --target ${IB_CTEST_BUILDS}
                RESULT_VARIABLE _ib_build_rc)
if(NOT _ib_build_rc EQUAL 0)
  message(FATAL_ERROR "ctest: building ${_ib_targets} failed (${_ib_build_rc}); see above")
endif()
