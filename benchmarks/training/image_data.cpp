#include "image_data.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <span>

#include "shared/storage_scratch.h"
#include "storage/target.h"

namespace infrabench::training_bench {

namespace {

namespace ks = infrabench::kernels::storage;
namespace pb = infrabench::preprocess_bench;
namespace sb = infrabench::storage_bench;

// ImageNet-like sources: the preprocessing benchmarks' default size.
constexpr int source_width = 500, source_height = 375;

[[nodiscard]] std::string sample_file(const std::string& dir, std::size_t i) {
  char name[48];
  std::snprintf(name, sizeof(name), "/sample_%06zu.jpg", i);
  return dir + name;
}

// The files of each scratch directory this process wrote: the scratch cache hands a later
// configuration of the same data set only the directory.
struct written_sets {
  std::mutex lock;
  std::map<std::string, std::vector<ks::created_file>> files;  // by directory
};
written_sets& written() {
  static written_sets w;
  return w;
}

// Writes the data set's JPEGs as new files (O_EXCL: never over anything) in the new scratch
// directory `dir`, each on the device and out of the page cache. Throws ks::storage_error with
// the file and the reason (a full disk, say).
void write_files(const std::string& dir, const pb::dataset& ds, const std::atomic<bool>* cancel) {
  std::vector<ks::created_file> made;
  for (std::size_t i = 0; i < ds.samples.size(); ++i) {
    if (cancel != nullptr && cancel->load()) throw ks::storage_error("interrupted while writing");
    made.push_back(
        ks::write_new_file(sample_file(dir, i), std::as_bytes(std::span(ds.samples[i].jpeg))));
  }
  const std::lock_guard<std::mutex> hold(written().lock);
  written().files[dir] = std::move(made);
}

// Reads the whole file into `out`, then drops its pages from the page cache: every read of a
// sample goes to the device, as on a node whose data set is larger than its memory (the storage
// hop is the device's, and a block-I/O throttle sees every read). Throws ks::storage_error.
void read_file(const ks::created_file& f, std::vector<std::uint8_t>& out, std::size_t expect) {
  const std::string& path = f.path();
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
  const bool dropped = ks::drop_cached_pages(f, fd);
  ::close(fd);
  if (!dropped) {
    throw ks::storage_error(path + " is no longer the file this run wrote (replaced since)");
  }
}

// The channel with the largest mean: a property of the whole picture that crops and flips keep.
[[nodiscard]] std::int32_t dominant_channel(const pp::image& img) {
  double sum[3] = {0, 0, 0};
  const auto v = img.view();
  for (int y = 0; y < v.height; ++y) {
    const std::uint8_t* row = v.data + static_cast<std::ptrdiff_t>(y) * v.stride;
    for (int x = 0; x < v.width; ++x) {
      for (int c = 0; c < 3; ++c) sum[c] += row[3 * x + c];
    }
  }
  return static_cast<std::int32_t>(std::max_element(sum, sum + 3) - sum);
}

}  // namespace

struct image_source::per_thread {
  std::optional<pp::transformer> tr;
  pb::sample_source source;
};

image_source::image_source(state& st, std::size_t samples, int crop, int rank, int ranks,
                           pp::isa isa)
    : m_crop(crop),
      m_resize(static_cast<int>(std::lround(crop * 256.0 / 224.0))),
      m_rank(rank),
      m_ranks(ranks),
      m_isa(isa) {
  m_ds = pb::get_dataset(st, source_width, source_height, samples, true);
  for (const auto& s : m_ds->samples) {  // geometry the transform cannot do: say so first
    try {
      (void)pb::make_spec({s.pixels.width(), s.pixels.height()}, m_resize, m_crop, "random",
                          "random", 0);
    } catch (const std::exception& e) {
      st.fail(s.name + ": " + e.what());
    }
    m_labels_of.push_back(dominant_channel(s.pixels));
  }
  m_dir = sb::resolve_scratch_files(
      st, "training data set",
      std::to_string(samples) + "x" + std::to_string(source_width) + "x" +
          std::to_string(source_height) + (m_ds->from_directory ? "@" + m_ds->directory : ""),
      m_ds->jpeg_bytes() + samples * 4096,
      [&](const std::string& d) { write_files(d, *m_ds, st.interrupted_flag()); });
  {
    const std::lock_guard<std::mutex> hold(written().lock);
    m_created = &written().files.at(m_dir);  // map nodes stay put
  }
  m_order.resize(m_ds->samples.size());
}

image_source::~image_source() = default;

void image_source::pick(std::uint64_t step, int batch) {
  // A new random order every epoch (the same on every rank); rank r takes the r-th slice of
  // each global batch.
  const std::size_t n = m_order.size();
  m_index.resize(static_cast<std::size_t>(batch));
  for (int i = 0; i < batch; ++i) {
    const std::uint64_t pos =
        (step * static_cast<std::uint64_t>(m_ranks) + static_cast<std::uint64_t>(m_rank)) *
            static_cast<std::uint64_t>(batch) +
        static_cast<std::uint64_t>(i);
    const std::uint64_t epoch = pos / n;
    if (epoch != m_order_epoch) {
      std::iota(m_order.begin(), m_order.end(), std::size_t{0});
      std::shuffle(m_order.begin(), m_order.end(), std::mt19937_64(epoch + 1));
      m_order_epoch = epoch;
    }
    m_index[static_cast<std::size_t>(i)] = m_order[pos % n];
  }
}

pp::transform_spec image_source::spec_of(std::size_t index, std::uint64_t step, int i) const {
  const auto& px = m_ds->samples[index].pixels;
  return pb::make_spec({px.width(), px.height()}, m_resize, m_crop, "random", "random",
                       static_cast<std::size_t>(step * 1000003 + static_cast<std::uint64_t>(i)));
}

void image_source::produce(std::uint64_t step, int batch, float* images, std::int32_t* labels,
                           thread_pool& pool) {
  if (m_threads.size() != pool.size()) {
    m_threads.clear();
    for (std::size_t t = 0; t < pool.size(); ++t)
      m_threads.push_back(std::make_unique<per_thread>());
    pool.run([&](std::size_t t) {  // each thread's decoder and buffers, first touched there
      m_threads[t]->tr.emplace(m_isa);
      m_threads[t]->source = pb::sample_source(*m_ds, /*jpeg=*/true);
    });
  }
  pick(step, batch);
  m_files.resize(static_cast<std::size_t>(batch));
  const auto norm = pp::imagenet_normalization();
  const std::size_t out = static_cast<std::size_t>(pp::channels) * m_crop * m_crop;
  pool.run([&](std::size_t t) {
    auto& mine = *m_threads[t];
    for (std::size_t i = t; i < static_cast<std::size_t>(batch); i += pool.size()) {
      const auto& s = m_ds->samples[m_index[i]];
      read_file((*m_created)[m_index[i]], m_files[i], s.jpeg.size());
      const pp::image_view src = mine.source.decode(s, m_files[i]);
      mine.tr->pipeline(src, spec_of(m_index[i], step, static_cast<int>(i)), norm, pp::dtype::f32,
                        images + i * out);
      labels[i] = m_labels_of[m_index[i]];
    }
  });
}

std::string image_source::verify(std::uint64_t step, int batch, int i, const float* images) {
  pick(step, batch);
  const std::size_t idx = m_index[static_cast<std::size_t>(i)];
  const auto& s = m_ds->samples[idx];
  std::vector<std::uint8_t> file;
  read_file((*m_created)[idx], file, s.jpeg.size());
  pp::image decoded(s.pixels.width(), s.pixels.height());
  pb::sample_source src(*m_ds, true);
  src.codec()->decode(file, decoded.span());
  const std::size_t out = static_cast<std::size_t>(pp::channels) * m_crop * m_crop;
  std::vector<float> expect(out);
  pp::pipeline_unfused(pp::isa::scalar, decoded.view(), spec_of(idx, step, i),
                       pp::imagenet_normalization(), pp::dtype::f32, expect.data());
  if (std::memcmp(expect.data(), images + static_cast<std::size_t>(i) * out, out * sizeof(float)) ==
      0) {
    return {};
  }
  return s.name + ": the transformed input differs from the unfused scalar stages";
}

std::string image_source::describe() const {
  return std::to_string(m_ds->samples.size()) + " JPEG files (" +
         (m_ds->from_directory
              ? m_ds->directory
              : std::to_string(source_width) + "x" + std::to_string(source_height) + " synthetic") +
         "), pread from the device (each file's pages dropped after it is read) + libjpeg-turbo "
         "decode + fused resize " +
         std::to_string(m_resize) + " -> crop " + std::to_string(m_crop) +
         " -> flip -> normalise -> CHW (" + std::string(pp::to_string(m_isa)) + ")";
}

std::uint64_t image_source::bytes_per_sample() const {
  return m_ds->jpeg_bytes() / std::max<std::size_t>(1, m_ds->samples.size());
}

}  // namespace infrabench::training_bench
