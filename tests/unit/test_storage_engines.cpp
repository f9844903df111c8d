// The engine table (kernels/storage/engine.h): every engine describes itself, refusals are
// generated from the table, the write engines write exactly the bytes asked for, and the simple
// public read API reads exactly the range asked for.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "storage/data_pattern.h"
#include "storage/engine.h"
#include "storage/latency_histogram.h"
#include "storage/target.h"

namespace ks = infrabench::kernels::storage;

namespace {

std::string temp_parent() {
  const char* t = std::getenv("TMPDIR");
  return t != nullptr && *t != '\0' ? t : "/tmp";
}

// The io_uring engine may be compiled in and still refused by this kernel or container.
bool usable(const std::string& engine) {
  const int fd = open("/dev/null", O_RDONLY);
  ks::engine_options o;
  bool ok = true;
  try {
    (void)ks::make_read_engine(engine, fd, o);
  } catch (const ks::unsupported_error& e) {
    std::cout << "[ note ] " << engine << " unavailable here: " << e.what() << "\n";
    ok = false;
  }
  close(fd);
  return ok;
}

}  // namespace

TEST(StorageEngineTable, EveryEngineDescribesItselfAndItsOptions) {
  std::set<std::string> names;
  for (const ks::engine_ops* e : ks::engine_table()) {
    SCOPED_TRACE(std::string(e->name));
    EXPECT_TRUE(names.insert(std::string(e->name)).second) << "duplicate engine name";
    EXPECT_FALSE(e->description.empty());
    EXPECT_GE(e->max_queue_depth, 1u);
    EXPECT_FALSE(e->queue_depth_limit.empty());
    EXPECT_EQ(ks::find_engine(e->name), e);
    for (const ks::option_spec& o : e->options) {
      EXPECT_FALSE(o.name.empty());
      EXPECT_FALSE(o.description.empty());
      EXPECT_LE(o.min, o.default_value);
      EXPECT_LE(o.default_value, o.max);
      EXPECT_EQ(e->find_option(o.name), &o);
    }
    if (e->compiled_in()) {
      EXPECT_NE(e->make_reader, nullptr);
      EXPECT_NE(e->make_writer, nullptr);
      EXPECT_NE(e->make_async_reader, nullptr);
    } else {
      EXPECT_FALSE(ks::engine_compiled_in(e->name));
    }
  }
  EXPECT_TRUE(names.count("psync"));
  EXPECT_TRUE(names.count("io_uring"));  // known by name even when not compiled in
  EXPECT_TRUE(ks::engine_compiled_in("psync"));
  EXPECT_EQ(ks::find_engine("aio"), nullptr);
  // Help text lists each engine and each of its options.
  const std::string help = ks::describe_engines();
  for (const ks::engine_ops* e : ks::engine_table()) {
    EXPECT_NE(help.find(std::string(e->name) + ": "), std::string::npos) << help;
    for (const ks::option_spec& o : e->options) {
      EXPECT_NE(help.find("  " + std::string(o.name) + " ("), std::string::npos) << help;
    }
  }
}

TEST(StorageEngineTable, RefusalsAreGeneratedFromTheTable) {
  const ks::engine_ops& psync = *ks::find_engine("psync");
  ks::engine_options o;
  EXPECT_EQ(ks::validate_engine_options(psync, o), "");
  // Its queue-depth limit, with the table's reason.
  o.queue_depth = 8;
  const std::string qd = ks::validate_engine_options(psync, o);
  EXPECT_NE(qd.find("at most 1"), std::string::npos) << qd;
  EXPECT_NE(qd.find(std::string(psync.queue_depth_limit)), std::string::npos) << qd;
  // Another engine's option at its default is no request; set, it is refused naming its owner.
  o.queue_depth = 1;
  o.engine_specific.set("sqpoll", 0);
  EXPECT_EQ(ks::validate_engine_options(psync, o), "");
  o.engine_specific.set("sqpoll", 1);
  const std::string foreign = ks::validate_engine_options(psync, o);
  EXPECT_NE(foreign.find("sqpoll=1 is an option of io_uring, not of psync"), std::string::npos)
      << foreign;
  EXPECT_NE(foreign.find("psync's options: none"), std::string::npos) << foreign;
  // An option no engine has.
  ks::engine_options bogus;
  bogus.engine_specific.set("turbo", 1);
  EXPECT_NE(ks::validate_engine_options(psync, bogus).find("an option of no engine"),
            std::string::npos);

  const ks::engine_ops& uring = *ks::find_engine("io_uring");
  ks::engine_options u;
  if (!uring.compiled_in()) {
    EXPECT_NE(ks::validate_engine_options(uring, u).find("not compiled in"), std::string::npos);
    EXPECT_THROW((void)ks::make_read_engine("io_uring", 0, u), ks::unsupported_error);
    return;
  }
  EXPECT_EQ(ks::validate_engine_options(uring, u), "");
  u.engine_specific.set("fixed_buffers", 2);  // a switch
  EXPECT_NE(ks::validate_engine_options(uring, u).find("outside [0, 1]"), std::string::npos);
  u.engine_specific.set("fixed_buffers", 0);
  u.engine_specific.set("iopoll", 1);  // its own cross-option rule
  EXPECT_NE(ks::validate_engine_options(uring, u).find("IOPOLL needs O_DIRECT"), std::string::npos);
  u.queue_depth = uring.max_queue_depth + 1;
  EXPECT_NE(ks::validate_engine_options(uring, u).find("at most"), std::string::npos);
}

