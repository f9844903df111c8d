#include "infrabench/output_file.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <thread>
#include <vector>

#include "infrabench/error.h"
#include "io/write_all.h"

namespace infrabench {
namespace {

namespace fs = std::filesystem;

std::string parent_dir(const std::string& path) {
  const auto parent = fs::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

file_type type_of(mode_t mode) {
  if (S_ISREG(mode)) return file_type::regular;
  if (S_ISDIR(mode)) return file_type::directory;
  if (S_ISCHR(mode)) return file_type::char_device;
  if (S_ISBLK(mode)) return file_type::block_device;
  if (S_ISFIFO(mode)) return file_type::fifo;
  if (S_ISSOCK(mode)) return file_type::socket;
  return file_type::other;
}

// The descriptor a path names when it is one of this process's own (/dev/stdout -> 1,
// /dev/fd/3, /proc/self/fd/3, /proc/<our pid>/fd/3), else -1. Checked before following links:
// /proc/self/fd/N is a "magic" link whose text ("pipe:[123]", a deleted file) is no path.
int descriptor_named(const std::string& path) {
  const std::string p = fs::path(path).lexically_normal().string();
  if (p == "/dev/stdout") return 1;
  if (p == "/dev/stderr") return 2;
  const std::string pid_dir = "/proc/" + std::to_string(::getpid()) + "/fd/";
  for (const std::string prefix : {"/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"}) {
    if (p.rfind(prefix, 0) != 0 && p.rfind(pid_dir, 0) != 0) continue;
    const std::string rest = p.substr(p.rfind('/') + 1);
    if (rest.empty() || rest.find_first_not_of("0123456789") != std::string::npos) return -1;
    if (rest.size() > 9) return -1;
    return std::stoi(rest);
  }
  return -1;
}

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw user_error("output " + path + ": " + why);
}

// The target of symbolic link `link` as a path (relative link text is relative to the link's
// directory).
std::string follow(const std::string& link) {
  std::error_code ec;
  const fs::path text = fs::read_symlink(link, ec);
  if (ec) throw user_error("output " + link + ": cannot read the symbolic link: " + ec.message());
  return text.is_absolute() ? text.string() : (fs::path(parent_dir(link)) / text).string();
}

// The kernel's protected_symlinks rule, kept whatever the sysctl says (we follow links ourselves,
// so the kernel's check never sees them): in a sticky world-writable directory (/tmp), a link is
// followed only when it belongs to us or to the directory's owner. Another user's
// `/tmp/report.json -> /etc/shadow` would otherwise have us replace the file it names.
void refuse_unprotected_link(const std::string& path, const std::string& link, uid_t link_owner) {
  const std::string dir = parent_dir(link);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return;  // the lookup that follows reports it
  const bool sticky_world_writable = (st.st_mode & S_ISVTX) && (st.st_mode & S_IWOTH);
  if (!sticky_world_writable || link_owner == ::geteuid() || link_owner == st.st_uid) return;
  refuse(path, "the symbolic link " + link + " in the sticky world-writable directory " + dir +
                   " belongs to uid " + std::to_string(link_owner) +
                   ", neither you nor the directory's owner: not following it (the kernel's "
                   "protected_symlinks rule)");
}

// A new file at `target`: its directory must exist and be a directory.
void require_parent_directory(const std::string& path, const std::string& target) {
  const std::string dir = parent_dir(target);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) refuse(path, "directory " + dir + " does not exist");
    refuse(path, "directory " + dir + ": " + std::strerror(err));
  }
  if (!S_ISDIR(st.st_mode)) refuse(path, dir + " is not a directory");
}

// Blocks SIGPIPE for this thread while writing to a pipe, FIFO or socket whose reader may go
// away: the write then fails with EPIPE (reported) instead of the signal ending the process.
// A SIGPIPE raised meanwhile is consumed so it is not delivered once unblocked.
class sigpipe_guard {
 public:
  sigpipe_guard() {
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    m_was_pending = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_set, &m_old);
  }
  ~sigpipe_guard() {
    if (!m_was_pending) {
      sigset_t pipe_set;
      sigemptyset(&pipe_set);
      sigaddset(&pipe_set, SIGPIPE);
      const timespec zero{0, 0};
      while (sigtimedwait(&pipe_set, nullptr, &zero) > 0) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &m_old, nullptr);
  }
  sigpipe_guard(const sigpipe_guard&) = delete;
  sigpipe_guard& operator=(const sigpipe_guard&) = delete;

 private:
  sigset_t m_old{};
  bool m_was_pending = false;
};

