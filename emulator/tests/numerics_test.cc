// The numerics kernels (kernels/numerics.cu) against host references: directed rounding is
// computed with the host's rounding modes, so results must match bit for bit.
#include <cfenv>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "emulator/tests/kernel_util.h"

namespace tally::emu::testing {
namespace {

CUfunction NumericsKernel(const char* name) {
  static CUmodule module = [] {
    EnsureContext();
    std::string ptx = ReadKernelFile("numerics.ptx");
    CUmodule loaded = nullptr;
    REQUIRE(Emu().cuModuleLoadData(&loaded, ptx.c_str()) == CUDA_SUCCESS);
    return loaded;
  }();
  CUfunction function = nullptr;
  REQUIRE(Emu().cuModuleGetFunction(&function, module, name) == CUDA_SUCCESS);
  return function;
}

// `op` evaluated with the host rounding mode `mode`. -frounding-math alone does not stop GCC
// from evaluating an operation outside the fesetround() calls, so operands and result pass
// through volatile variables, which pins the arithmetic between them.
template <typename Op>
auto Rounded(int mode, Op op) {
  int saved = std::fegetround();
  std::fesetround(mode);
  volatile auto result = op();
  std::fesetround(saved);
  return +result;
}

uint32_t Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

// cvt to a 32-bit integer saturates and maps NaN to 0 (PTX ISA, "cvt").
int SaturatingInt(double value) {
  if (std::isnan(value)) return 0;
  if (value <= INT_MIN) return INT_MIN;
  if (value >= 2147483647.0) return INT_MAX;
  return static_cast<int>(value);
}
unsigned SaturatingUint(double value) {
  if (std::isnan(value) || value <= 0) return 0;
  if (value >= 4294967295.0) return UINT_MAX;
  return static_cast<unsigned>(value);
}

TEST_CASE("directed rounding matches the host's rounding modes bit for bit") {
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  std::uniform_real_distribution<double> ddist(-10.0, 10.0);
  const int n = 64;
  std::vector<float> a(n), b(n);
  std::vector<double> c(n);
  for (int i = 0; i < n; ++i) {
    a[i] = dist(rng);
    b[i] = dist(rng);
    if (std::fabs(b[i]) < 0.01f) b[i] = 0.5f;
    c[i] = ddist(rng) / 3.0;
  }
  a[0] = 1e30f;  // products overflow in some directions
  b[0] = 1e10f;
  CUdeviceptr da = Upload(a), db = Upload(b), dc = Upload(c), dout = Zeros<float>(n * 8),
              diout = Zeros<int>(n * 4);
  EMU_OK(LaunchAndWait(NumericsKernel("rounding"), 1, n, {&da, &db, &dc, &dout, &diout}));
  std::vector<float> out = Download<float>(dout, n * 8);
  std::vector<int> iout = Download<int>(diout, n * 4);
  for (int i = 0; i < n; ++i) {
    volatile float x = a[i], y = b[i];
    volatile double z = c[i];
    volatile int big = 0x7fffffff - i * 1000;
    float expected[8] = {
        Rounded(FE_TOWARDZERO, [&] { return x + y; }),
        Rounded(FE_UPWARD, [&] { return x * y; }),
        Rounded(FE_DOWNWARD, [&] { return x / y; }),
        Rounded(FE_UPWARD, [&] { return std::sqrt(std::fabs(x)); }),
        Rounded(FE_TOWARDZERO, [&] { return std::fma(x, y, 1.0f); }),
        Rounded(FE_TOWARDZERO, [&] { return static_cast<float>(z); }),
        Rounded(FE_UPWARD, [&] { return static_cast<float>(z); }),
        Rounded(FE_TOWARDZERO, [&] { return static_cast<float>(big); }),
    };
    for (int k = 0; k < 8; ++k) {
      INFO("thread " << i << " result " << k << " x=" << +x << " y=" << +y << " z=" << +z);
      CHECK(Bits(out[i * 8 + k]) == Bits(expected[k]));
    }
    CHECK(iout[i * 4] == SaturatingInt(std::floor(x * 7.5f)));
    CHECK(iout[i * 4 + 1] == SaturatingInt(std::ceil(x * 7.5f)));
    CHECK(static_cast<unsigned>(iout[i * 4 + 2]) == SaturatingUint(std::trunc(x * 1e9f)));
    CHECK(iout[i * 4 + 3] == static_cast<int>(static_cast<int64_t>(std::nearbyint(z * 1e12))));
  }
}

TEST_CASE("comparisons with NaN follow ordered/unordered semantics") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a = {1, 2, 2, nan, 1, nan, -0.0f, 5};
  std::vector<float> b = {2, 1, 2, 1, nan, nan, 0.0f, -5};
  CUdeviceptr da = Upload(a), db = Upload(b), dout = Zeros<int>(a.size());
  EMU_OK(LaunchAndWait(NumericsKernel("compares"), 1, static_cast<unsigned>(a.size()),
                       {&da, &db, &dout}));
  std::vector<int> out = Download<int>(dout, a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    float x = a[i], y = b[i];
    int bits = 0;
    bits |= (x < y) << 0;
    bits |= (x <= y) << 1;
    bits |= (x == y) << 2;
    bits |= (x != y) << 3;
    bits |= !(x >= y) << 4;
    bits |= std::isnan(x) << 5;
    bits |= (std::isnan(x) || std::isnan(y) || x > y) << 6;
    bits |= ((x < y) && (y > 0.0f)) << 7;
    INFO("case " << i);
    CHECK(out[i] == bits);
  }
}

TEST_CASE("64-bit integer arithmetic") {
  std::mt19937_64 rng(22);
  const int n = 64;
  std::vector<int64_t> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<int64_t>(rng());
    b[i] = static_cast<int64_t>(rng()) >> (i % 60);
  }
  a[0] = 0, b[0] = 0, a[1] = -7, b[1] = 2, a[2] = INT64_MAX, b[2] = -1;
  CUdeviceptr da = Upload(a), db = Upload(b), dout = Zeros<int64_t>(n * 8);
  EMU_OK(LaunchAndWait(NumericsKernel("wide_ints"), 1, n, {&da, &db, &dout}));
  std::vector<int64_t> out = Download<int64_t>(dout, n * 8);
  for (int i = 0; i < n; ++i) {
    int64_t x = a[i], y = b[i];
    uint64_t ux = x, uy = y;
    uint64_t reversed = 0;
    for (int k = 0; k < 64; ++k) reversed |= ((ux >> k) & 1) << (63 - k);
    int64_t expected[8] = {
        static_cast<int64_t>(ux * uy),
        static_cast<int64_t>((static_cast<__int128>(x) * y) >> 64),
        static_cast<int64_t>((static_cast<unsigned __int128>(ux) * uy) >> 64),
        y != 0 ? x / y : 0,
        y != 0 ? x % y : 0,
        static_cast<int64_t>(uy != 0 ? ux / uy : 0),
        x >> (y & 63),
        static_cast<int64_t>(std::popcount(ux) + std::countl_zero(ux) * 100 + reversed),
    };
    for (int k = 0; k < 8; ++k) {
      INFO("thread " << i << " result " << k);
      CHECK(out[i * 8 + k] == expected[k]);
    }
  }
}

