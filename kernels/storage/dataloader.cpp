#include "storage/dataloader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "storage/async_reader.h"
#include "storage/data_pattern.h"
#include "storage/io_plan.h"

namespace infrabench::kernels::storage {
namespace {

[[nodiscard]] std::uint64_t round_up(std::uint64_t v, std::uint64_t m) {
  return (v + m - 1) / m * m;
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// The simulated accelerator: exactly `ns` of busy CPU time, like a kernel that keeps it busy.
void busy_wait(std::uint64_t ns) {
  const std::uint64_t start = detail::now_ns();
  while (detail::now_ns() - start < ns) cpu_relax();
}

}  // namespace

// One sample being read: its file, where it goes, and its reads outstanding.
struct dataloader::sample_io {
  unique_fd fd;
  std::uint64_t position = 0;  // in the epoch's order
  std::uint64_t index = 0;     // sample file
  std::uint64_t next_offset = 0;
  std::uint32_t outstanding = 0;
  bool active = false;
};

dataloader::dataloader(dataloader_options opts) : m_opts(std::move(opts)) {
  const auto& o = m_opts;
  if (o.batch_size == 0 || o.prefetch == 0 || o.readers == 0 || o.reader_depth == 0 ||
      o.max_read == 0) {
    throw std::invalid_argument(
        "dataloader: batch_size, prefetch, readers, reader_depth and max_read must be > 0");
  }
  if (o.direct && (o.max_read % o.direct_align != 0 || o.direct_align == 0)) {
    throw std::invalid_argument(
        "dataloader: max_read must be a multiple of the O_DIRECT alignment");
  }
  if (o.parts == 0 || o.part >= o.parts) {
    throw std::invalid_argument("dataloader: part must be < parts");
  }
  m_steps = o.samples_in_part() / o.batch_size;
  if (m_steps < 2) {
    throw storage_error("the data set's " + std::to_string(o.samples_in_part()) +
                        " samples (of this part) make " + std::to_string(m_steps) +
                        " batch(es) of " + std::to_string(o.batch_size) +
                        "; accelerator utilisation needs at least 2 (the first is excluded)");
  }
  m_slot = round_up(std::max<std::uint64_t>(o.layout.sample_size, 1),
                    std::max<std::uint64_t>(4096, o.direct_align));
  m_ring =
      detail::aligned_buffer(static_cast<std::size_t>(m_slot * o.batch_size * o.prefetch), 4096);
  m_ready = std::make_unique<std::atomic<std::uint32_t>[]>(o.prefetch);
  for (std::uint32_t i = 0; i < o.prefetch; ++i) m_ready[i].store(0);

  for (std::uint32_t r = 0; r < o.readers; ++r)
    m_threads.emplace_back([this, r] { reader_main(r); });
  std::unique_lock lock(m_mu);
  m_cv.wait(lock, [&] { return m_started == m_opts.readers; });
  if (!m_error.empty()) {
    const std::string err = m_error;
    const bool unsupported = m_error_unsupported;
    m_stop = true;
    lock.unlock();
    m_cv.notify_all();
    for (auto& t : m_threads) t.join();
    if (unsupported) throw unsupported_error(err);
    throw storage_error(err);
  }
}

dataloader::~dataloader() {
  {
    std::lock_guard lock(m_mu);
    m_stop = true;
  }
  m_cv.notify_all();
  for (auto& t : m_threads) t.join();
}

std::byte* dataloader::slot_ptr(std::uint64_t position) const {
  const std::uint64_t step = position / m_opts.batch_size;
  const std::uint64_t in_ring =
      (step % m_opts.prefetch) * m_opts.batch_size + position % m_opts.batch_size;
  return m_ring.data() + in_ring * m_slot;
}

void dataloader::fail(const std::string& what) {
  {
    std::lock_guard lock(m_mu);
    if (m_error.empty()) m_error = what;
  }
  m_failed.store(true);
  // Wake whoever waits on a counter: the accelerator on a batch, readers on ring space.
  for (std::uint32_t i = 0; i < m_opts.prefetch; ++i) {
    m_ready[i].fetch_add(1u << 30);
    m_ready[i].notify_all();
  }
  m_consumed.fetch_add(std::uint64_t{1} << 40);
  m_consumed.notify_all();
}

void dataloader::reader_main(std::uint32_t /*index*/) {
  std::unique_ptr<async_reader> io;
  try {
    io = make_async_reader(m_opts.engine, m_opts.reader_depth);
  } catch (const unsupported_error& e) {
    std::lock_guard lock(m_mu);
    if (m_error.empty()) m_error = e.what();
    m_error_unsupported = true;
  } catch (const std::exception& e) {
    std::lock_guard lock(m_mu);
    if (m_error.empty()) m_error = e.what();
  }
  std::vector<sample_io> live(io ? io->depth() + 1 : 0);
  std::uint64_t seen = 0;
  std::unique_lock lock(m_mu);
  ++m_started;
  ++m_idle;
  m_cv.notify_all();
  if (!io) return;
  while (true) {
    m_cv.wait(lock, [&] { return m_stop || m_generation != seen; });
    if (m_stop) return;
    seen = m_generation;
    lock.unlock();
    try {
      reader_epoch(*io, live);
    } catch (const std::exception& e) {
      fail(e.what());
      // Reads still in flight write into the ring: wait for them before going idle.
      try {
        io->drain();
      } catch (...) {
        // A reader that cannot drain must not let the ring be reused: stop the loader.
        std::lock_guard relock(m_mu);
        m_stop = true;
      }
    }
    for (auto& s : live) s = sample_io{};
    lock.lock();
    ++m_idle;
    m_cv.notify_all();
  }
}

// One reader's progress through an epoch: what reader_epoch's steps share.
struct dataloader::reader_cursor {
  static constexpr std::uint64_t none = ~std::uint64_t{0};
  async_reader& io;
  std::vector<sample_io>& live;
  const block_permutation order;
  const std::uint64_t total;     // positions in the epoch
  std::uint64_t claimed = none;  // a position taken but not yet started
  sample_io* current = nullptr;  // the sample whose reads are being issued
  bool exhausted = false;        // every position is taken
  std::uint32_t queued = 0;      // reads queued since the last submit
  std::vector<read_completion> done;
  [[nodiscard]] bool has_room() const { return io.in_flight() + queued < io.depth(); }
  [[nodiscard]] bool finished() const { return exhausted && current == nullptr && claimed == none; }
};

void dataloader::reader_epoch(async_reader& io, std::vector<sample_io>& live) {
  reader_cursor c{io, live, block_permutation(m_opts.samples_in_part(), m_epoch_seed),
                  m_steps * m_opts.batch_size};
  while (!m_failed.load(std::memory_order_relaxed)) {
    if (m_stopping.load(std::memory_order_acquire)) {
      io.drain();  // the epoch ended early: finish what is in flight, start nothing new
      return;
    }
    if (!issue_reads(c)) return;
    io.submit();
    c.queued = 0;
    if (io.in_flight() == 0) {
      if (c.finished()) return;
      continue;
    }
    reap_completions(c);
  }
}

// Issue reads while there is room: the current sample's next piece, else the next sample.
// False when the epoch ended (failed or stopped early) while waiting for ring space.
bool dataloader::issue_reads(reader_cursor& c) {
  while (c.has_room()) {
    if (c.current == nullptr) {
      const sample_start next = start_next_sample(c);
      if (next == sample_start::not_yet) break;
      if (next == sample_start::epoch_ended) return false;
    }
    queue_next_piece(c);
  }
  return true;
}

// Claims the next position (unless one is claimed already) and opens its sample once its batch
// buffer is free.
dataloader::sample_start dataloader::start_next_sample(reader_cursor& c) {
  if (c.exhausted) return sample_start::not_yet;
  if (c.claimed == reader_cursor::none) {
    const std::uint64_t p = m_next_position.fetch_add(1);
    if (p >= c.total) {
      c.exhausted = true;
      return sample_start::not_yet;
    }
    c.claimed = p;
  }
  const sample_start ring = wait_for_batch_buffer(c);
  if (ring != sample_start::started) return ring;
  c.current = open_sample(c, c.claimed);
  c.claimed = reader_cursor::none;
  return sample_start::started;
}

// The claimed sample's batch buffer must be free: the accelerator finished the batch prefetch
// steps back. With reads in flight the reader reaps them first rather than wait here.
dataloader::sample_start dataloader::wait_for_batch_buffer(reader_cursor& c) {
  const auto& o = m_opts;
  const std::uint64_t step = c.claimed / o.batch_size;
  std::uint64_t consumed = m_consumed.load(std::memory_order_acquire);
  if (step < consumed + o.prefetch) return sample_start::started;
  if (c.io.in_flight() + c.queued > 0) return sample_start::not_yet;  // reap first
  while (step >= consumed + o.prefetch) {
    m_consumed.wait(consumed, std::memory_order_acquire);
    consumed = m_consumed.load(std::memory_order_acquire);
  }
  if (m_failed.load()) return sample_start::epoch_ended;
  if (m_stopping.load(std::memory_order_acquire)) {
    return sample_start::epoch_ended;  // nothing in flight here
  }
  return sample_start::started;
}

dataloader::sample_io* dataloader::open_sample(reader_cursor& c, std::uint64_t position) {
  const auto& o = m_opts;
  auto free_slot =
      std::find_if(c.live.begin(), c.live.end(), [](const sample_io& s) { return !s.active; });
  sample_io& s = *free_slot;  // live holds depth + 1 entries and each active one has a read out
  s.position = position;
  s.index = o.part + o.parts * c.order(position);
  const std::string path = o.layout.sample_path(o.root, s.index);
  s.fd = unique_fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | (o.direct ? O_DIRECT : 0)));
  if (s.fd.get() < 0) throw storage_error("open " + path + ": " + std::strerror(errno));
  s.next_offset = 0;
  s.outstanding = 0;
  s.active = true;
  return &s;
}

