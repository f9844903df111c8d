# Included by ctest when it starts (tests/unit/CMakeLists.txt names it in TEST_INCLUDE_FILES, with
# IB_UNIT_EXE set to the unit-test executable): one ctest test per gtest suite, `unit.<Suite>`,
# running `--gtest_filter=<Suite>.*`.
#
# Why not gtest_discover_tests (one process per test): the 740-odd tests then cost a process start
# each, and that start is most of their time. A CUDA build maps the CUDA libraries the harness
# links (~0.2 s of CPU per start, 147 s of the default preset's unit label against 15 s in the
# cpu-only build); an ASan build's shadow memory set-up costs ~0.3 s per start. One process per
# suite keeps ctest's parallelism and a failing test's suite name, and runs each suite's tests
# together the way gtest runs them anywhere else. A GTEST_SKIP()ped test shows in its suite's
# output ("[  SKIPPED ]"), not as a skipped ctest test: ctest applies a skip pattern before the
# exit code, so one would report a suite where one test skipped and another failed as skipped.
if(NOT EXISTS "${IB_UNIT_EXE}")
  # Not built (a preset that builds other targets): one test that fails, as ctest cannot find
  # the executable, rather than no unit tests at all.
  add_test(unit.not_built "${IB_UNIT_EXE}")
  set_tests_properties(unit.not_built PROPERTIES LABELS unit)
  return()
endif()
execute_process(COMMAND "${IB_UNIT_EXE}" --gtest_list_tests
                OUTPUT_VARIABLE _ib_listing ERROR_VARIABLE _ib_listing_err
                RESULT_VARIABLE _ib_listing_rc TIMEOUT 60)
if(NOT _ib_listing_rc EQUAL 0)
  message(FATAL_ERROR "${IB_UNIT_EXE} --gtest_list_tests failed (${_ib_listing_rc}): "
                      "${_ib_listing_err}")
endif()
string(REPLACE "\n" ";" _ib_lines "${_ib_listing}")
foreach(_ib_line IN LISTS _ib_lines)
  # A suite line starts in column 0 and ends with '.', maybe followed by "  # TypeParam = ...";
  # its tests are the indented lines below it.
  if(_ib_line MATCHES "^([^ #][^ ]*)\\.")
    set(_ib_suite "${CMAKE_MATCH_1}")
    string(REGEX REPLACE "[^A-Za-z0-9_./-]" "_" _ib_name "unit.${_ib_suite}")
    add_test("${_ib_name}" "${IB_UNIT_EXE}" "--gtest_filter=${_ib_suite}.*")
    set_tests_properties("${_ib_name}" PROPERTIES LABELS unit)
  endif()
endforeach()