TEST_CASE("integer and float conversions") {
  std::mt19937 rng(23);
  std::uniform_int_distribution<int> idist(-2000000000, 2000000000);
  std::uniform_real_distribution<double> ddist(-1000.0, 1000.0);
  const int n = 64;
  std::vector<int> a(n);
  std::vector<double> d(n);
  for (int i = 0; i < n; ++i) {
    a[i] = idist(rng);
    d[i] = ddist(rng);
  }
  CUdeviceptr da = Upload(a), dd = Upload(d), dout = Zeros<int>(n * 6),
              ddout = Zeros<double>(n * 2);
  EMU_OK(LaunchAndWait(NumericsKernel("conversions"), 1, n, {&da, &dd, &dout, &ddout}));
  std::vector<int> out = Download<int>(dout, n * 6);
  std::vector<double> dout_host = Download<double>(ddout, n * 2);
  for (int i = 0; i < n; ++i) {
    int x = a[i];
    float f = static_cast<float>(d[i]);
    int expected[6] = {
        static_cast<unsigned char>(x),
        static_cast<short>(x),
        static_cast<unsigned short>(x >> 4),
        SaturatingInt(std::nearbyint(f)),
        SaturatingInt(std::trunc(static_cast<float>(static_cast<int64_t>(d[i] * 1e8)))),
        static_cast<int>(d[i] < 0 ? 0u : static_cast<unsigned>(d[i])),
    };
    for (int k = 0; k < 6; ++k) {
      INFO("thread " << i << " result " << k);
      CHECK(out[i * 6 + k] == expected[k]);
    }
    CHECK(dout_host[i * 2] == static_cast<double>(static_cast<uint64_t>(std::llabs(x))) * 1e-3);
    CHECK(dout_host[i * 2 + 1] == static_cast<double>(f));
  }
}

