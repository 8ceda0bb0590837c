// Warp-level matrix instructions: wmma.load/store/mma, mma.sync, ldmatrix, stmatrix, movmatrix.
// Each is one collective step over all 32 lanes: the fragments' elements are gathered into
// whole matrices through the layout tables decode_matrix.cc built, computed on, and scattered
// back (or moved to and from memory element by element).
//
// Arithmetic (PTX ISA, "mma"): f16/bf16/tf32 products are exact in f32 and are added to C one
// at a time in k order, in f32 with round-to-nearest; the tensor cores' own order and internal
// precision are not specified, so results may differ from a GPU's by the rounding of the partial
// sums: at most K+1 f32 roundings, i.e. |error| <= (K+1) * 2^-24 * (|c| + sum |a*b|) (exact
// whenever every partial sum is representable). An f16 D is rounded once from that f32 sum. .tf32
// operands use the top 19 bits of their f32 data (the low 13 mantissa bits are ignored). f64 is
// a chain of fused multiply-adds in k order; integers are exact, wrapped to 32 bits (or clamped
// with .satfinite). NaN results are the canonical NaN, as elsewhere in the emulator.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "emulator/exec/block.h"
#include "emulator/exec/float16.h"
#include "emulator/exec/lanes.h"

namespace tally::emu::exec {
namespace {

constexpr int kMaxElements = 32 * 16;  // the largest operand (32x16, 16x32) has 512 elements

uint64_t ElementMask(MatrixElement e) { return WidthMask(MatrixElementBits(e)); }

// Every element of `f`, indexed row * cols + col (replicated elements: the last lane's copy).
void Gather(const MatrixFragment& f, const Warp& warp, uint64_t* matrix) {
  const int per = MatrixElementsPerRegister(f.element), bits = MatrixElementBits(f.element);
  const uint64_t mask = ElementMask(f.element);
  for (int lane = 0; lane < 32; ++lane) {
    for (int e = 0; e < f.elements_per_lane; ++e) {
      const uint64_t reg = TALLY_R(f.slots[e / per])[lane];
      matrix[f.index[lane * f.elements_per_lane + e]] = (reg >> (e % per * bits)) & mask;
    }
  }
}

// Writes `matrix` into the fragment's registers (whole registers: packed elements together).
void Scatter(const MatrixFragment& f, Warp& warp, const uint64_t* matrix) {
  const int per = MatrixElementsPerRegister(f.element), bits = MatrixElementBits(f.element);
  for (int lane = 0; lane < 32; ++lane) {
    const uint16_t* index = &f.index[lane * f.elements_per_lane];
    for (size_t r = 0; r < f.slots.size(); ++r) {
      uint64_t value = 0;
      for (int j = 0; j < per; ++j) value |= matrix[index[r * per + j]] << (j * bits);
      TALLY_R(f.slots[r])[lane] = value;
    }
  }
}

float FloatValue(MatrixElement e, uint64_t bits) {
  switch (e) {
    case MatrixElement::kF16:
      return HalfToFloat(static_cast<uint32_t>(bits), HalfFormat{5, 10});
    case MatrixElement::kBF16:
      return HalfToFloat(static_cast<uint32_t>(bits), HalfFormat{8, 7});
    case MatrixElement::kTF32:
      return AsF32(bits & ~uint64_t{0x1fff});
    default:
      return AsF32(bits);
  }
}

int64_t IntValue(MatrixElement e, uint64_t bits) {
  return e == MatrixElement::kU8 ? static_cast<int64_t>(bits & 0xff)
                                 : ReadSigned(bits, MatrixElementBits(e));
}

// D = A * B + C on whole matrices (a: m x k, b: k x n, c and d: m x n), as the file comment says.
void MultiplyAccumulate(const MatrixInst& mi, const uint64_t* a, const uint64_t* b,
                        const uint64_t* c, uint64_t* d) {
  const MatrixFragment &fd = mi.fragments[0], &fa = mi.fragments[1], &fb = mi.fragments[2],
                       &fc = mi.fragments[3];
  const int m = fd.rows, n = fd.cols, k = fa.cols;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      const uint64_t c_bits = c[i * n + j];
      uint64_t& out = d[i * n + j];
      if (fa.element == MatrixElement::kF64) {
        double sum = AsF64(c_bits);
        for (int x = 0; x < k; ++x) sum = std::fma(AsF64(a[i * k + x]), AsF64(b[x * n + j]), sum);
        out = std::isnan(sum) ? 0x7fffffffffffffffull : Bits(sum);
      } else if (IsIntegerElement(fa.element)) {
        int64_t sum = ReadSigned(c_bits, 32);
        for (int x = 0; x < k; ++x) {
          sum += IntValue(fa.element, a[i * k + x]) * IntValue(fb.element, b[x * n + j]);
        }
        if (mi.satfinite) sum = std::clamp<int64_t>(sum, INT32_MIN, INT32_MAX);
        out = static_cast<uint32_t>(sum);
      } else {
        float sum = FloatValue(fc.element, c_bits);
        for (int x = 0; x < k; ++x) {
          const float product = FloatValue(fa.element, a[i * k + x]) *
                                FloatValue(fb.element, b[x * n + j]);  // exact
          sum += product;
        }
        if (fd.element == MatrixElement::kF16) {
          out = DoubleToHalf(sum, HalfFormat{5, 10}, Rounding::kRn);
        } else {
          out = std::isnan(sum) ? 0x7fffffffu : Bits(sum);
        }
      }
    }
  }
}

}  // namespace

