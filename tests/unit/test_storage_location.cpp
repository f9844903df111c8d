// Where a storage benchmark measured (storage_location.h): block devices resolved in a fixture
// sysfs tree (tests/fixtures/sysfs-block), mountinfo lines, io_ticks, and the report's object.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "infrabench/error.h"
#include "infrabench/model/result_record.h"
#include "infrabench/storage_location.h"

namespace {

namespace fs = std::filesystem;
using infrabench::storage_location;

const std::string sysfs = std::string(INFRABENCH_SYSFS_BLOCK_FIXTURE) + "/sys";

storage_location device(unsigned major, unsigned minor) {
  storage_location l;
  infrabench::describe_block_device(major, minor, sysfs, l);
  return l;
}

}  // namespace

TEST(StorageLocation, APartitionResolvesToItsWholeDisk) {
  const storage_location l = device(259, 1);
  EXPECT_EQ(l.device, "nvme0n1p1");
  EXPECT_EQ(l.device_number, "259:1");
  EXPECT_EQ(l.disk, "nvme0n1");
  EXPECT_EQ(l.model, "Samsung SSD 980 PRO 1TB");  // NVMe's padding blanks removed
  EXPECT_EQ(l.driver, "nvme");                    // the controller's PCI device's driver
  EXPECT_EQ(l.rotational, false);
  EXPECT_EQ(l.logical_block_size, 512);
  // Utilisation is the whole disk's, as fio reports a partition's.
  EXPECT_EQ(l.stat_device, "nvme0n1");
  EXPECT_TRUE(l.stat_file.ends_with("/nvme0n1/stat")) << l.stat_file;
  EXPECT_TRUE(l.unknown.empty()) << l.unknown.begin()->first << ": " << l.unknown.begin()->second;
}

TEST(StorageLocation, AMissingModelIsUnknownWithWhy) {
  const storage_location l = device(254, 0);
  EXPECT_EQ(l.device, "vda");
  EXPECT_EQ(l.disk, "vda");
  EXPECT_EQ(l.model, "");
  ASSERT_EQ(l.unknown.count("model"), 1u);
  EXPECT_NE(l.unknown.at("model").find("no vda/device/model in sysfs"), std::string::npos)
      << l.unknown.at("model");
  EXPECT_NE(l.unknown.at("model").find("virtio_blk does not report one"), std::string::npos);
  EXPECT_EQ(l.driver, "virtio_blk");
  EXPECT_EQ(l.rotational, true);
  EXPECT_NE(infrabench::describe(l).find("model unknown: "), std::string::npos)
      << infrabench::describe(l);
}

TEST(StorageLocation, ADeviceMapperVolumeNamesItsDisk) {
  const storage_location l = device(253, 0);
  EXPECT_EQ(l.device, "dm-0");
  EXPECT_EQ(l.device_mapper_name, "vg-root");
  EXPECT_EQ(l.disk, "nvme0n1");  // under nvme0n1p2
  EXPECT_EQ(l.model, "Samsung SSD 980 PRO 1TB");
  EXPECT_EQ(l.logical_block_size, 4096);  // the volume's own queue
  EXPECT_EQ(l.stat_device, "dm-0");
  EXPECT_TRUE(l.unknown.empty());
}

TEST(StorageLocation, AVirtualDeviceHasNoModel) {
  const storage_location l = device(7, 0);
  EXPECT_EQ(l.disk, "loop0");
  ASSERT_EQ(l.unknown.count("model"), 1u);
  EXPECT_NE(l.unknown.at("model").find("virtual block device"), std::string::npos);
  EXPECT_EQ(l.unknown.count("driver"), 1u);
}

TEST(StorageLocation, ADeviceSysfsDoesNotListIsUnknownAndHasNoUtilisation) {
  const storage_location l = device(8, 0);
  EXPECT_EQ(l.device, "");
  ASSERT_EQ(l.unknown.count("device"), 1u);
  EXPECT_NE(l.unknown.at("device").find("8:0"), std::string::npos);
  const infrabench::disk_busy_meter meter(l);
  std::string why;
  EXPECT_FALSE(meter.percent(&why).has_value());
  EXPECT_FALSE(why.empty());
}

TEST(StorageLocation, UtilisationOfAnIdleDiskIsZero) {
  const infrabench::disk_busy_meter meter(device(254, 0));  // a fixture: its io_ticks never move
  std::string why;
  const auto busy = meter.percent(&why);
  ASSERT_TRUE(busy.has_value()) << why;
  EXPECT_EQ(*busy, 0.0);
}

