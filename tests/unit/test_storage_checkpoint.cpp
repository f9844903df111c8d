// Checkpoint save/restore (kernels/storage/checkpoint.h): shard planning, the job-figure
// arithmetic, the free-space refusal, the write guard (never an existing path, never outside the
// run's own directory, only its own files removed), the stamped pattern, and a shard written,
// read back, checked and removed on real files, also with a corrupted byte and on a full disk.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "storage/checkpoint.h"
#include "storage/data_pattern.h"
#include "storage/engine.h"
#include "storage/target.h"

namespace ks = infrabench::kernels::storage;
namespace fs = std::filesystem;

namespace {

std::string temp_parent() {
  const char* t = std::getenv("TMPDIR");
  return t != nullptr && *t != '\0' ? t : "/tmp";
}

bool engine_usable(const std::string& engine) {
  const int fd = open("/dev/null", O_RDONLY);
  bool ok = true;
  try {
    (void)ks::make_read_engine(engine, fd, ks::engine_options{});
  } catch (const ks::unsupported_error&) {
    ok = false;
  }
  close(fd);
  return ok;
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  return out;
}

}  // namespace

TEST(StorageCheckpoint, PresetsAreMlperfStorageSizes) {
  ASSERT_NE(ks::find_model_preset("llama3-8b"), nullptr);
  EXPECT_EQ(ks::find_model_preset("llama3-8b")->checkpoint_bytes, 105'000'000'000ull);
  EXPECT_EQ(ks::find_model_preset("llama3-70b")->checkpoint_bytes, 912'000'000'000ull);
  EXPECT_EQ(ks::find_model_preset("llama3-405b")->checkpoint_bytes, 5'290'000'000'000ull);
  EXPECT_EQ(ks::find_model_preset("llama3-1t")->checkpoint_bytes, 18'000'000'000'000ull);
  EXPECT_EQ(ks::find_model_preset("gpt-5"), nullptr);
}

TEST(StorageCheckpoint, ShardPlanCutsTheJobIntoWholeWritesAcrossRanks) {
  const std::uint64_t unit = 1 << 20;
  // 105 MB over 3 ranks x 2 files: 100 MiB-and-a-bit rounds to 100 units; 6 files of 16/17.
  std::uint64_t total = 0;
  std::vector<std::uint64_t> all;
  for (std::uint32_t r = 0; r < 3; ++r) {
    const ks::shard_plan p = ks::plan_shards(105'000'000, 3, r, 2, unit);
    EXPECT_EQ(p.job_bytes, 100 * unit);
    ASSERT_EQ(p.file_bytes.size(), 2u);
    for (auto b : p.file_bytes) {
      EXPECT_EQ(b % unit, 0u);
      all.push_back(b);
      total += b;
    }
  }
  EXPECT_EQ(total, 100 * unit);  // every unit in exactly one file
  const auto [lo, hi] = std::minmax_element(all.begin(), all.end());
  EXPECT_LE(*hi - *lo, unit);
  // Fewer units than files: every file still gets one.
  const ks::shard_plan tiny = ks::plan_shards(10, 4, 3, 2, 4096);
  EXPECT_EQ(tiny.job_bytes, 8u * 4096);
  EXPECT_EQ(tiny.rank_bytes(), 2u * 4096);
  // Nearest, not truncated: 2.6 units -> 3.
  EXPECT_EQ(ks::plan_shards(2600, 1, 0, 1, 1000).job_bytes, 3000u);
  EXPECT_THROW((void)ks::plan_shards(1 << 20, 0, 0, 1, unit), std::invalid_argument);
  EXPECT_THROW((void)ks::plan_shards(1 << 20, 2, 2, 1, unit), std::invalid_argument);
  EXPECT_THROW((void)ks::plan_shards(1 << 20, 2, 0, 0, unit), std::invalid_argument);
  EXPECT_THROW((void)ks::plan_shards(1 << 20, 2, 0, 1, 0), std::invalid_argument);
}

TEST(StorageCheckpoint, JobFigureIsTotalBytesOverTheSlowestRank) {
  const std::vector<ks::rank_times> ranks = {
      {1'000'000'000, 2.0, 1.0}, {1'000'000'000, 4.0, 0.5}, {2'000'000'000, 3.0, 2.0}};
  const ks::job_figures j = ks::job_figures_of(ranks);
  EXPECT_EQ(j.bytes, 4'000'000'000u);
  EXPECT_DOUBLE_EQ(j.save_s, 4.0);
  EXPECT_EQ(j.slowest_save, 1u);
  EXPECT_DOUBLE_EQ(j.write_gbps, 1.0);  // 4 GB / 4 s, not the mean of the ranks' rates
  EXPECT_DOUBLE_EQ(j.restore_s, 2.0);
  EXPECT_EQ(j.slowest_restore, 2u);
  EXPECT_DOUBLE_EQ(j.read_gbps, 2.0);
  EXPECT_THROW((void)ks::job_figures_of({}), std::invalid_argument);
  const std::vector<ks::rank_times> zero = {{1, 0.0, 1.0}};
  EXPECT_THROW((void)ks::job_figures_of(zero), std::invalid_argument);
}

TEST(StorageCheckpoint, FreeSpaceRefusalNamesTheSizeAndTheMargin) {
  const std::uint64_t gib = std::uint64_t{1} << 30;
  const ks::fs_space space{100 * gib, 20 * gib};
  // Default margin max(10%, 1 GiB) = 10 GiB: 10 GiB fits, 11 does not.
  EXPECT_EQ(ks::check_free_space("/x", space, 10 * gib), "");
  const std::string refused = ks::check_free_space("/x", space, 11 * gib);
  EXPECT_NE(refused.find("refusing to create 11.0 GiB"), std::string::npos) << refused;
  EXPECT_NE(refused.find("max(10%, 1 GiB)"), std::string::npos) << refused;
  // A margin asked for (--scratch-reserve): 0 lets a dedicated filesystem fill up.
  EXPECT_EQ(ks::check_free_space("/x", space, 20 * gib, 0), "");
  EXPECT_NE(ks::check_free_space("/x", space, 21 * gib, 0).find("more than is free"),
            std::string::npos);
  EXPECT_NE(ks::check_free_space("/x", space, 19 * gib, 2 * gib).find("the margin asked for"),
            std::string::npos);
}

TEST(StorageCheckpoint, GuardCreatesOnlyNewPlainNamesInItsOwnDirectory) {
  const std::string parent = temp_parent();
  ks::run_directory dir(parent);
  EXPECT_EQ(fs::path(dir.path()).parent_path(), fs::path(parent));
  EXPECT_EQ(fs::status(dir.path()).permissions() & fs::perms::all, fs::perms::owner_all);
  // Never outside the directory, never a non-plain name.
  for (const std::string bad : {"", ".", "..", "../escape", "a/b", "/etc/passwd"}) {
    EXPECT_THROW((void)dir.create_file(bad), ks::storage_error) << bad;
  }
  EXPECT_FALSE(fs::exists(fs::path(parent) / "escape"));
  // Never an existing path: a file, or a symlink (even one pointing at a file that exists).
  { (void)dir.create_file("a"); }
  EXPECT_THROW((void)dir.create_file("a"), ks::storage_error);
  const std::string victim = dir.path() + "/../infrabench-guard-victim";
  { std::ofstream(victim) << "keep me"; }
  ASSERT_EQ(symlink(victim.c_str(), (dir.path() + "/link").c_str()), 0);
  EXPECT_THROW((void)dir.create_file("link"), ks::storage_error);
  // Only files it created are opened back and removed.
  EXPECT_THROW((void)dir.open_created("link"), ks::storage_error);
  EXPECT_NO_THROW((void)dir.open_created("a"));
  // A file swapped in under a name it created is left alone.
  { (void)dir.create_file("b"); }
  ASSERT_EQ(unlink((dir.path() + "/b").c_str()), 0);
  { std::ofstream(dir.path() + "/b") << "someone else's"; }
  EXPECT_FALSE(dir.remove_file("b"));
  EXPECT_TRUE(fs::exists(dir.path() + "/b"));
  EXPECT_TRUE(dir.remove_file("a"));
  EXPECT_FALSE(fs::exists(dir.path() + "/a"));
  // remove_all: its own files go; the directory stays while it holds others' files (the link
  // and the swapped-in b), and says so.
  const std::string left = dir.remove_all();
  EXPECT_NE(left.find("b"), std::string::npos) << left;
  EXPECT_TRUE(fs::exists(dir.path()));
  std::ifstream in(victim);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "keep me");
  fs::remove_all(dir.path());
  fs::remove(victim);
}

TEST(StorageCheckpoint, GuardRemovesEverythingItMadeAndItsDirectory) {
  std::string path;
  {
    ks::run_directory dir(temp_parent());
    path = dir.path();
    (void)dir.create_file("x");
    (void)dir.create_file("y");
    EXPECT_EQ(entries(path).size(), 2u);
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_THROW(ks::run_directory("/nonexistent/dir"), ks::storage_error);
}

TEST(StorageCheckpoint, StampedPatternHasNoRepeatedBlockAndChecksEveryByte) {
  const ks::stamped_pattern p(42, 65536);
  std::vector<std::byte> a(262144), b(262144);
  p.fill(0, a);
  // Restamping a buffer made for another offset of the same phase gives the same bytes as a
  // full fill.
  p.fill(65536 * 7, b);
  p.restamp(0, b);
  EXPECT_EQ(a, b);
  EXPECT_FALSE(p.check(0, a).has_value());
  // No two 4 KiB blocks are equal (the template repeats every 64 KiB; the stamps do not).
  std::set<std::string> blocks;
  for (std::size_t i = 0; i < a.size(); i += 4096) {
    blocks.insert(std::string(reinterpret_cast<const char*>(a.data() + i), 4096));
  }
  EXPECT_EQ(blocks.size(), a.size() / 4096);
  // Another seed: other data.
  std::vector<std::byte> c(4096);
  ks::stamped_pattern(43, 65536).fill(0, c);
  EXPECT_NE(std::memcmp(a.data(), c.data(), 4096), 0);
  // Any changed byte is found, at its offset: in a stamp and in the template.
  for (std::size_t at : {std::size_t{4096 * 3}, std::size_t{4096 * 3 + 5}, std::size_t{70000}}) {
    auto d = a;
    d[at] ^= std::byte{0x10};
    const auto bad = p.check(0, d);
    ASSERT_TRUE(bad.has_value()) << at;
    EXPECT_EQ(bad->offset, at);
  }
  // Unaligned ranges check as well.
  EXPECT_FALSE(p.check(4093, std::span(a).subspan(4093, 9000)).has_value());
  EXPECT_THROW(ks::stamped_pattern(1, 0), std::invalid_argument);
}

namespace {

struct shard_case {
  std::string engine;
  std::uint32_t qd;
  bool direct;
};

void save_restore(const std::string& parent, const shard_case& k) {
  SCOPED_TRACE(k.engine + " qd=" + std::to_string(k.qd) + " direct=" + std::to_string(k.direct));
  ks::run_directory dir(parent);
  ks::checkpoint_options o;
  o.engine = k.engine;
  o.io.queue_depth = k.qd;
  o.io.block_size = 256 << 10;
  o.io.direct = k.direct;
  o.seed = 9;
  const std::vector<std::uint64_t> files = {3 << 20, 1 << 20};
  ks::checkpoint_shard shard(dir, files, o);
  const ks::save_result s = shard.save();
  EXPECT_GT(s.seconds, 0);
  EXPECT_GE(s.seconds, s.sync_seconds);
  EXPECT_EQ(s.write_latency.count(), 16u);
  EXPECT_EQ(entries(dir.path()).size(), 2u);
  const ks::cache_state c = shard.prepare_restore();
  EXPECT_EQ(c.pages, (4u << 20) / static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)));
  const ks::restore_result r = shard.restore();
  EXPECT_EQ(r.bytes, 4u << 20);
  EXPECT_EQ(r.verify_failures, 0u) << r.first_failure;
  EXPECT_GT(r.seconds, 0);
  shard.remove();
  EXPECT_TRUE(entries(dir.path()).empty());
}

}  // namespace

// Every engine that works here, buffered and O_DIRECT (where the filesystem allows it): the
// shard's files are written, read back with every byte checked, and removed.
TEST(StorageCheckpoint, ShardIsSavedRestoredVerifiedAndRemoved) {
  const std::string parent = temp_parent();
  const bool direct_ok = [&] {
    ks::run_directory probe(parent);
    try {
      (void)probe.create_file("p", O_DIRECT);
      return true;
    } catch (const ks::storage_error&) {
      return false;
    }
  }();
  int ran = 0;
  for (const auto& engine : ks::engine_names()) {
    if (!engine_usable(engine)) continue;
    for (bool direct : {false, true}) {
      if (direct && !direct_ok) continue;
      const std::uint32_t qd = ks::find_engine(engine)->max_queue_depth > 1 ? 4 : 1;
      save_restore(parent, {engine, qd, direct});
      ++ran;
    }
  }
  EXPECT_GT(ran, 0);
}

TEST(StorageCheckpoint, RestoreFindsAChangedByte) {
  ks::run_directory dir(temp_parent());
  ks::checkpoint_options o;
  o.io.block_size = 65536;
  ks::checkpoint_shard shard(dir, {1 << 20}, o);
  (void)shard.save();
  {
    // The shard file is this test's own: flip one byte in the middle.
    const int fd = open((dir.path() + "/" + ks::checkpoint_shard::file_name(0)).c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    unsigned char byte = 0;
    ASSERT_EQ(pread(fd, &byte, 1, 500'000), 1);
    byte ^= 0xff;
    ASSERT_EQ(pwrite(fd, &byte, 1, 500'000), 1);
    close(fd);
  }
  (void)shard.prepare_restore();
  const ks::restore_result r = shard.restore();
  EXPECT_EQ(r.verify_failures, 1u);
  EXPECT_NE(r.first_failure.find("offset 500000"), std::string::npos) << r.first_failure;
}

TEST(StorageCheckpoint, InterruptedSaveLeavesNothing) {
  ks::run_directory dir(temp_parent());
  std::atomic<bool> cancel{true};
  ks::checkpoint_options o;
  o.io.block_size = 65536;
  o.cancel = &cancel;
  ks::checkpoint_shard shard(dir, {1 << 20, 1 << 20}, o);
  try {
    (void)shard.save();
    FAIL() << "an interrupted save returned";
  } catch (const ks::storage_error& e) {
    EXPECT_NE(std::string(e.what()).find("interrupted"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(entries(dir.path()).empty());
}

// A full disk mid-write: a 4 MiB tmpfs, a 6 MiB shard. Needs root (mount); skipped otherwise.
TEST(StorageCheckpoint, FullDiskMidWriteFailsWithTheReasonAndLeavesNothing) {
  if (geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root";
  const std::string mnt = (fs::path(temp_parent()) / "ib-ckpt-full-XXXXXX").string();
  std::vector<char> buf(mnt.begin(), mnt.end());
  buf.push_back('\0');
  ASSERT_NE(mkdtemp(buf.data()), nullptr);
  const std::string where = buf.data();
  if (mount("tmpfs", where.c_str(), "tmpfs", 0, "size=4m") != 0) {
    rmdir(where.c_str());
    GTEST_SKIP() << "mount tmpfs: " << std::strerror(errno) << " (a container without it)";
  }
  for (const auto& engine : ks::engine_names()) {
    if (!engine_usable(engine)) continue;
    SCOPED_TRACE(engine);
    ks::run_directory dir(where);
    ks::checkpoint_options o;
    o.engine = engine;
    o.io.block_size = 65536;
    o.io.queue_depth = ks::find_engine(engine)->max_queue_depth > 1 ? 4 : 1;
    ks::checkpoint_shard shard(dir, {2 << 20, 4 << 20}, o);
    try {
      (void)shard.save();
      ADD_FAILURE() << "6 MiB fit on a 4 MiB tmpfs";
    } catch (const ks::storage_error& e) {
      const std::string what = e.what();
      EXPECT_TRUE(what.find("No space left on device") != std::string::npos ||
                  what.find("is the disk full?") != std::string::npos)
          << what;
      EXPECT_NE(what.find(dir.path()), std::string::npos) << what;
    }
    EXPECT_TRUE(entries(dir.path()).empty());
  }
  umount(where.c_str());
  rmdir(where.c_str());
}
