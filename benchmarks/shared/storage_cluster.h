// Storage across the hosts of a multi-rank run (mpirun/srun). storage/read and storage/dataloader
// measure each host once (its lowest rank, at the same time on every host); every rank takes part
// in the agreements around the measurement, so the hosts start together and one host's error
// reaches the others. Whether --scratch is one shared file system (the same directory seen by
// every host: NFS, Lustre, ...) or node-local is found out, not assumed: rank 0 makes a probe in
// it and the other hosts look for it. Shared: one data set, each host reads its own disjoint part;
// node-local: each host makes and reads its own.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "infrabench/state.h"

namespace infrabench::storage_bench {

struct cluster_view {
  bool multi = false;      // more than one rank
  bool measures = true;    // this rank measures its host (its host's lowest rank)
  std::uint32_t host = 0;  // this host's index among the hosts, in rank order
  std::uint32_t hosts = 1;
  std::string not_measuring;  // the skip reason of a rank that does not measure
};
[[nodiscard]] cluster_view view_of(const communicator& comm);

enum class scratch_sharing { single_host, shared, node_local };
[[nodiscard]] std::string to_string(scratch_sharing s);

// Whether --scratch is shared by every host (collective: every rank calls it; one probe per run
// and directory, the answer kept). A single host: single_host.
[[nodiscard]] scratch_sharing sharing_of_scratch(infrabench::state& st);

// Scratch data for a multi-host run: shared, rank 0 makes it (`make` returns "path\nseed") and
// every host receives rank 0's; otherwise each measuring rank makes its own. Every rank calls it;
// errors on any rank end the configuration on every rank (st.fail, naming the rank). Returns the
// (path, seed) this rank uses ("" on ranks that do not measure).
struct scratch_data {
  std::string path;
  std::uint64_t seed = 0;
};
[[nodiscard]] scratch_data agree_on_scratch(infrabench::state& st, const cluster_view& view,
                                            scratch_sharing sharing,
                                            const std::function<scratch_data()>& make);

}  // namespace infrabench::storage_bench
