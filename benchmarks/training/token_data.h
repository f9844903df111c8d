// GPT-2's data: the Markov corpus (kernels/cpu/transformer/corpus) written as 16-bit token shard
// files into a new scratch directory (new files only; removed at the end of the run), and a
// reader that fetches one rank's batch of sequences from them with our storage engine's
// asynchronous reads (io_uring when compiled in and usable here, else pread), O_DIRECT when the
// filesystem allows it (each sequence's 4 KiB-aligned span).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "infrabench/state.h"
#include "storage/async_reader.h"
#include "storage/target.h"

namespace infrabench::training_bench {

struct token_corpus {
  std::string dir;
  std::vector<std::string> shards;
  std::uint64_t shard_tokens = 0;  // tokens per shard (a multiple of 2048: 4 KiB)
  int vocab = 0;
  double entropy_nats = 0;  // the chain's entropy rate
};

// The corpus over `vocab` tokens, about `bytes` of it in shards of at most 16 MiB, written once per
// run (per vocabulary and size) into a new directory under --scratch. Every rank writes its own
// copy with the same seed (the same tokens). Throws ks::storage_error with a one-line reason.
[[nodiscard]] token_corpus get_token_corpus(state& st, int vocab, std::uint64_t bytes);

// One rank's batches: step g's sequence b is seq + 1 tokens (inputs and their next-token
// targets) at a pseudo-random position of a pseudo-random shard, drawn from (g, rank, b), so
// that ranks read different data and every run reads the same.
class token_reader {
 public:
  // Opens the shards (O_DIRECT when `direct` and the filesystem accepts it). Throws
  // ks::storage_error. Reads use the engine named (`io_uring` or `psync`).
  token_reader(const token_corpus& corpus, int batch, int seq, int rank, int ranks, bool direct,
               std::string engine);
  ~token_reader();
  token_reader(const token_reader&) = delete;
  token_reader& operator=(const token_reader&) = delete;

  // Reads step `step`'s batch: tokens and targets, [batch, seq] each. All calls must come from one
  // thread (the engine is set up on the first). Throws ks::storage_error on an I/O error.
  void read(std::uint64_t step, std::int32_t* tokens, std::int32_t* targets);
  // "io_uring, O_DIRECT, 8 reads in flight, 4 shards"
  [[nodiscard]] std::string describe() const;
  [[nodiscard]] bool direct() const { return m_direct; }
  [[nodiscard]] std::uint64_t bytes_read() const { return m_bytes_read; }

 private:
  struct span {
    std::size_t shard = 0;
    std::uint64_t first_token = 0;  // of the sequence
    std::uint64_t offset = 0;       // aligned read
    std::uint32_t length = 0;
  };
  [[nodiscard]] span locate(std::uint64_t step, int b) const;

  token_corpus m_corpus;
  int m_batch, m_seq, m_rank, m_ranks;
  bool m_direct;
  std::string m_engine;
  std::vector<kernels::storage::unique_fd> m_fds;
  std::uint32_t m_span_bytes;  // the largest aligned read of one sequence
  std::vector<std::byte*> m_buffers;
  std::unique_ptr<kernels::storage::async_reader> m_reader;
  std::uint64_t m_bytes_read = 0;
};

}  // namespace infrabench::training_bench
