// Targets, scratch data and the read engines on real files: safety rules (read-only opens, no
// write to an existing path, free-space margin, cleanup), byte accounting, verification that can
// fail, and every engine compiled in reading the data back byte for byte.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "storage/data_pattern.h"
#include "storage/engine.h"
#include "storage/io_plan.h"
#include "storage/target.h"

namespace ks = infrabench::kernels::storage;
namespace fs = std::filesystem;

namespace {

std::string temp_parent() {
  const char* t = std::getenv("TMPDIR");
  return t != nullptr && *t != '\0' ? t : "/tmp";
}

// O_DIRECT on this directory's filesystem? (tmpfs before Linux 6.6 refuses it.)
bool direct_works(const std::string& file) {
  const int fd = open(file.c_str(), O_RDONLY | O_DIRECT);
  if (fd < 0) return false;
  close(fd);
  return true;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class StorageIo : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = std::make_unique<ks::scratch_dir>(temp_parent());
    m_file = m_dir->path() + "/data";
    ks::create_pattern_file(m_file, m_size, m_seed, nullptr);
  }
  std::unique_ptr<ks::scratch_dir> m_dir;
  std::string m_file;
  std::uint64_t m_size = std::uint64_t{4} << 20;
  std::uint64_t m_seed = 0xabcdef;
};

}  // namespace

TEST_F(StorageIo, ScratchFileHoldsThePattern) {
  const auto info = ks::inspect_target(m_file);
  EXPECT_EQ(info.kind, ks::target_kind::regular_file);
  EXPECT_EQ(info.size_bytes, m_size);
  EXPECT_GT(info.direct_align, 0u);
  const std::string bytes = read_all(m_file);
  ASSERT_EQ(bytes.size(), m_size);
  EXPECT_FALSE(ks::check_pattern(m_seed, 0, std::as_bytes(std::span(bytes.data(), bytes.size()))));
  struct stat st {};
  ASSERT_EQ(stat(m_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(StorageIo, ExistingPathsAreNeverOpenedForWriting) {
  // Creating scratch data over an existing file, or through a symlink to one, is refused and
  // leaves the file as it was.
  const std::string before = read_all(m_file);
  EXPECT_THROW(ks::create_pattern_file(m_file, 4096, 1, nullptr), ks::storage_error);
  const std::string link = m_dir->path() + "/link";
  ASSERT_EQ(symlink(m_file.c_str(), link.c_str()), 0);
  EXPECT_THROW(ks::create_pattern_file(link, 4096, 1, nullptr), ks::storage_error);
  EXPECT_EQ(read_all(m_file), before);
  // Targets are opened read-only.
  const ks::unique_fd fd = ks::open_read_only(m_file, false);
  EXPECT_EQ(fcntl(fd.get(), F_GETFL) & O_ACCMODE, O_RDONLY);
  char c = 'x';
  EXPECT_LT(write(fd.get(), &c, 1), 0);
}

TEST_F(StorageIo, NewFileAlignmentIsKnownBeforeAnyDataIsWritten) {
  // storage/read refuses a block size O_DIRECT cannot use from this, before writing scratch data:
  // it must be what the scratch file itself reports, and leave nothing behind.
  const auto probe = ks::inspect_new_file(m_dir->path());
  const auto file = ks::inspect_target(m_file);
  EXPECT_EQ(probe.path, m_dir->path());
  EXPECT_EQ(probe.kind, ks::target_kind::regular_file);
  EXPECT_EQ(probe.size_bytes, 0u);
  EXPECT_EQ(probe.direct_align, file.direct_align);
  EXPECT_EQ(probe.align_source, file.align_source);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(m_dir->path()))
    left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"data"});
  // The probe is only ever a new file: an existing path (here a symlink to the data) is refused
  // and left as it was.
  const std::string before = read_all(m_file);
  const std::string link = m_dir->path() + "/align-probe";
  ASSERT_EQ(symlink(m_file.c_str(), link.c_str()), 0);
  EXPECT_THROW((void)ks::inspect_new_file(m_dir->path()), ks::storage_error);
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read_all(m_file), before);
}

