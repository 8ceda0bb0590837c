// Kernels for matrix_test.cc: warp-level matrix instructions run by part of a warp (which must
// fail the launch), and stmatrix (sm_90), checked against the PTX ISA's fragment layout.

// mma.sync on constant fragments, executed by every thread that reaches it.
__device__ void ConstantMma(float* d) {
  unsigned one = 0x3c003c00u;  // f16x2 {1, 1}
  float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %4, %4, %4}, "
      "{%4, %4}, {%0, %1, %2, %3};"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "r"(one));
  d[threadIdx.x] = d0 + d1 + d2 + d3;
}

// Every thread of the block runs the mma: a full warp computes 4 * 16 per lane.
extern "C" __global__ void block_mma(float* d) { ConstantMma(d); }

// Only the first half of the warp reaches the mma.
extern "C" __global__ void divergent_mma(float* d) {
  if (threadIdx.x < 16) ConstantMma(d);
}

// stmatrix .x4 (and .trans): lane l holds regs[4 l + j] for matrix j and supplies the address
// of shared row (5 l) mod 32 (pitch 8 values); the 32 rows are copied to `out`.
template <bool kTrans>
__device__ void StoreMatrices(const unsigned* regs, unsigned short* out) {
  __shared__ unsigned short rows[32 * 8];
  int lane = threadIdx.x;
  unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(&rows[(5 * lane % 32) * 8]));
  const unsigned* r = regs + 4 * lane;
  if (kTrans) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};"
                 ::"r"(address), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
  } else {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                 ::"r"(address), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
  }
  __syncwarp();
  for (int i = lane; i < 32 * 8; i += 32) out[i] = rows[i];
}
extern "C" __global__ void stmatrix_x4(const unsigned* regs, unsigned short* out) {
  StoreMatrices<false>(regs, out);
}
extern "C" __global__ void stmatrix_x4_trans(const unsigned* regs, unsigned short* out) {
  StoreMatrices<true>(regs, out);
}
