// Kernels compiled by nvcc run on the emulator and match CPU references: bit-exact for
// integer work, within a tolerance for floating point.
#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <random>

#include "emulator/tests/kernel_util.h"

namespace tally::emu::testing {
namespace {

std::vector<int> RandomInts(size_t n, int lo, int hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<int> values(n);
  for (int& v : values) v = dist(rng);
  return values;
}

bool Near(double expected, double actual, double relative = 1e-5) {
  return std::fabs(expected - actual) <= relative * std::max(1.0, std::fabs(expected));
}

TEST_CASE("vec_add") {
  const int n = 1000;
  std::vector<float> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    a[i] = i * 0.5f;
    b[i] = 1000.0f - i;
  }
  CUdeviceptr da = Upload(a), db = Upload(b), dc = Zeros<float>(n);
  int count = n;
  EMU_OK(LaunchAndWait(BasicKernel("vec_add"), 8, 128, {&da, &db, &dc, &count}));
  std::vector<float> c = Download<float>(dc, n);
  for (int i = 0; i < n; ++i) REQUIRE(c[i] == a[i] + b[i]);
}

TEST_CASE("block_sum: shared memory and barriers in a loop") {
  const int n = 1000;
  std::vector<int> in = RandomInts(n, -1000, 1000, 1);
  CUdeviceptr din = Upload(in), dout = Zeros<int>(4);
  int count = n;
  EMU_OK(LaunchAndWait(BasicKernel("block_sum"), 4, 256, {&din, &dout, &count}));
  std::vector<int> out = Download<int>(dout, 4);
  for (int block = 0; block < 4; ++block) {
    int expected = 0;
    for (int i = block * 256; i < std::min(n, (block + 1) * 256); ++i) expected += in[i];
    CHECK(out[block] == expected);
  }
}

TEST_CASE("coords: 3-D grids and blocks") {
  const unsigned gx = 3, gy = 2, gz = 2, bx = 4, by = 2, bz = 3;
  const unsigned total = gx * gy * gz * bx * by * bz;
  CUdeviceptr dout = Zeros<unsigned>(total);
  EMU_OK(LaunchAndWait(BasicKernel("coords"), gx, bx, {&dout}, 0, gy, gz, by, bz));
  std::vector<unsigned> out = Download<unsigned>(dout, total);
  for (unsigned z = 0; z < gz; ++z)
    for (unsigned y = 0; y < gy; ++y)
      for (unsigned x = 0; x < gx; ++x)
        for (unsigned tz = 0; tz < bz; ++tz)
          for (unsigned ty = 0; ty < by; ++ty)
            for (unsigned tx = 0; tx < bx; ++tx) {
              unsigned block = x + gx * (y + gy * z);
              unsigned id = block * bx * by * bz + tx + bx * (ty + by * tz);
              REQUIRE(out[id] == ((tx << 24) | (ty << 16) | (z << 8) | y));
            }
}

TEST_CASE("collatz: divergent loops reconverge") {
  std::vector<int> values = RandomInts(256, 1, 5000, 2);
  std::vector<unsigned> in(values.begin(), values.end());
  CUdeviceptr din = Upload(in), dsteps = Zeros<unsigned>(256);
  EMU_OK(LaunchAndWait(BasicKernel("collatz"), 2, 128, {&din, &dsteps}));
  std::vector<unsigned> steps = Download<unsigned>(dsteps, 256);
  for (int i = 0; i < 256; ++i) {
    unsigned x = in[i], n = 0;
    while (x != 1) {
      x = (x & 1) ? 3 * x + 1 : x / 2;
      ++n;
    }
    REQUIRE(steps[i] == n);
  }
}

TEST_CASE("kernels on concurrent streams share the virtual SMs") {
  constexpr int kStreams = 4, kThreads = 1024;
  std::vector<int> values = RandomInts(kThreads, 1, 3000, 12);
  std::vector<unsigned> in(values.begin(), values.end());
  CUdeviceptr din = Upload(in);
  CUstream streams[kStreams];
  CUdeviceptr outs[kStreams];
  CUfunction collatz = BasicKernel("collatz");
  for (int s = 0; s < kStreams; ++s) {
    EMU_OK(Emu().cuStreamCreate(&streams[s], CU_STREAM_NON_BLOCKING));
    outs[s] = Zeros<unsigned>(kThreads);
    void* args[] = {&din, &outs[s]};
    for (int repeat = 0; repeat < 3; ++repeat) {
      EMU_OK(Emu().cuLaunchKernel(collatz, kThreads / 64, 1, 1, 64, 1, 1, 0, streams[s], args,
                                  nullptr));
    }
  }
  EMU_OK(Emu().cuCtxSynchronize());
  for (int s = 0; s < kStreams; ++s) {
    std::vector<unsigned> steps = Download<unsigned>(outs[s], kThreads);
    for (int i = 0; i < kThreads; ++i) {
      unsigned x = in[i], n = 0;
      while (x != 1) {
        x = (x & 1) ? 3 * x + 1 : x / 2;
        ++n;
      }
      REQUIRE(steps[i] == n);
    }
    EMU_OK(Emu().cuStreamDestroy_v2(streams[s]));
  }
}

TEST_CASE("control_flow: divergent loops, early exits, warp intrinsics in branches") {
  std::vector<int> in = RandomInts(96, 0, 50, 13);
  CUdeviceptr din = Upload(in), dout = Zeros<int>(96 * 4);
  EMU_OK(LaunchAndWait(BasicKernel("control_flow"), 1, 96, {&din, &dout}));
  std::vector<int> out = Download<int>(dout, 96 * 4);
  std::vector<int> acc(96, 0);
  int total = 0;
  for (int t = 0; t < 96; ++t) {
    int v = in[t];
    for (int i = 0; i < 20; ++i) {
      if ((v + i) % 7 == 0) continue;
      for (int j = 0; j < i; ++j) {
        if (j * v % 5 == 4) break;
        acc[t] += (i ^ j) + v;
      }
      if (acc[t] > 5000 + v * 3) break;
    }
    total += acc[t] & 0xff;
  }
  for (int t = 0; t < 96; ++t) {
    int lane = t & 31;
    INFO("thread " << t);
    CHECK(out[t * 4] == acc[t]);
    CHECK(static_cast<unsigned>(out[t * 4 + 1]) == (lane < 10 ? 0x3ffu : 0u));
    CHECK(out[t * 4 + 2] == (lane >= 13 && (lane & 1) ? in[(t & ~31) + (lane ^ 2)] : 0));
    CHECK(out[t * 4 + 3] == (in[t] % 3 == 0 ? 0 : total));
  }
}

TEST_CASE("int_ops: integer instructions are bit-exact") {
  std::vector<int> a = RandomInts(64, -1000000000, 1000000000, 3);
  std::vector<int> b = RandomInts(64, -70000, 70000, 4);
  a[0] = 0, b[0] = 0, a[1] = -1, b[1] = 1, a[2] = 7, b[2] = -3, a[3] = INT_MAX, b[3] = 31;
  CUdeviceptr da = Upload(a), db = Upload(b), dout = Zeros<int>(64 * 16);
  EMU_OK(LaunchAndWait(BasicKernel("int_ops"), 1, 64, {&da, &db, &dout}));
  std::vector<int> out = Download<int>(dout, 64 * 16);
  for (int i = 0; i < 64; ++i) {
    int x = a[i], y = b[i];
    unsigned ux = x, uy = y;
    int expected[16] = {
        static_cast<int>(ux * uy),
        static_cast<int>((static_cast<long long>(x) * y) >> 32),
        y != 0 ? x / y : 0,
        y != 0 ? x % y : 0,
        static_cast<int>(uy != 0 ? ux / uy : 0),
        x >> (y & 31),
        static_cast<int>(ux >> (uy & 31)),
        static_cast<int>(ux << (y & 15)),
        std::popcount(ux),
        std::countl_zero(ux),
        static_cast<int>([&] {
          unsigned r = 0;
          for (int k = 0; k < 32; ++k) r |= ((ux >> k) & 1u) << (31 - k);
          return r;
        }()),
        static_cast<int>(static_cast<unsigned>(std::min(x, y)) + std::max(ux, uy)),
        std::abs(x) ^ (x & y) ^ (x | ~y),
        static_cast<int>(static_cast<long long>(x) * static_cast<long long>(y) >> 7),
        static_cast<int>((ux >> 3) & 0x1f),
        static_cast<short>(x) + static_cast<signed char>(y),
    };
    for (int k = 0; k < 16; ++k) {
      INFO("thread " << i << " result " << k << " x=" << x << " y=" << y);
      REQUIRE(out[i * 16 + k] == expected[k]);
    }
  }
}

TEST_CASE("float_ops: floating-point instructions within tolerance") {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f), pos(0.5f, 2.0f);
  std::vector<float> a(64), b(64);
  for (int i = 0; i < 64; ++i) {
    a[i] = dist(rng);
    b[i] = (i % 2 ? -1.0f : 1.0f) * pos(rng);
  }
  CUdeviceptr da = Upload(a), db = Upload(b), dout = Zeros<float>(64 * 8),
              ddout = Zeros<double>(64 * 2), diout = Zeros<int>(64 * 2);
  EMU_OK(LaunchAndWait(BasicKernel("float_ops"), 1, 64, {&da, &db, &dout, &ddout, &diout}));
  std::vector<float> out = Download<float>(dout, 64 * 8);
  std::vector<double> dout_host = Download<double>(ddout, 64 * 2);
  std::vector<int> iout = Download<int>(diout, 64 * 2);
  for (int i = 0; i < 64; ++i) {
    float x = a[i], y = b[i];
    float expected[8] = {x * y + x,
                         x / y,
                         std::sqrt(std::fabs(x)),
                         std::fma(x, y, -1.5f),
                         std::fmin(x, y) - std::fmax(x, y),
                         static_cast<float>(static_cast<int>(x * 100.0f)),
                         std::exp(x * 0.1f),
                         x < y ? x : -y};
    for (int k = 0; k < 8; ++k) {
      INFO("thread " << i << " result " << k);
      CHECK(Near(expected[k], out[i * 8 + k]));
    }
    double dx = x, dy = y;
    CHECK(Near(dx * dy + std::sqrt(std::fabs(dx)), dout_host[i * 2], 1e-12));
    CHECK(Near(dx / (dy + 0.5), dout_host[i * 2 + 1], 1e-12));
    CHECK(iout[i * 2] == static_cast<int>(std::nearbyint(x * 3.3f)));
    CHECK(iout[i * 2 + 1] == static_cast<int>(static_cast<unsigned char>(static_cast<int>(y))));
  }
}