// Queues the current sample's next piece (at most max_read bytes) into its batch slot.
void dataloader::queue_next_piece(reader_cursor& c) {
  const auto& o = m_opts;
  const std::uint64_t size = o.layout.sample_size;
  sample_io& s = *c.current;
  const std::uint64_t len = std::min(o.max_read, size - s.next_offset);
  const std::uint64_t request = o.direct ? round_up(len, o.direct_align) : len;
  const auto slot = static_cast<std::uint64_t>(&s - c.live.data());
  c.io.queue({s.fd.get(), slot_ptr(s.position) + s.next_offset, static_cast<std::uint32_t>(request),
              s.next_offset, (slot << 32) | (s.next_offset / o.max_read)});
  ++c.queued;
  ++s.outstanding;
  s.next_offset += len;
  if (s.next_offset >= size) c.current = nullptr;
  if (size == 0) c.current = nullptr;
}

// Waits for completions and checks each; a sample whose last piece arrived is finished.
void dataloader::reap_completions(reader_cursor& c) {
  const auto& o = m_opts;
  const std::uint64_t size = o.layout.sample_size;
  c.done.clear();
  c.io.wait(c.done);
  for (const auto& d : c.done) {
    sample_io& s = c.live[d.tag >> 32];
    const std::uint64_t piece_offset = (d.tag & 0xffffffffu) * o.max_read;
    const std::uint64_t want = std::min(o.max_read, size - piece_offset);
    if (d.result < 0) {
      throw storage_error("read " + o.layout.sample_path(o.root, s.index) + " at " +
                          std::to_string(piece_offset) + ": " +
                          std::strerror(static_cast<int>(-d.result)));
    }
    if (static_cast<std::uint64_t>(d.result) != want) {
      throw storage_error("short read of " + o.layout.sample_path(o.root, s.index) + ": " +
                          std::to_string(d.result) + " of " + std::to_string(want) + " bytes");
    }
    if (--s.outstanding == 0 && s.next_offset >= size) finish_sample(s);
  }
}

