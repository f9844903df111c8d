// The sysfs/procfs parsers on fixed text, build information, and the inventory of this machine.
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "infrabench/capabilities.h"
#include "infrabench/sysinfo.h"

namespace infrabench {
namespace {

constexpr const char* meminfo_text =
    "MemTotal:       24684092 kB\n"
    "MemFree:        24059696 kB\n"
    "MemAvailable:   24319852 kB\n"
    "HugePages_Total:       4\n"
    "Hugepagesize:       2048 kB\n";

TEST(SysfsMeminfo, ReadsKibibytesAsBytes) {
  EXPECT_EQ(sysfs::meminfo_bytes(meminfo_text, "MemTotal"), 24684092LL * 1024);
  EXPECT_EQ(sysfs::meminfo_bytes(meminfo_text, "MemAvailable"), 24319852LL * 1024);
  EXPECT_EQ(sysfs::meminfo_bytes(meminfo_text, "Hugepagesize"), 2048LL * 1024);
}

TEST(SysfsMeminfo, CountWithoutUnit) {
  EXPECT_EQ(sysfs::meminfo_bytes(meminfo_text, "HugePages_Total"), 4);
}

TEST(SysfsMeminfo, AbsentKeyIsMinusOne) {
  EXPECT_EQ(sysfs::meminfo_bytes(meminfo_text, "SwapTotal"), -1);
  EXPECT_EQ(sysfs::meminfo_bytes(meminfo_text, "Mem"), -1);  // a prefix is not the key
  EXPECT_EQ(sysfs::meminfo_bytes("", "MemTotal"), -1);
  EXPECT_EQ(sysfs::meminfo_bytes("MemTotal: garbage kB\n", "MemTotal"), -1);
}

TEST(SysfsScheduler, BracketedIsActive) {
  EXPECT_EQ(sysfs::active_scheduler("mq-deadline [none] kyber"), "none");
  EXPECT_EQ(sysfs::active_scheduler("[mq-deadline] kyber bfq none\n"), "mq-deadline");
}

TEST(SysfsScheduler, BareNameAndEmpty) {
  EXPECT_EQ(sysfs::active_scheduler("none\n"), "none");
  EXPECT_EQ(sysfs::active_scheduler(""), "");
  EXPECT_EQ(sysfs::active_scheduler("mq-deadline kyber"), "");  // no marker: unknown
}

TEST(SysfsOsRelease, DoubleQuotedPrettyName) {
  const std::string text =
      "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n"
      "NAME=\"Debian GNU/Linux\"\n"
      "VERSION_ID=\"12\"\n";
  EXPECT_EQ(sysfs::os_pretty_name(text), "Debian GNU/Linux 12 (bookworm)");
}

TEST(SysfsOsRelease, SingleQuotedUnquotedAndEscaped) {
  EXPECT_EQ(sysfs::os_pretty_name("NAME=x\nPRETTY_NAME='Alpine Linux v3.19'\n"),
            "Alpine Linux v3.19");
  EXPECT_EQ(sysfs::os_pretty_name("PRETTY_NAME=Arch\n"), "Arch");
  EXPECT_EQ(sysfs::os_pretty_name("PRETTY_NAME=\"A \\\"quoted\\\" name\"\n"), "A \"quoted\" name");
  EXPECT_EQ(sysfs::os_pretty_name("NAME=\"Debian\"\n"), "");
}

TEST(SysfsCpulist, RangesAndSingles) {
  EXPECT_EQ(sysfs::parse_cpulist("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(sysfs::parse_cpulist("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
}

TEST(SysfsCpulist, EmptyAndSingle) {
  EXPECT_TRUE(sysfs::parse_cpulist("").empty());
  EXPECT_TRUE(sysfs::parse_cpulist("\n").empty());
  EXPECT_EQ(sysfs::parse_cpulist("5"), (std::vector<int>{5}));
}

TEST(SysfsCpulist, MalformedThrowsWithTheText) {
  EXPECT_THROW((void)sysfs::parse_cpulist("3-1"), std::invalid_argument);
  EXPECT_THROW((void)sysfs::parse_cpulist("a-b"), std::invalid_argument);
  EXPECT_THROW((void)sysfs::parse_cpulist("0,,2"), std::invalid_argument);
  EXPECT_THROW((void)sysfs::parse_cpulist("0-2147483647"), std::invalid_argument);
  try {
    (void)sysfs::parse_cpulist("0-x");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("0-x"), std::string::npos) << e.what();
  }
}

TEST(SysinfoBuild, HasTheKeys) {
  const nlohmann::json b = build_info_json();
  for (const char* key : {"version", "git_commit", "build_type", "compiler", "cxx_flags",
                          "cuda_compiler", "cuda_architectures", "backends"}) {
    EXPECT_TRUE(b.contains(key)) << key;
  }
  for (const char* key : {"io_uring", "mpi", "cuda", "nccl"}) {
    EXPECT_TRUE(b["backends"][key].is_boolean()) << key;
  }
  EXPECT_FALSE(b["version"].get<std::string>().empty());
}

TEST(SysinfoInventory, ThisMachine) {
  const capabilities caps = probe_capabilities(1);
  const nlohmann::json inv = collect_system_inventory(caps);
  ASSERT_TRUE(inv.is_object());
  ASSERT_TRUE(inv["hostname"].is_string());
  EXPECT_FALSE(inv["hostname"].get<std::string>().empty());
  EXPECT_TRUE(inv["cpu"]["model"].is_string()) << inv["cpu"].dump();
  ASSERT_TRUE(inv["memory"]["total_bytes"].is_number_integer()) << inv["memory"].dump();
  EXPECT_GT(inv["memory"]["total_bytes"].get<long long>(), 0);
  ASSERT_TRUE(inv["os"]["kernel"].is_string());
  EXPECT_FALSE(inv["os"]["kernel"].get<std::string>().empty());
  EXPECT_TRUE(inv["block_devices"].is_array());
  EXPECT_TRUE(inv["gpus"].is_array());
  if (!caps.cuda.available) {
    EXPECT_TRUE(inv["gpus"].empty());
  }
  EXPECT_TRUE(inv["build"].is_object());
  EXPECT_TRUE(inv["libraries"].is_object());
  EXPECT_TRUE(inv["timestamp_utc"].is_string());
}

TEST(SysinfoInventory, IsaListMatchesCapabilities) {
  const capabilities caps = probe_capabilities(1);
  const nlohmann::json isa = collect_system_inventory(caps)["cpu"]["isa"];
  ASSERT_TRUE(isa.is_array());
  const auto listed = [&](const char* name) {
    for (const auto& n : isa) {
      if (n == name) return true;
    }
    return false;
  };
  EXPECT_EQ(listed("avx2"), caps.isa.avx2);
  EXPECT_EQ(listed("avx512f"), caps.isa.avx512f);
  EXPECT_FALSE(listed("os_saves_avx"));
}

TEST(SysinfoInventory, HwlocTopologyIsSane) {
  const nlohmann::json cpu = collect_system_inventory(probe_capabilities(1))["cpu"];
  if (cpu.contains("topology_error")) {
    GTEST_SKIP() << "hwloc failed: " << cpu["topology_error"];
  }
  ASSERT_TRUE(cpu["threads"].is_number_integer());
  EXPECT_GE(cpu["threads"].get<int>(), 1);
  EXPECT_GE(cpu["threads"].get<int>(), cpu["cores"].get<int>());
  EXPECT_GE(cpu["cores"].get<int>(), cpu["sockets"].get<int>());
}

}  // namespace
}  // namespace infrabench