TEST(StorageLocation, IoTicksIsTheTenthField) {
  EXPECT_EQ(infrabench::io_ticks_of("1 2 3 4 5 6 7 8 9 579652 11 12 13 14 15 16 17"), 579652u);
  EXPECT_EQ(infrabench::io_ticks_of("  183911 0 1 2 3 4 5 6 0 215320\n"), 215320u);
  EXPECT_FALSE(infrabench::io_ticks_of("1 2 3").has_value());
}

TEST(StorageLocation, MountinfoGivesTheMountHoldingAPath) {
  const std::string text =
      "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
      "40 27 0:45 / /mnt/a rw shared:1 - tmpfs tmpfs rw\n"
      "41 27 0:46 / /mnt/a\\040b rw - overlay overlay rw,lowerdir=/x\n"
      "42 40 259:1 / /mnt/a rw - xfs /dev/nvme0n1p1 rw\n";
  const auto mounts = infrabench::parse_mountinfo(text);
  ASSERT_EQ(mounts.size(), 4u);
  EXPECT_EQ(mounts[2].mount_point, "/mnt/a b");  // \040 is a space
  // The longest mount point the path is under; of two at one point, the last (on top).
  const auto a = infrabench::mount_of(mounts, "/mnt/a/data");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->fs_type, "xfs");
  EXPECT_EQ(a->source, "/dev/nvme0n1p1");
  EXPECT_EQ(a->device_number, "259:1");
  EXPECT_EQ(infrabench::mount_of(mounts, "/mnt/a b/x")->fs_type, "overlay");
  EXPECT_EQ(infrabench::mount_of(mounts, "/mnt/ab")->fs_type, "ext4");  // not under /mnt/a
  EXPECT_EQ(infrabench::mount_of(mounts, "/")->mount_point, "/");
  EXPECT_FALSE(infrabench::mount_of({}, "/x").has_value());
}

TEST(StorageLocation, ADirectoryIsResolvedAndItsMountNamed) {
  const fs::path dir = fs::temp_directory_path() / ("ib-location-" + std::to_string(getpid()));
  fs::create_directories(dir / "sub");
  const fs::path mountinfo = dir / "mountinfo";
  std::ofstream(mountinfo) << "27 1 254:0 / / rw - ext4 /dev/vda rw\n";
  // Given relative and through "..": recorded resolved and absolute, as given too.
  const fs::path old = fs::current_path();
  fs::current_path(dir);
  const storage_location l =
      infrabench::locate_storage("sub/..", "sub/..", {sysfs, mountinfo.string()});
  fs::current_path(old);
  EXPECT_EQ(l.given, "sub/..");
  EXPECT_EQ(l.path, fs::canonical(dir).string());
  EXPECT_EQ(l.kind, infrabench::location_kind::directory);
  EXPECT_EQ(l.filesystem, "ext4");
  EXPECT_EQ(l.mount_point, "/");
  EXPECT_EQ(l.mount_source, "/dev/vda");
  fs::remove_all(dir);

  // Mountinfo unreadable: the mount's facts are unknown, with why.
  const storage_location none =
      infrabench::locate_storage("/", "/", {sysfs, "/nonexistent/mountinfo"});
  EXPECT_EQ(none.path, "/");
  ASSERT_EQ(none.unknown.count("filesystem"), 1u);
  EXPECT_NE(none.unknown.at("filesystem").find("/nonexistent/mountinfo"), std::string::npos);
}

TEST(StorageLocation, TheReportsObjectReadsBackWhole) {
  storage_location l = device(259, 1);
  l.given = ".";
  l.path = "/work";
  l.kind = infrabench::location_kind::directory;
  l.file = "/work/infrabench-scratch-x/data";
  l.filesystem = "ext4";
  l.mount_point = "/";
  l.mount_source = "/dev/nvme0n1p1";
  l.unknown["driver"] = "why";
  const auto j = infrabench::to_json(l);
  EXPECT_FALSE(j.contains("stat_file"));  // a path of this host's sysfs, not a fact
  const storage_location back = infrabench::storage_location_of(j);
  EXPECT_EQ(infrabench::to_json(back), j);
  EXPECT_EQ(back.model, l.model);
  EXPECT_EQ(back.rotational, false);
  EXPECT_EQ(back.kind, infrabench::location_kind::directory);
  EXPECT_EQ(back.unknown.at("driver"), "why");
  nlohmann::json bad = j;
  bad["rotational"] = "no";
  EXPECT_THROW((void)infrabench::storage_location_of(bad), infrabench::user_error);
  EXPECT_FALSE(infrabench::set_storage_location_member(l, "model", 3));
  EXPECT_TRUE(infrabench::set_storage_location_member(l, "a_later_member", 3));  // ignored
}
