// The one writer of every file infrabench writes for its user: the run report (-o), baselines,
// JUnit XML, the HTML report, comparisons. It decides from what is at the path now, and never
// replaces anything that is not a regular file of ours to replace:
//
//   path                          what happens
//   ----------------------------  -------------------------------------------------------------
//   "-"                           written to standard output
//   /dev/stdout, /dev/stderr,     written to that open descriptor of this process (shares its
//   /dev/fd/N, /proc/self/fd/N    offset, so `> file` redirections keep what came before)
//   a regular file, or nothing    replaced atomically: a temporary file beside it, fsync, rename;
//                                 an existing file keeps its permissions (and owner, as root)
//   a symbolic link               followed: its final target is replaced as above (or written
//                                 through, by its kind); the link stays a link. Not followed
//                                 (refused) in a sticky world-writable directory when it belongs
//                                 to neither us nor the directory's owner (protected_symlinks)
//   a character device, a FIFO    opened and written in place: never renamed over, never unlinked
//   (/dev/null), a socket         (a FIFO waits up to fifo_reader_wait_s for its reader)
//   a directory, a block device,  refused before anything runs: user_error naming the path and
//   a missing directory, ...      the reason
#pragma once

#include <sys/types.h>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace infrabench {

// A write that failed after the path was accepted (disk full, EIO, a FIFO nobody reads). The
// message is one line naming the path and the cause; the previous file is intact and no
// temporary file is left behind.
class output_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class output_kind {
  standard_output,  // "-"
  descriptor,       // an open descriptor of this process, named through /dev/fd or /proc
  replace,          // a regular file or a new path: written beside, then renamed over
  write_through,    // a character device, FIFO or socket: opened and written in place
};

// What is at a path (after following symbolic links), as far as writing it is concerned.
enum class file_type {
  missing,
  regular,
  directory,
  char_device,
  block_device,
  fifo,
  socket,
  other
};

// The decision table: how a path whose final target is of type `t` is written, or nullopt with
// the reason in `refusal`.
[[nodiscard]] std::optional<output_kind> output_kind_for(file_type t, std::string* refusal);

struct output_target {
  output_kind kind = output_kind::replace;
  std::string path;    // as given
  std::string target;  // where the bytes go: the symbolic links' final target
  file_type type = file_type::missing;
  int fd = -1;      // descriptor: which one
  mode_t mode = 0;  // replace of an existing file: its permission bits, kept
  uid_t uid = 0;    // and its owner
  gid_t gid = 0;
  bool exists = false;  // replace: a regular file is there now
};

// How `path` will be written. Throws user_error (one line: the path and why) for an empty path,
// a directory, a block device, a missing parent directory, a path through a non-directory, a
// closed descriptor or a symbolic link loop. Writes nothing.
[[nodiscard]] output_target resolve_output(const std::string& path);

// resolve_output, then proves a file can be written there now: for a replace, creates and
// removes a temporary file beside the target (permissions, read-only mounts); for a device,
// FIFO or socket, checks write permission. For commands to call before any work is done.
void check_output_path(const std::string& path);

// Refuses (user_error naming both) an output that is the same file as one of `inputs` or as
// another output: the same device and inode, or for a file not there yet the same path once
// links are resolved. For commands to call before any work is done: `run --baseline b.json -o
// b.json` would replace the baseline, `--junit x -o x` one output with the other. Outputs written
// in place (a device, a FIFO, standard output) may repeat; empty paths are skipped.
void check_distinct_files(const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs);

// Writes `content` to `path` as resolve_output decides. Throws user_error for a refused path
// and output_error when the write itself fails (see above). A write to a descriptor that is a
// regular file (`-o - > f`) that fails is cut back to where it began, so no truncated document
// is left that a reader could take for a whole one.
void write_output(const std::string& path, std::string_view content);

// How long a write to a FIFO waits for a process to open its other end.
inline constexpr double fifo_reader_wait_s = 30;

// Where write_output could not deliver a run's results: saves `content` as a new file (never
// over an existing one) named `infrabench-unsaved-<UTC time>-<pid>.json` in the current
// directory, else in $TMPDIR (or /tmp). Returns the path saved to, or nullopt when neither took
// it, with each directory and its error appended to `why` ("/w: No space left on device, ...").
// A file it could not complete is removed.
[[nodiscard]] std::optional<std::string> save_elsewhere(std::string_view content,
                                                        std::string* why = nullptr);

}  // namespace infrabench
