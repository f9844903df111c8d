// Where a storage benchmark measured, as fio names its file and device: the path resolved, the
// filesystem and its mount, and the block device behind it with its model. A fact that cannot be
// read is recorded as unknown with why, never guessed. The one place that reads these facts:
// /proc/self/mountinfo and /sys/dev/block, both under $INFRABENCH_SYSFS_ROOT when the tests set
// it (as telemetry reads them), or under the roots a unit test passes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace infrabench {

// What the path is: a directory scratch data is made in, a file, or a block device read raw.
enum class location_kind { directory, file, block_device };
[[nodiscard]] std::string_view to_string(location_kind k);
// "block_device" -> location_kind::block_device; nullopt for any other text.
[[nodiscard]] std::optional<location_kind> parse_location_kind(std::string_view text);

struct storage_location {
  std::string given;  // as the run named it: "." for --scratch ., "/dev/nvme0n1" for a target
  std::string path;   // absolute, symlinks resolved
  std::optional<location_kind> kind;  // unset when the path cannot be stat'ed
  std::string file;  // what was read or written under `path` (a scratch file), when not `path`
  std::string filesystem;     // the mount's type, as mountinfo names it: ext4, xfs, tmpfs, overlay
  std::string mount_point;    // where that filesystem is mounted
  std::string mount_source;   // what is mounted there: "/dev/nvme0n1p1", "overlay", "tmpfs"
  std::string device;         // the block device holding the data: "nvme0n1p1", "dm-0"
  std::string device_number;  // its major:minor, "259:1"
  std::string device_mapper_name;  // a device-mapper device's name ("vg-root")
  std::string disk;                // the whole disk behind it: a partition's disk, a dm's one disk
  std::string model;               // the disk's model, as sysfs gives it
  std::string driver;              // the disk's driver: nvme, virtio_blk, sd
  std::optional<bool> rotational;  // the device's queue says it spins
  std::optional<std::int64_t> logical_block_size;  // bytes
  std::map<std::string, std::string> unknown;      // fact -> why it is not recorded
  // Not in the report: the sysfs stat file whose io_ticks give the device's utilisation (the
  // whole disk for a partition, the dm device itself), empty when there is none.
  std::string stat_file;
  std::string stat_device;   // the device that stat file describes
  std::string stat_missing;  // why there is none
};

// One line for the console: "/work (ext4 on /dev/vda at /; disk vda, virtio_blk, rotational,
// 512 B blocks; model unknown: ...)".
[[nodiscard]] std::string describe(const storage_location& l);

// Where /proc/self/mountinfo and /sys are read from.
struct location_roots {
  std::string sysfs = "/sys";
  std::string mountinfo = "/proc/self/mountinfo";
};
// Under $INFRABENCH_SYSFS_ROOT when set (telemetry::sysfs_root), else the system's.
[[nodiscard]] location_roots default_location_roots();

// Where `path` (an existing directory, file or block device) is: resolved, its mount, its
// device. `given` is kept as the run named it. Never throws: what cannot be read is unknown.
[[nodiscard]] storage_location locate_storage(const std::string& given, const std::string& path,
                                              const location_roots& roots);

// The block device major:minor as sysfs (`sysfs_root`, "/sys" on a node) describes it: fills
// device .. logical_block_size, stat_file and the unknowns of `out`.
void describe_block_device(unsigned major, unsigned minor, const std::string& sysfs_root,
                           storage_location& out);

// One line of mountinfo: the filesystem's device number, where it is mounted, type and source.
struct mount_entry {
  std::string device_number;  // "259:1" (anonymous "0:45" for tmpfs, overlay, btrfs)
  std::string mount_point;    // unescaped (\040 is a space)
  std::string fs_type;
  std::string source;
};
[[nodiscard]] std::vector<mount_entry> parse_mountinfo(const std::string& text);
// The mount holding the absolute, resolved `path`: the longest mount point it is under; of
// several at one point, the last (mounted on top). Nullopt when none is.
[[nodiscard]] std::optional<mount_entry> mount_of(const std::vector<mount_entry>& mounts,
                                                  const std::string& path);

// How busy a device was over a region, as fio's "util=": the milliseconds its stat file's
// io_ticks (field 10) grew, over the region's wall milliseconds, in percent, capped at 100 as
// fio caps it (the counter's granularity can overshoot a short region). Nullopt with `why` when
// there is no stat file or it cannot be read.
class disk_busy_meter {
 public:
  explicit disk_busy_meter(const storage_location& l);
  [[nodiscard]] std::optional<double> percent(std::string* why) const;

 private:
  std::string m_file;
  std::string m_why;  // why there is no reading at the start
  std::uint64_t m_ticks = 0;
  double m_start_s = 0;
};
// Field 10 of a /sys/block/X/stat text (io_ticks, ms); nullopt when it has fewer fields.
[[nodiscard]] std::optional<std::uint64_t> io_ticks_of(const std::string& stat_text);

}  // namespace infrabench
