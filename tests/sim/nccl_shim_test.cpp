// The simulated NCCL (sim/nccl) on host buffers, 2-4 processes under mpirun: every collective the
// benchmarks use, every element type and reduction, in and out of place, split groups, blocking
// and non-blocking init, and the faults on demand (each fails in bounded time, naming the rank,
// host and GPU). Exits 0 when every check held, 1 with the failed checks listed. Modes:
//   nccl_shim_test data                  collectives and their results
//   nccl_shim_test fault <kind> <rank>   SIMNCCL_FAULT=<kind>@<rank> must be set (ctest does)
#include <mpi.h>
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/float8.h"
#include "cpu/reduce_pattern.h"

// The host versions of the collectives' fill and check kernels (sim/nccl/check_kernels.cpp).
extern "C" int infrabench_sim_emulate_nccl_kernel(const char* mangled, void** args);

// The GPU the shim names in its errors: this process' local rank, as the simulated CUDA runtime
// would answer (the shim asks the process' cudaGetDevice).
extern "C" __attribute__((visibility("default"))) cudaError_t cudaGetDevice(int* d) {
  const char* l = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  *d = l ? std::atoi(l) : 0;
  return cudaSuccess;
}

namespace {

int me = 0, world = 1;
int failures = 0;

void expect(bool ok, const std::string& what) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "rank %d: FAILED: %s\n", me, what.c_str());
}

namespace f8 = infrabench::kernels::fp8;

// Values as stored in type t, and back (the test's own codecs for the 16-bit types).
double load(const std::vector<unsigned char>& b, std::size_t i, ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
      return reinterpret_cast<const std::int8_t*>(b.data())[i];
    case ncclUint8:
      return b[i];
    case ncclInt32:
      return reinterpret_cast<const std::int32_t*>(b.data())[i];
    case ncclUint32:
      return reinterpret_cast<const std::uint32_t*>(b.data())[i];
    case ncclInt64:
      return static_cast<double>(reinterpret_cast<const std::int64_t*>(b.data())[i]);
    case ncclUint64:
      return static_cast<double>(reinterpret_cast<const std::uint64_t*>(b.data())[i]);
    case ncclFloat32:
      return reinterpret_cast<const float*>(b.data())[i];
    case ncclFloat64:
      return reinterpret_cast<const double*>(b.data())[i];
    case ncclFloat8e4m3:
      return f8::decode(b[i], f8::e4m3());
    case ncclFloat8e5m2:
      return f8::decode(b[i], f8::e5m2());
    case ncclBfloat16: {
      std::uint32_t u =
          static_cast<std::uint32_t>(reinterpret_cast<const std::uint16_t*>(b.data())[i]) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
    default: {  // float16: small integers only (exact)
      const std::uint16_t h = reinterpret_cast<const std::uint16_t*>(b.data())[i];
      const int e = (h >> 10) & 31, m = h & 1023;
      const double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(m + 1024, e - 25);
      return (h & 0x8000) ? -v : v;
    }
  }
}
void store(std::vector<unsigned char>& b, std::size_t i, ncclDataType_t t, double v) {
  switch (t) {
    case ncclInt8:
      reinterpret_cast<std::int8_t*>(b.data())[i] = static_cast<std::int8_t>(v);
      return;
    case ncclUint8:
      b[i] = static_cast<unsigned char>(v);
      return;
    case ncclInt32:
      reinterpret_cast<std::int32_t*>(b.data())[i] = static_cast<std::int32_t>(v);
      return;
    case ncclUint32:
      reinterpret_cast<std::uint32_t*>(b.data())[i] = static_cast<std::uint32_t>(v);
      return;
    case ncclInt64:
      reinterpret_cast<std::int64_t*>(b.data())[i] = static_cast<std::int64_t>(v);
      return;
    case ncclUint64:
      reinterpret_cast<std::uint64_t*>(b.data())[i] = static_cast<std::uint64_t>(v);
      return;
    case ncclFloat32:
      reinterpret_cast<float*>(b.data())[i] = static_cast<float>(v);
      return;
    case ncclFloat64:
      reinterpret_cast<double*>(b.data())[i] = v;
      return;
    case ncclFloat8e4m3:
      b[i] = f8::encode(static_cast<float>(v), f8::e4m3());
      return;
    case ncclFloat8e5m2:
      b[i] = f8::encode(static_cast<float>(v), f8::e5m2());
      return;
    case ncclBfloat16: {  // small integers: exact
      const float f = static_cast<float>(v);
      std::uint32_t u;
      std::memcpy(&u, &f, 4);
      reinterpret_cast<std::uint16_t*>(b.data())[i] = static_cast<std::uint16_t>(u >> 16);
      return;
    }
    default: {  // float16 of a small non-negative integer
      int k = static_cast<int>(v), e = 0;
      std::uint16_t h = 0;
      if (k > 0) {
        while ((k >> e) > 1) ++e;
        h = static_cast<std::uint16_t>(((e + 15) << 10) | ((k << (10 - e)) & 1023));
      }
      reinterpret_cast<std::uint16_t*>(b.data())[i] = h;
    }
  }
}