bool Block::ExecuteMatrix(const Inst& in, Warp& warp, uint32_t mask, uint32_t pc) {
  const MatrixInst& mi = function_->matrix_insts[in.target];
  // .aligned: every lane of the warp executes the same instruction together.
  if (mask != 0xffffffffu) {
    char text[120];
    std::snprintf(text, sizeof(text),
                  "warp-level matrix instruction executed by lanes 0x%08x: .aligned needs all 32",
                  mask);
    Fault(warp, std::countr_zero(mask), pc, CUDA_ERROR_ILLEGAL_INSTRUCTION, text);
    return false;
  }
  const MatrixFragment& f = mi.fragments[0];
  uint64_t matrix[kMaxElements];
  switch (mi.kind) {
    case MatrixKind::kMma: {
      uint64_t a[kMaxElements], b[kMaxElements], c[kMaxElements];
      Gather(mi.fragments[1], warp, a);
      Gather(mi.fragments[2], warp, b);
      Gather(mi.fragments[3], warp, c);
      MultiplyAccumulate(mi, a, b, c, matrix);
      Scatter(f, warp, matrix);
      return true;
    }
    case MatrixKind::kMovmatrix:
      Gather(mi.fragments[1], warp, matrix);
      Scatter(f, warp, matrix);
      return true;
    default:
      break;
  }
  // Memory forms. wmma: element (row, col) of the operand lies `stride` elements per row (or
  // column) from the lane's base address. ldmatrix/stmatrix: row R of the stacked 8x8 matrices
  // starts at the address lane R supplies (PTX ISA, "ldmatrix").
  const bool wmma = mi.kind == MatrixKind::kWmmaLoad || mi.kind == MatrixKind::kWmmaStore;
  const bool store = mi.kind == MatrixKind::kWmmaStore || mi.kind == MatrixKind::kStmatrix;
  const uint32_t bytes = MatrixElementBits(f.element) / 8;
  const uint64_t* base = TALLY_R(in.address);
  const uint64_t* stride = wmma ? TALLY_R(in.src[0]) : nullptr;
  if (store) Gather(f, warp, matrix);
  for (int lane = 0; lane < 32; ++lane) {
    for (int e = 0; e < f.elements_per_lane; ++e) {
      const int index = f.index[lane * f.elements_per_lane + e];
      const int row = index / f.cols, col = index % f.cols;
      uint64_t address;
      int source_lane = lane;
      if (wmma) {
        const uint64_t lead = stride[lane] & 0xffffffffu;
        const uint64_t element = mi.column_major ? col * lead + row : row * lead + col;
        address = base[lane] + in.offset + element * bytes;
      } else {
        source_lane = row;
        address = base[row] + in.offset + uint64_t{bytes} * col;
      }
      if (address % bytes != 0) {
        Fault(warp, source_lane, pc, CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned matrix element");
        return false;
      }
      uint8_t* host = Translate(in.space, address, bytes, warp, source_lane, pc, store);
      if (host == nullptr) return false;
      if (store) {
        std::memcpy(host, &matrix[index], bytes);  // little-endian: the low bytes
      } else {
        matrix[index] = 0;
        std::memcpy(&matrix[index], host, bytes);
      }
    }
  }
  if (store) {
    ++writes_;
  } else {
    Scatter(f, warp, matrix);
  }
  return true;
}

}  // namespace tally::emu::exec