// Writes all of `content` to `fd`; returns 0 or the errno of the failed write.
int write_all(int fd, std::string_view content) {
  return kernels::io::write_all(fd, content.data(), content.size());
}

[[noreturn]] void write_failed(const std::string& path, int err, const std::string& what) {
  throw output_error("cannot write " + path + ": " + what + ": " + std::strerror(err));
}

// Creates a unique temporary file beside `target`; returns its descriptor (or -1, errno set).
int make_temp_beside(const std::string& target, std::string& temp_name) {
  temp_name = (fs::path(parent_dir(target)) /
               ("." + fs::path(target).filename().string() + ".infrabench-XXXXXX"))
                  .string();
  return ::mkostemp(temp_name.data(), O_CLOEXEC);
}

void fsync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // durability of the rename only; the data itself is synced
  (void)::fsync(fd);
  ::close(fd);
}

// Holds the signals that end a process by default (this thread's mask) while a temporary file
// exists: one arriving meanwhile takes effect once the temporary is renamed or removed, so no
// `.NAME.infrabench-*` file is left behind (the run's own handlers, run_pipeline.cpp, only
// record a signal; it is delivered here as soon as the write ends).
class stop_signals_held {
 public:
  stop_signals_held() {
    sigset_t held;
    sigemptyset(&held);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGXCPU, SIGALRM})
      sigaddset(&held, sig);
    pthread_sigmask(SIG_BLOCK, &held, &m_old);
  }
  ~stop_signals_held() { pthread_sigmask(SIG_SETMASK, &m_old, nullptr); }
  stop_signals_held(const stop_signals_held&) = delete;
  stop_signals_held& operator=(const stop_signals_held&) = delete;

 private:
  sigset_t m_old{};
};

void replace_atomically(const output_target& t, std::string_view content) {
  const stop_signals_held held;
  std::string temp;
  const int fd = make_temp_beside(t.target, temp);
  if (fd < 0) write_failed(t.path, errno, "creating a temporary file in " + parent_dir(t.target));
  const auto fail = [&](int err, const std::string& what) {
    ::close(fd);
    ::unlink(temp.c_str());
    write_failed(t.path, err, what + " (the previous file, if any, is intact)");
  };
  if (const int err = write_all(fd, content)) fail(err, "writing " + temp);
  if (t.exists) {
    // Keep what the user set: the permission bits, and as root the owner too.
    if (::fchmod(fd, t.mode & 07777) != 0) fail(errno, "setting the mode of " + temp);
    if (::geteuid() == 0) (void)::fchown(fd, t.uid, t.gid);
  } else {
    // mkstemp creates 0600; a report is not secret: the usual 0666 less the umask.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    (void)::fchmod(fd, 0666 & ~mask);
  }
  if (::fsync(fd) != 0) fail(errno, "flushing " + temp);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    write_failed(t.path, err, "closing " + temp + " (the previous file, if any, is intact)");
  }
  if (::rename(temp.c_str(), t.target.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    write_failed(t.path, err, "renaming " + temp + " to " + t.target);
  }
  fsync_directory(parent_dir(t.target));
}

