// ViT's data: the preprocessing benchmarks' synthetic photographs (or --jpeg-dir's files) as
// JPEG files in a new scratch directory (removed at the end of the run), read back with pread from
// the device (written with fdatasync, and each file's pages dropped from the page cache after
// every read: a data set larger than memory, whose every epoch reads the device),
// decoded (libjpeg-turbo) and transformed by our fused resize -> random crop -> random flip ->
// normalise -> CHW straight into the batch: the storage -> CPU preprocessing path. Labels are
// learnable from the pixels: each image's dominant colour channel (3 classes of the head's), so
// the loss can fall as on real data rather than by memorising indices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "infrabench/state.h"
#include "infrabench/thread_pool.h"
#include "shared/preprocess_data.h"
#include "storage/target.h"

namespace infrabench::training_bench {

namespace pp = infrabench::kernels::cpu::preprocess;

class image_source {
 public:
  // Writes (once per run) `samples` JPEG files; `crop` is the model's image size; the resize is
  // crop x 256/224 (ImageNet's ratio). Fails the state (st.fail) for a geometry the transform
  // cannot do; throws ks::storage_error for the scratch files.
  image_source(state& st, std::size_t samples, int crop, int rank, int ranks, pp::isa isa);
  ~image_source();
  image_source(const image_source&) = delete;
  image_source& operator=(const image_source&) = delete;

  // Step `step`'s batch of this rank: images [batch, 3, crop, crop] (fp32, normalised CHW) and
  // labels [batch], decoded and transformed on `pool`'s threads.
  void produce(std::uint64_t step, int batch, float* images, std::int32_t* labels,
               thread_pool& pool);
  // The last produced batch's image `i`, re-decoded and put through the unfused scalar stages:
  // empty when it equals images[i] bit for bit, else what differs.
  [[nodiscard]] std::string verify(std::uint64_t step, int batch, int i, const float* images);
  [[nodiscard]] std::string describe() const;
  [[nodiscard]] std::uint64_t bytes_per_sample() const;

 private:
  struct per_thread;
  void pick(std::uint64_t step, int batch);
  [[nodiscard]] pp::transform_spec spec_of(std::size_t index, std::uint64_t step, int i) const;

  std::shared_ptr<const preprocess_bench::dataset> m_ds;
  std::string m_dir;
  const std::vector<kernels::storage::created_file>* m_created = nullptr;  // per sample
  int m_crop, m_resize, m_rank, m_ranks;
  pp::isa m_isa;
  std::vector<std::int32_t> m_labels_of;  // per sample
  std::vector<std::size_t> m_order, m_index;
  std::uint64_t m_order_epoch = ~std::uint64_t{0};
  std::vector<std::vector<std::uint8_t>> m_files;
  std::vector<std::unique_ptr<per_thread>> m_threads;
};

}  // namespace infrabench::training_bench
