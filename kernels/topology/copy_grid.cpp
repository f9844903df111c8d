#include "topology/copy_grid.h"

namespace infrabench::kernels::topology {

int copy_blocks_for(int sm_count, int concurrent_kernels) {
  const int sms = sm_count > 0 ? sm_count : 1;
  return concurrent_kernels <= 1 ? sms * copy_blocks_per_full_sm : sms;
}

}  // namespace infrabench::kernels::topology
