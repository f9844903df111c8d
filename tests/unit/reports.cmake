# Unit tests of reports/ (verdicts, comparisons, history, HTML): link its objects.
target_link_libraries(infrabench_unit_tests PRIVATE infrabench_reports)
# The fuzz seed corpus doubles as test data (the deterministic mutation test replays it).
target_compile_definitions(infrabench_unit_tests PRIVATE
                           INFRABENCH_FUZZ_DIR="${PROJECT_SOURCE_DIR}/tests/fuzz")
