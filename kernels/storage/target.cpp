#include "storage/target.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "io/write_all.h"
#include "storage/data_pattern.h"

namespace infrabench::kernels::storage {
namespace {

namespace fs = std::filesystem;

[[nodiscard]] std::string errno_text(int err) {
  return std::strerror(err);
}

[[nodiscard]] std::string fs_type_name(const std::string& path) {
  struct statfs s {};
  if (statfs(path.c_str(), &s) != 0) return "unknown";
  switch (static_cast<unsigned long>(s.f_type)) {
    case 0xEF53:
      return "ext4";
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x01021994:
      return "tmpfs";
    case 0x9FA0:
      return "proc";
    case 0x62656572:
      return "sysfs";
    case 0x6969:
      return "nfs";
    case 0x794C7630:
      return "overlayfs";
    case 0x65735546:
      return "fuse";
    case 0x2FC12FC1:
      return "zfs";
    case 0x858458F6:
      return "ramfs";
    case 0x01021997:
      return "v9fs";
    default: {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "0x%lx", static_cast<unsigned long>(s.f_type));
      return buf;
    }
  }
}

[[nodiscard]] std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

// Logical block size of the block device `dev` (a partition inherits its disk's), from sysfs.
[[nodiscard]] std::uint32_t sysfs_logical_block(dev_t dev) {
  const std::string base =
      "/sys/dev/block/" + std::to_string(major(dev)) + ":" + std::to_string(minor(dev));
  for (const std::string& p :
       {base + "/queue/logical_block_size", base + "/../queue/logical_block_size"}) {
    const std::string v = read_first_line(p);
    if (!v.empty()) {
      try {
        return static_cast<std::uint32_t>(std::stoul(v));
      } catch (const std::exception&) {
      }
    }
  }
  return 0;
}

void write_all(int fd, const std::byte* data, std::size_t n, std::uint64_t offset,
               const std::string& path) {
  if (const int err = io::write_all(fd, data, n, offset)) {
    throw storage_error("writing scratch file " + path + ": " + errno_text(err));
  }
}

// Creates and fills one file; returns its descriptor (still open, for syncing).
unique_fd create_and_fill(const std::string& path, std::uint64_t size, std::uint64_t seed,
                          std::vector<std::byte>& chunk, const std::atomic<bool>* cancel) {
  // O_EXCL|O_NOFOLLOW: fails on any existing path, symlink or not, so nothing but a new file is
  // ever opened for writing.
  unique_fd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.get() < 0) throw storage_error("creating scratch file " + path + ": " + errno_text(errno));
  if (size > 0 && fallocate(fd.get(), 0, 0, static_cast<off_t>(size)) != 0) {
    const int err = errno;
    if (err == ENOSPC) {
      throw storage_error("creating scratch file " + path + ": no space for " + format_gib(size));
    }
    // EOPNOTSUPP: a filesystem without fallocate; the writes below allocate the blocks instead.
    if (err != EOPNOTSUPP) throw storage_error("fallocate " + path + ": " + errno_text(err));
  }
  for (std::uint64_t off = 0; off < size; off += chunk.size()) {
    if (cancel != nullptr && cancel->load()) {
      throw storage_error("interrupted while creating scratch data in " + path);
    }
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), size - off));
    fill_pattern(seed, off, std::span(chunk.data(), n));
    write_all(fd.get(), chunk.data(), n, off, path);
  }
  return fd;
}

}  // namespace

unique_fd& unique_fd::operator=(unique_fd&& o) noexcept {
  if (this != &o) {
    if (m_fd >= 0) close(m_fd);
    m_fd = o.release();
  }
  return *this;
}

unique_fd::~unique_fd() {
  if (m_fd >= 0) close(m_fd);
}

std::string format_gib(std::uint64_t bytes) {
  char buf[48];
  const double gib = static_cast<double>(bytes) / (1024.0 * 1024 * 1024);
  if (gib >= 0.1) {
    std::snprintf(buf, sizeof(buf), "%.1f GiB", gib);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024));
  }
  return buf;
}

std::vector<std::string> mount_points_of(dev_t device) {
  // The device itself and its partitions (sysfs subdirectories holding a "partition" file).
  std::vector<std::string> devs = {std::to_string(major(device)) + ":" +
                                   std::to_string(minor(device))};
  const std::string sys = "/sys/dev/block/" + devs.front();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(sys, ec)) {
    if (!fs::exists(entry.path() / "partition", ec)) continue;
    const std::string d = read_first_line((entry.path() / "dev").string());
    if (!d.empty()) devs.push_back(d);
  }
  std::vector<std::string> mounts;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    // id parent major:minor root mount-point ...
    std::istringstream fields(line);
    std::string id, parent, majmin, root, point;
    if (!(fields >> id >> parent >> majmin >> root >> point)) continue;
    if (std::find(devs.begin(), devs.end(), majmin) != devs.end()) mounts.push_back(point);
  }
  return mounts;
}

