// Kernels that read the predefined identifiers of the PTX ISA ("Identifiers", "Special
// Registers"): the constant WARP_SZ (nvcc writes it for warpSize), the clocks' halves, the unused
// fourth vector elements, whole-vector and 16-bit reads, the performance monitors, the graph
// handle and the shared memory sizes with the reserved region. Built for compute_90
// (%aggr_smem_size).
#include <cstdint>

#include "special_registers.h"

#define READ32(name, out) asm volatile("mov.u32 %0, %%" name ";" : "=r"(out))
#define READ64(name, out) asm volatile("mov.u64 %0, %%" name ";" : "=l"(out))
#define READ_V4(name, out)                                \
  asm volatile("mov.v4.u32 {%0, %1, %2, %3}, %%" name ";" \
               : "=r"(out[0]), "=r"(out[1]), "=r"(out[2]), "=r"(out[3]))

extern "C" __global__ void Specials(SpecialValues* out) {
  __shared__ unsigned scratch[64];
  extern __shared__ unsigned dynamic[];
  const unsigned t = threadIdx.x + blockDim.x * blockIdx.x;
  SpecialValues v;
  v.warp_size = warpSize;
  asm volatile("mov.u32 %0, WARP_SZ*2+1;" : "=r"(v.warp_size_expression));
  READ32("tid.w", v.tid_w);
  READ32("ntid.w", v.ntid_w);
  READ32("ctaid.w", v.ctaid_w);
  READ32("nctaid.w", v.nctaid_w);
  READ_V4("tid", v.tid);
  READ_V4("ntid", v.ntid);
  READ_V4("ctaid", v.ctaid);
  READ_V4("nctaid", v.nctaid);
  unsigned short tid16;
  asm volatile("mov.u16 %0, %%tid.x;" : "=h"(tid16));
  v.tid16 = tid16;
  asm volatile("cvt.u32.u16 %0, %%ntid.x;" : "=r"(v.ntid16));
  READ32("pm0", v.pm0);
  READ32("pm7", v.pm7);
  READ64("pm3_64", v.pm3_64);
  READ64("current_graph_exec", v.graph_exec);
  READ64("clock64", v.clock_before);
  READ32("clock_hi", v.clock_hi);
  READ64("clock64", v.clock_after);
  READ64("globaltimer", v.timer_before);
  READ32("globaltimer_hi", v.timer_hi);
  READ32("globaltimer_lo", v.timer_lo);
  READ64("globaltimer", v.timer_after);
  READ32("total_smem_size", v.total_smem);
  READ32("dynamic_smem_size", v.dynamic_smem);
  READ32("aggr_smem_size", v.aggr_smem);
  READ32("reserved_smem_offset_begin", v.reserved_begin);
  READ32("reserved_smem_offset_end", v.reserved_end);
  READ32("reserved_smem_offset_cap", v.reserved_cap);
  // The reserved region is shared memory of the block: each thread stores its index there and
  // reads its neighbour's after a barrier. It must not overlap the block's own shared memory.
  scratch[threadIdx.x % 64] = 0xdead;
  dynamic[threadIdx.x] = 0xbeef;
  const unsigned slot = v.reserved_begin + 4 * threadIdx.x;
  asm volatile("st.shared.u32 [%0], %1;" ::"r"(slot), "r"(t));
  __syncthreads();
  const unsigned next = v.reserved_begin + 4 * ((threadIdx.x + 1) % blockDim.x);
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v.reserved_neighbour) : "r"(next));
  if (scratch[threadIdx.x % 64] != 0xdead || dynamic[threadIdx.x] != 0xbeef) {
    v.reserved_neighbour = ~0u;  // the region overlapped the block's own shared memory
  }
  out[t] = v;
}