TEST(StorageEngineTable, FactoriesRefuseWhatValidationRefuses) {
  ks::engine_options o;
  o.queue_depth = 2;
  EXPECT_THROW((void)ks::make_write_engine("psync", 0, o), ks::unsupported_error);
  EXPECT_THROW((void)ks::make_write_engine("aio", 0, ks::engine_options{}), std::invalid_argument);
  ks::engine_options zero;
  zero.block_size = 0;
  EXPECT_THROW((void)ks::make_write_engine("psync", 0, zero), std::invalid_argument);
}

// Every engine that works here writes a new file byte for byte, with any queue depth and a last
// write shorter than the others; each write's latency is recorded once.
TEST(StorageEngineTable, WriteEnginesWriteExactlyTheBytesAsked) {
  ks::run_directory dir(temp_parent());
  int ran = 0;
  for (const auto& engine : ks::engine_names()) {
    if (!usable(engine)) continue;
    for (std::uint32_t qd : {1u, 4u}) {
      if (qd > ks::find_engine(engine)->max_queue_depth) continue;
      SCOPED_TRACE(engine + " qd=" + std::to_string(qd));
      const std::string name = engine + "-" + std::to_string(qd);
      const std::uint64_t size = 1'000'000;  // 15 writes of 64 KiB and a short one
      const std::uint64_t seed = 77 + qd;
      {
        const ks::unique_fd fd = dir.create_file(name);
        ks::engine_options o;
        o.queue_depth = qd;
        o.block_size = 65536;
        auto w = ks::make_write_engine(engine, fd.get(), o);
        ks::latency_histogram hist;
        std::uint64_t reused = 0;
        w->write_file(
            size,
            [&](std::uint64_t off, std::span<std::byte> out, bool was_used) {
              reused += was_used ? 1 : 0;
              ks::fill_pattern(seed, off, out);
            },
            hist);
        EXPECT_EQ(hist.count(), 16u);
        EXPECT_GT(reused, 0u);  // buffers are reused once the queue is full
      }
      std::vector<std::byte> back(size);
      ks::read_range(dir.path() + "/" + name, 0, back);
      EXPECT_FALSE(ks::check_pattern(seed, 0, back).has_value());
      const ks::unique_fd check = dir.open_created(name);
      EXPECT_EQ(lseek(check.get(), 0, SEEK_END), static_cast<off_t>(size));
      ++ran;
    }
  }
  EXPECT_GT(ran, 0);
}

// A fill that throws stops the write; nothing is left in flight and the error comes out.
TEST(StorageEngineTable, AFillErrorStopsTheWrite) {
  ks::run_directory dir(temp_parent());
  for (const auto& engine : ks::engine_names()) {
    if (!usable(engine)) continue;
    SCOPED_TRACE(engine);
    const ks::unique_fd fd = dir.create_file("f-" + engine);
    ks::engine_options o;
    o.queue_depth = ks::find_engine(engine)->max_queue_depth > 1 ? 4 : 1;
    o.block_size = 4096;
    auto w = ks::make_write_engine(engine, fd.get(), o);
    ks::latency_histogram hist;
    EXPECT_THROW(w->write_file(
                     1 << 20,
                     [&](std::uint64_t off, std::span<std::byte> out, bool) {
                       if (off >= 40960) throw ks::storage_error("stop");
                       ks::fill_pattern(1, off, out);
                     },
                     hist),
                 ks::storage_error);
    EXPECT_LE(hist.count(), 10u);
  }
}

TEST(StorageEngineTable, ReadRangeReadsExactlyTheRangeAndNamesAShortFile) {
  ks::run_directory dir(temp_parent());
  const std::uint64_t seed = 5;
  {
    const ks::unique_fd fd = dir.create_file("data");
    std::vector<std::byte> buf(300'000);
    ks::fill_pattern(seed, 0, buf);
    ASSERT_EQ(write(fd.get(), buf.data(), buf.size()), static_cast<ssize_t>(buf.size()));
  }
  const std::string path = dir.path() + "/data";
  for (const auto& engine : ks::engine_names()) {
    if (!usable(engine)) continue;
    SCOPED_TRACE(engine);
    ks::read_range_options o;
    o.engine = engine;
    o.queue_depth = 8;
    o.block_size = 4096;
    std::vector<std::byte> part(100'001);
    ks::read_range(path, 12'345, part, o);
    EXPECT_FALSE(ks::check_pattern(seed, 12'345, part).has_value());
    std::vector<std::byte> beyond(10'000);
    try {
      ks::read_range(path, 295'000, beyond, o);
      FAIL() << "a read past the end succeeded";
    } catch (const ks::storage_error& e) {
      EXPECT_NE(std::string(e.what()).find("short read at offset"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(ks::read_range(dir.path() + "/missing", 0, std::span<std::byte>()),
               ks::storage_error);
}