TEST_CASE("atomics across blocks") {
  const int n = 1000;
  std::vector<int> values = RandomInts(n, 0, 999, 6);
  std::vector<int> counters(11, 0);
  counters[8] = -1;
  counters[9] = INT_MAX;
  CUdeviceptr dvalues = Upload(values), dcounters = Upload(counters);
  CUdeviceptr dsum = Zeros<float>(1), dwrap = Zeros<unsigned>(1);
  int count = n;
  EMU_OK(
      LaunchAndWait(BasicKernel("atomics"), 8, 128, {&dvalues, &dcounters, &dsum, &dwrap, &count}));
  std::vector<int> got = Download<int>(dcounters, 11);
  std::vector<int> histogram(8, 0);
  for (int v : values) ++histogram[v & 7];
  for (int k = 0; k < 8; ++k) CHECK(got[k] == histogram[k]);
  CHECK(got[8] == *std::max_element(values.begin(), values.end()));
  CHECK(got[9] == *std::min_element(values.begin(), values.end()));
  CHECK(got[10] == 2 * n);
  CHECK(Download<float>(dsum, 1)[0] == 0.5f * n);
  CHECK(Download<unsigned>(dwrap, 1)[0] == n % 10);
}

TEST_CASE("warp_ops: shuffles and votes") {
  std::vector<int> in = RandomInts(128, 0, 100, 7);
  CUdeviceptr din = Upload(in), dout = Zeros<int>(128 * 6);
  EMU_OK(LaunchAndWait(BasicKernel("warp_ops"), 2, 64, {&din, &dout}));
  std::vector<int> out = Download<int>(dout, 128 * 6);
  for (int w = 0; w < 4; ++w) {
    const int* v = in.data() + w * 32;
    int sum = 0, any = 0, all = 1;
    unsigned ballot = 0;
    for (int l = 0; l < 32; ++l) {
      sum += v[l];
      if (v[l] & 1) ballot |= 1u << l;
      any |= v[l] > 90;
    }
    for (int l = 0; l < 32; ++l) {
      const int* o = out.data() + (w * 32 + l) * 6;
      INFO("warp " << w << " lane " << l);
      CHECK(o[0] == (l == 0 ? sum : 0));
      CHECK(static_cast<unsigned>(o[1]) == ballot);
      CHECK(o[2] == any * 2 + all);
      CHECK(o[3] == v[0]);
      CHECK(o[4] == v[l > 0 ? l - 1 : l]);
      CHECK(o[5] == v[l ^ 5]);
    }
  }
}

