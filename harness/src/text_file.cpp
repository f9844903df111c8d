#include "infrabench/text_file.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "infrabench/error.h"

namespace infrabench {
namespace {

// Closes the descriptor on every path out.
class fd_closer {
 public:
  explicit fd_closer(int fd) : m_fd(fd) {}
  ~fd_closer() { ::close(m_fd); }
  fd_closer(const fd_closer&) = delete;
  fd_closer& operator=(const fd_closer&) = delete;

 private:
  int m_fd;
};

std::string bound_text(std::size_t max_bytes) {
  return max_bytes % (std::size_t{1} << 20) == 0 ? std::to_string(max_bytes >> 20) + " MiB"
                                                 : std::to_string(max_bytes) + " bytes";
}

[[noreturn]] void too_large(const std::string& path, const std::string& what,
                            std::size_t max_bytes) {
  throw user_error(what + " " + path + ": larger than " + bound_text(max_bytes) + ": not a " +
                   what);
}

[[noreturn]] void read_failed(const std::string& path, const std::string& what, int err) {
  throw user_error("cannot read " + what + " " + path + ": " + std::strerror(err));
}

// A regular file: its size is known, so an oversized one is refused before a byte is read and
// the text is read into one allocation of the right size.
std::string read_regular(int fd, const struct stat& st, const std::string& path,
                         const std::string& what, std::size_t max_bytes) {
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) too_large(path, what, max_bytes);
  std::string text;
  text.reserve(static_cast<std::size_t>(st.st_size));
  char chunk[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) read_failed(path, what, errno);
    if (n == 0) return text;
    text.append(chunk, static_cast<std::size_t>(n));
    if (text.size() > max_bytes) too_large(path, what, max_bytes);  // grew while read
  }
}

// A pipe or FIFO, opened without blocking: read as it comes, each wait for more bounded. One whose
// writer is not there (a FIFO nobody opened for writing) reads as end of file at once: refused
// rather than waited on.
std::string read_pipe(int fd, const std::string& path, const std::string& what,
                      std::size_t max_bytes) {
  std::string text;
  char chunk[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n > 0) {
      text.append(chunk, static_cast<std::size_t>(n));
      if (text.size() > max_bytes) too_large(path, what, max_bytes);
      continue;
    }
    if (n == 0) {
      if (text.empty()) {
        throw user_error(what + " " + path +
                         ": a FIFO or pipe with no writer (nothing to read): give a regular file");
      }
      return text;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN) read_failed(path, what, errno);
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(pipe_read_wait_s * 1000));
    if (ready == 0) {
      throw user_error(what + " " + path + ": a pipe that sent nothing for " +
                       std::to_string(static_cast<int>(pipe_read_wait_s)) +
                       " s: give a regular file");
    }
    if (ready < 0 && errno != EINTR) read_failed(path, what, errno);
  }
}

std::string kind_of(mode_t mode) {
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

std::string read_text_file(const std::string& path, const std::string& what,
                           std::size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer for ever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      throw user_error(what + " " + path + " is a directory");
    read_failed(path, what, err);
  }
  const fd_closer closer(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) read_failed(path, what, errno);
  if (S_ISDIR(st.st_mode)) throw user_error(what + " " + path + " is a directory");
  if (S_ISREG(st.st_mode)) return read_regular(fd, st, path, what, max_bytes);
  if (S_ISFIFO(st.st_mode)) return read_pipe(fd, path, what, max_bytes);
  throw user_error(what + " " + path + " is " + kind_of(st.st_mode) +
                   ": refusing to read it (give a regular file)");
}

}  // namespace infrabench
