// References for kernels/tensor_core.cu: small integers, so every product and sum is exact in
// f32 whatever the order of accumulation: bit-exact.
#include <cstring>

#include "emulator/tests/conformance/themes.h"

namespace tally::emu::conformance {
namespace {

// IEEE binary16 bits of a small integer (|v| < 2048: exact).
uint16_t HalfBits(int v) {
  if (v == 0) return 0;
  uint16_t sign = v < 0 ? 0x8000 : 0;
  unsigned m = static_cast<unsigned>(v < 0 ? -v : v);
  int e = 31 - __builtin_clz(m);
  return static_cast<uint16_t>(sign | ((e + 15) << 10) | ((m << (10 - e)) & 0x3ff));
}

std::vector<Case> Cases() {
  return {
      {.kernel = "wmma_16x16x16",
       .covers = "wmma.load/mma/store (m16n16k16, f16 x f16 + f32)",
       .grid = {2},
       .block = {32},
       .args =
           [] {
             std::vector<uint16_t> a, b;
             for (int v : Random<int>(512, -8, 8, 200)) a.push_back(HalfBits(v));
             for (int v : Random<int>(512, -8, 8, 201)) b.push_back(HalfBits(v));
             std::vector<float> c;
             for (int v : Random<int>(512, -100, 100, 202)) c.push_back(float(v));
             return std::vector<Arg>{In(a), In(b), In(c), Out<float>(512)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<uint16_t>(0), b = in.Get<uint16_t>(1);
             auto c = in.Get<float>(2);
             auto value = [](uint16_t bits) {
               for (int v = -8; v <= 8; ++v)
                 if (HalfBits(v) == bits) return float(v);
               return 0.0f;
             };
             std::vector<float> d(512);
             for (int t = 0; t < 2; ++t)
               for (int r = 0; r < 16; ++r)
                 for (int col = 0; col < 16; ++col) {
                   float sum = c[t * 256 + r * 16 + col];
                   for (int k = 0; k < 16; ++k) {
                     sum += value(a[t * 256 + r * 16 + k]) * value(b[t * 256 + col * 16 + k]);
                   }
                   d[t * 256 + r * 16 + col] = sum;
                 }
             e.Equal(3, d);
           }},
  };
}

}  // namespace

std::vector<Case> tensor_core_cases() { return Cases(); }

}  // namespace tally::emu::conformance
