#include "shared/preprocess_data.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <variant>

#include "cpu/preprocess/jpeg.h"
#include "cpu/preprocess/synthetic.h"
#include "infrabench/cli_extension.h"
#include "infrabench/error.h"
#include "infrabench/options.h"
#include "infrabench/result.h"

namespace infrabench::preprocess_bench {

namespace {

INFRABENCH_RUN_OPTION(jpeg_dir_option, "jpeg-dir", "",
                      "preprocess/*: decode the JPEG files of this directory (sorted by name, "
                      "cycled to fill a batch) instead of synthetic images");

// The issue's `--isa scalar|avx2|avx512`: the same as -a isa=... on preprocess/* (which wins is
// not guessed: giving both is refused), so the report's axes say which kernels ran.
INFRABENCH_AXIS_OPTION(isa_option, "isa", "preprocess/",
                       "preprocess/*: kernel variant(s), auto|scalar|avx2|avx512[,...]; the same "
                       "as -a isa=... for these benchmarks (not both)");

constexpr int jpeg_quality = 90;

// The .jpg/.jpeg regular files of `dir`, sorted by name; throws (naming --jpeg-dir) when it is not
// a readable directory or has none.
template <typename Error>
std::vector<std::filesystem::path> jpeg_files(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw Error("--jpeg-dir " + dir + ": " +
                (fs::exists(dir, ec) ? "not a directory" : "no such directory"));
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file()) continue;
    auto ext = e.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (ext == ".jpg" || ext == ".jpeg") files.push_back(e.path());
  }
  if (ec) throw Error("--jpeg-dir " + dir + ": " + ec.message());
  if (files.empty()) throw Error("--jpeg-dir " + dir + ": no .jpg or .jpeg files");
  std::sort(files.begin(), files.end());
  return files;
}

// A --jpeg-dir that cannot give images is bad input, refused (exit 2) before anything runs rather
// than failing every preprocess configuration after the rest ran.
[[maybe_unused]] const bool jpeg_dir_checked = register_pre_run_hook([](const option_values& o) {
  const auto it = o.find("jpeg-dir");
  if (it != o.end() && !it->second.empty()) (void)jpeg_files<user_error>(it->second);
});

[[nodiscard]] nlohmann::json to_json(const axis_value& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return *i;
  if (const auto* d = std::get_if<double>(&v)) return *d;
  return std::get<std::string>(v);
}

struct dataset_key {
  int width = 0, height = 0;
  std::size_t count = 0;
  bool with_jpeg = false;
  std::string directory;
  bool operator==(const dataset_key&) const = default;
};

std::shared_ptr<const dataset> build_synthetic(int width, int height, std::size_t count,
                                               bool with_jpeg) {
  auto ds = std::make_shared<dataset>();
  ds->samples.resize(count);
  std::unique_ptr<pp::jpeg_codec> codec;
  if (with_jpeg && pp::jpeg_support().available) codec = std::make_unique<pp::jpeg_codec>();
  for (std::size_t i = 0; i < count; ++i) {
    auto& s = ds->samples[i];
    s.name = "synthetic #" + std::to_string(i);
    s.pixels = pp::image(width, height);
    pp::fill_synthetic(s.pixels.span(), 1000 + i);
    if (codec) s.jpeg = codec->encode(s.pixels.view(), jpeg_quality);
  }
  return ds;
}

std::shared_ptr<const dataset> build_from_directory(const std::string& dir, std::size_t count) {
  namespace fs = std::filesystem;
  if (!pp::jpeg_support().available) {
    throw std::runtime_error("--jpeg-dir: " + pp::jpeg_support().reason);
  }
  // Checked before the run too; the directory may have changed since.
  const std::vector<fs::path> files = jpeg_files<std::runtime_error>(dir);
  auto ds = std::make_shared<dataset>();
  ds->from_directory = true;
  ds->directory = dir;
  pp::jpeg_codec codec;
  const std::size_t distinct = std::min(count, files.size());
  ds->samples.resize(count);
  for (std::size_t i = 0; i < distinct; ++i) {
    auto& s = ds->samples[i];
    s.name = "sample " + std::to_string(i) + " (" + files[i].string() + ")";
    std::ifstream in(files[i], std::ios::binary);
    if (!in) throw std::runtime_error(s.name + ": cannot open");
    s.jpeg.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    // Decode once now: a corrupt file fails the configuration here, named, before timing.
    try {
      const auto size = codec.peek(s.jpeg);
      s.pixels = pp::image(size.width, size.height);
      codec.decode(s.jpeg, s.pixels.span());
    } catch (const std::exception& e) {
      throw std::runtime_error(s.name + ": " + e.what());
    }
  }
  for (std::size_t i = distinct; i < count; ++i) {  // cycle: the same bytes again
    auto& s = ds->samples[i];
    const auto& from = ds->samples[i % distinct];
    s.name = from.name;
    s.jpeg = from.jpeg;
    s.pixels = pp::image(from.pixels.width(), from.pixels.height());
    std::copy_n(from.pixels.data(), from.pixels.bytes(), s.pixels.data());
  }
  return ds;
}

