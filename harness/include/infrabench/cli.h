// The command line: list, run, sysinfo. Only this decides the process's exit code:
// 0 success, 1 a benchmark failed (or the run was interrupted), 2 bad input.
#pragma once

namespace infrabench {

int cli_main(int argc, char** argv);

}  // namespace infrabench
