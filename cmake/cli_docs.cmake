# Run after the executable is linked (apps/CMakeLists.txt): the shell completion and the man page,
# written by the executable from its own command line (apps/cli_docs.cpp), so what the package
# installs is the command line of the binary beside it. The page is compressed as Debian wants it:
# gzip -9 with no name or timestamp (-n), so that the same binary gives the same bytes.
#   cmake -DBIN=... -DOUT=... -P cli_docs.cmake
file(MAKE_DIRECTORY ${OUT})
# (A sanitized build's leak check would fail the build over MPI's start-up allocations.)
set(ENV{ASAN_OPTIONS} detect_leaks=0)
# write(FILE ARG...): FILE is what `infrabench ARG...` prints.
function(write file)
  execute_process(COMMAND ${BIN} ${ARGN} OUTPUT_FILE ${OUT}/${file} ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${BIN} ${ARGN} failed (${rc}): ${err}")
  endif()
endfunction()
write(infrabench.bash completion bash)
write(_infrabench completion zsh)
write(infrabench.1 manpage)
execute_process(COMMAND gzip -9 -n -c ${OUT}/infrabench.1 OUTPUT_FILE ${OUT}/infrabench.1.gz
                RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "gzip of ${OUT}/infrabench.1 failed (${_rc})")
endif()
