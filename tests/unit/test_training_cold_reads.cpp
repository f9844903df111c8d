// The training data's cold reads (kernels/storage/target: write_new_file, drop_cached_pages): a
// file this run wrote is on the device and out of the page cache, its pages are dropped again
// after a read, and the drop refuses any descriptor that is not the file created, so no other
// file's pages are ever dropped.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <linux/magic.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "storage/target.h"

namespace ks = infrabench::kernels::storage;
namespace fs = std::filesystem;

namespace {

constexpr std::size_t file_bytes = 64 * 4096;

// Pages of `path` in the page cache now (mincore on a mapping, which faults nothing in).
std::size_t resident_pages(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  void* p = ::mmap(nullptr, file_bytes, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return 0;
  std::vector<unsigned char> in(file_bytes / 4096);
  std::size_t n = 0;
  if (::mincore(p, file_bytes, in.data()) == 0) {
    for (unsigned char c : in) n += c & 1u;
  }
  ::munmap(p, file_bytes);
  return n;
}

// Reads the whole file through `fd` (buffered: its pages enter the page cache).
void read_all(int fd) {
  std::vector<char> buf(file_bytes);
  std::size_t done = 0;
  while (done < file_bytes) {
    const ssize_t n = ::pread(fd, buf.data() + done, file_bytes - done, static_cast<off_t>(done));
    ASSERT_GT(n, 0);
    done += static_cast<std::size_t>(n);
  }
}

class ColdReads : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("ib-cold-" + std::to_string(::getpid()));
    fs::create_directories(m_dir);
    struct statfs sf {};
    // tmpfs keeps files only in the page cache: there is no device to drop them to.
    if (::statfs(m_dir.c_str(), &sf) == 0 && sf.f_type == TMPFS_MAGIC) {
      GTEST_SKIP() << m_dir << " is tmpfs: pages cannot be dropped there";
    }
  }
  void TearDown() override { fs::remove_all(m_dir); }
  [[nodiscard]] std::string path(const char* name) const { return (m_dir / name).string(); }
  fs::path m_dir;
  std::vector<std::byte> m_data = std::vector<std::byte>(file_bytes, std::byte{0x5a});
};

}  // namespace

TEST_F(ColdReads, AFileWeWroteIsReadFromTheDeviceEveryTime) {
  const ks::created_file f = ks::write_new_file(path("a.jpg"), m_data);
  EXPECT_EQ(f.path(), path("a.jpg"));
  EXPECT_EQ(resident_pages(f.path()), 0u);  // written through and dropped
  const int fd = ::open(f.path().c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  read_all(fd);
  EXPECT_GT(resident_pages(f.path()), 0u);  // a buffered read caches it ...
  EXPECT_TRUE(ks::drop_cached_pages(f, fd));
  EXPECT_EQ(resident_pages(f.path()), 0u);  // ... and the drop sends the next read to the device
  ::close(fd);
}

TEST_F(ColdReads, TheDropRefusesAFileWeDidNotCreate) {
  const ks::created_file f = ks::write_new_file(path("ours.jpg"), m_data);
  {
    std::ofstream other(path("theirs.jpg"), std::ios::binary);
    other.write(reinterpret_cast<const char*>(m_data.data()),
                static_cast<std::streamsize>(file_bytes));
  }
  // Another file's descriptor: refused, its pages left where they are.
  const int theirs = ::open(path("theirs.jpg").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(theirs, 0);
  ::fsync(theirs);
  read_all(theirs);
  const std::size_t cached = resident_pages(path("theirs.jpg"));
  ASSERT_GT(cached, 0u);
  EXPECT_FALSE(ks::drop_cached_pages(f, theirs));
  EXPECT_EQ(resident_pages(path("theirs.jpg")), cached);
  ::close(theirs);
  // Our path, replaced by another file since: what the path holds now is not ours.
  fs::rename(path("theirs.jpg"), path("ours.jpg"));
  const int now = ::open(f.path().c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(now, 0);
  EXPECT_FALSE(ks::drop_cached_pages(f, now));
  EXPECT_EQ(resident_pages(f.path()), cached);
  ::close(now);
}

TEST_F(ColdReads, NeverWritesOverAnExistingPath) {
  { std::ofstream(path("there.jpg")) << "x"; }
  EXPECT_THROW((void)ks::write_new_file(path("there.jpg"), m_data), ks::storage_error);
  EXPECT_EQ(fs::file_size(path("there.jpg")), 1u);
}
