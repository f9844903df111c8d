// The one writer of user-facing files: its decision table, and each kind of path written for real
// (a regular file, a new one, a FIFO, a symbolic link, a character device made with mknod when
// root; never /dev/null itself).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "infrabench/error.h"
#include "infrabench/output_file.h"

using namespace infrabench;
namespace fs = std::filesystem;

namespace {

class OutputFile : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() /
            ("ib_output_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override {
    ::chmod(m_dir.c_str(), 0755);
    fs::remove_all(m_dir);
  }
  [[nodiscard]] std::string path(const std::string& name) const { return (m_dir / name).string(); }
  [[nodiscard]] std::size_t entries() const {
    std::size_t n = 0;
    for (const auto& e : fs::directory_iterator(m_dir)) {
      (void)e;
      ++n;
    }
    return n;
  }
  fs::path m_dir;
};

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST(OutputDecision, EachKindOfPathHasOneWayOfBeingWritten) {
  std::string why;
  EXPECT_EQ(output_kind_for(file_type::missing, &why), output_kind::replace);
  EXPECT_EQ(output_kind_for(file_type::regular, &why), output_kind::replace);
  EXPECT_EQ(output_kind_for(file_type::char_device, &why), output_kind::write_through);
  EXPECT_EQ(output_kind_for(file_type::fifo, &why), output_kind::write_through);
  EXPECT_EQ(output_kind_for(file_type::socket, &why), output_kind::write_through);
  EXPECT_FALSE(output_kind_for(file_type::directory, &why));
  EXPECT_EQ(why, "is a directory");
  EXPECT_FALSE(output_kind_for(file_type::block_device, &why));
  EXPECT_NE(why.find("block device"), std::string::npos);
  EXPECT_FALSE(output_kind_for(file_type::other, &why));
}

TEST_F(OutputFile, RegularFileIsReplacedAtomicallyKeepingItsMode) {
  const auto p = path("r.json");
  write_output(p, "{\"a\":1}\n");
  ::chmod(p.c_str(), 0640);
  EXPECT_EQ(resolve_output(p).kind, output_kind::replace);
  EXPECT_TRUE(resolve_output(p).exists);
  write_output(p, "{\"a\":2}\n");
  EXPECT_EQ(slurp(p), "{\"a\":2}\n");
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(entries(), 1u);  // no temporaries left
}

TEST_F(OutputFile, NewFileGetsTheUsualModeLessTheUmask) {
  const auto p = path("new.json");
  const mode_t old = ::umask(022);
  write_output(p, "x");
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST_F(OutputFile, SymlinkIsFollowedAndStaysALink) {
  const auto target = path("target.json");
  write_output(target, "old");
  const auto link = path("link.json");
  fs::create_symlink("target.json", link);  // relative: resolved from the link's directory
  const auto t = resolve_output(link);
  EXPECT_EQ(t.kind, output_kind::replace);
  EXPECT_EQ(fs::path(t.target).filename(), "target.json");
  write_output(link, "new");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(target), "new");
  // A dangling link creates its target.
  const auto dangling = path("dangling.json");
  fs::create_symlink(path("created.json"), dangling);
  write_output(dangling, "made");
  EXPECT_TRUE(fs::is_symlink(dangling));
  EXPECT_EQ(slurp(path("created.json")), "made");
}

TEST_F(OutputFile, SymlinkLoopIsRefused) {
  fs::create_symlink(path("b"), path("a"));
  fs::create_symlink(path("a"), path("b"));
  try {
    (void)resolve_output(path("a"));
    FAIL() << "a symbolic link loop was accepted";
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("too many levels of symbolic links"), std::string::npos);
  }
}

