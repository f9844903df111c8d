// What a storage benchmark reads, and the only code that touches the filesystem: inspecting a
// target, opening it read-only, the free-space rule, and the scratch data infrabench creates and
// removes itself. Safety rules kept here (and tested):
//   - a path infrabench did not create is only ever opened O_RDONLY (open_read_only);
//   - the opens with write access (create_pattern_file's, write_new_file's) are
//     O_CREAT|O_EXCL|O_NOFOLLOW inside a directory infrabench made with mkdtemp, so no existing
//     file or device can be opened for writing, whatever the arguments (inspect_new_file's empty
//     probe is created read-only);
//   - scratch data is refused when it would leave less than max(10%, 1 GiB) of its filesystem free;
//   - pages are dropped from the page cache only for files this run created (created_file).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace infrabench::kernels::storage {

// A problem with the target or its environment that the user can fix; the message is one line.
class storage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A requested option this kernel, device or resource limit does not support; the benchmark
// reports the configuration as skipped with this reason.
class unsupported_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Owns a file descriptor.
class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) : m_fd(fd) {}
  unique_fd(unique_fd&& o) noexcept : m_fd(o.release()) {}
  unique_fd& operator=(unique_fd&& o) noexcept;
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  ~unique_fd();
  [[nodiscard]] int get() const { return m_fd; }
  int release() {
    const int fd = m_fd;
    m_fd = -1;
    return fd;
  }

 private:
  int m_fd = -1;
};

enum class target_kind { regular_file, directory, block_device };

struct target_info {
  std::string path;
  target_kind kind = target_kind::regular_file;
  std::uint64_t size_bytes = 0;     // file size or device capacity; 0 for a directory
  std::uint32_t direct_align = 0;   // O_DIRECT offset and length alignment in bytes
  std::string align_source;         // where direct_align came from
  std::string fs_type;              // of the filesystem holding it ("ext4", "tmpfs", ...)
  std::vector<std::string> mounts;  // block device: where it or one of its partitions is mounted
};

// Classifies an existing path without writing to it. Throws storage_error when it is missing,
// unreadable, or not a regular file, directory or block device.
[[nodiscard]] target_info inspect_target(const std::string& path);

// The O_DIRECT alignment a new file in `dir` gets, known before any data is written: an empty file
// is made there (O_RDONLY|O_CREAT|O_EXCL|O_NOFOLLOW, so no descriptor that can write), inspected
// as inspect_target inspects a file, and removed. A file is asked, not the directory, because
// filesystems report dio_offset_align per file only. `dir` must be a directory infrabench made
// (scratch_dir). Returns the file's info with `path` set to `dir`. Throws storage_error.
[[nodiscard]] target_info inspect_new_file(const std::string& dir);

// Opens an existing file or block device O_RDONLY|O_CLOEXEC (plus O_DIRECT when asked). Throws
// storage_error naming the path and the reason; a filesystem refusing O_DIRECT says so.
[[nodiscard]] unique_fd open_read_only(const std::string& path, bool direct);

// Mount points of a block device or of any of its partitions, from /proc/self/mountinfo.
[[nodiscard]] std::vector<std::string> mount_points_of(dev_t device);

struct fs_space {
  std::uint64_t total = 0;      // bytes in the filesystem
  std::uint64_t available = 0;  // bytes an unprivileged user may still write
};
[[nodiscard]] fs_space filesystem_space(const std::string& dir);
// The free space scratch data must leave: max(10% of the filesystem, 1 GiB).
[[nodiscard]] std::uint64_t free_space_margin(std::uint64_t fs_total);
// Empty when `need` bytes fit in `space` and leave `margin` bytes free (default:
// free_space_margin); else the refusal, one line.
[[nodiscard]] std::string check_free_space(const std::string& dir, const fs_space& space,
                                           std::uint64_t need,
                                           std::optional<std::uint64_t> margin = std::nullopt);

// A new directory "infrabench-scratch-XXXXXX" (mkdtemp, mode 0700) under `parent`; on
// destruction it is removed with everything in it, unless keep() was called.
class scratch_dir {
 public:
  explicit scratch_dir(const std::string& parent);
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  ~scratch_dir();
  [[nodiscard]] const std::string& path() const { return m_path; }
  void keep() { m_keep = true; }
  // Removes the directory now (idempotent). Never throws.
  void remove() noexcept;

 private:
  std::string m_path;
  bool m_keep = false;
};

