# Run at build time (not configure time): writes the commit the build is made from, and whether
# the tracked files differ from it, into OUT as a C++ definition. The file is rewritten only when
# the text changes, so a build with nothing new relinks nothing, and a commit made since the last
# configure is still the one a report names.
#   cmake -DSOURCE_DIR=... -DOUT=... -P git_stamp.cmake
set(commit "unknown")
find_program(GIT_EXECUTABLE git)
if(GIT_EXECUTABLE)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                  OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                  RESULT_VARIABLE rc)
  if(rc EQUAL 0 AND head)
    set(commit ${head})
    execute_process(COMMAND ${GIT_EXECUTABLE} status --porcelain --untracked-files=no
                    WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE dirty ERROR_QUIET)
    if(dirty)
      string(APPEND commit "-dirty")
    endif()
  endif()
endif()
set(text "// Generated at build time by cmake/git_stamp.cmake.\n#include \"infrabench/build_stamp.h\"\n\nnamespace infrabench {\nconst char* build_commit() {\n  return \"${commit}\";\n}\n}  // namespace infrabench\n")
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
