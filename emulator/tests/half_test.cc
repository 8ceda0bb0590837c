// f16/bf16 kernels (kernels/half.cu, built for compute_80 and compute_90) against host references
// that round independently of the emulator: f16 through GCC's _Float16 conversions (libgcc's
// soft-float, which honours the rounding mode) from an exact __float128 value, bf16 by
// truncating to f32 and comparing the remainder with half an ulp. Bit for bit, canonical NaN
// 0x7fff for NaN results.
#include <cfenv>
#include <climits>
#include <cmath>
#include <cstring>
#include <random>

#include "emulator/tests/kernel_util.h"

namespace tally::emu::testing {
namespace {

using Quad = __float128;

CUfunction HalfKernel(int arch, const char* name) {
  static CUmodule modules[2] = {};
  CUmodule& module = modules[arch == 90 ? 1 : 0];
  if (module == nullptr) {
    EnsureContext();
    std::string ptx = ReadKernelFile("half_sm" + std::to_string(arch) + ".ptx");
    REQUIRE(Emu().cuModuleLoadData(&module, ptx.c_str()) == CUDA_SUCCESS);
  }
  CUfunction function = nullptr;
  REQUIRE(Emu().cuModuleGetFunction(&function, module, name) == CUDA_SUCCESS);
  return function;
}

template <typename To, typename From>
To BitCast(From from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  std::memcpy(&to, &from, sizeof(to));
  return to;
}

bool IsNan(Quad q) { return q != q; }

// f16: the exact value rounded by a _Float16 conversion in host rounding mode `mode`.
template <typename T>
uint16_t RoundF16(T exact, int mode = FE_TONEAREST) {
  int saved = std::fegetround();
  std::fesetround(mode);
  volatile T input = exact;
  volatile _Float16 h = static_cast<_Float16>(input);
  std::fesetround(saved);
  uint16_t bits = BitCast<uint16_t>(static_cast<_Float16>(h));
  return IsNan(static_cast<Quad>(exact)) ? 0x7fff : bits;
}
Quad F16(uint16_t bits) { return static_cast<Quad>(BitCast<_Float16>(bits)); }

// bf16: truncate to f32 toward zero, keep the upper 16 bits, then decide from the remainder.
uint16_t RoundBf16(Quad exact, int mode = FE_TONEAREST) {
  if (IsNan(exact)) return 0x7fff;
  int saved = std::fegetround();
  std::fesetround(FE_TOWARDZERO);
  volatile Quad input = exact;
  volatile float truncated = static_cast<float>(input);
  std::fesetround(saved);
  uint32_t bits = BitCast<uint32_t>(static_cast<float>(truncated));
  bool negative = bits >> 31;
  if ((bits & 0x7fffffff) >= 0x7f800000) return bits >> 16;  // infinities
  uint32_t kept = bits & 0xffff0000;
  Quad magnitude = exact < 0 ? -exact : exact;
  Quad kept_magnitude = static_cast<Quad>(BitCast<float>(kept & 0x7fffffff));
  int exponent = static_cast<int>((kept >> 23) & 0xff);
  Quad ulp = std::ldexp(1.0, exponent == 0 ? -133 : exponent - 127 - 7);
  Quad rest = magnitude - kept_magnitude;
  bool up = false;
  if (mode == FE_TONEAREST) {
    up = rest > ulp / 2 || (rest == ulp / 2 && (kept & 0x10000) != 0);
  } else if (mode == FE_UPWARD) {
    up = rest > 0 && !negative;
  } else if (mode == FE_DOWNWARD) {
    up = rest > 0 && negative;
  }
  return static_cast<uint16_t>((kept >> 16) + (up ? 1 : 0));
}
Quad Bf16(uint16_t bits) { return static_cast<Quad>(BitCast<float>(uint32_t{bits} << 16)); }

// PTX semantics written out: min/max order -0 below +0 and ignore one NaN operand unless .NaN.
uint16_t MinMax(bool is_min, uint16_t a, uint16_t b, bool nan, Quad (*value)(uint16_t)) {
  bool na = IsNan(value(a)), nb = IsNan(value(b));
  if (na || nb) return (nan || (na && nb)) ? 0x7fff : (na ? b : a);
  Quad x = value(a), y = value(b);
  bool a_below = x < y || (x == y && (a & 0x8000) != 0);
  return a_below == is_min ? a : b;
}
uint16_t Saturate(uint16_t r, Quad (*value)(uint16_t), uint16_t one) {
  if (IsNan(value(r)) || (r & 0x8000) != 0) return 0;
  return value(r) > 1 ? one : r;
}
uint16_t Relu(uint16_t r, Quad (*value)(uint16_t)) {
  return (r & 0x8000) != 0 && !IsNan(value(r)) ? 0 : r;
}
int Compares(uint16_t a, uint16_t b, Quad (*value)(uint16_t), bool full) {
  Quad x = value(a), y = value(b);
  bool unordered = IsNan(x) || IsNan(y);
  int bits = (x < y ? 1 : 0) | (unordered || x > y ? 2 : 0) | (x == y ? 4 : 0);
  if (full) bits |= (IsNan(x) ? 8 : 0) | (x >= y ? 16 : 0) | (unordered || x != y ? 32 : 0);
  return bits;
}

// Operands: every pair of boundary values, then random bit patterns.
struct Operands {
  std::vector<uint16_t> a, b, c;
};
Operands MakeOperands(const std::vector<uint16_t>& special, uint32_t seed) {
  Operands ops;
  std::mt19937 rng(seed);
  for (uint16_t x : special) {
    for (uint16_t y : special) {
      ops.a.push_back(x);
      ops.b.push_back(y);
      ops.c.push_back(special[rng() % special.size()]);
    }
  }
  while (ops.a.size() < 1024) {
    ops.a.push_back(static_cast<uint16_t>(rng()));
    ops.b.push_back(static_cast<uint16_t>(rng()));
    ops.c.push_back(static_cast<uint16_t>(rng()));
  }
  return ops;
}

const std::vector<uint16_t> kF16Special = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00,
                                           0xbc00, 0x3c01, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00,
                                           0x3800, 0x3555, 0x1400, 0x0200, 0x5bff, 0xc000};
const std::vector<uint16_t> kBf16Special = {0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x0080, 0x3f80,
                                            0xbf80, 0x3f81, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0,
                                            0x3f00, 0x3eab, 0x4b00, 0x4b80, 0x0f00, 0xc000};

// Runs `kernel` (a, b, c, out, n) over `ops`, with `results` values per thread.
template <typename Out>
std::vector<Out> RunOnOperands(int arch, const char* kernel, const Operands& ops, int results) {
  int n = static_cast<int>(ops.a.size());
  CUdeviceptr da = Upload(ops.a), db = Upload(ops.b), dc = Upload(ops.c),
              dout = Zeros<Out>(n * results);
  EMU_OK(LaunchAndWait(HalfKernel(arch, kernel), n / 128, 128, {&da, &db, &dc, &dout, &n}));
  return Download<Out>(dout, n * results);
}

TEST_CASE("f16 arithmetic, min/max and comparisons are bit-exact") {
  for (int arch : {80, 90}) {
    INFO("compute_" << arch);
    Operands ops = MakeOperands(kF16Special, 5);
    std::vector<uint16_t> out = RunOnOperands<uint16_t>(arch, "half_arith", ops, 16);
    for (size_t i = 0; i < ops.a.size(); ++i) {
      uint16_t a = ops.a[i], b = ops.b[i], c = ops.c[i];
      Quad x = F16(a), y = F16(b), z = F16(c);
      INFO("i " << i << " a 0x" << std::hex << a << " b 0x" << b << " c 0x" << c);
      const uint16_t* o = &out[i * 16];
      uint16_t fma = RoundF16(x * y + z);
      CHECK(o[0] == RoundF16(x + y));
      CHECK(o[1] == RoundF16(x - y));
      CHECK(o[2] == RoundF16(x * y));
      CHECK(o[3] == fma);
      CHECK(o[4] == Saturate(RoundF16(x + y), F16, 0x3c00));
      CHECK(o[5] == Relu(fma, F16));
      CHECK(o[6] == MinMax(true, a, b, false, F16));
      CHECK(o[7] == MinMax(false, a, b, false, F16));
      CHECK(o[8] == MinMax(true, a, b, true, F16));
      CHECK(o[9] == MinMax(false, a, b, true, F16));
      CHECK(o[10] == (a ^ 0x8000));
      CHECK(o[11] == (b & 0x7fff));
      CHECK(o[12] == Compares(a, b, F16, true));
      CHECK(o[13] == Saturate(RoundF16(x * y), F16, 0x3c00));
      CHECK(o[14] == Saturate(fma, F16, 0x3c00));
      CHECK(o[15] == Saturate(RoundF16(x - y), F16, 0x3c00));
    }
  }
}

TEST_CASE("packed f16x2 arithmetic works on both halves") {
  Operands ops = MakeOperands(kF16Special, 6);
  std::vector<uint32_t> out = RunOnOperands<uint32_t>(80, "half2_arith", ops, 6);
  for (size_t i = 0; i < ops.a.size(); ++i) {
    // Low half from (a, b, c), high half from (b, c, a).
    uint16_t lanes[2][3] = {{ops.a[i], ops.b[i], ops.c[i]}, {ops.b[i], ops.c[i], ops.a[i]}};
    for (int h = 0; h < 2; ++h) {
      uint16_t a = lanes[h][0], b = lanes[h][1], c = lanes[h][2];
      Quad x = F16(a), y = F16(b), z = F16(c);
      INFO("i " << i << " half " << h << std::hex << " a 0x" << a << " b 0x" << b << " c 0x" << c);
      auto half = [&](int k) { return static_cast<uint16_t>(out[i * 6 + k] >> (16 * h)); };
      CHECK(half(0) == RoundF16(x + y));
      CHECK(half(1) == RoundF16(x * y + z));
      CHECK(half(2) == Saturate(RoundF16(x * y), F16, 0x3c00));
      CHECK(half(3) == MinMax(true, a, b, true, F16));
      CHECK(half(4) == (x < y ? 0x3c00 : 0));
      CHECK(half(5) == Relu(RoundF16(x * y + z), F16));
    }
  }
}

TEST_CASE("bf16 arithmetic is bit-exact, emulated on sm_80 and native on sm_90") {
  for (int arch : {80, 90}) {
    INFO("compute_" << arch);
    Operands ops = MakeOperands(kBf16Special, 7);
    std::vector<uint16_t> out = RunOnOperands<uint16_t>(arch, "bf16_arith", ops, 10);
    for (size_t i = 0; i < ops.a.size(); ++i) {
      uint16_t a = ops.a[i], b = ops.b[i], c = ops.c[i];
      Quad x = Bf16(a), y = Bf16(b), z = Bf16(c);
      INFO("i " << i << " a 0x" << std::hex << a << " b 0x" << b << " c 0x" << c);
      const uint16_t* o = &out[i * 10];
      CHECK(o[0] == RoundBf16(x + y));
      CHECK(o[1] == RoundBf16(x - y));
      CHECK(o[2] == RoundBf16(x * y));
      CHECK(o[3] == RoundBf16(x * y + z));
      CHECK(o[4] == MinMax(false, a, b, false, Bf16));
      CHECK(o[5] == MinMax(true, a, b, true, Bf16));
      CHECK(o[6] == (a ^ 0x8000));
      CHECK(o[7] == (b & 0x7fff));
      CHECK(o[8] == Compares(a, b, Bf16, false));
      uint16_t lo = RoundBf16(x * y + z), hi = RoundBf16(y * z + x);
      CHECK(o[9] == RoundBf16(Bf16(lo) + Bf16(hi)));
    }
  }
}

int TruncatingInt(double v, double (*round)(double), bool is_unsigned) {
  if (std::isnan(v)) return 0;
  v = round(v);
  if (is_unsigned) {
    if (v <= 0) return 0;
    return static_cast<int>(static_cast<unsigned>(std::min(v, 4294967295.0)));
  }
  return static_cast<int>(std::clamp(v, -2147483648.0, 2147483647.0));
}

TEST_CASE("conversions to and from f16/bf16 round exactly in every mode") {
  std::vector<float> f = {0.0f,           -0.0f,      1.0f,       65504.0f,      65519.99f,
                          65520.0f,       1e-8f,      5.96e-8f,   2.9802322e-8f, 1.00048828125f,
                          1.00146484375f, -2.5f,      3.0e38f,    -3.4e38f,      1e30f,
                          1e-40f,         -7.5f,      INFINITY,   -INFINITY,     NAN,
                          0.333333343f,   1.0078125f, 1.01171875f};
  std::mt19937 rng(9);
  while (f.size() < 256) {
    float magnitude =
        std::ldexp(1.0f + (rng() % 1000000) / 1e6f, static_cast<int>(rng() % 60) - 30);
    f.push_back(rng() % 2 ? magnitude : -magnitude);
  }
  int n = static_cast<int>(f.size());
  std::vector<double> d(n);
  std::vector<int> s(n);
  std::vector<long long> ll(n);
  for (int i = 0; i < n; ++i) {
    d[i] = static_cast<double>(f[i]) * (1.0 + std::ldexp(1.0, -30));  // between floats
    s[i] = static_cast<int>(rng()) >> (rng() % 31);
    ll[i] = static_cast<long long>(static_cast<uint64_t>(rng()) << 32 | rng()) >> (rng() % 63);
  }
  CUdeviceptr df = Upload(f), dd = Upload(d), ds = Upload(s), dll = Upload(ll),
              dout = Zeros<uint16_t>(n * 16), diout = Zeros<int>(n * 4),
              dfout = Zeros<float>(n * 2);
  for (int arch : {80, 90}) {
    INFO("compute_" << arch);
    EMU_OK(LaunchAndWait(HalfKernel(arch, "half_convert"), n / 64, 64,
                         {&df, &dd, &ds, &dll, &dout, &diout, &dfout, &n}));
    std::vector<uint16_t> out = Download<uint16_t>(dout, n * 16);
    std::vector<int> iout = Download<int>(diout, n * 4);
    std::vector<float> fout = Download<float>(dfout, n * 2);
    for (int i = 0; i < n; ++i) {
      INFO("i " << i << " f " << f[i] << " d " << d[i] << " s " << s[i] << " ll " << ll[i]);
      const uint16_t* o = &out[i * 16];
      CHECK(o[0] == RoundF16(f[i], FE_TONEAREST));
      CHECK(o[1] == RoundF16(f[i], FE_TOWARDZERO));
      CHECK(o[2] == RoundF16(f[i], FE_DOWNWARD));
      CHECK(o[3] == RoundF16(f[i], FE_UPWARD));
      CHECK(o[4] == RoundBf16(f[i], FE_TONEAREST));
      CHECK(o[5] == RoundBf16(f[i], FE_TOWARDZERO));
      CHECK(o[6] == RoundBf16(f[i], FE_DOWNWARD));
      CHECK(o[7] == RoundBf16(f[i], FE_UPWARD));
      CHECK(o[8] == RoundF16(d[i]));
      CHECK(o[9] == RoundBf16(d[i]));
      CHECK(o[10] == RoundF16(s[i], FE_TONEAREST));
      CHECK(o[11] == RoundF16(s[i], FE_DOWNWARD));
      CHECK(o[12] == RoundF16(ll[i], FE_TOWARDZERO));
      CHECK(o[13] == RoundBf16(s[i], FE_UPWARD));
      CHECK(o[14] == RoundF16(-f[i]));  // __floats2half2_rn: the second value in the high half
      CHECK(o[15] == (std::isnan(f[i]) ? 0x3c00 : 0));  // NaN != NaN
      double h = static_cast<double>(F16(RoundF16(f[i])));
      const int* io = &iout[i * 4];
      CHECK(io[0] == TruncatingInt(h, std::trunc, false));
      CHECK(io[1] == TruncatingInt(h, std::floor, false));
      CHECK(io[2] == TruncatingInt(h, std::ceil, true));
      CHECK(io[3] ==
            TruncatingInt(static_cast<double>(Bf16(RoundBf16(f[i]))), std::nearbyint, false));
      CHECK(BitCast<uint32_t>(fout[i * 2]) == BitCast<uint32_t>(static_cast<float>(h)));
      CHECK(BitCast<uint32_t>(fout[i * 2 + 1]) == uint32_t{RoundBf16(f[i])} << 16);
    }
  }
}

TEST_CASE("f16/bf16 atomicAdd on global and shared memory, scalar and packed") {
  for (int arch : {80, 90}) {
    INFO("compute_" << arch);
    CUdeviceptr h = Zeros<uint16_t>(1), h2 = Zeros<uint32_t>(1), b = Zeros<uint16_t>(1),
                b2 = Zeros<uint32_t>(1), sums = Zeros<float>(12);
    EMU_OK(LaunchAndWait(HalfKernel(arch, "half_atomics"), 2, 64, {&h, &h2, &b, &b2, &sums}));
    // 128 threads add 1 (and 0.5 to high halves): exact in both formats.
    CHECK(Download<uint16_t>(h, 1)[0] == RoundF16(128.0));
    CHECK(Download<uint32_t>(h2, 1)[0] == (uint32_t{RoundF16(64.0)} << 16 | RoundF16(128.0)));
    CHECK(Download<uint16_t>(b, 1)[0] == RoundBf16(128));
    CHECK(Download<uint32_t>(b2, 1)[0] == (uint32_t{RoundBf16(64)} << 16 | RoundBf16(128)));
    std::vector<float> per_block = Download<float>(sums, 12);
    for (int block = 0; block < 2; ++block) {
      const float* s = &per_block[block * 6];
      CHECK(s[0] == 64.0f);
      CHECK(s[1] == 64.0f);
      CHECK(s[2] == 32.0f);
      CHECK(s[3] == 64.0f);
      CHECK(s[4] == 64.0f);
      CHECK(s[5] == 32.0f);
    }
  }
}

TEST_CASE("approximate f16 functions are close to the exact ones") {
  std::vector<float> f;
  for (int i = 0; i < 64; ++i) f.push_back(-4.0f + i * 0.125f);
  int n = static_cast<int>(f.size());
  CUdeviceptr df = Upload(f), dout = Zeros<float>(n * 4);
  EMU_OK(LaunchAndWait(HalfKernel(80, "half_approx"), 1, n, {&df, &dout, &n}));
  std::vector<float> out = Download<float>(dout, n * 4);
  for (int i = 0; i < n; ++i) {
    INFO("x " << f[i]);
    CHECK(std::fabs(out[i * 4] - std::exp2(f[i])) <= 2e-3 * std::exp2(f[i]));
    CHECK(std::fabs(out[i * 4 + 1] - std::tanh(f[i])) <= 2e-3);
    CHECK(std::fabs(out[i * 4 + 2] - std::exp2(-f[i])) <= 2e-3 * std::exp2(-f[i]));
    CHECK(std::fabs(out[i * 4 + 3] - std::exp2(f[i])) <= 1e-2 * std::exp2(f[i]));
  }
}

TEST_CASE("f32 min/max.NaN propagate NaN") {
  std::vector<float> a = {1.0f, NAN, -2.0f, NAN, -0.0f, 3.0f};
  std::vector<float> b = {2.0f, 1.0f, NAN, NAN, 0.0f, -INFINITY};
  int n = static_cast<int>(a.size());
  CUdeviceptr da = Upload(a), db = Upload(b), dout = Zeros<float>(n * 2);
  EMU_OK(LaunchAndWait(HalfKernel(80, "f32_min_max_nan"), 1, n, {&da, &db, &dout}));
  std::vector<float> out = Download<float>(dout, n * 2);
  for (int i = 0; i < n; ++i) {
    INFO("a " << a[i] << " b " << b[i]);
    bool nan = std::isnan(a[i]) || std::isnan(b[i]);
    CHECK(std::isnan(out[2 * i]) == nan);
    CHECK(std::isnan(out[2 * i + 1]) == nan);
    if (!nan) {
      CHECK(out[2 * i] == std::fmin(a[i], b[i]));
      CHECK(out[2 * i + 1] == std::fmax(a[i], b[i]));
    }
  }
}

}  // namespace
}  // namespace tally::emu::testing
