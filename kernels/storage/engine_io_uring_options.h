// The io_uring engine's options, shared by its table entry with and without liburing (a build
// without it still knows them: its axes exist and asking for them says what is missing).
#pragma once

#include <array>

#include "storage/engine.h"

namespace infrabench::kernels::storage::detail {

inline constexpr std::array<option_spec, 5> io_uring_options{{
    {"fixed_buffers", "registered buffers (IORING_REGISTER_BUFFERS; locked memory)", 0, 0, 1},
    {"fixed_files", "registered file (IORING_REGISTER_FILES)", 0, 0, 1},
    {"sqpoll", "SQPOLL: a kernel thread polls the submission queue", 0, 0, 1},
    {"iopoll", "IOPOLL: completions polled from the device (needs poll queues and O_DIRECT)", 0, 0,
     1},
    // Small batches keep the device's queue full: a whole queue's worth in one call (0) reached
    // 0.87-0.92x fio's IOPS at QD32 on a virtio disk here, batches of 4 about 1.0x with less CPU
    // per I/O than fio's one-per-call (docs/storage-checkpoint.md).
    {"submit_batch",
     "reads handed to the kernel per submit call (fio's iodepth_batch_submit); 0 = every free "
     "slot at once",
     4, 0, 32768},
}};

inline constexpr std::string_view io_uring_description =
    "liburing, queue_depth I/Os in flight per job (fio's io_uring engine)";

}  // namespace infrabench::kernels::storage::detail
