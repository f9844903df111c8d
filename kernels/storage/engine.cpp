// The engine table, the validation and help text generated from it, the factories, and helpers
// every engine shares.
#include "storage/engine.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "storage/async_reader.h"
#include "storage/data_pattern.h"
#include "storage/target.h"

namespace infrabench::kernels::storage {

std::span<const engine_ops* const> engine_table() {
  // Adding an engine: its file defines detail::<name>_engine_ops(); list it here.
  static const engine_ops* const table[] = {
      &detail::psync_engine_ops(),
      &detail::io_uring_engine_ops(),
  };
  return table;
}

const engine_ops* find_engine(std::string_view name) {
  for (const engine_ops* e : engine_table()) {
    if (e->name == name) return e;
  }
  return nullptr;
}

std::vector<std::string> all_engine_names() {
  std::vector<std::string> names;
  for (const engine_ops* e : engine_table()) names.emplace_back(e->name);
  return names;
}

std::vector<std::string> engine_names() {
  std::vector<std::string> names;
  for (const engine_ops* e : engine_table()) {
    if (e->compiled_in()) names.emplace_back(e->name);
  }
  return names;
}

bool engine_compiled_in(std::string_view name) {
  const engine_ops* e = find_engine(name);
  return e != nullptr && e->compiled_in();
}

const option_spec* engine_ops::find_option(std::string_view option) const {
  for (const option_spec& o : options) {
    if (o.name == option) return &o;
  }
  return nullptr;
}

void option_values::set(std::string_view name, std::int64_t value) {
  for (auto& [n, v] : m_values) {
    if (n == name) {
      v = value;
      return;
    }
  }
  m_values.emplace_back(std::string(name), value);
}

std::optional<std::int64_t> option_values::find(std::string_view name) const {
  for (const auto& [n, v] : m_values) {
    if (n == name) return v;
  }
  return std::nullopt;
}

namespace {

// The engines that have an option of this name ("io_uring"), for refusals.
std::string owners_of(std::string_view option) {
  std::string out;
  for (const engine_ops* e : engine_table()) {
    if (e->find_option(option) != nullptr) out += (out.empty() ? "" : ", ") + std::string(e->name);
  }
  return out.empty() ? "no engine" : out;
}

std::string option_list(const engine_ops& ops) {
  std::string out;
  for (const option_spec& o : ops.options) out += (out.empty() ? "" : ", ") + std::string(o.name);
  return out.empty() ? "none" : out;
}

// Another engine's option at its default is no request at all: the benchmarks' axes carry every
// engine's options, each at its default unless the user set it.
std::int64_t foreign_default(std::string_view option) {
  for (const engine_ops* e : engine_table()) {
    if (const option_spec* o = e->find_option(option)) return o->default_value;
  }
  return 0;
}

}  // namespace

std::string validate_engine_options(const engine_ops& ops, const engine_options& opts) {
  const std::string name(ops.name);
  if (!ops.compiled_in()) {
    return name + " engine not compiled in (" + std::string(ops.not_compiled_reason) + ")";
  }
  if (opts.queue_depth > ops.max_queue_depth) {
    return name + " keeps at most " + std::to_string(ops.max_queue_depth) +
           " I/O in flight (queue_depth=" + std::to_string(opts.queue_depth) +
           "): " + std::string(ops.queue_depth_limit);
  }
  for (const auto& [option, value] : opts.engine_specific.all()) {
    const option_spec* spec = ops.find_option(option);
    if (spec == nullptr) {
      if (value == foreign_default(option)) continue;
      return option + "=" + std::to_string(value) + " is an option of " + owners_of(option) +
             ", not of " + name + " (" + name + "'s options: " + option_list(ops) + ")";
    }
    if (value < spec->min || value > spec->max) {
      return name + " option " + option + "=" + std::to_string(value) + " is outside [" +
             std::to_string(spec->min) + ", " + std::to_string(spec->max) + "]";
    }
  }
  if (ops.check != nullptr) return ops.check(opts);
  return {};
}

std::string describe_engines() {
  std::string out;
  for (const engine_ops* e : engine_table()) {
    out += std::string(e->name) + ": " + std::string(e->description);
    if (!e->compiled_in()) out += " [not compiled in: " + std::string(e->not_compiled_reason) + "]";
    out += "\n";
    for (const option_spec& o : e->options) {
      out += "  " + std::string(o.name) + " (" +
             (o.is_switch() ? std::string("0/1")
                            : std::to_string(o.min) + ".." + std::to_string(o.max)) +
             ", default " + std::to_string(o.default_value) + "): " + std::string(o.description) +
             "\n";
    }
  }
  return out;
}

namespace {

const engine_ops& checked_engine(std::string_view name, const engine_options& opts) {
  if (opts.block_size == 0 || opts.queue_depth == 0) {
    throw std::invalid_argument("block size and queue depth must be > 0");
  }
  const engine_ops* ops = find_engine(name);
  if (ops == nullptr) throw std::invalid_argument("unknown engine '" + std::string(name) + "'");
  if (auto refusal = validate_engine_options(*ops, opts); !refusal.empty()) {
    throw unsupported_error(refusal);
  }
  return *ops;
}

}  // namespace

std::unique_ptr<read_engine> make_read_engine(std::string_view name, int fd,
                                              const engine_options& opts) {
  return checked_engine(name, opts).make_reader(fd, opts);
}

std::unique_ptr<write_engine> make_write_engine(std::string_view name, int fd,
                                                const engine_options& opts) {
  const engine_ops& ops = checked_engine(name, opts);
  if (ops.make_writer == nullptr) throw unsupported_error(std::string(name) + " cannot write");
  return ops.make_writer(fd, opts);
}

void read_range(const std::string& path, std::uint64_t offset, std::span<std::byte> out,
                const read_range_options& opts) {
  if (opts.block_size == 0 || opts.block_size > (std::uint64_t{1} << 30)) {
    throw std::invalid_argument("read_range: block_size must be in [1, 1 GiB]");
  }
  const unique_fd fd = open_read_only(path, opts.direct);
  const std::unique_ptr<async_reader> io = make_async_reader(opts.engine, opts.queue_depth);
  std::vector<read_completion> done;
  std::uint64_t next = 0;  // bytes of `out` queued so far
  std::uint64_t left = out.size();
  while (left > 0) {
    while (next < out.size() && io->in_flight() < io->depth()) {
      const auto len =
          static_cast<std::uint32_t>(std::min<std::uint64_t>(opts.block_size, out.size() - next));
      io->queue({fd.get(), out.data() + next, len, offset + next, next});
      next += len;
    }
    io->submit();
    done.clear();
    io->wait(done);
    for (const auto& c : done) {
      const std::uint64_t want = std::min<std::uint64_t>(opts.block_size, out.size() - c.tag);
      if (c.result < 0 || static_cast<std::uint64_t>(c.result) != want) {
        io->drain();
        if (c.result < 0) {
          throw storage_error(
              path + ": " +
              detail::read_error(static_cast<int>(-c.result), offset + c.tag, want, opts.direct));
        }
        throw storage_error(path + ": short read at offset " + std::to_string(offset + c.tag) +
                            " (" + std::to_string(c.result) + " of " + std::to_string(want) +
                            " bytes: the file ends there)");
      }
      left -= want;
    }
  }
}

namespace detail {

aligned_buffer::aligned_buffer(std::size_t bytes, std::size_t align) : m_size(bytes) {
  const std::size_t rounded = (bytes + align - 1) / align * align;
  m_data.reset(static_cast<std::byte*>(std::aligned_alloc(align, rounded == 0 ? align : rounded)));
  if (!m_data) throw std::bad_alloc();
  std::memset(m_data.get(), 0, rounded);  // first touch on the thread that will use it
}

void aligned_buffer::free_deleter::operator()(std::byte* p) const {
  std::free(p);
}

std::string io_error(std::string_view op, int err, std::uint64_t offset, std::uint64_t bytes,
                     bool direct) {
  std::string msg = std::string(op) + " of " + std::to_string(bytes) + " bytes at offset " +
                    std::to_string(offset) + " failed: " + std::strerror(err);
  if (err == EINVAL && direct) {
    msg +=
        " (O_DIRECT needs the block size and offsets to be multiples of the device's logical "
        "block size, and aligned memory)";
  }
  return msg;
}

void verify_read(engine_counters& c, const engine_options& opts, std::uint64_t offset,
                 const std::byte* data, std::uint64_t bytes) {
  const std::span<const std::byte> got(data, static_cast<std::size_t>(bytes));
  const auto bad =
      opts.verifier ? opts.verifier(offset, got) : check_pattern(opts.verify_seed, offset, got);
  if (!bad) return;
  if (c.verify_failures++ == 0) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "byte at offset %llu read as 0x%02x, written as 0x%02x",
                  static_cast<unsigned long long>(bad->offset), bad->found, bad->expected);
    c.first_verify_failure = buf;
  }
}

}  // namespace detail

}  // namespace infrabench::kernels::storage
