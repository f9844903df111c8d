// io_uring probe (built with INFRABENCH_WITH_IO_URING=ON): can this process set up a ring, and
// does the kernel support the read opcodes the storage benchmarks submit?
#include <link.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <liburing.h>

#include "infrabench/probe_detail.h"

// liburing installs a version header only from 2.4 on; 2.3 (Debian 12) has none.
#if __has_include(<liburing/io_uring_version.h>)
#include <liburing/io_uring_version.h>
#endif

namespace infrabench::detail {
namespace {

#if defined(IO_URING_VERSION_MAJOR) && defined(IO_URING_VERSION_MINOR)

std::string liburing_version() {
  return "liburing " + std::to_string(IO_URING_VERSION_MAJOR) + "." +
         std::to_string(IO_URING_VERSION_MINOR);
}

#else

// Without the header, the loaded shared object's file name is the most reliable record of the
// version actually in use: liburing.so.2 -> liburing.so.2.3 (the real name is the full version).
int find_liburing(dl_phdr_info* info, std::size_t /*size*/, void* data) {
  const char* name = info->dlpi_name;
  if (name == nullptr || std::strstr(name, "liburing.so") == nullptr) return 0;
  *static_cast<std::string*>(data) = name;
  return 1;
}

std::string liburing_version() {
  std::string path;
  dl_iterate_phdr(&find_liburing, &path);
  if (path.empty()) return "liburing (version unknown: statically linked, < 2.4)";
  char real[PATH_MAX] = {};
  if (realpath(path.c_str(), real) != nullptr) path = real;
  const std::string marker = "liburing.so.";
  const auto at = path.rfind(marker);
  std::string version = at == std::string::npos ? "" : path.substr(at + marker.size());
  // "2.3" from "liburing.so.2.3"; a bare soname major ("2") does not say which release it is.
  if (version.find('.') == std::string::npos) return "liburing " + version + ".x";
  return "liburing " + version;
}

#endif

// Why io_uring_setup failed, with the usual cause for each errno a user can fix.
std::string setup_failure(int err) {
  std::string reason = std::string("io_uring_setup failed: ") + std::strerror(err);
  if (err == EPERM || err == EACCES) {
    std::ifstream in("/proc/sys/kernel/io_uring_disabled");
    std::string value;
    if (in && std::getline(in, value) && !value.empty() && value != "0") {
      reason += " (kernel.io_uring_disabled = " + value + ")";
    } else {
      reason += " (is kernel.io_uring_disabled set, or does a seccomp profile block io_uring?)";
    }
  } else if (err == ENOSYS) {
    reason += " (kernel built without io_uring, or a container runtime filters the syscall)";
  } else if (err == ENOMEM) {
    reason += " (locked-memory limit too small for the ring: raise ulimit -l)";
  }
  return reason;
}

}  // namespace

void probe_io_uring(capabilities& caps) {
  caps.io_uring.version = liburing_version();

  // Set the ring up ourselves rather than call io_uring_get_probe(): liburing returns -errno
  // without setting errno, and the setup error is the one a user needs to see.
  io_uring ring{};
  if (const int ret = io_uring_queue_init(4, &ring, 0); ret < 0) {
    caps.io_uring.available = false;
    caps.io_uring.reason = setup_failure(-ret);
    return;
  }
  io_uring_probe* probe = io_uring_get_probe_ring(&ring);
  if (probe == nullptr) {
    io_uring_queue_exit(&ring);
    caps.io_uring.available = false;
    caps.io_uring.reason =
        "io_uring opcode probe failed (IORING_REGISTER_PROBE needs Linux 5.6 or later)";
    return;
  }
  struct opcode {
    int op;
    const char* name;
  };
  static constexpr opcode needed[] = {
      {IORING_OP_READ, "IORING_OP_READ"},
      {IORING_OP_READ_FIXED, "IORING_OP_READ_FIXED"},
      {IORING_OP_READV, "IORING_OP_READV"},
  };
  std::string missing;
  for (const auto& o : needed) {
    if (io_uring_opcode_supported(probe, o.op) == 0) {
      missing += missing.empty() ? "" : ", ";
      missing += o.name;
    }
  }
  io_uring_free_probe(probe);
  io_uring_queue_exit(&ring);

  caps.io_uring.available = missing.empty();
  if (missing.empty()) {
    caps.io_uring.reason.clear();
  } else {
    caps.io_uring.reason = "kernel io_uring lacks opcodes: " + missing;
  }
}

}  // namespace infrabench::detail
