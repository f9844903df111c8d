// NUMA discovery from a fake sysfs tree and the plan of each row of the node x node bandwidth
// matrix: the multi-node paths this one-node machine cannot exercise for real.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "topology/numa.h"

namespace topo = infrabench::kernels::topology;
namespace fs = std::filesystem;

namespace {

// A temporary /sys/devices/system/node look-alike, removed at the end of the test.
class fake_sysfs {
 public:
  fake_sysfs() {
    m_root = fs::temp_directory_path() /
             ("infrabench-numa-" + std::to_string(::getpid()) + "-" + std::to_string(s_counter++));
    fs::create_directories(m_root);
  }
  ~fake_sysfs() {
    std::error_code ec;
    fs::remove_all(m_root, ec);
  }
  void write(const std::string& rel, const std::string& text) {
    fs::create_directories((m_root / rel).parent_path());
    std::ofstream(m_root / rel) << text;
  }
  [[nodiscard]] std::string root() const { return m_root.string(); }

 private:
  static inline int s_counter = 0;
  fs::path m_root;
};

}  // namespace

TEST(GpuBandwidthNuma, ParsesIdLists) {
  EXPECT_EQ(*topo::parse_id_list("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(*topo::parse_id_list("0"), (std::vector<int>{0}));
  EXPECT_EQ(*topo::parse_id_list("3,1,1-2"), (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(topo::parse_id_list("\n")->empty());  // a memory-only node's cpulist
  EXPECT_FALSE(topo::parse_id_list("1-"));
  EXPECT_FALSE(topo::parse_id_list("3-1"));
  EXPECT_FALSE(topo::parse_id_list("a"));
  EXPECT_FALSE(topo::parse_id_list("1,,2"));
}

TEST(GpuBandwidthNuma, ReadsAFakeFourNodeTopology) {
  // Two sockets with CPUs and memory, a CXL memory-only node 2, and a node 3 with CPUs but no
  // memory (as some sub-NUMA configurations have).
  fake_sysfs sys;
  sys.write("online", "0-3\n");
  sys.write("has_memory", "0-2\n");
  sys.write("node0/cpulist", "0-3\n");
  sys.write("node1/cpulist", "4-7\n");
  sys.write("node2/cpulist", "\n");
  sys.write("node3/cpulist", "8-9\n");
  const auto nodes = topo::read_numa_nodes(sys.root());
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(nodes[1].id, 1);
  EXPECT_EQ(nodes[1].cpus, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_TRUE(nodes[2].cpus.empty());
  EXPECT_TRUE(nodes[2].has_memory);
  EXPECT_FALSE(nodes[3].has_memory);
  EXPECT_EQ(topo::online_numa_node_ids(sys.root()), (std::vector<int>{0, 1, 2, 3}));

  // Row 0: every memory node is a column; node 3 has none and is n/a.
  const auto row0 = topo::plan_numa_row(nodes, 0, -1);
  EXPECT_TRUE(row0.skip.empty());
  EXPECT_EQ(row0.cpus, (std::vector<int>{0, 1, 2, 3}));
  ASSERT_EQ(row0.columns.size(), 4u);
  EXPECT_TRUE(row0.columns[0].na_reason.empty());
  EXPECT_TRUE(row0.columns[2].na_reason.empty());
  EXPECT_EQ(row0.columns[3].na_reason, "NUMA node 3 has no memory");

  // One column only.
  const auto row1 = topo::plan_numa_row(nodes, 1, 0);
  ASSERT_EQ(row1.columns.size(), 1u);
  EXPECT_EQ(row1.columns[0].node, 0);

  // A memory-only node cannot be a row; a missing node neither.
  EXPECT_NE(topo::plan_numa_row(nodes, 2, -1).skip.find("has no CPUs"), std::string::npos);
  EXPECT_EQ(topo::plan_numa_row(nodes, 7, -1).skip,
            "NUMA node 7 does not exist: this machine has 4 nodes (0,1,2,3)");
  EXPECT_EQ(topo::plan_numa_row(nodes, 0, 9).skip,
            "NUMA node 9 does not exist: this machine has 4 nodes (0,1,2,3)");
}

TEST(GpuBandwidthNuma, FallsBackToNodeDirectoriesAndMeminfo) {
  // No `online` and no `has_memory` file (older kernels): node directories and meminfo decide.
  fake_sysfs sys;
  sys.write("node0/cpulist", "0-1\n");
  sys.write("node0/meminfo", "Node 0 MemTotal:       24563472 kB\nNode 0 MemFree: 1 kB\n");
  sys.write("node2/cpulist", "2-3\n");
  sys.write("node2/meminfo", "Node 2 MemTotal:              0 kB\n");
  const auto nodes = topo::read_numa_nodes(sys.root());
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].id, 0);
  EXPECT_TRUE(nodes[0].has_memory);
  EXPECT_EQ(nodes[1].id, 2);
  EXPECT_FALSE(nodes[1].has_memory);
}

TEST(GpuBandwidthNuma, NoSysfsMeansNodeZero) {
  EXPECT_TRUE(topo::read_numa_nodes("/nonexistent/infrabench/node").empty());
  EXPECT_EQ(topo::online_numa_node_ids("/nonexistent/infrabench/node"), (std::vector<int>{0}));
}

TEST(GpuBandwidthNuma, ThisMachineHasNodeZero) {
  // Whatever this host is, its node list parses and includes a node with CPUs.
  const auto nodes = topo::read_numa_nodes();
  if (nodes.empty()) GTEST_SKIP() << "no NUMA sysfs on this kernel";
  bool any_cpus = false;
  for (const auto& n : nodes) any_cpus = any_cpus || !n.cpus.empty();
  EXPECT_TRUE(any_cpus);
}
