// training/step: the whole data path of a data-parallel training step at once, on the CPU. Each
// step, every rank
//   1. reads its share of the global batch, one JPEG file per sample, from a scratch data set
//      (psync pread, buffered: a data set smaller than RAM comes from the page cache after the
//      first epoch; storage/dataloader measures the cold path with O_DIRECT),
//   2. decodes (libjpeg-turbo) and transforms (our fused resize -> crop -> flip -> normalise ->
//      CHW) each sample straight into the model's input tensor,
//   3. computes forward and backward of a two-layer perceptron on it (our GEMM, kernels/cpu/mlp),
//   4. all-reduces the gradients with the other ranks (MPI_Allreduce, sum; nothing to do alone),
//   5. applies the averaged gradient (SGD).
// The hops run one after another (no overlap), so their times add up to the step and the
// breakdown names the hop that limits this node. A step is as fast as its slowest rank: each
// batch of steps is timed on every rank and the maximum kept (the all-reduce in every step keeps
// the ranks in lockstep anyway). Samples/s counts the global batch.
//
// Verified after timing: one more (untimed) step's five GEMM outputs are spot-checked against
// fp64 dot products over the buffers used, one transformed image against the unfused scalar
// stages, every loss is finite, and every rank ends with bit-identical parameters (the gradients
// really were all-reduced, or ranks training on different samples would drift apart).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "../preprocess/common.h"
#include "../storage/common.h"
#include "cpu/gemm.h"
#include "cpu/mlp.h"
#include "cpu/preprocess/jpeg.h"
#include "infrabench/benchmark.h"
#include "infrabench/communicator.h"
#include "infrabench/state.h"
#include "infrabench/thread_pool.h"
#include "storage/target.h"

namespace infrabench::training_bench {
namespace {

namespace pp = infrabench::kernels::cpu::preprocess;
namespace kc = infrabench::kernels::cpu;
namespace ks = infrabench::kernels::storage;
namespace pb = infrabench::preprocess_bench;
namespace sb = infrabench::storage_bench;

using clock_type = std::chrono::steady_clock;

[[nodiscard]] double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

[[nodiscard]] std::size_t as_size(std::int64_t v) {
  return static_cast<std::size_t>(v);
}

const requirement turbojpeg_req{"turbojpeg", [](const capabilities&) -> std::string {
                                  return pp::jpeg_support().available ? std::string()
                                                                      : pp::jpeg_support().reason;
                                }};

[[nodiscard]] std::string sample_file(const std::string& dir, std::size_t i) {
  char name[48];
  std::snprintf(name, sizeof(name), "/sample_%06zu.jpg", i);
  return dir + name;
}

// Writes the data set's JPEGs as new files (O_EXCL: never over anything) in the new scratch
// directory `dir`. Throws ks::storage_error with the file and the reason (a full disk, say).
void write_files(const std::string& dir, const pb::dataset& ds, const std::atomic<bool>* cancel) {
  for (std::size_t i = 0; i < ds.samples.size(); ++i) {
    if (cancel != nullptr && cancel->load()) throw ks::storage_error("interrupted while writing");
    const std::string path = sample_file(dir, i);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) throw ks::storage_error("cannot create " + path + ": " + std::strerror(errno));
    const auto& bytes = ds.samples[i].jpeg;
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : ENOSPC;
        ::close(fd);
        throw ks::storage_error("cannot write " + path + ": " + std::strerror(err));
      }
      done += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0)
      throw ks::storage_error("cannot write " + path + ": " + std::strerror(errno));
  }
}