// The write guard of checkpoints: a directory this run created (mkdtemp, mode 0700, under
// `parent`) and the files it created in it, and nothing else. Files are made only by plain name
// (no '/', not "." or ".."), relative to the directory's own descriptor (openat: replacing the
// directory's path after it was made cannot redirect a write elsewhere), with
// O_CREAT|O_EXCL|O_NOFOLLOW (never an existing path, never through a symlink). Only files it
// created are removed, by the name they were made with and only while that name still holds the
// inode created (a file put there under the same name since is left alone: each created file is
// held open by an O_PATH descriptor, so its inode number cannot be reused by another file until
// it is removed); the directory is removed with rmdir, so anything another process put in it
// survives. Destruction removes
// everything (unless keep() was called). Throws storage_error with the path and the reason.
class run_directory {
 public:
  explicit run_directory(const std::string& parent);
  run_directory(const run_directory&) = delete;
  run_directory& operator=(const run_directory&) = delete;
  ~run_directory();

  // A new file `name` open for writing (plus `extra_flags`, e.g. O_DIRECT), mode 0600.
  [[nodiscard]] unique_fd create_file(const std::string& name, int extra_flags = 0);
  // Opens a file this object created, read-only (plus `extra_flags`). Refuses any other name.
  [[nodiscard]] unique_fd open_created(const std::string& name, int extra_flags = 0) const;
  // Removes a file this object created (idempotent). Returns false, leaving it, when the name no
  // longer holds the inode created.
  bool remove_file(const std::string& name) noexcept;
  // Removes every file created, then the directory. Returns what could not be removed (empty
  // when everything was): files swapped under our names, a directory holding others' files.
  std::string remove_all() noexcept;
  void keep() { m_keep = true; }

  [[nodiscard]] const std::string& path() const { return m_path; }
  [[nodiscard]] std::vector<std::string> created() const;
  // Refuses a name that is not a plain file name (public for tests).
  static void check_name(const std::string& name);

 private:
  struct file_id {
    std::string name;
    dev_t dev = 0;
    ino_t ino = 0;
    unique_fd held;  // O_PATH: keeps the inode (and its number) ours until removal
  };
  [[nodiscard]] const file_id* find(const std::string& name) const;

  std::string m_path;
  unique_fd m_dir;
  std::vector<file_id> m_files;
  bool m_keep = false;
  bool m_removed = false;
};

// Creates `path`, which must not exist, reserves `size` bytes with fallocate, fills them with
// the data pattern of `seed`, writes them to the device and drops them from the page cache.
// `cancel` (may be null) is polled between 4 MiB chunks; when set, creation stops with an error.
void create_pattern_file(const std::string& path, std::uint64_t size, std::uint64_t seed,
                         const std::atomic<bool>* cancel);

// A file this run wrote with write_new_file: its path and the inode it was created as. Only
// write_new_file makes one, so drop_cached_pages cannot be handed any other file.
class created_file {
 public:
  [[nodiscard]] const std::string& path() const { return m_path; }

 private:
  friend created_file write_new_file(const std::string& path, std::span<const std::byte> data);
  friend bool drop_cached_pages(const created_file& f, int fd);
  created_file(std::string path, dev_t dev, ino_t ino)
      : m_path(std::move(path)), m_dev(dev), m_ino(ino) {}
  std::string m_path;
  dev_t m_dev = 0;
  ino_t m_ino = 0;
};

// Writes `data` as the new file `path` (O_CREAT|O_EXCL|O_NOFOLLOW: never an existing path, never
// through a symlink), onto the device (fdatasync) and out of the page cache, so that the first
// read of it goes to the device. Throws storage_error with the path and the reason.
created_file write_new_file(const std::string& path, std::span<const std::byte> data);

// Drops the page-cache pages of `f` through `fd`, a descriptor the caller opened on f.path() (after
// reading it: the pages are clean), so that the next read of the file goes to the device, as it
// does when a data set is larger than memory. Drops nothing and returns false when `fd` is not the
// file created (the path replaced since, or any other file): never another file's pages.
bool drop_cached_pages(const created_file& f, int fd);

// A data set of many sample files: sample i is root/dNNNNN/sNNNNNNNN.bin, files_per_dir to a
// directory, each its own pattern stream (sample_seed(seed, i)).
struct dataset_layout {
  std::uint64_t samples = 0;
  std::uint64_t sample_size = 0;
  std::uint64_t files_per_dir = 1;
  [[nodiscard]] std::string sample_path(const std::string& root, std::uint64_t i) const;
  [[nodiscard]] std::uint64_t total_bytes() const { return samples * sample_size; }
};
void create_dataset(const std::string& root, const dataset_layout& layout, std::uint64_t seed,
                    const std::atomic<bool>* cancel);

// "1.5 GiB" for messages.
[[nodiscard]] std::string format_gib(std::uint64_t bytes);

}  // namespace infrabench::kernels::storage
