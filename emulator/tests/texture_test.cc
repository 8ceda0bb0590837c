// CUDA arrays (creation, descriptors, 2-D/3-D copies), texture objects on linear, pitch2D and
// array resources (point and linear filtering, normalized coordinates, every address mode,
// integer and normalized-float reads) and surface objects (suld/sust with trap/clamp/zero),
// against CPU references that follow the CUDA C++ Programming Guide, "Texture Fetching".
#include <cmath>
#include <cstring>
#include <vector>

#include "emulator/tests/kernel_util.h"

namespace tally::emu::testing {
namespace {

CUarray MakeArray(size_t width, size_t height, size_t depth, CUarray_format format,
                  unsigned channels, unsigned flags = 0) {
  EnsureContext();
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  desc.Width = width;
  desc.Height = height;
  desc.Depth = depth;
  desc.Format = format;
  desc.NumChannels = channels;
  desc.Flags = flags;
  CUarray array = nullptr;
  REQUIRE(Emu().cuArray3DCreate_v2(&array, &desc) == CUDA_SUCCESS);
  return array;
}

CUtexObject MakeTexture(const CUDA_RESOURCE_DESC& resource, CUaddress_mode mode,
                        CUfilter_mode filter, unsigned flags, float border = 0) {
  CUDA_TEXTURE_DESC desc{};
  for (auto& m : desc.addressMode) m = mode;
  desc.filterMode = filter;
  desc.flags = flags;
  for (float& b : desc.borderColor) b = border;
  CUtexObject texture = 0;
  REQUIRE(Emu().cuTexObjectCreate(&texture, &resource, &desc, nullptr) == CUDA_SUCCESS);
  return texture;
}

CUDA_RESOURCE_DESC ArrayResource(CUarray array) {
  CUDA_RESOURCE_DESC resource{};
  resource.resType = CU_RESOURCE_TYPE_ARRAY;
  resource.res.array.hArray = array;
  return resource;
}

// CPU reference of one dimension of an address mode (normalized coordinates only for wrap and
// mirror, as the guide says).
long Wrap(long i, long n, CUaddress_mode mode) {
  switch (mode) {
    case CU_TR_ADDRESS_MODE_WRAP:
      return ((i % n) + n) % n;
    case CU_TR_ADDRESS_MODE_MIRROR: {
      long m = ((i % (2 * n)) + 2 * n) % (2 * n);
      return m < n ? m : 2 * n - 1 - m;
    }
    case CU_TR_ADDRESS_MODE_BORDER:
      return i < 0 || i >= n ? -1 : i;
    default:
      return std::min(std::max(i, 0l), n - 1);
  }
}

TEST_CASE("CUDA arrays: descriptors, copies in and out, sub-box copies and errors") {
  CUarray array = MakeArray(7, 5, 3, CU_AD_FORMAT_SIGNED_INT16, 2);
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  EMU_OK(Emu().cuArray3DGetDescriptor_v2(&desc, array));
  CHECK(desc.Width == 7);
  CHECK(desc.Depth == 3);
  CHECK(desc.NumChannels == 2);
  CUDA_ARRAY_DESCRIPTOR flat{};
  CHECK(Emu().cuArrayGetDescriptor_v2(&flat, array) == CUDA_ERROR_INVALID_VALUE);  // it is 3-D

  constexpr size_t kRow = 7 * 4;  // 7 elements of 2 x 16 bits
  std::vector<uint8_t> in(kRow * 5 * 3), out(in.size());
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 13 + 5);
  EMU_OK(CopyArray(array, in.data(), kRow, 5, 3, true));
  EMU_OK(CopyArray(array, out.data(), kRow, 5, 3, false));
  CHECK(out == in);