TEST_CASE("dynamic shared memory and local arrays") {
  std::vector<int> in = RandomInts(64, 0, 1000, 8);
  CUdeviceptr din = Upload(in), dout = Zeros<int>(64);
  int n = 64;
  EMU_OK(LaunchAndWait(BasicKernel("reverse_dynamic"), 1, 64, {&din, &dout, &n}, 64 * 4));
  std::vector<int> out = Download<int>(dout, 64);
  for (int t = 0; t < 64; ++t) {
    int s = 63 - t;
    CHECK(out[t] == in[s] * (in[s] & 15));
  }
}

TEST_CASE("module globals and constants") {
  CUdeviceptr counter = 0, lookup = 0;
  size_t bytes = 0;
  EMU_OK(Emu().cuModuleGetGlobal_v2(&counter, &bytes, BasicModule(), "device_counter"));
  CHECK(bytes == 4);
  EMU_OK(Emu().cuModuleGetGlobal_v2(&lookup, &bytes, BasicModule(), "lookup"));
  CHECK(bytes == 16);
  int start = 5;
  int table[4] = {10, 20, 30, 40};
  EMU_OK(Emu().cuMemcpyHtoD_v2(counter, &start, 4));
  EMU_OK(Emu().cuMemcpyHtoD_v2(lookup, table, 16));
  CUdeviceptr dout = Zeros<int>(64);
  EMU_OK(LaunchAndWait(BasicKernel("globals"), 1, 64, {&dout}));
  CHECK(Download<int>(counter, 1)[0] == 5 + 64);
  std::vector<int> out = Download<int>(dout, 64);
  for (int t = 0; t < 64; ++t) CHECK(out[t] == table[t & 3]);
  CHECK(Emu().cuModuleGetGlobal_v2(&counter, &bytes, BasicModule(), "nope") ==
        CUDA_ERROR_NOT_FOUND);
}

