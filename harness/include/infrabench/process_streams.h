// The process's standard descriptors and signals: set up once by main() before any command runs,
// standard output checked once after it ended, and the signals that stop a run.
#pragma once

#include <atomic>

namespace infrabench {

// Before anything runs:
// - a standard descriptor (0, 1, 2) that is closed is opened read-only on /dev/null. Writes to it
//   then fail (EBADF) as they would have, but the next file opened cannot take its number: with
//   descriptor 1 closed, a report or a database opened later would otherwise receive whatever is
//   printed "on standard output";
// - SIGXFSZ (a write past `ulimit -f`) gets a handler that does nothing, so that the write fails
//   with EFBIG and its writer reports it (exit 3, temporary files removed) instead of the signal
//   ending the process mid-write. A handler, not SIG_IGN: programs started from here get the
//   default action back at exec.
void prepare_process_streams();

// After the command: flushes standard output and checks that everything written to it arrived.
// When a write failed (a full disk, /dev/full, a closed descriptor) it says so on stderr (one
// line) and returns 3 where `code` was lower (0 success, 1 a verdict, 2 bad input: a command that
// claimed success must not have lost its output); else returns `code`.
[[nodiscard]] int finish_standard_output(int code);

// Catches the signals whose default action ends the process: SIGINT, SIGTERM, SIGHUP (an ssh
// connection that dropped), SIGQUIT, SIGUSR1/SIGUSR2 and SIGALRM (a batch system's warning),
// SIGXCPU (a soft CPU-time limit), SIGPIPE (a console reader that went away). The first one
// received is recorded and sets stop_requested(); the run stops, writes the results finished so
// far as a partial report and exits 128 + that signal (run_pipeline.h). INT and TERM are always
// caught; the others only while they have their default action, so one ignored on entry stays
// ignored (`nohup`'s SIGHUP; an MPI library's own SIGPIPE). `run` calls it as its benchmarks
// start; main() for health-check from the start, which must answer with its one line however
// early a signal comes.
void catch_stop_signals();

// Whether a signal caught by catch_stop_signals asked the process to stop.
[[nodiscard]] const std::atomic<bool>& stop_requested();

// The first signal catch_stop_signals caught in this process, 0 when none.
[[nodiscard]] int stop_signal_received();

}  // namespace infrabench