// The kernel's protected_symlinks rule, applied whatever the sysctl says: in a sticky
// world-writable directory, a link owned by neither us nor the directory's owner is not followed.
TEST_F(OutputFile, ForeignSymlinkInAStickyWorldWritableDirectoryIsNotFollowed) {
  if (::geteuid() != 0) GTEST_SKIP() << "giving a link another owner (lchown) needs root";
  const auto victim = path("victim");
  write_output(victim, "secret");
  const auto sticky = path("tmp");
  fs::create_directory(sticky);
  ASSERT_EQ(::chmod(sticky.c_str(), 01777), 0);
  const auto link = sticky + "/report.json";
  fs::create_symlink(victim, link);
  ASSERT_EQ(::lchown(link.c_str(), 65534, 65534), 0);  // another user planted it
  try {
    check_output_path(link);
    ADD_FAILURE() << "a foreign link in a sticky directory was followed";
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("protected_symlinks"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("uid 65534"), std::string::npos) << e.what();
  }
  EXPECT_THROW(write_output(link, "overwritten"), user_error);
  EXPECT_EQ(slurp(victim), "secret");
  // Our own link there is followed; so is a foreign one where the directory is not sticky, or
  // one owned by the directory's owner.
  ASSERT_EQ(::lchown(link.c_str(), 0, 0), 0);
  EXPECT_NO_THROW(check_output_path(link));
  ASSERT_EQ(::lchown(link.c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chown(sticky.c_str(), 65534, 65534), 0);
  EXPECT_NO_THROW(check_output_path(link));
  ASSERT_EQ(::chown(sticky.c_str(), 0, 0), 0);
  ASSERT_EQ(::chmod(sticky.c_str(), 0777), 0);
  EXPECT_NO_THROW(check_output_path(link));
}

TEST_F(OutputFile, AnOutputThatIsAnInputOrAnotherOutputIsRefused) {
  const auto in = path("in.json"), out = path("out.json");
  write_output(in, "{}");
  const auto refused = [](const std::vector<std::string>& i, const std::vector<std::string>& o,
                          const std::string& words) {
    try {
      check_distinct_files(i, o);
      ADD_FAILURE() << "accepted: " << words;
    } catch (const user_error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  refused({in}, {in}, "is the same file as the input " + in);
  refused({in}, {m_dir.string() + "/./in.json"}, "the input");  // another spelling
  fs::create_symlink(in, path("link.json"));
  refused({in}, {path("link.json")}, "the input");  // through a link
  ASSERT_EQ(::link(in.c_str(), path("hard.json").c_str()), 0);
  refused({path("hard.json")}, {in}, "the input");                       // the same inode
  refused({}, {out, "", out}, "is the same file as the output " + out);  // not there yet
  refused({in}, {m_dir.string() + "//out.json", out}, "the output");
  EXPECT_NO_THROW(check_distinct_files({in, in}, {out, path("other.json"), ""}));
  // Outputs written in place may repeat: standard output, a FIFO.
  const auto fifo = path("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NO_THROW(check_distinct_files({in}, {"-", "-", fifo, fifo}));
}

TEST_F(OutputFile, FifoIsWrittenThroughNotReplaced) {
  const auto fifo = path("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(resolve_output(fifo).kind, output_kind::write_through);
  std::string received;
  std::thread reader([&] { received = slurp(fifo); });
  const std::string big(1 << 20, 'r');  // more than a pipe buffer: the writer must keep going
  write_output(fifo, big);
  reader.join();
  EXPECT_EQ(received, big);
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(entries(), 1u);
}

TEST_F(OutputFile, FifoWhoseReaderLeavesFailsWithoutKillingUs) {
  const auto fifo = path("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread reader([&] {
    const int fd = ::open(fifo.c_str(), O_RDONLY);
    char c;
    (void)::read(fd, &c, 1);
    ::close(fd);  // goes away after one byte: the writer gets EPIPE, not SIGPIPE
  });
  EXPECT_THROW(write_output(fifo, std::string(4 << 20, 'x')), output_error);
  reader.join();
}

TEST_F(OutputFile, CharacterDeviceStaysADevice) {
  if (::geteuid() != 0) GTEST_SKIP() << "mknod needs root";
  const auto dev = path("fakenull");
  ASSERT_EQ(::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);  // a null device of ours
  EXPECT_EQ(resolve_output(dev).kind, output_kind::write_through);
  check_output_path(dev);
  write_output(dev, "{\"report\":true}\n");
  struct stat st {};
  ASSERT_EQ(::lstat(dev.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(entries(), 1u);
}

TEST_F(OutputFile, RefusalsNameThePathAndTheReason) {
  const auto expect_refused = [](const std::string& p, const std::string& words) {
    try {
      check_output_path(p);
      ADD_FAILURE() << p << " was accepted";
    } catch (const user_error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(words), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  };
  expect_refused(m_dir.string(), "is a directory");
  expect_refused(path("missing/r.json"), "does not exist");
  expect_refused("", "empty");
  write_output(path("file"), "x");
  expect_refused(path("file/r.json"), "Not a directory");
  expect_refused("/proc/infrabench.json", "cannot create a file");  // even as root
  expect_refused("/dev/stdin", "standard input");
  if (::geteuid() != 0) {
    ::chmod(m_dir.c_str(), 0555);
    expect_refused(path("r.json"), "Permission denied");
  }
  if (::geteuid() == 0) {
    const auto blk = path("blk");
    ASSERT_EQ(::mknod(blk.c_str(), S_IFBLK | 0600, makedev(7, 200)), 0);
    expect_refused(blk, "block device");
  }
}

TEST_F(OutputFile, DescriptorsOfThisProcessAreWrittenInPlace) {
  const auto t = resolve_output("/dev/stdout");
  EXPECT_EQ(t.kind, output_kind::descriptor);
  EXPECT_EQ(t.fd, 1);
  EXPECT_EQ(resolve_output("-").kind, output_kind::standard_output);
  // An open descriptor on a file: written at the descriptor's offset, the file not replaced.
  const auto p = path("via_fd");
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "head\n", 5), 5);
  struct stat before {};
  ASSERT_EQ(::stat(p.c_str(), &before), 0);
  write_output("/proc/self/fd/" + std::to_string(fd), "report\n");
  write_output("/dev/fd/" + std::to_string(fd), "more\n");
  ::close(fd);
  struct stat after {};
  ASSERT_EQ(::stat(p.c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);
  EXPECT_EQ(slurp(p), "head\nreport\nmore\n");
  EXPECT_THROW((void)resolve_output("/dev/fd/987"), user_error);  // not open
}

TEST_F(OutputFile, FailedWriteLeavesThePreviousFileAndNoTemporaries) {
  const auto p = path("r.json");
  write_output(p, "previous\n");
  // RLIMIT_FSIZE makes any write past 1 KiB fail with EFBIG, as a full disk would with ENOSPC.
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  try {
    write_output(p, std::string(64 << 10, 'n'));
    ADD_FAILURE() << "a write past RLIMIT_FSIZE succeeded";
  } catch (const output_error& e) {
    EXPECT_NE(std::string(e.what()).find("File too large"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("intact"), std::string::npos) << e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(slurp(p), "previous\n");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(OutputFile, SaveElsewhereMakesANewFileInTheCurrentDirectory) {
  const auto cwd = fs::current_path();
  fs::current_path(m_dir);
  const auto saved = save_elsewhere("{\"kept\":true}\n");
  fs::current_path(cwd);
  ASSERT_TRUE(saved);
  EXPECT_EQ(fs::path(*saved).parent_path(), m_dir);
  EXPECT_EQ(slurp(*saved), "{\"kept\":true}\n");
}
