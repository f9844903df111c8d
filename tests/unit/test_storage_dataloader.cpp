// The data-loader pipeline on a small data set: every sample of every batch arrives intact
// (verified), epochs count steps and bytes exactly, utilisation follows the compute time, and a
// missing sample file fails the epoch with its path instead of hanging.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "storage/dataloader.h"
#include "storage/engine.h"
#include "storage/target.h"

namespace ks = infrabench::kernels::storage;

namespace {

std::string temp_parent() {
  const char* t = std::getenv("TMPDIR");
  return t != nullptr && *t != '\0' ? t : "/tmp";
}

ks::dataloader_options options(const std::string& root, const ks::dataset_layout& layout,
                               const std::string& engine) {
  ks::dataloader_options o;
  o.root = root;
  o.layout = layout;
  o.seed = 11;
  o.engine = engine;
  o.batch_size = 8;
  o.prefetch = 2;
  o.readers = 2;
  o.reader_depth = 4;
  o.max_read = 4096;  // several reads per sample: pieces complete out of order
  o.direct = false;
  o.verify = true;
  return o;
}

}  // namespace

TEST(StorageDataloader, EveryEngineDeliversVerifiedBatches) {
  ks::scratch_dir dir(temp_parent());
  const ks::dataset_layout layout{70, 10000, 16};  // 70 samples: 8 full batches, 6 dropped
  ks::create_dataset(dir.path(), layout, 11, nullptr);
  for (const auto& engine : ks::engine_names()) {
    SCOPED_TRACE(engine);
    std::unique_ptr<ks::dataloader> dl;
    try {
      dl = std::make_unique<ks::dataloader>(options(dir.path(), layout, engine));
    } catch (const ks::unsupported_error& e) {
      std::cout << "[ note ] " << engine << " unavailable here: " << e.what() << "\n";
      continue;
    }
    EXPECT_EQ(dl->steps_per_epoch(), 8u);
    for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
      const auto r = dl->run_epoch(0.0005, epoch);
      EXPECT_EQ(r.steps, 8u);
      EXPECT_EQ(r.window_samples, 7u * 8);
      EXPECT_EQ(r.window_bytes, 7u * 8 * 10000);
      EXPECT_EQ(r.verify_failures, 0u) << r.first_verify_failure;
      EXPECT_GT(r.window_s, 0);
      EXPECT_GE(r.compute_s, r.nominal_compute_s * 0.999);
      EXPECT_LE(r.compute_s, r.window_s * 1.000001);
      EXPECT_GE(r.utilisation(), 0);
      EXPECT_LE(r.utilisation(), 1.000001);
      // Every instant of the window is either compute or a stall: AU = compute / (compute +
      // stall) exactly, whatever the machine's speed.
      EXPECT_NEAR(r.compute_s + r.stall_s, r.window_s, 1e-6);
    }
    // No compute: the accelerator only waits, AU is zero.
    EXPECT_EQ(dl->run_epoch(0, 9).compute_s, 0);
    // A partial epoch (6 of 8 steps) with its first 3 steps left out of the window; the next
    // full epoch still reads everything (the stopped one left nothing behind).
    const auto part = dl->run_epoch(0.0005, 10, 6, 3);
    EXPECT_EQ(part.steps, 6u);
    EXPECT_EQ(part.window_samples, 3u * 8);
    const auto full = dl->run_epoch(0.0005, 11);
    EXPECT_EQ(full.steps, 8u);
    EXPECT_EQ(full.verify_failures, 0u) << full.first_verify_failure;
  }
}

TEST(StorageDataloader, UtilisationIsHighWhenComputeDominates) {
  // 8 samples of 10 kB per batch from the page cache take microseconds to read; a 20 ms step
  // leaves the accelerator waiting only if the reader thread is starved for most of a step.
  ks::scratch_dir dir(temp_parent());
  const ks::dataset_layout layout{48, 10000, 16};
  ks::create_dataset(dir.path(), layout, 11, nullptr);
  auto o = options(dir.path(), layout, "psync");
  o.prefetch = 4;
  ks::dataloader dl(o);
  const auto r = dl.run_epoch(0.02, 1);
  EXPECT_EQ(r.steps, 6u);
  EXPECT_GT(r.utilisation(), 0.5) << "stall " << r.stall_s << " s of " << r.window_s << " s";
  EXPECT_GE(r.compute_s, 5 * 0.02 * 0.999);
  EXPECT_EQ(dl.run_epoch(0, 2).utilisation(), 0);
}

TEST(StorageDataloader, VerifyFindsACorruptSample) {
  ks::scratch_dir dir(temp_parent());
  const ks::dataset_layout layout{16, 5000, 16};
  ks::create_dataset(dir.path(), layout, 11, nullptr);
  // Rewrite sample 5 with another data set's content.
  const std::string victim = layout.sample_path(dir.path(), 5);
  std::filesystem::remove(victim);
  ks::create_pattern_file(victim, 5000, 12345, nullptr);
  ks::dataloader dl(options(dir.path(), layout, "psync"));
  const auto r = dl.run_epoch(0, 1);
  EXPECT_EQ(r.verify_failures, 1u);
  EXPECT_NE(r.first_verify_failure.find("s00000005.bin"), std::string::npos)
      << r.first_verify_failure;
}

TEST(StorageDataloader, AMissingSampleFailsTheEpoch) {
  ks::scratch_dir dir(temp_parent());
  const ks::dataset_layout layout{32, 3000, 8};
  ks::create_dataset(dir.path(), layout, 11, nullptr);
  std::filesystem::remove(layout.sample_path(dir.path(), 17));
  for (const auto& engine : ks::engine_names()) {
    std::unique_ptr<ks::dataloader> dl;
    try {
      dl = std::make_unique<ks::dataloader>(options(dir.path(), layout, engine));
    } catch (const ks::unsupported_error&) {
      continue;
    }
    try {
      (void)dl->run_epoch(0, 1);
      FAIL() << engine << ": the epoch ignored a missing sample";
    } catch (const ks::storage_error& e) {
      EXPECT_NE(std::string(e.what()).find("s00000017.bin"), std::string::npos) << e.what();
    }
  }
}

TEST(StorageDataloader, TooFewSamplesForTwoBatchesIsRefused) {
  ks::scratch_dir dir(temp_parent());
  const ks::dataset_layout layout{10, 100, 8};
  ks::create_dataset(dir.path(), layout, 11, nullptr);
  auto o = options(dir.path(), layout, "psync");
  EXPECT_THROW(ks::dataloader dl(o), ks::storage_error);
}