TEST_CASE("calls to .func, divergent and nested, incl. the libdevice sin slow path") {
  std::vector<int> in = RandomInts(64, -100000, 100000, 9);
  in[0] = 1 << 30;  // large argument: sin() takes __internal_trig_reduction_slowpathd
  CUdeviceptr din = Upload(in), dout = Zeros<int>(128), dfout = Zeros<float>(64);
  EMU_OK(LaunchAndWait(BasicKernel("calls"), 1, 64, {&din, &dout, &dfout}));
  std::vector<int> out = Download<int>(dout, 128);
  std::vector<float> fout = Download<float>(dfout, 64);
  for (int t = 0; t < 64; ++t) {
    int x = in[t];
    int y = (x & 1) ? 3 * x + t : x / 2;
    INFO("thread " << t);
    CHECK(out[2 * t] == y);
    CHECK(out[2 * t + 1] == 3 * y + 1);
    CHECK(fout[t] == (std::sin(static_cast<double>(x)) > 0 ? 1.0f : -1.0f));
  }
}

TEST_CASE("misc_ops: bfind, isspacep, redux.sync, prefetch") {
  std::vector<int> in = RandomInts(32, -100000, 100000, 10);
  in[0] = 0;
  in[1] = INT_MIN;
  in[2] = -1;
  CUdeviceptr din = Upload(in), dout = Zeros<int>(32 * 8);
  EMU_OK(LaunchAndWait(BasicKernel("misc_ops"), 1, 32, {&din, &dout}));
  std::vector<int> out = Download<int>(dout, 32 * 8);
  int min = INT_MAX, exclusive = 0;
  unsigned sum = 0, max = 0;  // redux.add wraps: sum in unsigned arithmetic
  for (int v : in) {
    sum += static_cast<unsigned>(v);
    min = std::min(min, v);
    max = std::max(max, static_cast<unsigned>(v));
    exclusive ^= v;
  }
  for (int l = 0; l < 32; ++l) {
    unsigned v = in[l];
    int signed_v = in[l];
    unsigned magnitude = signed_v < 0 ? ~v : v;
    INFO("lane " << l << " value " << signed_v);
    const int* o = out.data() + l * 8;
    CHECK(static_cast<unsigned>(o[0]) == (v == 0 ? 0xffffffffu : 31u - std::countl_zero(v)));
    CHECK(static_cast<unsigned>(o[1]) ==
          (magnitude == 0 ? 0xffffffffu : static_cast<unsigned>(std::countl_zero(magnitude))));
    CHECK(o[2] == 6);
    CHECK(static_cast<unsigned>(o[3]) == sum);
    CHECK(o[4] == min);
    CHECK(static_cast<unsigned>(o[5]) == max);
    CHECK(o[6] == exclusive);
    CHECK(static_cast<unsigned>(o[7]) == (signed_v < 0 ? 0u - v : v));
  }
}

TEST_CASE("bar.red: __syncthreads_count/and/or") {
  std::vector<int> in = RandomInts(3 * 96, 0, 100, 11);
  for (int i = 96; i < 192; ++i) in[i] = std::min(in[i], 90);  // block 1: no value above 95
  in[200] = -1;                                                // block 2: not all >= 0
  CUdeviceptr din = Upload(in), dout = Zeros<int>(9);
  EMU_OK(LaunchAndWait(BasicKernel("barrier_reductions"), 3, 96, {&din, &dout}));
  std::vector<int> out = Download<int>(dout, 9);
  for (int block = 0; block < 3; ++block) {
    int count = 0, all = 1, any = 0;
    for (int i = block * 96; i < (block + 1) * 96; ++i) {
      count += in[i] > 50;
      all &= in[i] >= 0;
      any |= in[i] > 95;
    }
    INFO("block " << block);
    CHECK(out[block * 3] == count);
    CHECK((out[block * 3 + 1] != 0) == (all != 0));
    CHECK((out[block * 3 + 2] != 0) == (any != 0));
  }
}

}  // namespace
}  // namespace tally::emu::testing
