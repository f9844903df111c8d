// The synthetic token corpus (kernels/cpu/transformer/corpus): its stated entropy is what a long
// sample of it measures, every transition is one of the token's successors, and the same seeds
// give the same tokens.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <vector>

#include "cpu/transformer/corpus.h"

namespace tf = infrabench::kernels::transformer;

TEST(TrainingCorpus, EntropyIsThatOfTheTransitionProbabilities) {
  const tf::markov_corpus c(64, 1, 4);
  // p = (8, 4, 2, 1) / 15
  double h = 0;
  for (double w : {8.0, 4.0, 2.0, 1.0}) h -= w / 15 * std::log(w / 15);
  EXPECT_NEAR(c.entropy_nats(), h, 1e-12);
  double sum = 0;
  for (double p : c.probabilities()) sum += p;
  EXPECT_NEAR(sum, 1.0, 1e-12);
}

TEST(TrainingCorpus, ASampleMeasuresTheStatedEntropy) {
  const int V = 64;
  const tf::markov_corpus c(V, 2, 4);
  std::vector<std::uint16_t> toks(2000000);
  c.generate(toks.data(), toks.size(), 3);
  // Empirical conditional entropy H(next | current) from bigram counts.
  std::vector<double> pair(static_cast<std::size_t>(V) * V, 0), single(V, 0);
  for (std::size_t i = 0; i + 1 < toks.size(); ++i) {
    const int a = toks[i], b = toks[i + 1];
    ASSERT_LT(a, V);
    pair[static_cast<std::size_t>(a) * V + b] += 1;
    single[static_cast<std::size_t>(a)] += 1;
    // Every transition is to one of a's successors.
    const std::uint16_t* s = c.successors(a);
    ASSERT_TRUE(s[0] == b || s[1] == b || s[2] == b || s[3] == b) << a << " -> " << b;
  }
  double h = 0;
  const double n = static_cast<double>(toks.size() - 1);
  for (int a = 0; a < V; ++a) {
    for (int b = 0; b < V; ++b) {
      const double k = pair[static_cast<std::size_t>(a) * V + b];
      if (k > 0) h -= k / n * std::log(k / single[static_cast<std::size_t>(a)]);
    }
  }
  EXPECT_NEAR(h, c.entropy_nats(), 0.01 * c.entropy_nats());
}

TEST(TrainingCorpus, SuccessorsAreDistinctAndSeedsReproduce) {
  const tf::markov_corpus a(300, 5, 6), b(300, 5, 6), other(300, 6, 6);
  bool differs = false;
  for (int t = 0; t < 300; ++t) {
    std::set<int> s(a.successors(t), a.successors(t) + 6);
    EXPECT_EQ(s.size(), 6u) << t;
    for (int i = 0; i < 6; ++i) EXPECT_EQ(a.successors(t)[i], b.successors(t)[i]);
    differs = differs || a.successors(t)[0] != other.successors(t)[0];
  }
  EXPECT_TRUE(differs);
  std::vector<std::uint16_t> x(1000), y(1000), z(1000);
  a.generate(x.data(), x.size(), 9);
  b.generate(y.data(), y.size(), 9);
  a.generate(z.data(), z.size(), 10);
  EXPECT_EQ(x, y);
  EXPECT_NE(x, z);
}

TEST(TrainingCorpus, RefusesImpossibleShapes) {
  EXPECT_THROW(tf::markov_corpus(3, 1, 4), std::invalid_argument);
  EXPECT_THROW(tf::markov_corpus(70000, 1, 4), std::invalid_argument);
  EXPECT_THROW(tf::markov_corpus(10, 1, 1), std::invalid_argument);
  EXPECT_NO_THROW(tf::markov_corpus(65536, 1, 4));
}