  // A 2x2x2 box at element (3, 1, 1) through device memory, with cuMemcpy3D array<->device.
  CUdeviceptr device = Zeros<uint8_t>(8 * 2 * 2);
  CUDA_MEMCPY3D box{};
  box.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  box.srcArray = array;
  box.srcXInBytes = 3 * 4;
  box.srcY = 1;
  box.srcZ = 1;
  box.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  box.dstDevice = device;
  box.dstPitch = 8;
  box.dstHeight = 2;
  box.WidthInBytes = 8;
  box.Height = 2;
  box.Depth = 2;
  EMU_OK(Emu().cuMemcpy3D_v2(&box));
  std::vector<uint8_t> got = Download<uint8_t>(device, 32);
  for (size_t z = 0; z < 2; ++z) {
    for (size_t y = 0; y < 2; ++y) {
      for (size_t x = 0; x < 8; ++x) {
        REQUIRE(got[(z * 2 + y) * 8 + x] == in[((z + 1) * 5 + y + 1) * kRow + 12 + x]);
      }
    }
  }
  box.srcXInBytes = 2;  // not a whole element
  CHECK(Emu().cuMemcpy3D_v2(&box) == CUDA_ERROR_INVALID_VALUE);
  box.srcXInBytes = 6 * 4;  // 2 elements from x = 6 exceed the width of 7
  CHECK(Emu().cuMemcpy3D_v2(&box) == CUDA_ERROR_INVALID_VALUE);

