#include "token_data.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>

#include "cpu/transformer/corpus.h"
#include "shared/storage_scratch.h"

namespace infrabench::training_bench {

namespace {

namespace ks = infrabench::kernels::storage;
namespace tf = infrabench::kernels::transformer;
namespace sb = infrabench::storage_bench;

constexpr std::uint64_t align = 4096;  // O_DIRECT alignment on every device we know of
constexpr std::uint64_t max_shard_bytes = 16ull << 20;
constexpr std::uint64_t corpus_seed = 1;

[[nodiscard]] std::uint64_t mix(std::uint64_t z) {  // splitmix64's finaliser
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

[[nodiscard]] std::string shard_path(const std::string& dir, std::size_t i) {
  char name[32];
  std::snprintf(name, sizeof(name), "/shard_%04zu.tok", i);
  return dir + name;
}

}  // namespace

token_corpus get_token_corpus(state& st, int vocab, std::uint64_t bytes) {
  const tf::markov_corpus chain(vocab, corpus_seed + static_cast<std::uint64_t>(vocab));
  token_corpus c;
  c.vocab = vocab;
  c.entropy_nats = chain.entropy_nats();
  const std::uint64_t shard_bytes =
      std::max(align, std::min(bytes, max_shard_bytes) / align * align);
  const std::size_t shards =
      static_cast<std::size_t>(std::max<std::uint64_t>(1, (bytes + shard_bytes - 1) / shard_bytes));
  c.shard_tokens = shard_bytes / 2;
  const std::atomic<bool>* cancel = st.interrupted_flag();
  c.dir = sb::resolve_scratch_files(
      st, "token corpus",
      "vocab " + std::to_string(vocab) + ", " + std::to_string(shards) + " x " +
          std::to_string(shard_bytes),
      shards * shard_bytes, [&](const std::string& dir) {
        std::vector<std::uint16_t> buf(c.shard_tokens);
        for (std::size_t s = 0; s < shards; ++s) {
          if (cancel != nullptr && cancel->load()) {
            throw ks::storage_error("interrupted while writing the token corpus");
          }
          chain.generate(buf.data(), buf.size(), s + 1);
          // On the device and out of the page cache: buffered reads (when O_DIRECT is refused)
          // are not served from memory at first.
          (void)ks::write_new_file(shard_path(dir, s),
                                   std::as_bytes(std::span(buf.data(), shard_bytes / 2)));
        }
      });
  for (std::size_t s = 0; s < shards; ++s) c.shards.push_back(shard_path(c.dir, s));
  return c;
}

token_reader::token_reader(const token_corpus& corpus, int batch, int seq, int rank, int ranks,
                           bool direct, std::string engine)
    : m_corpus(corpus),
      m_batch(batch),
      m_seq(seq),
      m_rank(rank),
      m_ranks(ranks),
      m_direct(direct),
      m_engine(std::move(engine)) {
  if (m_corpus.shard_tokens < static_cast<std::uint64_t>(seq) + 1) {
    throw ks::storage_error("token shards of " + std::to_string(m_corpus.shard_tokens) +
                            " tokens cannot hold a sequence of " + std::to_string(seq + 1));
  }
  if (m_direct) {
    try {
      (void)ks::open_read_only(m_corpus.shards.at(0), true);
    } catch (const ks::storage_error&) {
      m_direct = false;  // this filesystem refuses O_DIRECT: buffered reads, said in describe()
    }
  }
  for (const auto& path : m_corpus.shards) m_fds.push_back(ks::open_read_only(path, m_direct));
  const std::uint64_t bytes = (static_cast<std::uint64_t>(seq) + 1) * 2;
  m_span_bytes = static_cast<std::uint32_t>((bytes + 2 * align - 1) / align * align);
  for (int b = 0; b < batch; ++b) {
    void* p = std::aligned_alloc(align, m_span_bytes);
    if (p == nullptr) throw std::bad_alloc();
    m_buffers.push_back(static_cast<std::byte*>(p));
  }
}

token_reader::~token_reader() {
  if (m_reader) m_reader->drain();
  for (auto* p : m_buffers) std::free(p);
}

token_reader::span token_reader::locate(std::uint64_t step, int b) const {
  const std::uint64_t i =
      (step * static_cast<std::uint64_t>(m_ranks) + static_cast<std::uint64_t>(m_rank)) *
          static_cast<std::uint64_t>(m_batch) +
      static_cast<std::uint64_t>(b);
  const std::uint64_t h = mix(i ^ 0x5eedf00dull);
  span s;
  s.shard = static_cast<std::size_t>(h % m_corpus.shards.size());
  const std::uint64_t positions = m_corpus.shard_tokens - static_cast<std::uint64_t>(m_seq);
  s.first_token = mix(h) % positions;
  s.offset = s.first_token * 2 / align * align;
  const std::uint64_t end =
      ((s.first_token + static_cast<std::uint64_t>(m_seq) + 1) * 2 + align - 1) / align * align;
  s.length = static_cast<std::uint32_t>(end - s.offset);
  return s;
}

void token_reader::read(std::uint64_t step, std::int32_t* tokens, std::int32_t* targets) {
  if (!m_reader) {
    const auto depth = static_cast<std::uint32_t>(std::min(m_batch, 64));
    try {
      m_reader = ks::make_async_reader(m_engine, depth);
    } catch (const ks::unsupported_error& e) {
      if (m_engine == "psync") throw;
      m_engine = "psync (io_uring unavailable: " + std::string(e.what()) + ")";
      m_reader = ks::make_async_reader("psync", depth);
    }
  }
  std::vector<span> spans(static_cast<std::size_t>(m_batch));
  for (int b = 0; b < m_batch; ++b) spans[static_cast<std::size_t>(b)] = locate(step, b);
  std::vector<ks::read_completion> done;
  int next = 0, finished = 0;
  while (finished < m_batch) {
    while (next < m_batch && m_reader->in_flight() < m_reader->depth()) {
      const span& s = spans[static_cast<std::size_t>(next)];
      m_reader->queue({m_fds[s.shard].get(), m_buffers[static_cast<std::size_t>(next)], s.length,
                       s.offset, static_cast<std::uint64_t>(next)});
      ++next;
    }
    m_reader->submit();
    done.clear();
    m_reader->wait(done);
    for (const auto& c : done) {
      const span& s = spans[static_cast<std::size_t>(c.tag)];
      if (c.result != static_cast<std::int64_t>(s.length)) {
        m_reader->drain();
        const std::string why = c.result < 0
                                    ? std::strerror(static_cast<int>(-c.result))
                                    : "short read (" + std::to_string(c.result) + " bytes)";
        throw ks::storage_error("reading " + m_corpus.shards[s.shard] + " at " +
                                std::to_string(s.offset) + ": " + why);
      }
      m_bytes_read += s.length;
      // The span's tokens, little-endian 16-bit, into inputs and next-token targets.
      const auto* bytes =
          reinterpret_cast<const std::uint8_t*>(m_buffers[c.tag]) + (s.first_token * 2 - s.offset);
      std::int32_t* in = tokens + c.tag * static_cast<std::uint64_t>(m_seq);
      std::int32_t* out = targets + c.tag * static_cast<std::uint64_t>(m_seq);
      std::int32_t prev = bytes[0] | (bytes[1] << 8);
      for (int t = 0; t < m_seq; ++t) {
        const std::int32_t cur = bytes[2 * t + 2] | (bytes[2 * t + 3] << 8);
        in[t] = prev;
        out[t] = cur;
        prev = cur;
      }
      ++finished;
    }
  }
}

std::string token_reader::describe() const {
  return m_engine + (m_direct ? ", O_DIRECT" : ", buffered (O_DIRECT refused here)") + ", " +
         std::to_string(std::min(m_batch, 64)) + " reads in flight, " +
         std::to_string(m_corpus.shards.size()) + " shard(s) of " +
         std::to_string(m_corpus.shard_tokens * 2 >> 20) + " MiB";
}

}  // namespace infrabench::training_bench