TEST_CASE("shared-memory atomics in 2-D blocks") {
  std::mt19937 rng(24);
  const int blocks = 4, threads = 16 * 8;
  std::vector<int> in(blocks * threads);
  for (int& v : in) v = static_cast<int>(rng() % 100000);
  CUdeviceptr din = Upload(in), dout = Zeros<int>(blocks * 17);
  EMU_OK(LaunchAndWait(NumericsKernel("shared_atomics"), blocks, 16, {&din, &dout}, 0, 1, 1, 8));
  std::vector<int> out = Download<int>(dout, blocks * 17);
  for (int block = 0; block < blocks; ++block) {
    std::vector<int> histogram(16, 0);
    int maximum = 0;
    for (int t = 0; t < threads; ++t) {
      int v = in[block * threads + t];
      ++histogram[v & 15];
      maximum = std::max(maximum, v);
    }
    for (int k = 0; k < 16; ++k) CHECK(out[block * 17 + k] == histogram[k]);
    CHECK(out[block * 17 + 16] == maximum);
  }
}

TEST_CASE("generic pointers into shared and local memory") {
  std::vector<int> in(64);
  for (int i = 0; i < 64; ++i) in[i] = i * i - 100;
  CUdeviceptr din = Upload(in), dout = Zeros<int>(128);
  EMU_OK(LaunchAndWait(NumericsKernel("generic_pointers"), 1, 64, {&din, &dout}));
  std::vector<int> out = Download<int>(dout, 128);
  for (int t = 0; t < 64; ++t) {
    int tile = 0, local = 0;
    for (int k = 0; k < 8; ++k) {
      tile += in[(t & ~7) + k];
      local += in[(t + k) & 63] * (k + 1);
    }
    CHECK(out[t * 2] == tile);
    CHECK(out[t * 2 + 1] == local);
  }
}

TEST_CASE("funnel shifts, lop3 and copysign") {
  std::mt19937 rng(25);
  const int n = 64;
  std::vector<unsigned> a(n), b(n);
  std::vector<float> f(n + 1);
  for (int i = 0; i < n; ++i) {
    a[i] = rng();
    b[i] = rng();
    f[i] = (i % 3 == 0 ? -1.0f : 1.0f) * static_cast<float>(i) * 0.25f;
  }
  f[n] = -7.0f;
  CUdeviceptr da = Upload(a), db = Upload(b), df = Upload(f), dout = Zeros<unsigned>(n * 6),
              dfout = Zeros<float>(n);
  EMU_OK(LaunchAndWait(NumericsKernel("bit_ops"), 1, n, {&da, &db, &df, &dout, &dfout}));
  std::vector<unsigned> out = Download<unsigned>(dout, n * 6);
  std::vector<float> fout = Download<float>(dfout, n);
  for (int i = 0; i < n; ++i) {
    uint64_t both = static_cast<uint64_t>(b[i]) << 32 | a[i];
    unsigned shift = b[i] & 63, wrap = shift & 31, clamp = std::min(shift, 32u);
    unsigned expected[6] = {
        static_cast<unsigned>((both << wrap) >> 32),
        static_cast<unsigned>(both >> wrap),
        static_cast<unsigned>((both << clamp) >> 32),
        static_cast<unsigned>(clamp == 64 ? 0 : both >> clamp),
        a[i] ^ b[i] ^ shift,
        (a[i] & b[i]) | (a[i] & shift) | (b[i] & shift),
    };
    for (int k = 0; k < 6; ++k) {
      INFO("thread " << i << " result " << k);
      CHECK(out[i * 6 + k] == expected[k]);
    }
    CHECK(fout[i] == std::copysign(f[i + 1], f[i]));
  }
}

TEST_CASE("sad and 16-bit atomicCAS") {
  std::vector<int> a = {5, -5, 100, -2000000000, 0, 7};
  std::vector<int> b = {9, 3, -100, 2000000000, 0, 7};
  a.resize(64, 1);
  b.resize(64, -1);
  std::vector<unsigned short> words = {0, 65530, 7, 100};
  CUdeviceptr da = Upload(a), db = Upload(b), dout = Zeros<int>(64), dwords = Upload(words);
  EMU_OK(LaunchAndWait(NumericsKernel("sad_cas16"), 1, 64, {&da, &db, &dout, &dwords}));
  std::vector<int> out = Download<int>(dout, 64);
  for (int i = 0; i < 64; ++i) {
    int64_t x = a[i], y = b[i];
    uint32_t ux = a[i], uy = b[i];
    uint32_t signed_diff = static_cast<uint32_t>(x > y ? x - y : y - x);
    uint32_t unsigned_diff = ux > uy ? ux - uy : uy - ux;
    INFO("thread " << i);
    CHECK(static_cast<uint32_t>(out[i]) == signed_diff + 7 + unsigned_diff);
  }
  std::vector<unsigned short> after = Download<unsigned short>(dwords, 4);
  for (int k = 0; k < 4; ++k) CHECK(after[k] == static_cast<unsigned short>(words[k] + 16));
}

}  // namespace
}  // namespace tally::emu::testing