std::size_t size_of(ncclDataType_t t) {
  static const std::size_t s[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return s[t];
}
bool is_float(ncclDataType_t t) {
  return t >= ncclFloat16;
}

// Rank r's input element i: small integers, exact in every type (fp8 included) and their sums.
double input(int r, std::size_t i) {
  return static_cast<double>((r + 1) * (1 + i % 3));
}

double expected(ncclRedOp_t op, std::size_t i, int n, ncclDataType_t t) {
  double acc = input(0, i);
  for (int r = 1; r < n; ++r) {
    const double x = input(r, i);
    if (op == ncclProd)
      acc *= x;
    else if (op == ncclMax)
      acc = std::max(acc, x);
    else if (op == ncclMin)
      acc = std::min(acc, x);
    else
      acc += x;
  }
  if (op == ncclAvg) acc = is_float(t) ? acc / n : std::floor(acc / n);
  return acc;
}

ncclComm_t init(bool blocking) {
  ncclUniqueId id{};
  if (me == 0) expect(ncclGetUniqueId(&id) == ncclSuccess, "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t c = nullptr;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = blocking ? 1 : 0;
  ncclResult_t rc = ncclCommInitRankConfig(&c, world, id, me, &config);
  if (!blocking) {
    expect(rc == ncclInProgress || rc == ncclSuccess, "non-blocking init returns in progress");
    ncclResult_t state = ncclInProgress;
    while (state == ncclInProgress) {
      ncclCommGetAsyncError(c, &state);
      usleep(1000);
    }
    rc = state;
  }
  expect(rc == ncclSuccess, std::string("init: ") + ncclGetLastError(c));
  return c;
}

// Whether the NCCL reported has the 8-bit float types (2.24 or newer): an older one refuses them.
bool g_fp8 = true;
bool is_fp8(ncclDataType_t t) {
  return t == ncclFloat8e4m3 || t == ncclFloat8e5m2;
}

void check_reductions(ncclComm_t c, int n, int rank, const char* where) {
  const std::size_t count = 37;  // not a multiple of the rank count: uneven chunks
  for (int ti = 0; ti < ncclNumTypes; ++ti) {
    const auto t = static_cast<ncclDataType_t>(ti);
    if (is_fp8(t) && !g_fp8) continue;
    const std::size_t es = size_of(t);
    for (ncclRedOp_t op : {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg}) {
      // Products leave fp8's exact integers beyond 3 ranks, and int8's range.
      if (op == ncclProd && (n > 3 || t == ncclInt8)) continue;
      for (bool in_place : {false, true}) {
        std::vector<unsigned char> send(count * es), recv(count * es);
        for (std::size_t i = 0; i < count; ++i) store(in_place ? recv : send, i, t, input(rank, i));
        const void* s = in_place ? recv.data() : send.data();
        const ncclResult_t rc = ncclAllReduce(s, recv.data(), count, t, op, c, nullptr);
        std::string what = std::string(where) + " allreduce type " + std::to_string(ti) + " op " +
                           std::to_string(op) + (in_place ? " in place" : "");
        expect(rc == ncclSuccess, what + ": " + ncclGetLastError(c));
        int wrong = 0;
        for (std::size_t i = 0; i < count; ++i) {
          const double want = expected(op, i, n, t), got = load(recv, i, t);
          const double tol = t == ncclFloat8e4m3 || t == ncclFloat8e5m2 ? 0.25
                             : t == ncclBfloat16 || t == ncclFloat16    ? 0.01
                                                                        : 1e-6;
          if (std::fabs(got - want) > tol * std::max(1.0, std::fabs(want))) ++wrong;
        }
        expect(wrong == 0, what + ": " + std::to_string(wrong) + " wrong");
      }
    }
  }
}

void check_movement(ncclComm_t c, int n, int rank) {
  const std::size_t k = 5;
  std::vector<float> mine(k * n), all(k * n, -1);
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = static_cast<float>(rank * 1000 + i);
  // all-gather: block r = rank r's first k elements
  expect(ncclAllGather(mine.data(), all.data(), k, ncclFloat, c, nullptr) == ncclSuccess,
         "allgather");
  for (int r = 0; r < n; ++r)
    expect(all[r * k + 1] == static_cast<float>(r * 1000 + 1), "allgather data");
  // reduce-scatter: block rank of the sum
  std::vector<float> block(k, -1);
  expect(ncclReduceScatter(mine.data(), block.data(), k, ncclFloat, ncclSum, c, nullptr) ==
             ncclSuccess,
         "reducescatter");
  float want = 0;
  for (int r = 0; r < n; ++r) want += static_cast<float>(r * 1000 + rank * k + 2);
  expect(block[2] == want, "reducescatter data");
  // broadcast from the last rank, reduce (max) to rank 1
  std::vector<float> b(k, static_cast<float>(rank));
  expect(ncclBroadcast(b.data(), b.data(), k, ncclFloat, n - 1, c, nullptr) == ncclSuccess,
         "broadcast");
  expect(b[3] == static_cast<float>(n - 1), "broadcast data");
  std::vector<float> red(k, -1);
  expect(ncclReduce(mine.data(), red.data(), k, ncclFloat, ncclMax, 1, c, nullptr) == ncclSuccess,
         "reduce");
  if (rank == 1) expect(red[0] == static_cast<float>((n - 1) * 1000), "reduce data");
  // all-to-all and a ring, as grouped sends and receives (nccl_collectives.cpp's way)
  std::vector<float> got(k * n, -1);
  ncclGroupStart();
  for (int p = 0; p < n; ++p) {
    ncclSend(mine.data() + p * k, k, ncclFloat, p, c, nullptr);
    ncclRecv(got.data() + p * k, k, ncclFloat, p, c, nullptr);
  }
  expect(ncclGroupEnd() == ncclSuccess, std::string("alltoall: ") + ncclGetLastError(c));
  for (int p = 0; p < n; ++p)
    expect(got[p * k] == static_cast<float>(p * 1000 + rank * k), "alltoall data");
  std::vector<float> left(k, -1);
  ncclGroupStart();
  ncclSend(mine.data(), k, ncclFloat, (rank + 1) % n, c, nullptr);
  ncclRecv(left.data(), k, ncclFloat, (rank + n - 1) % n, c, nullptr);
  expect(ncclGroupEnd() == ncclSuccess, "sendrecv");
  expect(left[4] == static_cast<float>(((rank + n - 1) % n) * 1000 + 4), "sendrecv data");
}

// The benchmarks' own path (nccl_collectives.cpp) with the kernels' host versions: each rank
// fills its inputs (fill_kernel), all-reduces, and counts wrong elements (check_kernel) against
// kernels/cpu/reduce_pattern.h, for every type and reduction the benchmarks register; then one
// corrupted element must be counted (the check can fail).
void check_pattern(ncclComm_t c) {
  namespace pattern = infrabench::kernels::pattern;
  using pattern::elem_type;
  struct kind {
    elem_type t;
    ncclDataType_t nccl;
    const char* code;  // the kernel template argument, mangled
  };
  const kind kinds[] = {{elem_type::float32, ncclFloat32, "f"},
                        {elem_type::float64, ncclFloat64, "d"},
                        {elem_type::float16, ncclFloat16, "6__half"},
                        {elem_type::bfloat16, ncclBfloat16, "13__nv_bfloat16"},
                        {elem_type::int32, ncclInt32, "i"},
                        {elem_type::float8_e4m3, ncclFloat8e4m3, "NS2_8fp8_byteILi0EEE"},
                        {elem_type::float8_e5m2, ncclFloat8e5m2, "NS2_8fp8_byteILi1EEE"}};
  const std::string ns = "_ZN10infrabench7kernels4cuda12_GLOBAL__N_1";
  for (const kind& k : kinds) {
    if (is_fp8(k.nccl) && !g_fp8) continue;
    for (auto [rop, op] : {std::pair{pattern::red_op::sum, ncclSum},
                           {pattern::red_op::max, ncclMax},
                           {pattern::red_op::min, ncclMin},
                           {pattern::red_op::avg, ncclAvg}}) {
      std::size_t count = 1000;
      std::vector<unsigned char> buf(count * pattern::elem_size(k.t));
      void* p = buf.data();
      std::size_t base = 0;
      int rank = me, ranks = world;
      void* fill_args[] = {&p, const_cast<elem_type*>(&k.t), &count, &base, &rank, &ranks};
      const std::string fill = ns + "11fill_kernelI" + k.code + "EEvPT_NS0_7pattern9elem_typeEmmii";
      expect(infrabench_sim_emulate_nccl_kernel(fill.c_str(), fill_args) == 1, "fill emulated");
      expect(ncclAllReduce(p, p, count, k.nccl, op, c, nullptr) == ncclSuccess,
             "pattern allreduce");
      const std::string check = ns + "12check_kernelI" + k.code +
                                "EEvPKT_mNS0_7pattern11result_ruleEiimNS8_9reductionEdPy";
      auto rule = pattern::result_rule::reduced;
      auto r = pattern::make_reduction(rop, k.t, world);
      double tol = pattern::tolerance(k.t, rop, world);
      unsigned long long bad = 0, *badp = &bad;
      std::size_t block = count;
      void* check_args[] = {&p, &count, &rule, &rank, &ranks, &block, &r, &tol, &badp};
      expect(infrabench_sim_emulate_nccl_kernel(check.c_str(), check_args) == 1, "check emulated");
      const std::string what = "pattern type " + std::to_string(static_cast<int>(k.t)) + " op " +
                               std::to_string(static_cast<int>(rop));
      expect(bad == 0,
             what + ": " + std::to_string(bad) + " of " + std::to_string(count) + " wrong");
      buf[7 * pattern::elem_size(k.t)] ^= 0x40;  // one element corrupted: the check sees it
      bad = 0;
      infrabench_sim_emulate_nccl_kernel(check.c_str(), check_args);
      expect(bad == 1, what + ": a corrupted element counted " + std::to_string(bad) + " times");
    }
  }
}

int data_mode() {
  ncclComm_t c = init(true);
  int v = 0;
  ncclGetVersion(&v);
  const char* want = std::getenv("SIMNCCL_VERSION");
  expect(want == nullptr || v == 21805,
         "SIMNCCL_VERSION=2.18.5 gives 21805, got " + std::to_string(v));
  g_fp8 = v >= NCCL_VERSION(2, 24, 0);
  // As the real NCCL before 2.24, an older one refuses the fp8 types (the benchmarks skip them).
  check_reductions(c, world, me, "world");
  check_pattern(c);
  check_movement(c, world, me);
  // Split in two by parity, ordered by descending key: ranks are renumbered.
  ncclComm_t half = nullptr;
  expect(ncclCommSplit(c, me % 2, -me, &half, nullptr) == ncclSuccess, "split");
  int hn = 0, hr = 0;
  ncclCommCount(half, &hn);
  ncclCommUserRank(half, &hr);
  expect(hn == (world + 1 - me % 2) / 2, "split size");
  std::vector<int> x(3, me), y(3, 0);
  expect(ncclAllReduce(x.data(), y.data(), 3, ncclInt32, ncclSum, half, nullptr) == ncclSuccess,
         "split allreduce");
  int sum = 0;
  for (int r = me % 2; r < world; r += 2) sum += r;
  expect(y[1] == sum, "split allreduce data");
  // A rank in no group gets no communicator.
  ncclComm_t none = reinterpret_cast<ncclComm_t>(1);
  expect(ncclCommSplit(c, me == 0 ? NCCL_SPLIT_NOCOLOR : 1, 0, &none, nullptr) == ncclSuccess,
         "split nocolor");
  expect((me == 0) == (none == nullptr), "nocolor gets no communicator");
  if (none != nullptr) ncclCommDestroy(none);
  ncclCommDestroy(half);
  ncclCommDestroy(c);
  // Non-blocking init, and a mismatch (counts differ) fails instead of hanging.
  ncclComm_t nb = init(false);
  std::vector<float> a(8 + (me == 0 ? 1 : 0), 1.0f);
  const ncclResult_t rc =
      ncclAllReduce(a.data(), a.data(), a.size(), ncclFloat, ncclSum, nb, nullptr);
  expect(rc != ncclSuccess, "mismatched counts fail");
  ncclCommAbort(nb);
  return 0;
}

// A fault on `bad`: the others fail in bounded time, naming it (and its host and GPU after init).
int fault_mode(const std::string& kind, int bad) {
  const auto t0 = std::chrono::steady_clock::now();
  ncclUniqueId id{};
  if (me == 0) ncclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t c = nullptr;
  ncclResult_t rc = ncclCommInitRank(&c, world, id, me);
  std::string text = ncclGetLastError(c);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  if (kind == "dead_before_init") {
    expect(rc != ncclSuccess, "init fails");
    if (me != bad)
      expect(text.find("rank " + std::to_string(bad) + " of") != std::string::npos,
             "names the missing rank: " + text);
  } else {
    expect(rc == ncclSuccess, "init");
    std::vector<float> a(1000, 1.0f);
    for (int i = 0; i < 3 && rc == ncclSuccess; ++i)
      rc = ncclAllReduce(a.data(), a.data(), a.size(), ncclFloat, ncclSum, c, nullptr);
    text = ncclGetLastError(c);
    expect(rc != ncclSuccess, "the collective fails");
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(c, &async);
    expect(async == rc, "the asynchronous error is the call's");
    const std::string named = "rank " + std::to_string(bad) + " (host " + host + ", GPU ";
    // A dead rank: every survivor names it with its host and GPU, directly or through the reason
    // of a survivor that gave up first (a CI run once showed rank 3 naming only rank 0, whose
    // reason waited behind the rest of a message rank 3 was receiving; the shim now reads past it).
    // A hung rank: the survivors time out at about the same moment, so one may name another
    // survivor it waited on before any reason arrives; each names a rank with its host and GPU,
    // and across ranks the hung one is named.
    const bool names_bad = me != bad && text.find(named) != std::string::npos;
    if (me != bad && kind == "dead_after_init") expect(names_bad, "names " + named + ": " + text);
    if (me != bad)
      expect(text.find(" (host " + std::string(host) + ", GPU ") != std::string::npos,
             "names a rank with its host and GPU: " + text);
    if (me == bad)
      expect(text.find("simulated fault") != std::string::npos, "says simulated: " + text);
    int naming = names_bad ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &naming, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0) expect(naming >= 1, "a survivor names " + named);
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const char* limit = std::getenv("SIMNCCL_TIMEOUT_S");
  expect(took < 4 * std::atof(limit ? limit : "20") + 5,
         "bounded: took " + std::to_string(took) + " s");
  if (me == 0 || me == bad) std::fprintf(stderr, "rank %d: %.1f s: %s\n", me, took, text.c_str());
  if (c != nullptr) ncclCommAbort(c);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  const std::string mode = argc > 1 ? argv[1] : "data";
  if (mode == "fault" && argc > 3)
    fault_mode(argv[2], std::atoi(argv[3]));
  else
    data_mode();
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0) std::printf("%s: %d failed checks over %d ranks\n", all ? "FAIL" : "OK", all, world);
  MPI_Finalize();
  return all ? 1 : 0;
}