// Verifies a complete sample (--verify), closes it and counts it into its batch.
void dataloader::finish_sample(sample_io& s) {
  const auto& o = m_opts;
  std::byte* dest = slot_ptr(s.position);
  if (o.verify) {
    const std::span sample(dest, o.layout.sample_size);
    if (const auto bad = check_pattern(sample_seed(o.seed, s.index), 0, sample)) {
      if (m_verify_failures.fetch_add(1) == 0) {
        std::lock_guard lock(m_mu);
        m_first_verify_failure = o.layout.sample_path(o.root, s.index) + ": byte " +
                                 std::to_string(bad->offset) + " differs from what was written";
      }
    }
  }
  s.fd = unique_fd();
  s.active = false;
  auto& ready = m_ready[(s.position / o.batch_size) % o.prefetch];
  if (ready.fetch_add(1, std::memory_order_release) + 1 == o.batch_size) ready.notify_all();
}

epoch_result dataloader::run_epoch(double compute_s_per_batch, std::uint64_t epoch_seed,
                                   std::uint64_t max_steps, std::uint64_t warmup_steps) {
  const std::uint64_t steps =
      max_steps == 0 ? m_steps : std::clamp<std::uint64_t>(max_steps, 2, m_steps);
  const std::uint64_t warmup = std::clamp<std::uint64_t>(warmup_steps, 1, steps - 1);
  start_epoch(epoch_seed);
  epoch_result r;
  const auto compute_ns = static_cast<std::uint64_t>(std::max(0.0, compute_s_per_batch) * 1e9);
  consume_batches(steps, warmup, compute_ns, r);
  end_epoch(steps, r);
  r.nominal_compute_s =
      static_cast<double>(r.steps - warmup) * static_cast<double>(compute_ns) * 1e-9;
  r.window_samples = (r.steps - warmup) * m_opts.batch_size;
  r.window_bytes = r.window_samples * m_opts.layout.sample_size;
  r.verify_failures = m_verify_failures.load();
  return r;
}

