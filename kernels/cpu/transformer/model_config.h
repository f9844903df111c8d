// One transformer engine, two models: a GPT-2 decoder (token + learned position embeddings, causal
// attention, tied input/output embeddings) and a ViT encoder (patch embedding, class token, no
// mask, a classification head), sharing the same pre-LayerNorm blocks (LayerNorm -> multi-head
// attention -> residual, LayerNorm -> GELU MLP (4x) -> residual). This header holds what the CPU
// reference and the GPU path agree on: presets, where each parameter and activation lives in
// their single buffers (one memory plan each, made once), and the FLOP formula.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace infrabench::kernels::transformer {

enum class model_family { gpt2, vit };

struct model_config {
  std::string name;
  model_family family = model_family::gpt2;
  int layers = 2;
  int width = 64;  // d, the residual stream's channels
  int heads = 4;
  // GPT-2
  int vocab = 512;
  int max_seq = 64;  // learned positions
  // ViT: square images of `image` pixels, `patch`-pixel square patches, 3 channels
  int image = 32;
  int patch = 8;
  int channels = 3;
  int classes = 10;

  [[nodiscard]] int head_dim() const { return width / heads; }
  [[nodiscard]] bool causal() const { return family == model_family::gpt2; }
  [[nodiscard]] int patches() const { return (image / patch) * (image / patch); }
  // Tokens per sequence the model can take: GPT-2 up to max_seq; ViT exactly 1 + patches.
  [[nodiscard]] int seq_limit() const {
    return family == model_family::gpt2 ? max_seq : 1 + patches();
  }
  // Outputs of the head: the vocabulary (GPT-2) or the classes (ViT).
  [[nodiscard]] int outputs() const { return family == model_family::gpt2 ? vocab : classes; }
};

// gpt2-tiny (tests, CPU quick suite), gpt2-124m, gpt2-350m, vit-tiny (tests), vit-b16.
[[nodiscard]] std::vector<std::string> preset_names();
[[nodiscard]] std::optional<model_config> find_preset(std::string_view name);
// Throws std::invalid_argument (one line) for a configuration the engine cannot build.
void check_config(const model_config& cfg);
// The sequence length a run uses: `seq` for GPT-2 (0 = max_seq), checked against the limit;
// ViT's is fixed by the image (seq must be 0 or equal to it). Throws std::invalid_argument.
[[nodiscard]] int resolve_seq(const model_config& cfg, int seq);

// ---- parameters: one buffer
// ------------------------------------------------------------------------

struct tensor_info {
  std::string name;  // "h3.qkv.weight"
  std::size_t offset = 0;
  std::size_t size = 0;
  std::vector<std::int64_t> shape;
  bool decay = false;   // AdamW weight decay: matrices (and embeddings) yes, biases and LN no
  bool matmul = false;  // multiplies activations in a GEMM (counts in the 6N of a step)
};

// Offsets (in elements) of one block's tensors.
struct block_offsets {
  std::size_t ln1w, ln1b, qkvw, qkvb, projw, projb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb;
};

// The order is the order gradients become final in the backward pass, reversed: [embeddings |
// block 0 .. block L-1 | final LayerNorm | head]. Walking it from the end follows the backward
// pass, so gradient buckets for an all-reduce overlapped with it are contiguous ranges.
struct param_layout {
  std::vector<tensor_info> tensors;
  std::size_t total = 0;
  std::size_t wte = 0, wpe = 0;                          // GPT-2 ([V, d], [max_seq, d])
  std::size_t patchw = 0, patchb = 0, cls = 0, pos = 0;  // ViT ([d, 3PP], [d], [d], [1+P, d])
  std::vector<block_offsets> blocks;
  std::size_t lnfw = 0, lnfb = 0;
  std::size_t headw = 0, headb = 0;  // ViT ([classes, d], [classes]); GPT-2 reuses wte
  // Where block l's parameters begin (blocks.size() + 1 entries: the last is the end of the
  // blocks).
  std::vector<std::size_t> block_begin;
  [[nodiscard]] const tensor_info& find(std::string_view name) const;
};
[[nodiscard]] param_layout make_param_layout(const model_config& cfg);

