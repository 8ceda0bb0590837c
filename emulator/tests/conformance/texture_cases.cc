// References for kernels/texture.cu after the CUDA C++ Programming Guide, "Texture Fetching":
// point sampling reads T[floor(x), floor(y)]; linear filtering blends the four texels around
// (x - 0.5, y - 0.5) with weights frac(x - 0.5) and frac(y - 0.5); normalized coordinates are
// scaled by the size first; the address mode maps each texel index outside the array (wrap,
// mirror, clamp, or the border color). Texels are multiples of 1/64 and coordinates of 1/8, so
// every weight is exact (also after the hardware's 8-bit weight quantization) and so is every
// result: the comparison is bit-exact.
#include <algorithm>
#include <cmath>

#include "emulator/tests/conformance/themes.h"

namespace tally::emu::conformance {
namespace {

constexpr uint32_t kWidth = 16, kHeight = 8;
constexpr int kPoints = 128;

std::vector<float> Texels(unsigned seed) {
  std::vector<float> texels;
  for (int v : Random<int>(kWidth * kHeight, -128, 128, seed)) texels.push_back(v / 64.0f);
  return texels;
}

// Index k of a dimension of n texels under `mode`; -1 for the border.
long Address(long k, long n, AddressMode mode) {
  switch (mode) {
    case AddressMode::kWrap:
      return ((k % n) + n) % n;
    case AddressMode::kMirror: {
      long m = ((k % (2 * n)) + 2 * n) % (2 * n);
      return m < n ? m : 2 * n - 1 - m;
    }
    case AddressMode::kBorder:
      return k < 0 || k >= n ? -1 : k;
    case AddressMode::kClamp:
      break;
  }
  return std::clamp(k, 0l, n - 1);
}

float Fetch(const std::vector<float>& texels, const Sampler& s, float x, float y) {
  if (s.normalized) {
    x *= kWidth;
    y *= kHeight;
  }
  auto texel = [&](long i, long j) -> double {
    long xi = Address(i, kWidth, s.address), yj = Address(j, kHeight, s.address);
    return xi < 0 || yj < 0 ? s.border : texels[yj * kWidth + xi];
  };
  if (!s.linear) return float(texel(long(std::floor(x)), long(std::floor(y))));
  double xb = x - 0.5, yb = y - 0.5;
  long i = long(std::floor(xb)), j = long(std::floor(yb));
  double a = xb - i, b = yb - j;
  return float((1 - a) * (1 - b) * texel(i, j) + a * (1 - b) * texel(i + 1, j) +
               (1 - a) * b * texel(i, j + 1) + a * b * texel(i + 1, j + 1));
}

// The kernel's six samplers, in parameter order.
constexpr Sampler kSamplers[] = {
    // linear, address, normalized, border
    {false, AddressMode::kClamp, false, 0},  {true, AddressMode::kClamp, false, 0},
    {true, AddressMode::kBorder, false, 0.75f}, {false, AddressMode::kWrap, true, 0},
    {true, AddressMode::kWrap, true, 0},     {true, AddressMode::kMirror, true, 0},
};

// Points in texels on a 1/4 grid offset by 1/8 (never on a texel edge), reaching 6 texels
// (5 rows) beyond the array on every side.
std::vector<float> Points(unsigned seed) {
  auto xs = Random<int>(kPoints, -24, 4 * kWidth + 23, seed);
  auto ys = Random<int>(kPoints, -20, 4 * kHeight + 19, seed + 1);
  std::vector<float> points;
  for (int p = 0; p < kPoints; ++p) points.insert(points.end(), {xs[p] / 4.0f + 0.125f, ys[p] / 4.0f + 0.125f});
  return points;
}

std::vector<Case> Cases() {
  return {
      {.kernel = "tex2d_samplers",
       .covers = "tex.2d on texture objects: point/linear filtering, clamp/border/wrap/mirror "
                 "addressing, unnormalized and normalized coordinates",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             std::vector<float> texels = Texels(70);
             std::vector<Arg> args;
             for (const Sampler& sampler : kSamplers) args.push_back(Texture2D(texels, kWidth, sampler));
             args.push_back(In(Points(71)));
             args.push_back(Value(1.0f / kWidth));
             args.push_back(Value(1.0f / kHeight));
             args.push_back(Out<float>(kPoints * 6));
             return args;
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto texels = in.Get<float>(0), points = in.Get<float>(6);
             std::vector<float> out;
             for (int p = 0; p < kPoints; ++p) {
               float x = points[2 * p], y = points[2 * p + 1];
               for (const Sampler& s : kSamplers) {
                 float scale_x = s.normalized ? 1.0f / kWidth : 1.0f;
                 float scale_y = s.normalized ? 1.0f / kHeight : 1.0f;
                 out.push_back(Fetch(texels, s, x * scale_x, y * scale_y));
               }
             }
             e.Equal(9, out);
           }},
      {.kernel = "surf2d_mirror",
       .covers = "suld.b/sust.b on surface objects (trap and zero boundary modes)",
       .grid = {1, kHeight},
       .block = {32},
       .args =
           [] {
             return std::vector<Arg>{Surface2D(Texels(72), kWidth),
                                     Surface2D(std::vector<float>(kWidth * kHeight), kWidth),
                                     Value(int(kWidth))};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto texels = in.Get<float>(0);
             std::vector<float> out(texels.size());
             for (uint32_t y = 0; y < kHeight; ++y) {
               const float* row = &texels[y * kWidth];
               for (uint32_t x = 0; x < kWidth; ++x) {
                 float left = x > 0 ? row[x - 1] : 0, right = x + 1 < kWidth ? row[x + 1] : 0;
                 out[y * kWidth + x] = 2 * row[kWidth - 1 - x] + left + right;
               }
             }
             e.Equal(0, texels);  // read only
             e.Equal(1, out);
           }},
  };
}

}  // namespace

std::vector<Case> texture_cases() { return Cases(); }

}  // namespace tally::emu::conformance
