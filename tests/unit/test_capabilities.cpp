// The capabilities probe on this machine, and the requirement checks on hand-built capabilities.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "infrabench/capabilities.h"

namespace infrabench {
namespace {

// What the CUDA probe writes on a machine without a driver; the requirement must pass it on
// verbatim so the skip reason in the report names the real cause.
constexpr const char* no_driver_reason =
    "no NVIDIA driver on this machine (no /dev/nvidia*, no libcuda.so.1)";

TEST(CapabilitiesRequirements, Avx512Bf16PresentIsMet) {
  capabilities caps;
  caps.isa.avx512_bf16 = true;
  EXPECT_EQ(req::avx512_bf16.check(caps), "");
  EXPECT_EQ(req::avx512_bf16.name, "avx512_bf16");
}

TEST(CapabilitiesRequirements, Avx512Bf16AbsentNamesTheExtension) {
  capabilities caps;
  caps.isa.avx512f = true;
  caps.isa.avx512bw = true;
  EXPECT_EQ(req::avx512_bf16.check(caps), "CPU lacks AVX-512 BF16 (avx512_bf16)");
  EXPECT_EQ(req::avx512f.check(caps), "");
  EXPECT_EQ(req::avx512bw.check(caps), "");
  EXPECT_NE(req::avx2.check(caps), "");
  EXPECT_NE(req::avx512_fp16.check(caps), "");
}

TEST(CapabilitiesRequirements, CudaAbsentGivesTheProbeReasonVerbatim) {
  capabilities caps;
  caps.cuda.available = false;
  caps.cuda.reason = no_driver_reason;
  EXPECT_EQ(req::cuda.check(caps), no_driver_reason);

  caps.cuda.available = true;
  caps.cuda.reason.clear();
  EXPECT_EQ(req::cuda.check(caps), "");
}

TEST(CapabilitiesRequirements, FeatureWithoutReasonStillExplainsItself) {
  const capabilities caps;  // nothing probed: every feature unavailable, no reason recorded
  EXPECT_FALSE(req::nccl.check(caps).empty());
  EXPECT_FALSE(req::io_uring.check(caps).empty());
  EXPECT_FALSE(req::mpi.check(caps).empty());
}

TEST(CapabilitiesRequirements, MultiRank) {
  capabilities caps;
  caps.world_size = 1;
  EXPECT_EQ(req::multi_rank.check(caps),
            "needs at least 2 ranks (world size 1): launch with mpirun -np N");
  caps.world_size = 2;
  EXPECT_EQ(req::multi_rank.check(caps), "");
  caps.world_size = 16;
  EXPECT_EQ(req::multi_rank.check(caps), "");
}

TEST(CapabilitiesRequirements, EveryRequirementHasANameAndACheck) {
  for (const requirement* r :
       {&req::avx2, &req::avx512f, &req::avx512bw, &req::avx512_bf16, &req::avx512_fp16, &req::cuda,
        &req::nccl, &req::io_uring, &req::mpi, &req::multi_rank}) {
    EXPECT_FALSE(r->name.empty());
    ASSERT_NE(r->check, nullptr) << r->name;
  }
}

TEST(CapabilitiesProbe, ThisMachine) {
  const capabilities caps = probe_capabilities(1);
  EXPECT_GE(caps.logical_cpus, 1);
  EXPECT_GT(caps.memory_available_bytes, 0);
  EXPECT_EQ(caps.world_size, 1);

  // Without MPI launch there is one rank, whatever was compiled in.
  EXPECT_FALSE(caps.mpi.available);
  EXPECT_FALSE(caps.mpi.reason.empty());
  EXPECT_NE(req::multi_rank.check(caps), "");

  if (!caps.cuda.available) {
    EXPECT_FALSE(caps.cuda.reason.empty());
    EXPECT_EQ(caps.cuda_device_count, 0);
    EXPECT_EQ(req::cuda.check(caps), caps.cuda.reason);
    // Everything that needs a device says so, too.
    EXPECT_FALSE(caps.cublas.available);
    EXPECT_FALSE(caps.cublas.reason.empty());
    EXPECT_FALSE(caps.nccl.available);
    EXPECT_FALSE(caps.nccl.reason.empty());
  } else {
    EXPECT_GE(caps.cuda_device_count, 1);
    EXPECT_EQ(req::cuda.check(caps), "");
  }
  if (!caps.io_uring.available) {
    EXPECT_FALSE(caps.io_uring.reason.empty());
  }
}

TEST(CapabilitiesProbe, IsaIsConsistentWithXcr0) {
  const capabilities caps = probe_capabilities(1);
  // The AVX-family flags count only when the OS saves the wide registers.
  if (!caps.isa.os_saves_avx) {
    EXPECT_FALSE(caps.isa.avx);
    EXPECT_FALSE(caps.isa.avx2);
  }
  if (!caps.isa.os_saves_avx512) {
    EXPECT_FALSE(caps.isa.avx512f);
    EXPECT_FALSE(caps.isa.avx512_bf16);
  }
#if defined(__x86_64__)
  // The compiler's own detection (which also checks XCR0) must agree with ours.
  EXPECT_EQ(caps.isa.avx2, __builtin_cpu_supports("avx2") != 0);
  EXPECT_EQ(caps.isa.avx512f, __builtin_cpu_supports("avx512f") != 0);
  EXPECT_EQ(caps.isa.avx512bw, __builtin_cpu_supports("avx512bw") != 0);
#endif
}

TEST(CapabilitiesProbe, ToJsonHasEveryFeature) {
  const nlohmann::json j = probe_capabilities(1).to_json();
  for (const char* key : {"isa", "logical_cpus", "memory_available_bytes", "cuda", "cublas", "nccl",
                          "io_uring", "mpi", "world_size"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  for (const char* key : {"cuda", "cublas", "nccl", "io_uring", "mpi"}) {
    EXPECT_TRUE(j[key]["available"].is_boolean()) << key;
    if (!j[key]["available"].get<bool>()) {
      EXPECT_TRUE(j[key]["reason"].is_string()) << key;
    }
  }
  EXPECT_TRUE(j["isa"]["avx2"].is_boolean());
}

// Whether the node leader can open every GPU of its host (issue 38): per-task
// CUDA_VISIBLE_DEVICES (srun --gpus-per-task) showed it one GPU of 8, and p2p skipped as "no
// device"; in EXCLUSIVE_PROCESS mode it could not open the GPUs the other ranks hold.
TEST(Capabilities, NodeGpusReasonSaysWhatToDo) {
  node_gpu_view v;
  v.cuda_visible = 8;
  v.nvml_count = 8;
  v.ranks_on_host = 8;
  EXPECT_EQ(node_gpus_reason(v), "");
  v.cuda_visible = 1;
  v.visible_env = "3";
  const std::string per_task = node_gpus_reason(v);
  EXPECT_NE(per_task.find("CUDA_VISIBLE_DEVICES=3 shows this rank 1 of the host's 8 GPUs"),
            std::string::npos)
      << per_task;
  EXPECT_NE(per_task.find("srun --gpu-bind=none"), std::string::npos) << per_task;
  // One process limited on purpose measures what it was given.
  v.ranks_on_host = 1;
  EXPECT_EQ(node_gpus_reason(v), "");
  node_gpu_view excl;
  excl.cuda_visible = excl.nvml_count = 8;
  excl.exclusive_process = 8;
  excl.ranks_on_host = 8;
  const std::string exclusive = node_gpus_reason(excl);
  EXPECT_NE(exclusive.find("EXCLUSIVE_PROCESS"), std::string::npos) << exclusive;
  EXPECT_NE(exclusive.find("nvidia-smi -c DEFAULT"), std::string::npos) << exclusive;
  excl.ranks_on_host = 1;  // one process opens every GPU itself
  EXPECT_EQ(node_gpus_reason(excl), "");
}

}  // namespace
}  // namespace infrabench