// Hands the readers a new epoch once every one of them is idle.
void dataloader::start_epoch(std::uint64_t epoch_seed) {
  {
    std::unique_lock lock(m_mu);
    m_cv.wait(lock, [&] { return m_idle == m_opts.readers; });
    if (m_failed.load()) throw storage_error(m_error);
    m_epoch_seed = epoch_seed;
    m_next_position.store(0);
    m_consumed.store(0);
    m_verify_failures.store(0);
    m_first_verify_failure.clear();
    for (std::uint32_t i = 0; i < m_opts.prefetch; ++i) m_ready[i].store(0);
    m_stopping.store(false);
    m_idle = 0;
    ++m_generation;
  }
  m_cv.notify_all();
}

// The simulated accelerator: waits for each of `steps` batches and computes on it; the window
// runs from the end of the warm-up steps' compute to the end of the last step's.
void dataloader::consume_batches(std::uint64_t steps, std::uint64_t warmup,
                                 std::uint64_t compute_ns, epoch_result& r) {
  const auto& o = m_opts;
  const std::uint64_t t0 = detail::now_ns();
  std::uint64_t window_start = 0, last_end = 0;
  for (std::uint64_t step = 0; step < steps; ++step) {
    auto& ready = m_ready[step % o.prefetch];
    std::uint32_t v = ready.load(std::memory_order_acquire);
    while (v < o.batch_size) {
      ready.wait(v, std::memory_order_acquire);
      v = ready.load(std::memory_order_acquire);
    }
    if (m_failed.load()) break;
    const std::uint64_t t_ready = detail::now_ns();
    if (step == 0) r.first_batch_s = static_cast<double>(t_ready - t0) * 1e-9;
    if (step >= warmup) r.stall_s += static_cast<double>(t_ready - last_end) * 1e-9;
    busy_wait(compute_ns);
    last_end = detail::now_ns();
    // The accelerator's busy time as it happened: a busy-wait the OS preempted ran long, which is
    // CPU contention, not the storage failing to deliver, so it counts as compute.
    if (step >= warmup && compute_ns > 0) {
      r.compute_s += static_cast<double>(last_end - t_ready) * 1e-9;
    }
    if (step + 1 == warmup) window_start = last_end;
    ready.store(0, std::memory_order_relaxed);
    m_consumed.store(step + 1, std::memory_order_release);
    m_consumed.notify_all();
    r.steps = step + 1;
  }
  r.window_s = static_cast<double>(last_end - window_start) * 1e-9;
}

// Waits until every reader is idle again (an epoch of `steps` < steps_per_epoch() stops them
// early); throws the first reader error.
void dataloader::end_epoch(std::uint64_t steps, epoch_result& r) {
  if (steps < m_steps) {
    // Release readers waiting for ring space; they drain what they have in flight and stop.
    m_stopping.store(true, std::memory_order_release);
    m_consumed.fetch_add(std::uint64_t{1} << 40, std::memory_order_release);
    m_consumed.notify_all();
  }
  std::unique_lock lock(m_mu);
  m_cv.wait(lock, [&] { return m_idle == m_opts.readers; });
  if (m_failed.load()) throw storage_error(m_error);
  r.first_verify_failure = m_first_verify_failure;
}

}  // namespace infrabench::kernels::storage