// Opens a FIFO for writing, waiting up to fifo_reader_wait_s for a reader (opening it blocking
// would hang for ever when nobody comes).
int open_fifo(const output_target& t) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(fifo_reader_wait_s);
  while (true) {
    const int fd = ::open(t.target.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) return fd;
    if (errno != ENXIO) write_failed(t.path, errno, "opening the FIFO");
    if (std::chrono::steady_clock::now() > deadline) {
      throw output_error("cannot write " + t.path + ": no process opened the FIFO for reading " +
                         "within " + std::to_string(static_cast<int>(fifo_reader_wait_s)) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int connect_socket(const output_target& t) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (t.target.size() >= sizeof(addr.sun_path)) {
    throw output_error("cannot write " + t.path + ": socket path too long");
  }
  std::memcpy(addr.sun_path, t.target.c_str(), t.target.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) write_failed(t.path, errno, "creating a socket");
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    ::close(fd);
    write_failed(t.path, err, "connecting to the socket");
  }
  return fd;
}

void write_in_place(const output_target& t, std::string_view content) {
  const sigpipe_guard guard;
  int fd = -1;
  if (t.type == file_type::fifo) {
    fd = open_fifo(t);
  } else if (t.type == file_type::socket) {
    fd = connect_socket(t);
  } else {
    fd = ::open(t.target.c_str(), O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) write_failed(t.path, errno, "opening");
  }
  const int err = write_all(fd, content);
  ::close(fd);
  if (err) write_failed(t.path, err, "writing");
}

// Where a write to descriptor `fd` will begin when it is a regular file (`-o - > f`), else -1.
off_t regular_file_start(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0 && (flags & O_APPEND)) return st.st_size;  // `>>`: each write goes to the end
  return ::lseek(fd, 0, SEEK_CUR);
}

void write_descriptor(const output_target& t, std::string_view content) {
  // Our own buffered output to the same descriptor goes first, in order.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const sigpipe_guard guard;
  const off_t start = regular_file_start(t.fd);
  const int err = write_all(t.fd, content);
  if (err == 0) return;
  // A regular file (`-o - > f` on a full disk or past `ulimit -f`) is cut back to where this
  // write began: the start of a JSON document is not left there to be read as the report.
  const std::string shown = t.path == "-" ? "standard output" : t.path;
  if (start >= 0 && ::ftruncate(t.fd, start) == 0) {
    (void)::lseek(t.fd, start, SEEK_SET);
    write_failed(shown, err, "writing (what was written of it is removed again)");
  }
  write_failed(shown, err, "writing");
}

std::string utc_compact() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

}  // namespace

std::optional<output_kind> output_kind_for(file_type t, std::string* refusal) {
  const auto no = [&](const char* why) -> std::optional<output_kind> {
    if (refusal) *refusal = why;
    return std::nullopt;
  };
  switch (t) {
    case file_type::missing:
    case file_type::regular:
      return output_kind::replace;
    case file_type::char_device:
    case file_type::fifo:
    case file_type::socket:
      return output_kind::write_through;
    case file_type::directory:
      return no("is a directory");
    case file_type::block_device:
      return no("is a block device (infrabench never writes to block devices)");
    case file_type::other:
      break;
  }
  return no("is neither a regular file nor a device, FIFO or socket");
}

output_target resolve_output(const std::string& path) {
  if (path.empty()) throw user_error("output path is empty");
  output_target t;
  t.path = path;
  if (path == "-") {
    t.kind = output_kind::standard_output;
    t.fd = STDOUT_FILENO;
    return t;
  }
  std::string cur = path;
  // 40: the kernel's own limit on symbolic links followed in one lookup.
  for (int hops = 0; hops <= 40; ++hops) {
    if (const int fd = descriptor_named(cur); fd >= 0) {
      if (fd == STDIN_FILENO) refuse(path, "is standard input");
      if (::fcntl(fd, F_GETFL) < 0)
        refuse(path, "descriptor " + std::to_string(fd) + " is not open");
      t.kind = output_kind::descriptor;
      t.fd = fd;
      t.target = cur;
      return t;
    }
    struct stat st {};
    if (::lstat(cur.c_str(), &st) != 0) {
      const int err = errno;
      if (err != ENOENT) refuse(path, (cur == path ? "" : cur + ": ") + std::strerror(err));
      require_parent_directory(path, cur);
      t.kind = output_kind::replace;
      t.type = file_type::missing;
      t.target = cur;
      return t;
    }
    if (S_ISLNK(st.st_mode)) {
      refuse_unprotected_link(path, cur, st.st_uid);
      cur = follow(cur);
      continue;
    }
    t.type = type_of(st.st_mode);
    std::string why;
    const auto kind = output_kind_for(t.type, &why);
    if (!kind) refuse(path, (cur == path ? "" : "its target " + cur + " ") + why);
    t.kind = *kind;
    t.target = cur;
    t.exists = t.type == file_type::regular;
    t.mode = st.st_mode;
    t.uid = st.st_uid;
    t.gid = st.st_gid;
    return t;
  }
  refuse(path, "too many levels of symbolic links");
}

