// A synthetic token corpus whose entropy is known exactly: a random first-order Markov chain over
// the vocabulary in which every token has `fanout` distinct successors, reached with the same
// probabilities (2^-i, normalised, i = 0..fanout-1) in a per-token random order. Every row of the
// transition matrix then has the same entropy H(p), so the chain's entropy rate is exactly H(p)
// nats per token, whatever its stationary distribution: the loss a perfect model reaches on
// every position after the first. A transformer learns it (it is a bigram table), so the training
// step's loss falls from ln(vocab) toward H(p), and "falls toward the corpus entropy" is
// checkable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace infrabench::kernels::transformer {

class markov_corpus {
 public:
  // Throws std::invalid_argument unless 2 <= fanout <= vocab <= 65536.
  markov_corpus(int vocab, std::uint64_t seed, int fanout = 4);

  [[nodiscard]] int vocab() const { return m_vocab; }
  [[nodiscard]] int fanout() const { return m_fanout; }
  // The entropy rate, nats per token: -sum_i p_i ln p_i.
  [[nodiscard]] double entropy_nats() const;
  // The successors of `token` (fanout of them; successor i is taken with probability p_i).
  [[nodiscard]] const std::uint16_t* successors(int token) const {
    return m_next.data() + static_cast<std::size_t>(token) * static_cast<std::size_t>(m_fanout);
  }
  [[nodiscard]] const std::vector<double>& probabilities() const { return m_probs; }

  // n tokens of the chain, started from a token drawn from `stream` (a shard's own seed), written
  // little-endian as 16-bit values (the shard files' format).
  void generate(std::uint16_t* out, std::size_t n, std::uint64_t stream) const;

 private:
  int m_vocab;
  int m_fanout;
  std::vector<std::uint16_t> m_next;  // [vocab][fanout]
  std::vector<double> m_probs;
  std::vector<std::uint64_t> m_thresholds;  // cumulative probabilities as 64-bit thresholds
};

}  // namespace infrabench::kernels::transformer
