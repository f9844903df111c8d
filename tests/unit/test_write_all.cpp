// kernels/io/write_all: the one write loop the report writer, the storage scratch files and the
// training data sets share. Whole buffers arrive, at the file position or at an offset, through
// a non-blocking pipe that fills up, and errors come back as errno values.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "io/write_all.h"

namespace kio = infrabench::kernels::io;
namespace fs = std::filesystem;

namespace {

[[nodiscard]] std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + i % 23);
  return s;
}

[[nodiscard]] std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class WriteAll : public ::testing::Test {
 protected:
  void SetUp() override {
    m_path = fs::temp_directory_path() /
             ("ib_write_all_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove(m_path);
  }
  void TearDown() override { fs::remove(m_path); }
  fs::path m_path;
};

TEST_F(WriteAll, WritesTheWholeBufferAtTheFilePositionAndAtAnOffset) {
  const std::string head = pattern(3 << 20), tail = "tail";
  const int fd = ::open(m_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(kio::write_all(fd, head.data(), head.size()), 0);
  // pwrite at an offset past the end: the file grows, the position does not move.
  EXPECT_EQ(kio::write_all(fd, tail.data(), tail.size(), head.size() + 4), 0);
  EXPECT_EQ(::lseek(fd, 0, SEEK_CUR), static_cast<off_t>(head.size()));
  ::close(fd);
  const std::string got = read_all(m_path);
  ASSERT_EQ(got.size(), head.size() + 8);
  EXPECT_EQ(got.substr(0, head.size()), head);
  EXPECT_EQ(got.substr(head.size(), 4), std::string(4, '\0'));
  EXPECT_EQ(got.substr(head.size() + 4), tail);
}

TEST_F(WriteAll, WaitsForAFullNonBlockingPipeToDrain) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  ASSERT_EQ(::fcntl(p[1], F_SETFL, O_NONBLOCK), 0);
  // Several times the pipe's 64 KiB: the writer meets EAGAIN while the reader is behind.
  const std::string data = pattern(1 << 20);
  std::string got;
  std::thread reader([&] {
    char buf[4096];
    ssize_t n = 0;
    while ((n = ::read(p[0], buf, sizeof buf)) > 0) got.append(buf, static_cast<std::size_t>(n));
  });
  const int err = kio::write_all(p[1], data.data(), data.size());
  ::close(p[1]);
  reader.join();
  ::close(p[0]);
  EXPECT_EQ(err, 0);
  EXPECT_EQ(got, data);
}

TEST_F(WriteAll, ReturnsTheErrnoOfTheFailedWrite) {
  const std::string data = pattern(100);
  EXPECT_EQ(kio::write_all(-1, data.data(), data.size()), EBADF);
  const int full = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  if (full >= 0) {
    EXPECT_EQ(kio::write_all(full, data.data(), data.size()), ENOSPC);
    ::close(full);
  }
  const int ro = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(ro, 0);
  EXPECT_EQ(kio::write_all(ro, data.data(), data.size()), EBADF);
  ::close(ro);
  EXPECT_EQ(kio::write_all(-1, data.data(), 0), 0);  // nothing to write: nothing fails
}

}  // namespace
