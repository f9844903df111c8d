// The command line: list, run, sysinfo and the registered subcommands. Only this and the run
// pipeline it calls for `run` (run_pipeline.h) decide the process's exit code: 0 success, 1 a
// benchmark failed (or a hook refused), 2 bad input, 3 a report not written where asked, 128 +
// signal when interrupted.
#pragma once

namespace infrabench {

int cli_main(int argc, char** argv);

}  // namespace infrabench