TEST_F(StorageIo, BadTargetsAreRefusedWithTheReason) {
  try {
    (void)ks::inspect_target(m_dir->path() + "/missing");
    FAIL() << "no error for a missing path";
  } catch (const ks::storage_error& e) {
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
  try {
    (void)ks::inspect_target("/dev/null");
    FAIL() << "a character device was accepted";
  } catch (const ks::storage_error& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ks::inspect_target(m_dir->path()).kind, ks::target_kind::directory);
  // procfs refuses O_DIRECT: the message says so and suggests buffered reads.
  try {
    (void)ks::open_read_only("/proc/self/status", true);
    FAIL() << "O_DIRECT on procfs was accepted";
  } catch (const ks::storage_error& e) {
    EXPECT_NE(std::string(e.what()).find("refuses O_DIRECT"), std::string::npos) << e.what();
  }
}

TEST(StorageTarget, FreeSpaceMarginIsTenPercentOrOneGiB) {
  constexpr std::uint64_t gib = std::uint64_t{1} << 30;
  EXPECT_EQ(ks::free_space_margin(5 * gib), gib);
  EXPECT_EQ(ks::free_space_margin(100 * gib), 10 * gib);
  // 100 GiB filesystem, 30 GiB free: 20 GiB fits (10 left), 21 GiB does not (9 < 10).
  const ks::fs_space s{100 * gib, 30 * gib};
  EXPECT_EQ(ks::check_free_space("/x", s, 20 * gib), "");
  const std::string refusal = ks::check_free_space("/x", s, 21 * gib);
  EXPECT_NE(refusal.find("refusing"), std::string::npos);
  EXPECT_NE(refusal.find("/x"), std::string::npos);
  EXPECT_NE(ks::check_free_space("/x", s, 40 * gib).find("more than is free"), std::string::npos);
  // The real filesystem: its free space plus one byte never fits.
  const auto real = ks::filesystem_space(temp_parent());
  EXPECT_GT(real.total, 0u);
  EXPECT_NE(ks::check_free_space(temp_parent(), real, real.available + 1), "");
}

TEST(StorageTarget, ScratchDirIsRemovedUnlessKept) {
  std::string path;
  {
    ks::scratch_dir d(temp_parent());
    path = d.path();
    EXPECT_NE(path.find("infrabench-scratch-"), std::string::npos);
    ks::create_pattern_file(path + "/f", 10000, 1, nullptr);
    EXPECT_TRUE(fs::exists(path + "/f"));
  }
  EXPECT_FALSE(fs::exists(path));
  {
    ks::scratch_dir d(temp_parent());
    path = d.path();
    d.keep();
  }
  EXPECT_TRUE(fs::exists(path));
  fs::remove_all(path);
}

TEST(StorageTarget, CreationStopsWhenCancelled) {
  ks::scratch_dir d(temp_parent());
  std::atomic<bool> cancel{true};
  EXPECT_THROW(ks::create_pattern_file(d.path() + "/f", 64 << 20, 1, &cancel), ks::storage_error);
}

TEST(StorageTarget, MountPointsComeFromMountinfo) {
  struct stat st {};
  ASSERT_EQ(stat("/proc", &st), 0);
  const auto mounts = ks::mount_points_of(st.st_dev);
  EXPECT_NE(std::find(mounts.begin(), mounts.end(), "/proc"), mounts.end());
}

TEST(StorageTarget, DatasetFilesHoldTheirOwnPattern) {
  ks::scratch_dir d(temp_parent());
  ks::dataset_layout layout{10, 5000, 4};
  ks::create_dataset(d.path(), layout, 77, nullptr);
  for (std::uint64_t i = 0; i < layout.samples; ++i) {
    const std::string bytes = read_all(layout.sample_path(d.path(), i));
    ASSERT_EQ(bytes.size(), 5000u);
    EXPECT_FALSE(ks::check_pattern(ks::sample_seed(77, i), 0,
                                   std::as_bytes(std::span(bytes.data(), bytes.size()))));
  }
  EXPECT_TRUE(fs::exists(d.path() + "/d00002/s00000009.bin"));
}

// Every engine compiled in, sequential and random, buffered and (where the filesystem allows)
// O_DIRECT, several queue depths: every byte read matches, and the counts add up.
TEST_F(StorageIo, EnginesReadBackEveryByteAndCountExactly) {
  const bool direct_ok = direct_works(m_file);
  int ran = 0;
  for (const auto& engine : ks::engine_names()) {
    for (bool direct : {false, true}) {
      if (direct && !direct_ok) continue;
      for (std::uint32_t qd : {1u, 4u, 32u}) {
        if (engine == "psync" && qd > 1) continue;
        for (auto pattern : {ks::access_pattern::sequential, ks::access_pattern::random}) {
          SCOPED_TRACE(engine + " direct=" + std::to_string(direct) + " qd=" + std::to_string(qd));
          const std::uint64_t bs = 16384;
          const ks::unique_fd fd = ks::open_read_only(m_file, direct);
          ks::engine_options o;
          o.queue_depth = qd;
          o.block_size = bs;
          o.direct = direct;
          o.verify = true;
          o.verify_seed = m_seed;
          std::unique_ptr<ks::read_engine> e;
          try {
            e = ks::make_read_engine(engine, fd.get(), o);
          } catch (const ks::unsupported_error& err) {
            std::cout << "[ note ] " << engine << " unavailable here: " << err.what() << "\n";
            continue;  // e.g. io_uring compiled in but blocked; the other engines still run
          }
          ks::io_plan plan(pattern, {0, m_size / bs}, bs, 3);
          ks::latency_histogram hist;
          const std::uint64_t per_call = 100, calls = 3;
          for (std::uint64_t c = 0; c < calls; ++c) e->run(plan, per_call, hist);
          const auto& k = e->counters();
          // Reads that completed beyond a call's share are credited to the next call.
          EXPECT_GE(k.ios, per_call * calls);
          EXPECT_LT(k.ios, per_call * calls + qd);
          EXPECT_EQ(k.bytes, k.ios * bs);
          EXPECT_EQ(hist.count(), k.ios);
          EXPECT_EQ(k.verify_failures, 0u) << k.first_verify_failure;
          EXPECT_GT(k.busy_s, 0);
          EXPECT_GT(k.mean_queue_depth(), 0);
          EXPECT_LE(k.mean_queue_depth(), qd + 1e-9);
          EXPECT_GT(hist.percentile(50), 0);
          e->drain();
          ++ran;
        }
      }
    }
  }
  EXPECT_GT(ran, 0);
}

TEST_F(StorageIo, VerifyCatchesAChangedByte) {
  {
    // The scratch file is ours: flip one byte in the middle of block 3.
    const int fd = open(m_file.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    const unsigned char junk =
        0x5a ^ static_cast<unsigned char>(ks::pattern_word(m_seed, (3 * 4096 + 100) / 8) >> 32);
    ASSERT_EQ(pwrite(fd, &junk, 1, 3 * 4096 + 100), 1);
    close(fd);
  }
  for (const auto& engine : ks::engine_names()) {
    const ks::unique_fd fd = ks::open_read_only(m_file, false);
    ks::engine_options o;
    o.block_size = 4096;
    o.verify = true;
    o.verify_seed = m_seed;
    auto e = ks::make_read_engine(engine, fd.get(), o);
    ks::io_plan plan(ks::access_pattern::sequential, {0, m_size / 4096}, 4096, 1);
    ks::latency_histogram hist;
    e->run(plan, m_size / 4096, hist);
    EXPECT_EQ(e->counters().verify_failures, 1u) << engine;
    EXPECT_NE(e->counters().first_verify_failure.find(std::to_string(3 * 4096 + 100)),
              std::string::npos)
        << e->counters().first_verify_failure;
  }
}

TEST_F(StorageIo, MisalignedDirectReadsFailWithTheAlignmentRule) {
  if (!direct_works(m_file)) GTEST_SKIP() << "O_DIRECT not supported in " << temp_parent();
  const auto info = ks::inspect_target(m_file);
  if (info.fs_type == "tmpfs") GTEST_SKIP() << "tmpfs accepts any O_DIRECT alignment";
  const ks::unique_fd fd = ks::open_read_only(m_file, true);
  ks::engine_options o;
  o.block_size = 1000;
  o.direct = true;
  for (const auto& engine : ks::engine_names()) {
    auto e = ks::make_read_engine(engine, fd.get(), o);
    ks::io_plan plan(ks::access_pattern::sequential, {0, 100}, 1000, 1);
    ks::latency_histogram hist;
    try {
      e->run(plan, 10, hist);
      FAIL() << engine << ": a 1000-byte O_DIRECT read succeeded";
    } catch (const ks::storage_error& err) {
      EXPECT_NE(std::string(err.what()).find("logical block size"), std::string::npos)
          << err.what();
    }
  }
}

TEST(StorageEngine, OptionsAnEngineCannotHonourAreRefused) {
  ks::engine_options o;
  o.queue_depth = 8;
  EXPECT_THROW((void)ks::make_read_engine("psync", 0, o), ks::unsupported_error);
  o.queue_depth = 1;
  o.engine_specific.set("sqpoll", 1);
  EXPECT_THROW((void)ks::make_read_engine("psync", 0, o), ks::unsupported_error);
  EXPECT_THROW((void)ks::make_read_engine("aio", 0, ks::engine_options{}), std::invalid_argument);
  if (ks::engine_compiled_in("io_uring")) {
    ks::engine_options p;
    p.engine_specific.set("iopoll", 1);
    p.direct = false;
    EXPECT_THROW((void)ks::make_read_engine("io_uring", 0, p), ks::unsupported_error);
  } else {
    EXPECT_THROW((void)ks::make_read_engine("io_uring", 0, ks::engine_options{}),
                 ks::unsupported_error);
  }
}