// The last data set built, kept for the configurations that follow (they usually ask for the
// same one); a different request replaces it, so at most one is held.
std::mutex cache_mutex;
dataset_key cached_key;
std::shared_ptr<const dataset> cached;

std::shared_ptr<const dataset> cached_or_build(const dataset_key& key) {
  std::lock_guard lock(cache_mutex);
  if (cached && cached_key == key) return cached;
  cached.reset();  // free the old one first
  cached = key.directory.empty() ? build_synthetic(key.width, key.height, key.count, key.with_jpeg)
                                 : build_from_directory(key.directory, key.count);
  cached_key = key;
  return cached;
}

}  // namespace

// ---- axes --------------------------------------------------------------------------------------

axis_options isa_axis() {
  return infrabench::choice_axis(
      "kernel variant: auto = the widest this CPU has; one it lacks is skipped with the reason",
      {"auto", "scalar", "avx2", "avx512"});
}
axis_options threads_axis() {
  return infrabench::thread_count_axis(
      "pinned worker threads, images split across them (0 = all CPUs)");
}
axis_options batch_axis() {
  return infrabench::int_axis("images per call", 1, 1 << 16);
}
axis_options width_axis() {
  return infrabench::int_axis("source width (default: the ImageNet mean, 500x375)", 1, 1 << 14);
}
axis_options height_axis() {
  return infrabench::int_axis("source height", 1, 1 << 14);
}
axis_options resize_axis() {
  return infrabench::int_axis("shorter side after the resize", 1, 1 << 14);
}
axis_options crop_axis() {
  return infrabench::int_axis("output size: a square crop of the resized image", 1, 1 << 14);
}
axis_options stores_axis() {
  return infrabench::choice_axis(
      "output stores: regular, or non-temporal (streaming: no write-allocate read, "
      "output kept out of the caches)",
      {"regular", "nontemporal"});
}
axis_options dtype_axis() {
  return infrabench::choice_axis("output element type", {"f32", "bf16", "f16"});
}

pp::isa resolve_isa(state& st) {
  const std::string& name = st.get_string("isa");
  if (name == "auto") {
    // Which kernels "auto" ran depends on the CPU (and INFRABENCH_CPU_DISABLE): say it where the
    // axis is shown, so two reports from different machines can be told apart.
    const pp::isa best = pp::best_isa();
    st.set_axis_display("isa", "auto (" + std::string(pp::to_string(best)) + ")");
    return best;
  }
  const auto i = pp::parse_isa(name);
  if (!i) st.fail("unknown isa " + name);  // the axis choices prevent it
  if (const auto why = pp::isa_unsupported_reason(*i); !why.empty()) st.skip(why);
  return *i;
}

// ---- data set ----------------------------------------------------------------------------------

std::size_t dataset::jpeg_bytes() const {
  std::size_t n = 0;
  for (const auto& s : samples) n += s.jpeg.size();
  return n;
}

std::size_t dataset::pixel_bytes() const {
  std::size_t n = 0;
  for (const auto& s : samples) n += s.pixels.bytes();
  return n;
}

pp::size2d dataset::max_size() const {
  pp::size2d m{1, 1};
  for (const auto& s : samples) {
    m.width = std::max(m.width, s.pixels.width());
    m.height = std::max(m.height, s.pixels.height());
  }
  return m;
}

std::shared_ptr<const dataset> get_dataset(state& st, int width, int height, std::size_t count,
                                           bool with_jpeg) {
  dataset_key key{width, height, count, with_jpeg, st.option("jpeg-dir")};
  auto ds = cached_or_build(key);
  if (ds->from_directory) {
    const auto m = ds->max_size();
    st.add_warning("images from --jpeg-dir " + ds->directory + " (largest " +
                   std::to_string(m.width) + "x" + std::to_string(m.height) +
                   "): the width and height axes do not apply");
  }
  return ds;
}

