// Texture fetches and surface loads/stores through texture/surface objects, following the CUDA
// C++ Programming Guide, "Texture Fetching": unnormalized or normalized coordinates, address
// modes per dimension (wrap and mirror only with normalized coordinates, else clamp), point
// sampling, and linear filtering with 9-bit fixed-point weights (8 fractional bits) as the
// hardware computes them. 8/16-bit integers read as floats are normalized to [0, 1] / [-1, 1].
// A channel the texture lacks reads as 0 (alpha: 1). Device-memory resources are bounds-checked
// at every texel.
#include <bit>
#include <cmath>
#include <cstring>
#include <memory>

#include "emulator/exec/alu.h"
#include "emulator/exec/block.h"
#include "emulator/exec/lanes.h"

namespace tally::emu::exec {
namespace {

float HalfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16, exponent = (h >> 10) & 0x1f,
                 mantissa = h & 0x3ff;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | mantissa << 13);
  if (exponent != 0) return std::bit_cast<float>(sign | (exponent + 112) << 23 | mantissa << 13);
  float value = std::ldexp(static_cast<float>(mantissa), -24);  // subnormal or zero
  return sign != 0 ? -value : value;
}

// A texel's four channels, as floats or as integers depending on the sampler.
struct Texel {
  float f[4] = {0, 0, 0, 1};
  int64_t i[4] = {0, 0, 0, 1};
};

Texel Decode(const Sampler& s, const uint8_t* p) {
  Texel t;
  const uint32_t bytes = ChannelBytes(s.format);
  for (uint32_t c = 0; c < s.channels; ++c, p += bytes) {
    uint32_t raw = 0;
    std::memcpy(&raw, p, bytes);
    switch (s.format) {
      case CU_AD_FORMAT_FLOAT:
        t.f[c] = std::bit_cast<float>(raw);
        break;
      case CU_AD_FORMAT_HALF:
        t.f[c] = HalfToFloat(static_cast<uint16_t>(raw));
        break;
      case CU_AD_FORMAT_UNSIGNED_INT8:
      case CU_AD_FORMAT_UNSIGNED_INT16:
      case CU_AD_FORMAT_UNSIGNED_INT32:
        t.i[c] = raw;
        t.f[c] = static_cast<float>(raw) / static_cast<float>((uint64_t{1} << (8 * bytes)) - 1);
        break;
      default: {  // signed integers
        int64_t value = static_cast<int64_t>(uint64_t{raw} << (64 - 8 * bytes)) >> (64 - 8 * bytes);
        t.i[c] = value;
        float max = static_cast<float>((uint64_t{1} << (8 * bytes - 1)) - 1);
        t.f[c] = std::max(static_cast<float>(value) / max, -1.0f);
      }
    }
  }
  return t;
}

// The element index that address mode `mode` makes of `index` (-1: the border color).
int64_t Address(int64_t index, int64_t size, CUaddress_mode mode, bool normalized) {
  if (!normalized && (mode == CU_TR_ADDRESS_MODE_WRAP || mode == CU_TR_ADDRESS_MODE_MIRROR)) {
    mode = CU_TR_ADDRESS_MODE_CLAMP;
  }
  switch (mode) {
    case CU_TR_ADDRESS_MODE_WRAP:
      return ((index % size) + size) % size;
    case CU_TR_ADDRESS_MODE_MIRROR: {
      int64_t m = ((index % (2 * size)) + 2 * size) % (2 * size);
      return m < size ? m : 2 * size - 1 - m;
    }
    case CU_TR_ADDRESS_MODE_BORDER:
      return index < 0 || index >= size ? -1 : index;
    default:
      return std::clamp<int64_t>(index, 0, size - 1);
  }
}

// Texel coordinate of a float coordinate; huge and NaN values are pinned so that floor() and the
// conversion stay defined (they address far outside every texture either way).
double Scaled(const Sampler& s, float coordinate, int d) {
  double x = std::isnan(coordinate) ? 0.0 : coordinate;
  if (s.normalized_coords) x *= static_cast<double>(s.size[d]);
  return std::clamp(x, -1e12, 1e12);
}

}  // namespace