  CUarray bad = nullptr;
  CUDA_ARRAY3D_DESCRIPTOR wrong{};
  wrong.Width = 4;
  wrong.Format = CU_AD_FORMAT_FLOAT;
  wrong.NumChannels = 3;
  CHECK(Emu().cuArray3DCreate_v2(&bad, &wrong) == CUDA_ERROR_INVALID_VALUE);
  wrong.NumChannels = 1;
  wrong.Flags = CUDA_ARRAY3D_LAYERED;
  CHECK(Emu().cuArray3DCreate_v2(&bad, &wrong) == CUDA_ERROR_NOT_SUPPORTED);
  EMU_OK(Emu().cuArrayDestroy(array));
  CHECK(Emu().cuArrayDestroy(array) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(CopyArray(array, out.data(), kRow, 5, 3, false) == CUDA_ERROR_INVALID_HANDLE);
}

TEST_CASE("tex1Dfetch on linear memory: float and int, zero outside the resource") {
  std::vector<float> values(64);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.25f * static_cast<float>(i) - 3;
  CUdeviceptr data = Upload(values);
  CUDA_RESOURCE_DESC resource{};
  resource.resType = CU_RESOURCE_TYPE_LINEAR;
  resource.res.linear.devPtr = data;
  resource.res.linear.format = CU_AD_FORMAT_FLOAT;
  resource.res.linear.numChannels = 1;
  resource.res.linear.sizeInBytes = values.size() * sizeof(float);
  CUtexObject texture = MakeTexture(resource, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0);
  std::vector<int> index(32);
  for (int i = 0; i < 32; ++i) index[i] = i * 3 - 10;  // some below 0, some past 63
  CUdeviceptr dindex = Upload(index), out = Zeros<float>(32);
  EMU_OK(LaunchAndWait(KernelFrom("texture", "fetch_float"), 1, 32, {&texture, &dindex, &out}));
  std::vector<float> got = Download<float>(out, 32);
  for (int i = 0; i < 32; ++i) {
    REQUIRE(got[i] == (index[i] >= 0 && index[i] < 64 ? values[index[i]] : 0.0f));
  }

  CUDA_RESOURCE_DESC desc{};
  EMU_OK(Emu().cuTexObjectGetResourceDesc(&desc, texture));
  CHECK(desc.res.linear.devPtr == data);
  EMU_OK(Emu().cuTexObjectDestroy(texture));
  CHECK(Emu().cuTexObjectDestroy(texture) == CUDA_ERROR_INVALID_VALUE);

  resource.res.linear.format = CU_AD_FORMAT_SIGNED_INT32;
  texture = MakeTexture(resource, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0);
  CUdeviceptr iout = Zeros<int>(32);
  EMU_OK(LaunchAndWait(KernelFrom("texture", "fetch_int"), 1, 32, {&texture, &dindex, &iout}));
  std::vector<int> ints = Download<int>(iout, 32);
  for (int i = 0; i < 32; ++i) {
    int expected = 0;
    if (index[i] >= 0 && index[i] < 64) std::memcpy(&expected, &values[index[i]], 4);
    REQUIRE(ints[i] == expected);
  }
  // Misaligned pointers, linear filtering of linear memory and resource views are refused.
  CUDA_TEXTURE_DESC tex{};
  CUtexObject bad = 0;
  resource.res.linear.devPtr = data + 4;
  CHECK(Emu().cuTexObjectCreate(&bad, &resource, &tex, nullptr) == CUDA_ERROR_INVALID_VALUE);
  resource.res.linear.devPtr = data;
  resource.res.linear.format = CU_AD_FORMAT_FLOAT;
  tex.filterMode = CU_TR_FILTER_MODE_LINEAR;
  CHECK(Emu().cuTexObjectCreate(&bad, &resource, &tex, nullptr) == CUDA_ERROR_INVALID_VALUE);
  CUDA_RESOURCE_VIEW_DESC view{};
  tex.filterMode = CU_TR_FILTER_MODE_POINT;
  CHECK(Emu().cuTexObjectCreate(&bad, &resource, &tex, &view) == CUDA_ERROR_NOT_SUPPORTED);
}

TEST_CASE("8-bit textures: normalized-float reads and integer reads") {
  CUarray array = MakeArray(16, 0, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1);
  std::vector<uint8_t> bytes(16);
  for (int i = 0; i < 16; ++i) bytes[i] = static_cast<uint8_t>(i * 17);
  EMU_OK(CopyArray(array, bytes.data(), 16, 1, 1, true));
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i) + 0.5f;
  CUdeviceptr dx = Upload(x), out = Zeros<float>(16), uout = Zeros<unsigned>(16);
  CUtexObject normalized =
      MakeTexture(ArrayResource(array), CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0);
  EMU_OK(LaunchAndWait(KernelFrom("texture", "sample_1d"), 1, 16, {&normalized, &dx, &out}));
  std::vector<float> got = Download<float>(out, 16);
  for (int i = 0; i < 16; ++i) REQUIRE(got[i] == static_cast<float>(bytes[i]) / 255.0f);
  CUtexObject integer = MakeTexture(ArrayResource(array), CU_TR_ADDRESS_MODE_CLAMP,
                                    CU_TR_FILTER_MODE_POINT, CU_TRSF_READ_AS_INTEGER);
  EMU_OK(LaunchAndWait(KernelFrom("texture", "sample_1d_uchar"), 1, 16, {&integer, &dx, &uout}));
  std::vector<unsigned> raw = Download<unsigned>(uout, 16);
  for (int i = 0; i < 16; ++i) REQUIRE(raw[i] == bytes[i]);
  CUDA_TEXTURE_DESC tex{};
  tex.filterMode = CU_TR_FILTER_MODE_LINEAR;
  tex.flags = CU_TRSF_READ_AS_INTEGER;  // linear filtering needs float results
  CUtexObject bad = 0;
  CUDA_RESOURCE_DESC resource = ArrayResource(array);
  CHECK(Emu().cuTexObjectCreate(&bad, &resource, &tex, nullptr) == CUDA_ERROR_INVALID_VALUE);
  EMU_OK(Emu().cuTexObjectDestroy(normalized));
  EMU_OK(Emu().cuTexObjectDestroy(integer));
  EMU_OK(Emu().cuArrayDestroy(array));
}

// A 2-D float4 array sampled with normalized coordinates in every address mode, with point and
// linear filtering; the reference applies the guide's formulas on the host.
TEST_CASE("tex2D: normalized coordinates, address modes, point and linear filtering") {
  constexpr long kW = 5, kH = 4;
  CUarray array = MakeArray(kW, kH, 0, CU_AD_FORMAT_FLOAT, 4);
  std::vector<float> texels(kW * kH * 4);
  for (size_t i = 0; i < texels.size(); ++i) texels[i] = std::sin(static_cast<float>(i)) * 10;
  EMU_OK(CopyArray(array, texels.data(), kW * 16, kH, 1, true));
  std::vector<float> coords;
  for (int i = 0; i < 64; ++i) {
    coords.push_back(-1.3f + 0.061f * static_cast<float>(i));  // spans [-1.3, 2.6]
    coords.push_back(0.93f - 0.037f * static_cast<float>(i));
  }
  CUdeviceptr dcoords = Upload(coords), out = Zeros<float>(64 * 4);
  const float kBorder = 7.5f;
  for (CUaddress_mode mode : {CU_TR_ADDRESS_MODE_WRAP, CU_TR_ADDRESS_MODE_CLAMP,
                              CU_TR_ADDRESS_MODE_MIRROR, CU_TR_ADDRESS_MODE_BORDER}) {
    for (CUfilter_mode filter : {CU_TR_FILTER_MODE_POINT, CU_TR_FILTER_MODE_LINEAR}) {
      INFO("address mode " << mode << ", filter " << filter);
      CUtexObject texture =
          MakeTexture(ArrayResource(array), mode, filter, CU_TRSF_NORMALIZED_COORDINATES, kBorder);
      EMU_OK(LaunchAndWait(KernelFrom("texture", "sample_2d"), 1, 64, {&texture, &dcoords, &out}));
      std::vector<float> got = Download<float>(out, 64 * 4);
      auto texel = [&](long x, long y, int c) {
        long i = Wrap(x, kW, mode), j = Wrap(y, kH, mode);
        return i < 0 || j < 0 ? kBorder : texels[(j * kW + i) * 4 + c];
      };
      for (int t = 0; t < 64; ++t) {
        double x = coords[2 * t] * kW, y = coords[2 * t + 1] * kH;
        for (int c = 0; c < 4; ++c) {
          float expected;
          if (filter == CU_TR_FILTER_MODE_POINT) {
            expected = texel(static_cast<long>(std::floor(x)), static_cast<long>(std::floor(y)), c);
          } else {
            double xb = x - 0.5, yb = y - 0.5;
            long i = static_cast<long>(std::floor(xb)), j = static_cast<long>(std::floor(yb));
            float a = static_cast<float>(std::round((xb - i) * 256) / 256);
            float b = static_cast<float>(std::round((yb - j) * 256) / 256);
            expected = (1 - a) * (1 - b) * texel(i, j, c) + a * (1 - b) * texel(i + 1, j, c) +
                       (1 - a) * b * texel(i, j + 1, c) + a * b * texel(i + 1, j + 1, c);
          }
          REQUIRE(std::fabs(got[t * 4 + c] - expected) <= 1e-5f * (1 + std::fabs(expected)));
        }
      }
      EMU_OK(Emu().cuTexObjectDestroy(texture));
    }
  }
  EMU_OK(Emu().cuArrayDestroy(array));
}

TEST_CASE("tex2D on pitch2D memory and tex3D on a 3-D array") {
  constexpr int kW = 6, kH = 3, kPitch = 32;  // bytes per row: 6 floats padded to 32
  std::vector<float> rows(kPitch / 4 * kH, -1);
  for (int y = 0; y < kH; ++y) {
    for (int x = 0; x < kW; ++x) rows[y * kPitch / 4 + x] = static_cast<float>(10 * y + x);
  }
  CUdeviceptr data = Upload(rows);
  CUDA_RESOURCE_DESC pitched{};
  pitched.resType = CU_RESOURCE_TYPE_PITCH2D;
  pitched.res.pitch2D.devPtr = data;
  pitched.res.pitch2D.format = CU_AD_FORMAT_FLOAT;
  pitched.res.pitch2D.numChannels = 1;
  pitched.res.pitch2D.width = kW;
  pitched.res.pitch2D.height = kH;
  pitched.res.pitch2D.pitchInBytes = kPitch;
  CUtexObject texture = MakeTexture(pitched, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0);
  std::vector<float> coords;
  for (int i = 0; i < 32; ++i) {
    coords.push_back(static_cast<float>(i % 9) - 1.5f);
    coords.push_back(static_cast<float>(i / 9) - 0.2f);
  }
  CUdeviceptr dcoords = Upload(coords), out = Zeros<float>(32 * 4);
  EMU_OK(LaunchAndWait(KernelFrom("texture", "sample_2d"), 1, 32, {&texture, &dcoords, &out}));
  std::vector<float> got = Download<float>(out, 32 * 4);
  for (int t = 0; t < 32; ++t) {
    long x = std::clamp(static_cast<long>(std::floor(coords[2 * t])), 0l, long{kW - 1});
    long y = std::clamp(static_cast<long>(std::floor(coords[2 * t + 1])), 0l, long{kH - 1});
    REQUIRE(got[t * 4] == rows[y * kPitch / 4 + x]);
  }
  EMU_OK(Emu().cuTexObjectDestroy(texture));

  constexpr int kD = 4;
  CUarray volume = MakeArray(kD, kD, kD, CU_AD_FORMAT_FLOAT, 1);
  std::vector<float> cells(kD * kD * kD);
  for (int i = 0; i < kD * kD * kD; ++i) cells[i] = static_cast<float>(i * i % 37);
  EMU_OK(CopyArray(volume, cells.data(), kD * 4, kD, kD, true));
  CUtexObject tex3 =
      MakeTexture(ArrayResource(volume), CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_LINEAR, 0);
  std::vector<float> xyz;
  for (int i = 0; i < 32; ++i) {
    xyz.insert(xyz.end(), {0.3f + 0.13f * i, 3.9f - 0.11f * i, 1.0f + 0.07f * i, 0});
  }
  CUdeviceptr dxyz = Upload(xyz), out3 = Zeros<float>(32);
  EMU_OK(LaunchAndWait(KernelFrom("texture", "sample_3d"), 1, 32, {&tex3, &dxyz, &out3}));
  std::vector<float> got3 = Download<float>(out3, 32);
  auto cell = [&](long x, long y, long z) {
    auto c = [](long v) { return std::clamp(v, 0l, long{kD - 1}); };
    return cells[(c(z) * kD + c(y)) * kD + c(x)];
  };
  for (int t = 0; t < 32; ++t) {
    double p[3];
    long base[3];
    float w[3];
    for (int d = 0; d < 3; ++d) {
      p[d] = xyz[4 * t + d] - 0.5;
      base[d] = static_cast<long>(std::floor(p[d]));
      w[d] = static_cast<float>(std::round((p[d] - base[d]) * 256) / 256);
    }
    float expected = 0;
    for (int corner = 0; corner < 8; ++corner) {
      float weight = 1;
      long at[3];
      for (int d = 0; d < 3; ++d) {
        bool upper = (corner >> d) & 1;
        at[d] = base[d] + upper;
        weight *= upper ? w[d] : 1 - w[d];
      }
      expected += weight * cell(at[0], at[1], at[2]);
    }
    REQUIRE(std::fabs(got3[t] - expected) <= 1e-4f * (1 + std::fabs(expected)));
  }
  EMU_OK(Emu().cuTexObjectDestroy(tex3));
  EMU_OK(Emu().cuArrayDestroy(volume));
}

TEST_CASE("surfaces: surf2Dread/write, zero and clamp boundaries, traps") {
  constexpr int kW = 24, kH = 5;
  CUarray array = MakeArray(kW, kH, 0, CU_AD_FORMAT_SIGNED_INT32, 1, CUDA_ARRAY3D_SURFACE_LDST);
  std::vector<int> in(kW * kH);
  for (int i = 0; i < kW * kH; ++i) in[i] = i * 7 - 100;
  EMU_OK(CopyArray(array, in.data(), kW * 4, kH, 1, true));
  CUDA_RESOURCE_DESC resource = ArrayResource(array);
  CUsurfObject surface = 0;
  EMU_OK(Emu().cuSurfObjectCreate(&surface, &resource));
  EMU_OK(LaunchAndWait(KernelFrom("texture", "surface_update"), kH, kW, {&surface}));
  std::vector<int> out(kW * kH);
  EMU_OK(CopyArray(array, out.data(), kW * 4, kH, 1, false));
  for (int y = 0; y < kH; ++y) {
    for (int x = 0; x < kW; ++x) REQUIRE(out[y * kW + x] == 2 * in[y * kW + x] + 1 + x + y);
  }
  CUDA_RESOURCE_DESC back{};
  EMU_OK(Emu().cuSurfObjectGetResourceDesc(&back, surface));
  CHECK(back.res.array.hArray == array);
  EMU_OK(Emu().cuSurfObjectDestroy(surface));

  constexpr int kN = 32;
  CUarray line = MakeArray(kN, 0, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SURFACE_LDST);
  std::vector<float> values(kN);
  for (int i = 0; i < kN; ++i) values[i] = 0.5f * static_cast<float>(i) + 1;
  EMU_OK(CopyArray(line, values.data(), kN * 4, 1, 1, true));
  CUDA_RESOURCE_DESC line_resource = ArrayResource(line);
  EMU_OK(Emu().cuSurfObjectCreate(&surface, &line_resource));
  CUdeviceptr seen = Zeros<float>(kN);
  EMU_OK(LaunchAndWait(KernelFrom("texture", "surface_bounds"), 1, kN, {&surface, &seen}));
  std::vector<float> read = Download<float>(seen, kN);
  for (int i = 0; i < kN; ++i) REQUIRE(read[i] == (i >= 2 ? values[i - 2] : 0.0f));
  std::vector<float> after(kN);
  EMU_OK(CopyArray(line, after.data(), kN * 4, 1, 1, false));
  for (int i = 0; i < 2; ++i) REQUIRE(after[i] == values[i]);
  for (int i = 2; i < kN - 1; ++i) REQUIRE(after[i] == static_cast<float>(i - 2));
  CHECK(after[kN - 1] >= kN - 3);  // three threads clamp onto the last element
  EMU_OK(Emu().cuSurfObjectDestroy(surface));

  // A surface needs an array made for surface access; a trap mode access out of range faults.
  CUarray plain = MakeArray(4, 0, 0, CU_AD_FORMAT_FLOAT, 1);
  CUDA_RESOURCE_DESC plain_resource = ArrayResource(plain);
  CHECK(Emu().cuSurfObjectCreate(&surface, &plain_resource) == CUDA_ERROR_INVALID_VALUE);
  CUcontext scratch = nullptr;
  EMU_OK(Emu().cuCtxCreate_v2(&scratch, 0, 0));
  CUarray small = MakeArray(4, 0, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SURFACE_LDST);
  CUDA_RESOURCE_DESC small_resource = ArrayResource(small);
  EMU_OK(Emu().cuSurfObjectCreate(&surface, &small_resource));
  CHECK(LaunchAndWait(KernelFrom("texture", "surface_trap"), 1, 1, {&surface}) ==
        CUDA_ERROR_ILLEGAL_ADDRESS);
  EMU_OK(Emu().cuCtxDestroy_v2(scratch));
  EMU_OK(Emu().cuArrayDestroy(plain));
  EMU_OK(Emu().cuArrayDestroy(line));
  EMU_OK(Emu().cuArrayDestroy(array));
}

}  // namespace
}  // namespace tally::emu::testing