std::shared_ptr<const dataset> get_synthetic(int width, int height, std::size_t count) {
  return cached_or_build(dataset_key{width, height, count, false, ""});
}

pp::transform_spec make_spec(pp::size2d src, int resize, int crop, const std::string& crop_mode,
                             const std::string& flip, std::size_t index) {
  pp::transform_spec spec;
  spec.resize = pp::shorter_side_to(src, resize);
  const pp::size2d c{crop, crop};
  spec.crop = crop_mode == "random" ? pp::random_crop(spec.resize, c, index * 7919 + 17)
                                    : pp::center_crop(spec.resize, c);
  spec.flip = flip == "always" || (flip == "random" && pp::random_flip(index * 104729 + 3));
  return spec;
}

std::vector<pp::transform_spec> make_specs(state& st, const dataset& ds, int resize, int crop) {
  const std::string crop_mode = st.get_string("crop_mode"), flip = st.get_string("flip");
  std::vector<pp::transform_spec> spec(ds.samples.size());
  for (std::size_t i = 0; i < spec.size(); ++i) {
    const auto& px = ds.samples[i].pixels;
    try {
      spec[i] = make_spec({px.width(), px.height()}, resize, crop, crop_mode, flip, i);
    } catch (const std::exception& e) {
      st.fail(ds.samples[i].name + ": " + e.what());
    }
  }
  return spec;
}

// ---- the pipelines' input ----------------------------------------------------------------------

sample_source::sample_source(const dataset& ds, bool jpeg) {
  if (!jpeg) return;
  m_codec = std::make_unique<pp::jpeg_codec>();
  const auto max = ds.max_size();
  m_decoded = pp::image(max.width, max.height);
}

pp::image_view sample_source::pixels(const sample& s) {
  return m_codec ? decode(s, s.jpeg) : s.pixels.view();
}

pp::image_view sample_source::decode(const sample& s, const std::vector<std::uint8_t>& jpeg) {
  const pp::image_span d{m_decoded.data(), s.pixels.width(), s.pixels.height(),
                         std::ptrdiff_t{s.pixels.width()} * pp::channels};
  try {
    m_codec->decode(jpeg, d);
  } catch (const std::exception& e) {
    throw std::runtime_error(s.name + ": " + e.what());
  }
  return d.view();
}

pp::image reference_pixels(const sample& s, pp::jpeg_codec* codec) {
  pp::image decoded(s.pixels.width(), s.pixels.height());
  if (codec != nullptr) {
    codec->decode(s.jpeg, decoded.span());
  } else {
    std::memcpy(decoded.data(), s.pixels.data(), s.pixels.bytes());
  }
  return decoded;
}

std::int64_t pipeline_memory(const config& cfg) {
  const std::int64_t batch = config_int64(cfg, "batch", 32);
  const std::int64_t w = config_int64(cfg, "width", 500), h = config_int64(cfg, "height", 375);
  const std::int64_t crop = config_int64(cfg, "crop", 224);
  return 2 * batch * (w * h * 3 + crop * crop * 3 * 4) + (64 << 20);
}

pipeline_batch make_pipeline_batch(state& st, std::size_t batch, bool jpeg, pp::dtype dtype) {
  pipeline_batch b;
  b.batch = batch;
  b.ds = get_dataset(st, static_cast<int>(st.get_int64("width")),
                     static_cast<int>(st.get_int64("height")), batch, jpeg);
  const int crop = static_cast<int>(st.get_int64("crop"));
  b.spec = make_specs(st, *b.ds, static_cast<int>(st.get_int64("resize")), crop);
  b.image_out = static_cast<std::size_t>(crop) * crop * pp::channels * pp::element_size(dtype);
  b.out = pp::aligned_buffer(b.image_out * batch);
  b.w = {static_cast<double>(batch),
         static_cast<double>(jpeg ? b.ds->jpeg_bytes() : b.ds->pixel_bytes()),
         static_cast<double>(b.image_out * batch)};
  return b;
}

void pipeline_batch::touch(std::size_t t, std::size_t workers) {
  for (std::size_t i = t; i < batch; i += workers) std::memset(image(i), 0, image_out);
}

// ---- metrics -----------------------------------------------------------------------------------

void declare(state& st, const work& w) {
  st.add_items(w.images, "image");
  st.add_bytes_read(w.bytes_in);
  st.add_bytes_written(w.bytes_out);
}