target_info inspect_target(const std::string& path) {
  if (path.empty()) throw storage_error("target: empty path");
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    throw storage_error("target " + path + ": " + errno_text(errno));
  }
  target_info info;
  info.path = path;
  if (S_ISDIR(st.st_mode)) {
    info.kind = target_kind::directory;
    info.fs_type = fs_type_name(path);
    if (access(path.c_str(), W_OK | X_OK) != 0) {
      throw storage_error("target directory " + path + ": " + errno_text(errno) +
                          " (scratch data needs a directory this user can write)");
    }
    return info;
  }
  if (S_ISBLK(st.st_mode)) {
    info.kind = target_kind::block_device;
    info.fs_type = "block device";
    const unique_fd fd = open_read_only(path, false);
    std::uint64_t bytes = 0;
    if (ioctl(fd.get(), BLKGETSIZE64, &bytes) != 0) {
      throw storage_error("target " + path + ": BLKGETSIZE64: " + errno_text(errno));
    }
    int lbs = 0;
    if (ioctl(fd.get(), BLKSSZGET, &lbs) != 0 || lbs <= 0) {
      throw storage_error("target " + path + ": BLKSSZGET: " + errno_text(errno));
    }
    info.size_bytes = bytes;
    info.direct_align = static_cast<std::uint32_t>(lbs);
    info.align_source = "logical block size (BLKSSZGET)";
    info.mounts = mount_points_of(st.st_rdev);
    return info;
  }
  if (!S_ISREG(st.st_mode)) {
    throw storage_error("target " + path +
                        ": not a regular file, directory or block device (refusing to read it)");
  }
  info.kind = target_kind::regular_file;
  info.size_bytes = static_cast<std::uint64_t>(st.st_size);
  info.fs_type = fs_type_name(path);
  if (access(path.c_str(), R_OK) != 0) {
    throw storage_error("target " + path + ": " + errno_text(errno) + " (no read permission)");
  }
  struct statx sx {};
  if (statx(AT_FDCWD, path.c_str(), 0, STATX_DIOALIGN, &sx) == 0 &&
      (sx.stx_mask & STATX_DIOALIGN) != 0 && sx.stx_dio_offset_align > 0) {
    info.direct_align = sx.stx_dio_offset_align;
    info.align_source = "statx dio_offset_align";
  } else if (const std::uint32_t lbs = major(st.st_dev) != 0 ? sysfs_logical_block(st.st_dev) : 0;
             lbs > 0) {
    info.direct_align = lbs;
    info.align_source = "logical block size of the filesystem's device";
  } else {
    info.direct_align = 512;
    info.align_source = "assumed (the filesystem does not report its O_DIRECT alignment)";
  }
  return info;
}

target_info inspect_new_file(const std::string& dir) {
  const std::string probe = (fs::path(dir) / "align-probe").string();
  {
    const unique_fd fd(
        open(probe.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd.get() < 0) throw storage_error("creating " + probe + ": " + errno_text(errno));
  }
  target_info info;
  try {
    info = inspect_target(probe);
  } catch (...) {
    (void)unlink(probe.c_str());
    throw;
  }
  (void)unlink(probe.c_str());
  info.path = dir;
  return info;
}

unique_fd open_read_only(const std::string& path, bool direct) {
  const int flags = O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0);
  unique_fd fd(open(path.c_str(), flags));
  if (fd.get() >= 0) return fd;
  const int err = errno;
  if (direct && err == EINVAL) {
    throw storage_error("target " + path + ": the filesystem (" + fs_type_name(path) +
                        ") refuses O_DIRECT; buffered reads (direct=0) work there but measure the "
                        "page cache");
  }
  if (err == EACCES) {
    throw storage_error("target " + path + ": " + errno_text(err) +
                        " (no read permission for uid " + std::to_string(geteuid()) + ")");
  }
  if (err == EPERM) {
    throw storage_error("target " + path + ": " + errno_text(err) +
                        " (a policy denies it: device cgroup, LSM, or a container's device rules)");
  }
  throw storage_error("target " + path + ": " + errno_text(err));
}