// Reads the whole file into `out` (resized to the file's size). Throws ks::storage_error.
void read_file(const std::string& path, std::vector<std::uint8_t>& out, std::size_t expect) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ks::storage_error("cannot open " + path + ": " + std::strerror(errno));
  out.resize(expect);
  std::size_t done = 0;
  while (done < expect) {
    const ssize_t n = ::pread(fd, out.data() + done, expect - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? std::strerror(errno) : "file shorter than written";
      ::close(fd);
      throw ks::storage_error("cannot read " + path + ": " + why);
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

// Ranks that share this rank's host (they share its CPUs).
[[nodiscard]] std::size_t ranks_on_this_host(const communicator& comm) {
  const auto hosts = comm.hostnames();
  const auto n = std::count(hosts.begin(), hosts.end(), comm.hostname());
  return static_cast<std::size_t>(std::max<std::ptrdiff_t>(n, 1));
}

struct hop_times {
  double read = 0, preprocess = 0, compute = 0, wait = 0, allreduce = 0, update = 0;
  std::uint64_t steps = 0;
};

void training_step(state& st) {
  communicator& comm = st.comm();
  const pp::isa pre_isa = pb::resolve_isa(st);
  if (!pp::jpeg_support().available) st.skip(pp::jpeg_support().reason);
  const auto batch = as_size(st.get_int64("batch"));
  const auto samples = as_size(st.get_int64("samples"));
  const int width = static_cast<int>(st.get_int64("width"));
  const int height = static_cast<int>(st.get_int64("height"));
  const int resize = static_cast<int>(st.get_int64("resize"));
  const int crop = static_cast<int>(st.get_int64("crop"));
  const auto lr = static_cast<float>(st.get_float64("learning_rate"));
  if (resize > std::min(width, height) * 4)
    st.fail("resize " + std::to_string(resize) + " is over 4x the source's shorter side");
  if (crop > resize) {
    st.fail("crop " + std::to_string(crop) + " is larger than resize " + std::to_string(resize) +
            " (the crop is taken from the resized image's shorter side)");
  }
  if (samples < batch) {
    st.fail("samples " + std::to_string(samples) + " < batch " + std::to_string(batch) +
            ": the data set must hold at least one batch");
  }

  kc::mlp_shape shape;
  shape.batch = static_cast<std::int64_t>(batch);
  shape.inputs = std::int64_t{pp::channels} * crop * crop;
  shape.hidden = st.get_int64("hidden");
  shape.classes = st.get_int64("classes");

  // Threads: this host's CPUs shared by the ranks on it, unless set.
  const std::size_t here = ranks_on_this_host(comm);
  std::size_t threads = as_size(st.get_int64("threads"));
  if (threads == 0) threads = std::max<std::size_t>(allowed_cpus().size() / here, 1);
  thread_pool pool(threads, /*pin=*/here == 1);
  const kc::gemm_isa gisa = kc::best_gemm_isa(kc::gemm_dtype::fp32);

  // The data set: synthetic images (seeded by index) as quality-90 JPEGs, written once per run.
  const auto ds = pb::get_dataset(st, width, height, samples, true);
  const std::uint64_t dataset_bytes = ds->jpeg_bytes();
  const std::string dir = sb::resolve_scratch_files(
      st, "training data set",
      std::to_string(samples) + "x" + std::to_string(width) + "x" + std::to_string(height) +
          (ds->from_directory ? "@" + ds->directory : ""),
      dataset_bytes + samples * 4096,
      [&](const std::string& d) { write_files(d, *ds, st.interrupted_flag()); });
  if (!ds->from_directory) {
    st.add_warning("buffered reads of a " + ks::format_gib(dataset_bytes) +
                   " data set: after the first epoch it comes from the page cache "
                   "(storage/dataloader measures reads with O_DIRECT)");
  }

  std::unique_ptr<kc::mlp> model;
  try {
    model = std::make_unique<kc::mlp>(shape, gisa, threads, /*seed=*/1);
  } catch (const std::exception& e) {
    st.fail(e.what());
  }
  const kc::parallel_parts parallel = [&](std::size_t parts,
                                          const std::function<void(std::size_t)>& fn) {
    pool.run([&](std::size_t t) {
      for (std::size_t p = t; p < parts; p += pool.size()) fn(p);
    });
  };

  // Per-thread decode state; the transformed image goes straight into the model's input row.
  struct per_thread {
    std::optional<pp::transformer> tr;
    pb::sample_source source;
  };
  std::vector<per_thread> th(pool.size());
  pool.run([&](std::size_t t) {
    th[t].tr.emplace(pre_isa);
    th[t].source = pb::sample_source(*ds, /*jpeg=*/true);
  });
  const auto norm = pp::imagenet_normalization();

  const auto ranks = static_cast<std::size_t>(comm.size());
  const auto me = static_cast<std::size_t>(comm.rank());
  std::vector<std::vector<std::uint8_t>> files(batch);
  std::vector<std::size_t> index(batch);
  std::vector<std::int32_t> labels(batch);
  std::vector<std::size_t> order(samples);
  std::uint64_t order_epoch = ~std::uint64_t{0};
  std::uint64_t step_no = 0;
  hop_times hops;
  bool finite = true;
  float first_loss = NAN, last_loss = NAN;

  // The samples of this rank's share of global step `g`: a new random order every epoch (the
  // same on every rank), rank r taking the r-th slice of each global batch.
  const auto pick = [&](std::uint64_t g) {
    for (std::size_t i = 0; i < batch; ++i) {
      const std::uint64_t pos = (g * ranks + me) * batch + i;
      const std::uint64_t epoch = pos / samples;
      if (epoch != order_epoch) {
        std::iota(order.begin(), order.end(), std::size_t{0});
        std::shuffle(order.begin(), order.end(), std::mt19937_64(epoch + 1));
        order_epoch = epoch;
      }
      index[i] = order[pos % samples];
      labels[i] = static_cast<std::int32_t>(index[i] % as_size(shape.classes));
    }
  };
  const std::size_t image_out = as_size(shape.inputs);
  const auto spec_of = [&](std::size_t i, std::uint64_t g) {
    const auto& px = ds->samples[index[i]].pixels;
    return pb::make_spec({px.width(), px.height()}, resize, crop, "random", "random",
                         static_cast<std::size_t>(g * batch + i));
  };
  for (const auto& s : ds->samples) {  // geometry the transform cannot do: say so before timing
    try {
      (void)pb::make_spec({s.pixels.width(), s.pixels.height()}, resize, crop, "random", "random",
                          0);
    } catch (const std::exception& e) {
      st.fail(s.name + ": " + e.what());
    }
  }

  // One step. The verification step (`check`) stops after the compute, on every rank, so that
  // the GEMM outputs are checked as computed (the all-reduce would replace the local gradients).
  std::string gemm_wrong;
  const auto step = [&](bool check) {
    const std::uint64_t g = step_no++;
    pick(g);
    auto t0 = clock_type::now();
    for (std::size_t i = 0; i < batch; ++i) {
      read_file(sample_file(dir, index[i]), files[i], ds->samples[index[i]].jpeg.size());
    }
    hops.read += seconds_since(t0);

    t0 = clock_type::now();
    float* x = model->input();
    pool.run([&](std::size_t t) {
      auto& mine = th[t];
      for (std::size_t i = t; i < batch; i += pool.size()) {
        const pp::image_view src = mine.source.decode(ds->samples[index[i]], files[i]);
        mine.tr->pipeline(src, spec_of(i, g), norm, pp::dtype::f32, x + i * image_out);
      }
    });
    hops.preprocess += seconds_since(t0);

    t0 = clock_type::now();
    const float loss = model->forward_backward(labels.data(), parallel);
    hops.compute += seconds_since(t0);
    finite = finite && std::isfinite(loss);
    if (std::isnan(first_loss)) first_loss = loss;
    last_loss = loss;
    if (check) {
      gemm_wrong = model->verify_last_step(48, 7);
      return;
    }

    // A barrier first, so that waiting for the slowest rank (imbalance: a slow node, a slow
    // disk) is told apart from moving the gradients.
    t0 = clock_type::now();
    if (ranks > 1) comm.barrier();
    hops.wait += seconds_since(t0);
    t0 = clock_type::now();
    comm.allreduce_sum(model->grads(), model->param_count());
    hops.allreduce += seconds_since(t0);

    t0 = clock_type::now();
    // The all-reduce summed the ranks' batch-mean gradients: their mean is the global batch's.
    model->sgd(lr / static_cast<float>(ranks));
    hops.update += seconds_since(t0);
    ++hops.steps;
  };

  st.add_items(static_cast<double>(batch * ranks), "sample");
  st.add_bytes_read(static_cast<double>(dataset_bytes) / static_cast<double>(samples) *
                    static_cast<double>(batch * ranks));
  std::uint64_t calls = 0;
  st.exec_batched(
      [&](std::int64_t iters) {
        // The harness's first call is the warm-up (MPI sets up its large-message channels in the
        // first all-reduce, files are first read): the hop breakdown starts after it.
        if (calls++ == 1) hops = hop_times{};
        const auto t0 = clock_type::now();
        for (std::int64_t i = 0; i < iters; ++i) step(false);
        // The slowest rank's mean step, and the configuration's elapsed time on the slowest
        // rank, so that --timeout ends every rank at the same batch.
        double v[2] = {seconds_since(t0) / static_cast<double>(iters), comm.config_elapsed()};
        comm.allreduce_max(v, 2);
        if (comm.config_timeout() > 0 && v[1] > comm.config_timeout()) {
          throw std::runtime_error("timed out after " + std::to_string(static_cast<int>(v[1])) +
                                   " s on the slowest rank (--timeout)");
        }
        return v[0];
      },
      "steady_clock_batch_mean_max_over_ranks");
  if (calls < 2 || hops.steps == 0) return;  // interrupted during or right after the warm-up

  const auto per_step = [&](double total) { return 1e3 * total / static_cast<double>(hops.steps); };
  const char* sequential = " (hops run one after another; rank 0's mean over the timed steps)";
  st.add_metric("read_ms", "ms", per_step(hops.read), false,
                std::string("pread of the batch's JPEG files") + sequential);
  st.add_metric("preprocess_ms", "ms", per_step(hops.preprocess), false,
                std::string("JPEG decode + fused transform into the input tensor, ") +
                    std::to_string(pool.size()) + " threads" + sequential);
  st.add_metric("compute_ms", "ms", per_step(hops.compute), false,
                std::string("forward + backward, five GEMMs (ours, ") +
                    std::string(kc::to_string(gisa)) + ")" + sequential);
  st.add_metric("wait_ms", "ms", per_step(hops.wait), false,
                std::string("MPI_Barrier before the all-reduce: waiting for the slowest rank "
                            "(0 in a single process)") +
                    sequential);
  st.add_metric("allreduce_ms", "ms", per_step(hops.allreduce), false,
                "MPI_Allreduce (sum) of " + std::to_string(model->param_count()) +
                    " fp32 gradients across " + std::to_string(ranks) + " rank(s)" + sequential);
  st.add_metric("update_ms", "ms", per_step(hops.update), false,
                std::string("SGD update of the parameters") + sequential);
  st.add_metric("compute_gflops", "GFLOP/s",
                kc::mlp_step_flops(shape) / (hops.compute / static_cast<double>(hops.steps)) / 1e9,
                true, "flops of the five GEMMs / compute time, rank 0");
  const double total =
      hops.read + hops.preprocess + hops.compute + hops.wait + hops.allreduce + hops.update;
  const std::pair<const char*, double> parts[] = {
      {"read", hops.read},           {"preprocess", hops.preprocess},
      {"compute", hops.compute},     {"wait for the slowest rank", hops.wait},
      {"allreduce", hops.allreduce}, {"update", hops.update}};
  const auto* top =
      std::max_element(std::begin(parts), std::end(parts),
                       [](const auto& a, const auto& b) { return a.second < b.second; });
  st.add_metric("limiting_hop_percent", "%", total > 0 ? 100 * top->second / total : 0, false,
                std::string("share of the step taken by its slowest hop, here ") + top->first,
                infrabench::metric_role::information);

  // ---- verification (untimed) --------------------------------------------------------------
  step(true);
  st.check(gemm_wrong.empty(), "rank " + std::to_string(me) + ": " + gemm_wrong);
  // The loss is not a performance metric (compare would gate on it): it is checked, not reported.
  st.check(finite && std::isfinite(first_loss) && std::isfinite(last_loss),
           "rank " + std::to_string(me) + ": a step's loss was not finite (first " +
               std::to_string(first_loss) + ", last " + std::to_string(last_loss) + ")");
  {
    const std::size_t i = batch - 1;
    const auto& s = ds->samples[index[i]];
    pp::image decoded(s.pixels.width(), s.pixels.height());
    th[0].source.codec()->decode(files[i], decoded.span());
    std::vector<float> expect(image_out);
    pp::pipeline_unfused(pp::isa::scalar, decoded.view(), spec_of(i, step_no - 1), norm,
                         pp::dtype::f32, expect.data());
    st.check(
        std::memcmp(expect.data(), model->input() + i * image_out, image_out * sizeof(float)) == 0,
        "rank " + std::to_string(me) + ": " + s.name +
            ": the transformed input differs from the unfused scalar stages");
  }
  // Identical parameters on every rank: MAX of (h, -h) over ranks gives max and -min of h.
  double sum = 0, weighted = 0;
  for (std::size_t i = 0; i < model->param_count(); ++i) {
    sum += model->params()[i];
    weighted += model->params()[i] * static_cast<double>(i % 1021 + 1);
  }
  double h[4] = {sum, -sum, weighted, -weighted};
  comm.allreduce_max(h, 4);
  st.check(h[0] == -h[1] && h[2] == -h[3],
           "the ranks' parameters differ after training: the gradients were not all-reduced "
           "consistently");
}

// The data set (pixels + JPEGs, held by the data set cache), the model (parameters, gradients,
// W1 packed by the GEMM plans) and the input tensor.
[[nodiscard]] std::int64_t step_memory(const config& cfg) {
  const std::int64_t samples = config_int64(cfg, "samples", 256);
  const std::int64_t w = config_int64(cfg, "width", 500), h = config_int64(cfg, "height", 375);
  const std::int64_t crop = config_int64(cfg, "crop", 224), batch = config_int64(cfg, "batch", 32);
  const std::int64_t hidden = config_int64(cfg, "hidden", 64);
  const std::int64_t inputs = 3 * crop * crop;
  return samples * w * h * 4 + 4 * (3 * inputs * hidden + 4 * batch * inputs) + (64 << 20);
}

INFRABENCH_REGISTER(training_step, "training/step")
    .describe(
        "a data-parallel training step through every hop: read JPEG files, decode + transform, "
        "MLP forward/backward (our GEMM), gradient all-reduce (MPI), SGD; samples/s and the time "
        "of each hop")
    .require(turbojpeg_req)
    .scope(rank_scope::collective)
    .add_string_axis("isa", {"auto"}, pb::isa_axis())
    .add_int64_axis("threads", {0},
                    infrabench::int_axis(
                        "threads per rank (0 = this host's CPUs shared by its ranks)", 0, 4096))
    .add_int64_axis("batch", {32}, infrabench::int_axis("samples per rank per step", 1, 4096))
    .add_int64_axis("samples", {256},
                    infrabench::int_axis("JPEG files in the scratch data set (per rank)", 1,
                                         1 << 20))
    .add_int64_axis("width", {500}, pb::width_axis())
    .add_int64_axis("height", {375}, pb::height_axis())
    .add_int64_axis("resize", {256}, pb::resize_axis())
    .add_int64_axis("crop", {224}, pb::crop_axis())
    .add_int64_axis("hidden", {64},
                    infrabench::int_axis("hidden units of the perceptron", 1, 1 << 16))
    .add_int64_axis("classes", {10}, infrabench::int_axis("output classes", 2, 1 << 16))
    .add_float64_axis("learning_rate", {0.01}, infrabench::float_axis("SGD learning rate", 0, 10))
    .memory_estimate(step_memory);

}  // namespace
}  // namespace infrabench::training_bench