// The gradient buckets of a data-parallel all-reduce overlapped with the backward pass, as
// [first, last) ranges of the parameter buffer in the order the backward finalises them: the
// final LayerNorm (with ViT's head), block L-1, ..., block 0, then the embeddings (GPT-2's wte
// last of all: the tied head adds to it first, the token embedding at the very end). Together
// they cover the buffer exactly once.
[[nodiscard]] std::vector<std::pair<std::size_t, std::size_t>> gradient_buckets(
    const param_layout& layout);

// GPT-2's initialisation, the same on every rank and device for a seed: matrices and embeddings
// normal(0, 0.02), the projections back into the residual stream (proj, fcproj) normal(0, 0.02 /
// sqrt(2 L)), biases and the class token 0, LayerNorm weights 1. The generator is our own
// (splitmix64 + Box-Muller), so the values do not depend on the standard library.
void init_parameters(const model_config& cfg, const param_layout& layout, std::uint64_t seed,
                     float* params);

// ---- activations: one buffer per element type
// --------------------------------------------------------

// Offsets into the activation buffer (element type T: fp32 on the CPU, bf16 or fp32 on the GPU)
// and the statistics buffer (always fp32: LayerNorm means and rstds, per-row losses).
struct activation_layout {
  int batch = 0, seq = 0, rows = 0;  // rows = batch * seq
  int head_rows = 0;                 // rows reaching the head: batch * seq (GPT-2), batch (ViT)
  struct layer {
    std::size_t ln1, qkv, att, atty, res2, ln2, fch, fch_gelu, res3;  // activations
    std::size_t ln1_mean, ln1_rstd, ln2_mean, ln2_rstd;               // statistics
  };
  std::size_t encoded = 0;  // the residual stream entering block 0 [rows, d]
  std::size_t patches = 0,
              patch_out = 0;  // ViT: im2col [batch * P, 3pp], patch GEMM [batch * P, d]
  std::vector<layer> layers;
  std::size_t head_in = 0;          // ViT: the class tokens' residual rows gathered [batch, d]
  std::size_t lnf = 0, logits = 0;  // [head_rows, d], [head_rows, outputs]
  std::size_t lnf_mean = 0, lnf_rstd = 0, losses = 0;  // statistics
  // Gradient scratch, reused by every layer.
  std::size_t dres = 0, dln = 0, dqkv = 0, datt = 0, datty = 0, dfch = 0, dhead_in = 0;
  std::size_t total = 0;        // elements of type T
  std::size_t stats_total = 0;  // fp32 elements
  // The attention matrices (one [seq, seq] per batch row and head per layer): the term that
  // grows with seq^2 and dominates memory at long sequences.
  std::size_t attention_elements = 0;
};
// Whether the plan holds the [seq, seq] attention matrices (att per layer, datt): materialised
// attention writes them; fused (flash) attention never does, and planning them for it cost
// B x H x T^2 per layer plus the gradient's unused (issue 38: ~5 GiB for GPT-2 124M at B16).
enum class attention_scores { planned, none };
[[nodiscard]] activation_layout make_activation_layout(
    const model_config& cfg, int batch, int seq,
    attention_scores scores = attention_scores::planned);

// ---- work
// ------------------------------------------------------------------------------------------

// Model FLOPs per token of a training step (forward + backward): 6 N + 12 L T d, N the parameter
// count, L layers, T the attended sequence length, d the width (the PaLM / llm.c convention: 2N
// forward, 4N backward; attention's QK^T and PV counted over the full T x T, mask or not).
[[nodiscard]] double flops_per_token(const model_config& cfg, std::int64_t params, int seq);
// The formula's text for method strings.
[[nodiscard]] std::string flops_formula_text();

}  // namespace infrabench::kernels::transformer
