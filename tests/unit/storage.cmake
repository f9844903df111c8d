# The storage unit tests exercise kernels/storage (plan, histogram, data pattern, targets, engines).
target_link_libraries(infrabench_unit_tests PRIVATE infrabench::kernels_storage)

# Issue 3: the storage tests pass as a normal user too (no CAP_IPC_LOCK: the 8 MiB memlock limit;
# no writing where only root may). When ctest runs as root, tests/as_nobody.sh runs them again as
# uid/gid 65534; skipped (77) when not root (they just ran unprivileged), without setpriv, or when
# the binary is out of that user's reach.
add_test(NAME unit.storage_unprivileged
         COMMAND ${PROJECT_SOURCE_DIR}/tests/as_nobody.sh $<TARGET_FILE:infrabench_unit_tests>
                 -- $<TARGET_FILE:infrabench_unit_tests> --gtest_filter=Storage* --gtest_brief=1)
set_tests_properties(unit.storage_unprivileged PROPERTIES LABELS unit SKIP_RETURN_CODE 77)

# The sysfs tree of block devices the storage location tests resolve device numbers in.
target_compile_definitions(infrabench_unit_tests PRIVATE
  INFRABENCH_SYSFS_BLOCK_FIXTURE="${PROJECT_SOURCE_DIR}/tests/fixtures/sysfs-block")