void check_output_path(const std::string& path) {
  const output_target t = resolve_output(path);
  if (t.kind == output_kind::replace) {
    // Try it: permissions, read-only mounts and quotas show up here, before anything runs.
    std::string temp;
    const int fd = make_temp_beside(t.target, temp);
    if (fd < 0) {
      refuse(path, "cannot create a file in " + parent_dir(t.target) + ": " + std::strerror(errno));
    }
    ::close(fd);
    ::unlink(temp.c_str());
  } else if (t.kind == output_kind::write_through) {
    if (::access(t.target.c_str(), W_OK) != 0) refuse(path, std::strerror(errno));
  }
}

namespace {

// What makes two paths the same file: the device and inode when it exists, else the path with
// its directories' links resolved.
struct file_identity {
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  std::string path;

  [[nodiscard]] bool same_as(const file_identity& o) const {
    return (exists && o.exists && dev == o.dev && ino == o.ino) || path == o.path;
  }
};

file_identity identity_of(const std::string& path) {
  file_identity id;
  std::error_code ec;
  id.path = fs::weakly_canonical(fs::absolute(path, ec), ec).string();
  if (ec) id.path = fs::absolute(path, ec).lexically_normal().string();
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    id.exists = true;
    id.dev = st.st_dev;
    id.ino = st.st_ino;
  }
  return id;
}

}  // namespace

void check_distinct_files(const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs) {
  std::vector<std::pair<std::string, file_identity>> in, out;
  for (const auto& p : inputs) {
    if (!p.empty()) in.emplace_back(p, identity_of(p));
  }
  for (const auto& p : outputs) {
    if (p.empty()) continue;
    // A device, FIFO, socket or descriptor is written in place: nothing there is replaced.
    const output_target t = resolve_output(p);
    if (t.kind != output_kind::replace) continue;
    const file_identity id = identity_of(t.target);
    for (const auto& [name, other] : in) {
      if (id.same_as(other)) {
        refuse(p, "is the same file as the input " + name +
                      ": writing it would destroy that input (give another path)");
      }
    }
    for (const auto& [name, other] : out) {
      if (id.same_as(other)) {
        refuse(p, "is the same file as the output " + name +
                      ": one would replace the other (give each output its own path)");
      }
    }
    out.emplace_back(p, id);
  }
}

void write_output(const std::string& path, std::string_view content) {
  const output_target t = resolve_output(path);
  switch (t.kind) {
    case output_kind::standard_output:
    case output_kind::descriptor:
      write_descriptor(t, content);
      return;
    case output_kind::write_through:
      write_in_place(t, content);
      return;
    case output_kind::replace:
      replace_atomically(t, content);
      return;
  }
}

std::optional<std::string> save_elsewhere(std::string_view content, std::string* why) {
  const std::string name =
      "infrabench-unsaved-" + utc_compact() + "-" + std::to_string(::getpid()) + ".json";
  std::vector<std::string> dirs;
  std::error_code ec;
  const auto cwd = fs::current_path(ec);
  if (!ec) dirs.push_back(cwd.string());
  const char* tmp = std::getenv("TMPDIR");
  dirs.emplace_back(tmp && *tmp ? tmp : "/tmp");
  for (const auto& dir : dirs) {
    const std::string path = (fs::path(dir) / name).string();
    // O_EXCL: a new file, never one that is there.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    int err = fd < 0 ? errno : write_all(fd, content);
    if (fd >= 0) {
      if (err == 0 && ::fsync(fd) != 0) err = errno;
      if (::close(fd) != 0 && err == 0) err = errno;
      if (err == 0) return path;
      ::unlink(path.c_str());
    }
    if (why != nullptr) *why += (why->empty() ? "" : ", ") + dir + ": " + std::strerror(err);
  }
  return std::nullopt;
}

}  // namespace infrabench