fs_space filesystem_space(const std::string& dir) {
  struct statvfs s {};
  if (statvfs(dir.c_str(), &s) != 0)
    throw storage_error("statvfs " + dir + ": " + errno_text(errno));
  return {static_cast<std::uint64_t>(s.f_blocks) * s.f_frsize,
          static_cast<std::uint64_t>(s.f_bavail) * s.f_frsize};
}

std::uint64_t free_space_margin(std::uint64_t fs_total) {
  return std::max<std::uint64_t>(fs_total / 10, std::uint64_t{1} << 30);
}

std::string check_free_space(const std::string& dir, const fs_space& space, std::uint64_t need,
                             std::optional<std::uint64_t> margin_bytes) {
  const std::uint64_t margin = margin_bytes.value_or(free_space_margin(space.total));
  const std::string rule = margin_bytes ? "the margin asked for" : "the margin of max(10%, 1 GiB)";
  if (need <= space.available && space.available - need >= margin) return {};
  const std::string left =
      need <= space.available ? "leave " + format_gib(space.available - need) + " free"
                              : "need " + format_gib(need - space.available) + " more than is free";
  return "refusing to create " + format_gib(need) + " of scratch data in " + dir + ": it would " +
         left + ", below " + rule + " = " + format_gib(margin) + " (" +
         format_gib(space.available) + " available of " + format_gib(space.total) +
         "); use a smaller size or another --scratch directory";
}

namespace {

// A new directory infrabench-scratch-XXXXXX in `parent` (mkdtemp: mode 0700, a fresh name, never
// an existing directory), for scratch_dir and run_directory alike.
[[nodiscard]] std::string make_scratch_dir(const std::string& parent) {
  std::string templ = (fs::path(parent) / "infrabench-scratch-XXXXXX").string();
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    throw storage_error("creating a scratch directory in " + parent + ": " + errno_text(errno));
  }
  return buf.data();
}

}  // namespace

scratch_dir::scratch_dir(const std::string& parent) {
  m_path = make_scratch_dir(parent);
}

scratch_dir::~scratch_dir() {
  if (!m_keep) remove();
}

void scratch_dir::remove() noexcept {
  if (m_path.empty()) return;
  std::error_code ec;
  fs::remove_all(m_path, ec);
  m_path.clear();
}

void run_directory::check_name(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos) {
    throw storage_error("refusing file name '" + name +
                        "': only plain names inside the run's own directory are written");
  }
}

