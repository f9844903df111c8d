# The storage unit tests exercise kernels/storage (plan, histogram, data pattern, targets, engines).
target_link_libraries(infrabench_unit_tests PRIVATE infrabench::kernels_storage)

# Issue 3: the storage tests pass as a normal user too (no CAP_IPC_LOCK: the 8 MiB memlock limit,
# no write access outside /tmp). When ctest runs as root, this runs them again as uid/gid 65534;
# skipped (77) when not root (they just ran unprivileged), without setpriv, or when the binary is
# out of that user's reach.
add_test(NAME unit.storage_unprivileged
         COMMAND sh -c [=[
if [ "$(id -u)" != 0 ]; then echo "not root: the storage tests above already ran unprivileged"; exit 77; fi
command -v setpriv >/dev/null || { echo "setpriv not installed: cannot drop to uid 65534"; exit 77; }
as_nobody="setpriv --reuid=65534 --regid=65534 --clear-groups"
$as_nobody test -x "$1" || { echo "$1 is out of reach of uid 65534"; exit 77; }
exec $as_nobody env TMPDIR=/tmp "$1" --gtest_filter='Storage*' --gtest_brief=1
]=] sh $<TARGET_FILE:infrabench_unit_tests>)
set_tests_properties(unit.storage_unprivileged PROPERTIES LABELS unit SKIP_RETURN_CODE 77)