bool Block::ExecuteTexture(const Inst& in, Warp& warp, uint32_t mask, uint32_t pc) {
  const int dims = in.mod;
  const uint64_t* handle = TALLY_R(in.address);
  bool ok = true;
  ForLanes(mask, [&](int l) {
    if (!ok) return;
    auto fail = [&](CUresult code, const char* what) {
      char text[128];
      std::snprintf(text, sizeof(text), "%s (object 0x%llx)", what,
                    static_cast<unsigned long long>(handle[l]));
      Fault(warp, l, pc, code, text);
      ok = false;
    };
    absl::StatusOr<std::shared_ptr<TextureObject>> object =
        setup_->textures->Lookup(reinterpret_cast<void*>(handle[l]));
    if (!object.ok() || (*object)->surface != (in.op != Op::kTex)) {
      fail(CUDA_ERROR_ILLEGAL_ADDRESS,
           in.op == Op::kTex ? "not a live texture object" : "not a live surface object");
      return;
    }
    const Sampler& s = (*object)->sampler;
    // Host address of element (x, y, z), checked when it lies in device memory.
    auto element = [&](int64_t x, int64_t y, int64_t z, uint32_t bytes, bool write) -> uint8_t* {
      uint64_t address = s.base + z * s.slice + y * s.pitch + x;
      if (!s.device_memory) return reinterpret_cast<uint8_t*>(address);
      return Translate(Space::kGlobal, address, bytes, warp, l, pc, write);
    };

    if (in.op != Op::kTex) {  // suld.b / sust.b: x in bytes, y and z in elements
      const uint32_t bytes = TypeBits(in.type) / 8 * in.vec;
      int64_t c[3] = {0, 0, 0};
      for (int d = 0; d < dims; ++d) c[d] = ReadSigned(TALLY_R(in.src[d])[l], 32);
      const int64_t limit[3] = {static_cast<int64_t>(s.size[0] * s.element_bytes) - bytes,
                                static_cast<int64_t>(s.size[1]) - 1,
                                static_cast<int64_t>(s.size[2]) - 1};
      bool outside = false;
      for (int d = 0; d < 3; ++d) outside |= c[d] < 0 || c[d] > limit[d];
      if (c[0] % bytes != 0) {
        fail(CUDA_ERROR_MISALIGNED_ADDRESS, "surface x coordinate not aligned to the access");
        return;
      }
      if (outside && in.mod2 == 0) {
        fail(CUDA_ERROR_ILLEGAL_ADDRESS, "surface access out of bounds");
        return;
      }
      const uint32_t size = TypeBits(in.type) / 8;
      if (outside && in.mod2 == 2) {  // .zero: loads read zeros, stores are dropped
        if (in.op == Op::kSuld) {
          for (int v = 0; v < in.vec; ++v) {
            if (in.dst[v] != kNoSlot) TALLY_R(in.dst[v])[l] = 0;
          }
        }
        return;
      }
      for (int d = 0; d < 3; ++d) c[d] = std::clamp<int64_t>(c[d], 0, limit[d]);  // .clamp
      uint8_t* p = element(c[0], c[1], c[2], bytes, in.op == Op::kSust);
      if (p == nullptr) {
        ok = false;
        return;
      }
      for (int v = 0; v < in.vec; ++v) {
        if (in.dst[v] == kNoSlot) continue;
        if (in.op == Op::kSust) {
          std::memcpy(p + v * size, &TALLY_R(in.dst[v])[l], size);
        } else {
          uint64_t value = 0;
          std::memcpy(&value, p + v * size, size);
          TALLY_R(in.dst[v])[l] = value;
        }
      }
      return;
    }

    // tex: the texel at integer indices, through the address mode (or zero for a linear
    // resource read out of range, as tex1Dfetch does).
    auto texel = [&](const int64_t(&index)[3], Texel* out) {
      int64_t at[3] = {0, 0, 0};
      for (int d = 0; d < dims; ++d) {
        int64_t size = static_cast<int64_t>(s.size[d]);
        if (s.linear_resource) {
          if (index[d] < 0 || index[d] >= size) {
            *out = Texel{{0, 0, 0, 0}, {0, 0, 0, 0}};
            return true;
          }
          at[d] = index[d];
          continue;
        }
        at[d] = Address(index[d], size, s.address_mode[d], s.normalized_coords);
        if (at[d] < 0) {
          *out = Texel{};
          for (int c = 0; c < 4; ++c) {
            out->f[c] = s.border[c];
            out->i[c] = static_cast<int64_t>(s.border[c]);
          }
          return true;
        }
      }
      uint8_t* p = element(at[0] * s.element_bytes, at[1], at[2], s.element_bytes, false);
      if (p == nullptr) return false;
      *out = Decode(s, p);
      return true;
    };

    Texel result;
    if (in.type2 == Type::kS32 || !s.linear_filter) {
      int64_t index[3] = {0, 0, 0};
      for (int d = 0; d < dims; ++d) {
        uint64_t raw = TALLY_R(in.src[d])[l];
        index[d] = in.type2 == Type::kS32
                       ? ReadSigned(raw, 32)
                       : static_cast<int64_t>(std::floor(Scaled(s, AsF32(raw), d)));
      }
      if (!texel(index, &result)) {
        ok = false;
        return;
      }
    } else {
      // Linear filtering: blend the 2^dims neighbours of (x - 0.5) with weights quantized to
      // 1/256, as the texture units do.
      int64_t base[3] = {0, 0, 0};
      float weight[3] = {0, 0, 0};
      for (int d = 0; d < dims; ++d) {
        double x = Scaled(s, AsF32(TALLY_R(in.src[d])[l]), d) - 0.5;
        double floor_x = std::floor(x);
        base[d] = static_cast<int64_t>(floor_x);
        weight[d] = static_cast<float>(std::round((x - floor_x) * 256.0) / 256.0);
      }
      for (int c = 0; c < 4; ++c) result.f[c] = 0;
      for (int corner = 0; corner < (1 << dims); ++corner) {
        int64_t index[3] = {0, 0, 0};
        float w = 1;
        for (int d = 0; d < dims; ++d) {
          bool upper = (corner >> d) & 1;
          index[d] = base[d] + upper;
          w *= upper ? weight[d] : 1 - weight[d];
        }
        Texel t;
        if (!texel(index, &t)) {
          ok = false;
          return;
        }
        for (int c = 0; c < 4; ++c) result.f[c] += w * t.f[c];
      }
    }
    for (int c = 0; c < 4; ++c) {
      if (in.dst[c] == kNoSlot) continue;
      TALLY_R(in.dst[c])
      [l] = s.returns_float ? Bits(result.f[c]) : static_cast<uint64_t>(result.i[c]) & 0xffffffffu;
    }
  });
  return ok;
}

}  // namespace tally::emu::exec
