#include "cpu/transformer/corpus.h"

#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace infrabench::kernels::transformer {

namespace {

struct splitmix {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::uint64_t below(std::uint64_t n) { return next() % n; }  // bias < n / 2^64: negligible
};

std::uint16_t little_endian(std::uint16_t v) {
  if constexpr (std::endian::native == std::endian::big) {
    return static_cast<std::uint16_t>((v >> 8) | (v << 8));
  }
  return v;
}

}  // namespace

markov_corpus::markov_corpus(int vocab, std::uint64_t seed, int fanout)
    : m_vocab(vocab), m_fanout(fanout) {
  if (fanout < 2 || vocab < fanout || vocab > 65536) {
    throw std::invalid_argument("markov corpus: need 2 <= fanout (" + std::to_string(fanout) +
                                ") <= vocabulary (" + std::to_string(vocab) + ") <= 65536");
  }
  double total = 0;
  for (int i = 0; i < fanout; ++i) total += std::ldexp(1.0, -i);
  double cumulative = 0;
  for (int i = 0; i < fanout; ++i) {
    m_probs.push_back(std::ldexp(1.0, -i) / total);
    cumulative += m_probs.back();
    m_thresholds.push_back(i + 1 == fanout
                               ? std::numeric_limits<std::uint64_t>::max()
                               : static_cast<std::uint64_t>(cumulative * 18446744073709551616.0));
  }
  splitmix rng{seed * 0xd1342543de82ef95ull + 1};
  m_next.resize(static_cast<std::size_t>(vocab) * static_cast<std::size_t>(fanout));
  for (int t = 0; t < vocab; ++t) {
    std::uint16_t* row = m_next.data() + static_cast<std::size_t>(t) * fanout;
    for (int i = 0; i < fanout; ++i) {
      bool fresh = false;
      while (!fresh) {  // distinct successors, so each row's entropy is exactly H(p)
        row[i] = static_cast<std::uint16_t>(rng.below(static_cast<std::uint64_t>(vocab)));
        fresh = true;
        for (int j = 0; j < i; ++j) fresh = fresh && row[j] != row[i];
      }
    }
  }
}

double markov_corpus::entropy_nats() const {
  double h = 0;
  for (double p : m_probs) h -= p * std::log(p);
  return h;
}

void markov_corpus::generate(std::uint16_t* out, std::size_t n, std::uint64_t stream) const {
  splitmix rng{stream * 0x9e3779b97f4a7c15ull + 0x7f4a7c15ull};
  int token = static_cast<int>(rng.below(static_cast<std::uint64_t>(m_vocab)));
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = little_endian(static_cast<std::uint16_t>(token));
    const std::uint64_t r = rng.next();
    int k = 0;
    while (r >= m_thresholds[static_cast<std::size_t>(k)] && k + 1 < m_fanout) ++k;
    token = successors(token)[k];
  }
}

}  // namespace infrabench::kernels::transformer