std::vector<metric_decl> stage_metrics(bool roofline) {
  std::vector<metric_decl> out = derived_item_metrics("image");
  out.front().headline = true;
  // The byte rates and the per-thread rate are views of the one timing images_per_s carries.
  const metric_relation one_timing{relation_kind::view_of, "images_per_s"};
  out.push_back(derived_metric(work_kind::bytes));
  out.back().relation = one_timing;
  out.push_back({"input_gbps", "GB/s"});
  out.back().relation = one_timing;
  out.push_back({"output_gbps", "GB/s"});
  out.back().relation = one_timing;
  out.push_back({"images_per_s_per_thread", "images/s"});
  out.back().relation = {relation_kind::per_thread_of, "images_per_s"};
  out.push_back({"speedup_vs_scalar", "x", better::higher, metric_role::information});
  if (roofline) {
    out.push_back(
        {"memory_bandwidth_fraction", "fraction", better::higher, metric_role::information});
    out.back().relation = {relation_kind::fraction_of, "bandwidth/host_memory bandwidth_gbps"};
  }
  return out;
}

double images_per_s(const result* r) {
  if (r == nullptr || r->st != status::passed) return 0;
  for (const auto& m : r->metrics) {
    if (m.name == "images_per_s") return m.value;
  }
  return 0;
}

void add_derived_metrics(state& st, const std::string& name, const work& w, std::size_t threads,
                         bool roofline) {
  const double t = st.partial_result().time.median;
  if (!(t > 0)) return;
  st.add_metric("input_gbps", "GB/s", w.bytes_in / t / 1e9, true,
                "bytes read per call (source images) / median time per call");
  st.add_metric("output_gbps", "GB/s", w.bytes_out / t / 1e9, true,
                "bytes written per call (results) / median time per call");
  st.add_metric("images_per_s_per_thread", "images/s", w.images / t / static_cast<double>(threads),
                true, "images/s divided by the number of worker threads");

  // Speed-up over the scalar reference measured earlier in this run with the same other axes.
  const auto& cfg = st.get_config();
  const bool has_isa =
      std::any_of(cfg.begin(), cfg.end(), [](const auto& a) { return a.first == "isa"; });
  if (has_isa && st.get_string("isa") != "scalar") {
    nlohmann::json axes = nlohmann::json::object();
    for (const auto& [axis, value] : st.get_config()) axes[axis] = to_json(value);
    axes["isa"] = "scalar";
    const double scalar = images_per_s(st.find_earlier(name, axes));
    if (scalar > 0) {
      st.add_metric(
          "speedup_vs_scalar", "x", w.images / t / scalar, true,
          "images/s / images/s of isa=scalar with the same other axes, earlier in this run",
          infrabench::metric_role::information);
    }
  }

  if (roofline) {
    // The ceiling: the best STREAM copy with the same thread count this run measured, over
    // its variants (isa, regular or non-temporal stores).
    double best = 0;
    for (const char* isa : {"auto", "avx512", "avx2", "sse2", "scalar"}) {
      for (const char* stores : {"regular", "nontemporal"}) {
        const nlohmann::json axes = {{"kernel", "copy"},
                                     {"threads", st.get_int64("threads")},
                                     {"isa", isa},
                                     {"stores", stores}};
        const result* copy = st.find_earlier("bandwidth/host_memory", axes);
        if (copy == nullptr || copy->st != status::passed) continue;
        for (const auto& m : copy->metrics) {
          if (m.name == "bandwidth_gbps") best = std::max(best, m.value);
        }
      }
    }
    if (best > 0) {
      st.add_metric("memory_bandwidth_fraction", "fraction",
                    (w.bytes_in + w.bytes_out) / t / 1e9 / best, true,
                    "(bytes read + written) / median time, over the best bandwidth_gbps of "
                    "bandwidth/host_memory kernel=copy with the same threads earlier in this run "
                    "(STREAM counting in both: write-allocate traffic not included)",
                    infrabench::metric_role::information);
    } else {
      // Say how to get the roofline rather than leave the metric silently missing.
      st.add_warning("no memory_bandwidth_fraction: bandwidth/host_memory kernel=copy threads=" +
                     std::to_string(st.get_int64("threads")) +
                     " did not pass earlier in this run (add it, e.g. --filter "
                     "'^(bandwidth/host_memory|preprocess/)' -a kernel=copy)");
    }
  }
}

}  // namespace infrabench::preprocess_bench
