# Unit tests of reports/ (verdicts, comparisons, history, HTML): link its objects.
target_link_libraries(infrabench_unit_tests PRIVATE infrabench_reports)