run_directory::run_directory(const std::string& parent) {
  m_path = make_scratch_dir(parent);
  m_dir = unique_fd(open(m_path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (m_dir.get() < 0) {
    const int err = errno;
    (void)rmdir(m_path.c_str());
    throw storage_error("opening the scratch directory " + m_path + ": " + errno_text(err));
  }
}

run_directory::~run_directory() {
  if (!m_keep) (void)remove_all();
}

const run_directory::file_id* run_directory::find(const std::string& name) const {
  for (const auto& f : m_files) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::vector<std::string> run_directory::created() const {
  std::vector<std::string> out;
  for (const auto& f : m_files) out.push_back(f.name);
  return out;
}

unique_fd run_directory::create_file(const std::string& name, int extra_flags) {
  check_name(name);
  if (m_removed) throw storage_error("scratch directory " + m_path + " was already removed");
  unique_fd fd(openat(m_dir.get(), name.c_str(),
                      O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | extra_flags, 0600));
  if (fd.get() < 0) {
    const int err = errno;
    std::string why = "creating " + m_path + "/" + name + ": " + errno_text(err);
    if (err == EINVAL && (extra_flags & O_DIRECT) != 0) {
      why += " (the filesystem (" + fs_type_name(m_path) + ") refuses O_DIRECT; use direct=0)";
    }
    throw storage_error(why);
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) {
    const int err = errno;
    (void)unlinkat(m_dir.get(), name.c_str(), 0);
    throw storage_error("fstat " + m_path + "/" + name + ": " + errno_text(err));
  }
  unique_fd held(openat(m_dir.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (held.get() < 0) {
    const int err = errno;
    (void)unlinkat(m_dir.get(), name.c_str(), 0);
    throw storage_error("opening " + m_path + "/" + name + ": " + errno_text(err));
  }
  m_files.push_back({name, st.st_dev, st.st_ino, std::move(held)});
  return fd;
}

unique_fd run_directory::open_created(const std::string& name, int extra_flags) const {
  check_name(name);
  const file_id* f = find(name);
  if (f == nullptr) {
    throw storage_error("refusing to open " + m_path + "/" + name + ": this run did not create it");
  }
  unique_fd fd(openat(m_dir.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | extra_flags));
  if (fd.get() < 0)
    throw storage_error("opening " + m_path + "/" + name + ": " + errno_text(errno));
  struct stat st {};
  if (fstat(fd.get(), &st) != 0 || st.st_dev != f->dev || st.st_ino != f->ino) {
    throw storage_error(m_path + "/" + name + " is no longer the file this run created");
  }
  return fd;
}

bool run_directory::remove_file(const std::string& name) noexcept {
  const auto it = std::find_if(m_files.begin(), m_files.end(),
                               [&](const file_id& f) { return f.name == name; });
  if (it == m_files.end()) return true;
  struct stat st {};
  if (fstatat(m_dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    const bool gone = errno == ENOENT;
    if (gone) m_files.erase(it);
    return gone;
  }
  if (st.st_dev != it->dev || st.st_ino != it->ino) return false;  // not ours any more
  if (unlinkat(m_dir.get(), name.c_str(), 0) != 0 && errno != ENOENT) return false;
  m_files.erase(it);
  return true;
}

std::string run_directory::remove_all() noexcept {
  if (m_removed || m_path.empty()) return {};
  std::string left;
  for (const auto& name : created()) {
    if (!remove_file(name)) left += (left.empty() ? "" : ", ") + name;
  }
  if (left.empty()) {
    if (rmdir(m_path.c_str()) != 0 && errno != ENOENT) {
      left = m_path + " (" + errno_text(errno) + ": it holds files this run did not create)";
    } else {
      m_removed = true;
    }
  } else {
    left = m_path + ": " + left + " (replaced since this run created them: left alone)";
  }
  return left;
}

namespace {

// A file we just wrote, on the device and then out of the page cache (dirty pages are not
// dropped, hence the fdatasync first), so its next read goes to the device.
void flush_and_drop(int fd, const std::string& path) {
  if (fdatasync(fd) != 0) throw storage_error("fdatasync " + path + ": " + errno_text(errno));
  (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

}  // namespace

void create_pattern_file(const std::string& path, std::uint64_t size, std::uint64_t seed,
                         const std::atomic<bool>* cancel) {
  std::vector<std::byte> chunk(std::size_t{4} << 20);
  const unique_fd fd = create_and_fill(path, size, seed, chunk, cancel);
  flush_and_drop(fd.get(), path);  // the first reads are as cold as the last
}

created_file write_new_file(const std::string& path, std::span<const std::byte> data) {
  const unique_fd fd(
      open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (fd.get() < 0) throw storage_error("cannot create " + path + ": " + errno_text(errno));
  write_all(fd.get(), data.data(), data.size(), 0, path);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) throw storage_error("fstat " + path + ": " + errno_text(errno));
  flush_and_drop(fd.get(), path);
  return created_file(path, st.st_dev, st.st_ino);
}

bool drop_cached_pages(const created_file& f, int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_dev != f.m_dev || st.st_ino != f.m_ino) return false;
  return posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
}

std::string dataset_layout::sample_path(const std::string& root, std::uint64_t i) const {
  char name[64];
  std::snprintf(name, sizeof(name), "/d%05llu/s%08llu.bin",
                static_cast<unsigned long long>(i / files_per_dir),
                static_cast<unsigned long long>(i));
  return root + name;
}

void create_dataset(const std::string& root, const dataset_layout& layout, std::uint64_t seed,
                    const std::atomic<bool>* cancel) {
  if (layout.files_per_dir == 0) throw std::invalid_argument("files_per_dir must be > 0");
  std::vector<std::byte> chunk(static_cast<std::size_t>(std::min<std::uint64_t>(
      std::max<std::uint64_t>(layout.sample_size, 1), std::uint64_t{4} << 20)));
  for (std::uint64_t i = 0; i < layout.samples; ++i) {
    if (i % layout.files_per_dir == 0) {
      const std::string dir = fs::path(layout.sample_path(root, i)).parent_path().string();
      if (mkdir(dir.c_str(), 0700) != 0)
        throw storage_error("mkdir " + dir + ": " + errno_text(errno));
    }
    (void)create_and_fill(layout.sample_path(root, i), layout.sample_size, sample_seed(seed, i),
                          chunk, cancel);
  }
  // One syncfs for the whole set (an fsync per file would cost milliseconds each), then drop the
  // now clean pages so the first epoch reads the device.
  const unique_fd dir(open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0 || syncfs(dir.get()) != 0)
    throw storage_error("syncfs " + root + ": " + errno_text(errno));
  for (std::uint64_t i = 0; i < layout.samples; ++i) {
    const unique_fd fd(open(layout.sample_path(root, i).c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() >= 0) (void)posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
  }
}

}  // namespace infrabench::kernels::storage
