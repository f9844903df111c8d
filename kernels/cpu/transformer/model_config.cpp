#include "cpu/transformer/model_config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace infrabench::kernels::transformer {

namespace {

model_config gpt2(std::string name, int layers, int width, int heads, int vocab, int max_seq) {
  model_config c;
  c.name = std::move(name);
  c.family = model_family::gpt2;
  c.layers = layers;
  c.width = width;
  c.heads = heads;
  c.vocab = vocab;
  c.max_seq = max_seq;
  return c;
}

model_config vit(std::string name, int layers, int width, int heads, int image, int patch,
                 int classes) {
  model_config c;
  c.name = std::move(name);
  c.family = model_family::vit;
  c.layers = layers;
  c.width = width;
  c.heads = heads;
  c.image = image;
  c.patch = patch;
  c.classes = classes;
  return c;
}

// GPT-2's vocabulary (50257) padded to a multiple of 128, as llm.c and nanoGPT do, so the head's
// GEMM tiles evenly; the padded entries are never a target and learn to be unlikely.
constexpr int gpt2_vocab = 50304;

const std::vector<model_config>& presets() {
  static const std::vector<model_config> all = {
      gpt2("gpt2-tiny", 2, 64, 4, 512, 64),
      gpt2("gpt2-124m", 12, 768, 12, gpt2_vocab, 1024),
      gpt2("gpt2-350m", 24, 1024, 16, gpt2_vocab, 1024),
      vit("vit-tiny", 2, 64, 4, 32, 8, 10),
      vit("vit-b16", 12, 768, 12, 224, 16, 1000),
  };
  return all;
}

void add(param_layout& p, std::string name, std::vector<std::int64_t> shape, bool matmul) {
  tensor_info t;
  t.name = std::move(name);
  t.offset = p.total;
  t.size = 1;
  for (auto d : shape) t.size *= static_cast<std::size_t>(d);
  t.shape = std::move(shape);
  t.decay = t.shape.size() == 2;
  t.matmul = matmul;
  p.total += t.size;
  p.tensors.push_back(std::move(t));
}

// The input side's tensors: GPT-2's token and position embeddings, ViT's patch embedding.
void add_embeddings(param_layout& p, const model_config& c, std::int64_t d) {
  if (c.family == model_family::gpt2) {
    p.wte = p.total;
    add(p, "wte", {c.vocab, d}, true);  // also the output head (tied)
    p.wpe = p.total;
    add(p, "wpe", {c.max_seq, d}, false);
  } else {
    const std::int64_t pp = std::int64_t{c.channels} * c.patch * c.patch;
    p.patchw = p.total;
    add(p, "patch.weight", {d, pp}, true);
    p.patchb = p.total;
    add(p, "patch.bias", {d}, false);
    p.cls = p.total;
    add(p, "cls", {d}, false);
    p.pos = p.total;
    add(p, "pos", {c.seq_limit(), d}, false);
  }
}

// One transformer block's tensors, appended in the order the offsets are laid out.
void add_block(param_layout& p, int l, std::int64_t d) {
  const std::string h = "h" + std::to_string(l) + ".";
  p.block_begin.push_back(p.total);
  block_offsets b{};
  b.ln1w = p.total;
  add(p, h + "ln1.weight", {d}, false);
  b.ln1b = p.total;
  add(p, h + "ln1.bias", {d}, false);
  b.qkvw = p.total;
  add(p, h + "qkv.weight", {3 * d, d}, true);
  b.qkvb = p.total;
  add(p, h + "qkv.bias", {3 * d}, false);
  b.projw = p.total;
  add(p, h + "proj.weight", {d, d}, true);
  b.projb = p.total;
  add(p, h + "proj.bias", {d}, false);
  b.ln2w = p.total;
  add(p, h + "ln2.weight", {d}, false);
  b.ln2b = p.total;
  add(p, h + "ln2.bias", {d}, false);
  b.fcw = p.total;
  add(p, h + "fc.weight", {4 * d, d}, true);
  b.fcb = p.total;
  add(p, h + "fc.bias", {4 * d}, false);
  b.fcprojw = p.total;
  add(p, h + "fcproj.weight", {d, 4 * d}, true);
  b.fcprojb = p.total;
  add(p, h + "fcproj.bias", {d}, false);
  p.blocks.push_back(b);
}

// Offsets into the activation buffer (aligned) and the fp32 statistics buffer (packed).
struct activation_offsets {
  std::size_t n = 0, s = 0;
  // Every activation starts on a 256-byte boundary (128 elements): vectorised loads, and the
  // same alignment for every layer's tensors, so the GPU's GEMM library picks one algorithm.
  std::size_t take(std::size_t count) {
    const std::size_t at = (n + 127) / 128 * 128;
    n = at + count;
    return at;
  }
  std::size_t stat(std::size_t count) {
    const std::size_t at = s;
    s += count;
    return at;
  }
};

// One block's forward activations and statistics.
activation_layout::layer take_layer(activation_offsets& o, std::size_t rows, std::size_t d,
                                    std::size_t att) {
  activation_layout::layer y{};
  y.ln1 = o.take(rows * d);
  y.ln1_mean = o.stat(rows);
  y.ln1_rstd = o.stat(rows);
  y.qkv = o.take(rows * 3 * d);
  y.att = o.take(att);
  y.atty = o.take(rows * d);
  y.res2 = o.take(rows * d);
  y.ln2 = o.take(rows * d);
  y.ln2_mean = o.stat(rows);
  y.ln2_rstd = o.stat(rows);
  y.fch = o.take(rows * 4 * d);
  y.fch_gelu = o.take(rows * 4 * d);
  y.res3 = o.take(rows * d);
  return y;
}

// The head's activations, then the gradient scratch every layer reuses.
void take_head_and_gradients(activation_layout& a, const model_config& c, activation_offsets& o,
                             std::size_t rows, std::size_t d, std::size_t att) {
  const std::size_t hr = static_cast<std::size_t>(a.head_rows);
  if (c.family == model_family::vit) a.head_in = o.take(hr * d);
  a.lnf = o.take(hr * d);
  a.lnf_mean = o.stat(hr);
  a.lnf_rstd = o.stat(hr);
  a.logits = o.take(hr * static_cast<std::size_t>(c.outputs()));
  a.losses = o.stat(hr);
  a.dres = o.take(rows * d);
  a.dln = o.take(rows * d);
  a.dqkv = o.take(rows * 3 * d);
  a.datt = o.take(att);
  a.datty = o.take(rows * d);
  a.dfch = o.take(rows * 4 * d);
  a.dhead_in = o.take(hr * d);
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> out;
  for (const auto& c : presets()) out.push_back(c.name);
  return out;
}

std::optional<model_config> find_preset(std::string_view name) {
  for (const auto& c : presets()) {
    if (c.name == name) return c;
  }
  return std::nullopt;
}

void check_config(const model_config& c) {
  const auto bad = [&](const std::string& why) {
    throw std::invalid_argument("model " + c.name + ": " + why);
  };
  if (c.layers < 1 || c.width < 1 || c.heads < 1) bad("layers, width and heads must be positive");
  if (c.width % c.heads != 0) bad("width is not a multiple of heads");
  if (c.family == model_family::gpt2) {
    if (c.vocab < 2 || c.vocab > 65536) bad("vocabulary must be 2..65536 (tokens are 16-bit)");
    if (c.max_seq < 1) bad("max_seq must be positive");
  } else {
    if (c.patch < 1 || c.image < c.patch || c.image % c.patch != 0)
      bad("image size must be a positive multiple of the patch size");
    if (c.classes < 2) bad("at least two classes");
    if (c.channels != 3) bad("images have 3 channels");
  }
}

int resolve_seq(const model_config& c, int seq) {
  if (c.family == model_family::vit) {
    if (seq != 0 && seq != c.seq_limit()) {
      throw std::invalid_argument("seq " + std::to_string(seq) + ": " + c.name + " sees " +
                                  std::to_string(c.seq_limit()) +
                                  " tokens per image (1 + its patches); use seq=0");
    }
    return c.seq_limit();
  }
  if (seq == 0) return c.max_seq;
  if (seq < 1 || seq > c.max_seq) {
    throw std::invalid_argument("seq " + std::to_string(seq) + " is outside 1.." +
                                std::to_string(c.max_seq) + ", the positions " + c.name +
                                " learns");
  }
  return seq;
}

const tensor_info& param_layout::find(std::string_view name) const {
  for (const auto& t : tensors) {
    if (t.name == name) return t;
  }
  throw std::out_of_range("no parameter tensor " + std::string(name));
}

param_layout make_param_layout(const model_config& c) {
  check_config(c);
  param_layout p;
  const std::int64_t d = c.width;
  add_embeddings(p, c, d);
  for (int l = 0; l < c.layers; ++l) add_block(p, l, d);
  p.block_begin.push_back(p.total);
  p.lnfw = p.total;
  add(p, "lnf.weight", {d}, false);
  p.lnfb = p.total;
  add(p, "lnf.bias", {d}, false);
  if (c.family == model_family::vit) {
    p.headw = p.total;
    add(p, "head.weight", {c.classes, d}, true);
    p.headb = p.total;
    add(p, "head.bias", {c.classes}, false);
  }
  return p;
}

activation_layout make_activation_layout(const model_config& c, int batch, int seq,
                                         attention_scores scores) {
  check_config(c);
  if (batch < 1) throw std::invalid_argument("batch must be positive");
  seq = resolve_seq(c, seq);
  activation_layout a;
  a.batch = batch;
  a.seq = seq;
  const std::size_t rows = static_cast<std::size_t>(batch) * static_cast<std::size_t>(seq);
  if (rows > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw std::invalid_argument("batch x seq is too large");
  a.rows = static_cast<int>(rows);
  a.head_rows = c.family == model_family::gpt2 ? a.rows : batch;
  const std::size_t d = static_cast<std::size_t>(c.width);
  const std::size_t att = scores == attention_scores::none
                              ? 0
                              : static_cast<std::size_t>(batch) *
                                    static_cast<std::size_t>(c.heads) *
                                    static_cast<std::size_t>(seq) * static_cast<std::size_t>(seq);
  activation_offsets o;
  a.encoded = o.take(rows * d);
  if (c.family == model_family::vit) {
    const std::size_t patch_rows = static_cast<std::size_t>(batch) * c.patches();
    a.patches = o.take(patch_rows * c.channels * c.patch * c.patch);
    a.patch_out = o.take(patch_rows * d);
  }
  for (int l = 0; l < c.layers; ++l) {
    a.layers.push_back(take_layer(o, rows, d, att));
    a.attention_elements += att;
  }
  take_head_and_gradients(a, c, o, rows, d, att);
  a.attention_elements += att;
  a.total = o.n;
  a.stats_total = o.s;
  return a;
}

std::vector<std::pair<std::size_t, std::size_t>> gradient_buckets(const param_layout& p) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const auto& b = p.block_begin;
  const std::size_t L = b.size() - 1;
  out.emplace_back(b[L], p.total);
  for (std::size_t l = L; l-- > 0;) out.emplace_back(b[l], b[l + 1]);
  out.emplace_back(0, b[0]);
  return out;
}

void init_parameters(const model_config& c, const param_layout& layout, std::uint64_t seed,
                     float* params) {
  std::uint64_t state = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  const auto next_u64 = [&] {  // splitmix64
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  const auto uniform = [&] {  // (0, 1]
    return (static_cast<double>(next_u64() >> 11) + 1.0) * (1.0 / 9007199254740992.0);
  };
  const double two_pi = 6.283185307179586;
  const auto fill_normal = [&](const tensor_info& t, double stddev) {
    for (std::size_t i = 0; i < t.size; i += 2) {
      const double r = std::sqrt(-2.0 * std::log(uniform())), a = two_pi * uniform();
      params[t.offset + i] = static_cast<float>(stddev * r * std::cos(a));
      if (i + 1 < t.size) params[t.offset + i + 1] = static_cast<float>(stddev * r * std::sin(a));
    }
  };
  const double residual_std = 0.02 / std::sqrt(2.0 * c.layers);
  for (const auto& t : layout.tensors) {
    const std::string_view n = t.name;
    const bool ln_weight =
        n.ends_with("ln1.weight") || n.ends_with("ln2.weight") || n == "lnf.weight";
    if (ln_weight) {
      std::fill_n(params + t.offset, t.size, 1.0f);
    } else if (t.shape.size() == 2) {
      const bool into_residual = n.ends_with("proj.weight");  // proj and fcproj
      fill_normal(t, into_residual ? residual_std : 0.02);
    } else {
      std::fill_n(params + t.offset, t.size, 0.0f);
    }
  }
}

double flops_per_token(const model_config& c, std::int64_t params, int seq) {
  return 6.0 * static_cast<double>(params) + 12.0 * c.layers * static_cast<double>(seq) * c.width;
}

std::string flops_formula_text() {
  return "model flops per token = 6 N + 12 L T d (N parameters, L layers, T sequence length, "
         "d width; attention counted over the full T x T)";
}

}  // namespace infrabench::kernels::transformer
