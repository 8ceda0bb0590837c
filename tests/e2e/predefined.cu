// Kernels whose PTX uses the predefined identifiers of the PTX ISA: warpSize, for which nvcc
// writes the constant WARP_SZ (`mov.u32 %r1, WARP_SZ;`), in a warp-shuffle reduction and a
// per-warp layout; and special registers written as inline PTX (the unused .w of %tid, whole
// vector reads, the clocks' halves, the performance monitors, the graph handle, the reserved
// shared memory region and its offsets); and cooperative groups' reduction over tiles of two
// warps, whose scratch lives at %reserved_smem_offset_1. The module must load and every kernel
// compute what CUDA specifies.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

#include <cstdint>
#include <vector>

#include "check.h"

// Sum of each warp's values by shuffles: offsets warpSize/2, ..., 1.
__global__ void WarpSums(const int* in, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  int value = i < n ? in[i] : 0;
  for (int offset = warpSize / 2; offset > 0; offset /= 2) {
    value += __shfl_down_sync(0xffffffffu, value, offset);
  }
  if (threadIdx.x % warpSize == 0) out[i / warpSize] = value;
}

// Sums over tiles of 64 threads (two warps): cooperative groups synchronise the warps of a
// tile through barriers in the reserved shared memory region (%reserved_smem_offset_1).
__global__ void TileSums(const int* in, int* out) {
  namespace cg = cooperative_groups;
  const cg::thread_block_tile<64> tile = cg::tiled_partition<64>(cg::this_thread_block());
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int sum = cg::reduce(tile, in[i], cg::plus<int>());
  if (tile.thread_rank() == 0) out[i / 64] = sum;
}

struct Specials {
  unsigned warp_size_expression, tid_w, ntid[4], pm0;
  unsigned long long graph_exec, clock_hi_ordered;
  unsigned reserved_size, reserved_neighbour;
  unsigned offset0_inside, offset1_inside;
};

__global__ void ReadSpecials(Specials* out) {
  Specials s;
  asm volatile("mov.u32 %0, WARP_SZ*4-1;" : "=r"(s.warp_size_expression));
  asm volatile("mov.u32 %0, %%tid.w;" : "=r"(s.tid_w));
  asm volatile("mov.v4.u32 {%0, %1, %2, %3}, %%ntid;"
               : "=r"(s.ntid[0]), "=r"(s.ntid[1]), "=r"(s.ntid[2]), "=r"(s.ntid[3]));
  asm volatile("mov.u32 %0, %%pm0;" : "=r"(s.pm0));
  asm volatile("mov.u64 %0, %%current_graph_exec;" : "=l"(s.graph_exec));
  unsigned long long before, after;
  unsigned hi;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(before));
  asm volatile("mov.u32 %0, %%clock_hi;" : "=r"(hi));
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(after));
  s.clock_hi_ordered = before >> 32 <= hi && hi <= after >> 32;
  unsigned begin, end;
  asm volatile("mov.u32 %0, %%reserved_smem_offset_begin;" : "=r"(begin));
  asm volatile("mov.u32 %0, %%reserved_smem_offset_end;" : "=r"(end));
  s.reserved_size = end - begin;
  unsigned offset0, offset1;
  asm volatile("mov.u32 %0, %%reserved_smem_offset_0;" : "=r"(offset0));
  asm volatile("mov.u32 %0, %%reserved_smem_offset_1;" : "=r"(offset1));
  s.offset0_inside = begin <= offset0 && offset0 < end;
  s.offset1_inside = begin <= offset1 && offset1 < end;
  // The reserved region is the block's shared memory: a neighbour's store is visible (where the
  // region has a word for every thread).
  const bool fits = s.reserved_size >= 4 * blockDim.x;
  if (fits) {
    asm volatile("st.shared.u32 [%0], %1;" ::"r"(begin + 4 * threadIdx.x), "r"(threadIdx.x + 7));
  }
  __syncthreads();
  s.reserved_neighbour = 0;
  if (fits) {
    asm volatile("ld.shared.u32 %0, [%1];"
                 : "=r"(s.reserved_neighbour)
                 : "r"(begin + 4 * ((threadIdx.x + 1) % blockDim.x)));
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

int main() {
  int warp_size = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&warp_size, cudaDevAttrWarpSize, 0));
  EXPECT(warp_size == 32);

  const int n = 1000, warps = (n + 31) / 32;
  std::vector<int> host(n);
  for (int i = 0; i < n; ++i) host[i] = (i * 13) % 29 - 14;
  int *in = nullptr, *out = nullptr;
  CHECK_CUDA(cudaMalloc(&in, n * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&out, warps * sizeof(int)));
  CHECK_CUDA(cudaMemcpy(in, host.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  WarpSums<<<(n + 127) / 128, 128>>>(in, out, n);
  CHECK_CUDA(cudaGetLastError());
  std::vector<int> sums(warps);
  CHECK_CUDA(cudaMemcpy(sums.data(), out, warps * sizeof(int), cudaMemcpyDeviceToHost));
  for (int w = 0; w < warps; ++w) {
    int expected = 0;
    for (int i = w * 32; i < (w + 1) * 32 && i < n; ++i) expected += host[i];
    EXPECT(sums[w] == expected);
  }

  const int blocks = 2, threads = 96;
  Specials* specials = nullptr;
  CHECK_CUDA(cudaMalloc(&specials, blocks * threads * sizeof(Specials)));
  ReadSpecials<<<blocks, threads>>>(specials);
  CHECK_CUDA(cudaGetLastError());
  std::vector<Specials> read(blocks * threads);
  CHECK_CUDA(
      cudaMemcpy(read.data(), specials, read.size() * sizeof(Specials), cudaMemcpyDeviceToHost));
  int reserved = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, 0));
  for (int t = 0; t < blocks * threads; ++t) {
    const Specials& s = read[t];
    EXPECT(s.warp_size_expression == 127);
    EXPECT(s.tid_w == 0);
    EXPECT(s.ntid[0] == threads && s.ntid[1] == 1 && s.ntid[2] == 1 && s.ntid[3] == 0);
    EXPECT(s.pm0 == 0);         // PTX ISA: behaviour undefined; nothing is counted
    EXPECT(s.graph_exec == 0);  // not part of a device graph
    EXPECT(s.clock_hi_ordered == 1);
    // Within the reservation the device reports (the emulated GPU's region is all of it; the
    // PTX ISA leaves the size to the implementation).
    EXPECT(static_cast<int>(s.reserved_size) <= reserved);
    EXPECT(s.reserved_size == read[0].reserved_size);
    EXPECT(s.offset0_inside == 1);
    EXPECT(s.offset1_inside == 1);
    if (s.reserved_size >= 4u * threads) {
      EXPECT(s.reserved_neighbour == static_cast<unsigned>((t % threads + 1) % threads + 7));
    }
  }
  std::printf("predefined: reserved shared memory region of %u bytes (device reserves %d)\n",
              read[0].reserved_size, reserved);
  CHECK_CUDA(cudaFree(specials));

  // Tiles of two warps: 4 blocks of 256 threads, 16 tiles, over the first 1024 values.
  const int tile_threads = 4 * 256;
  std::vector<int> values(tile_threads);
  for (int i = 0; i < tile_threads; ++i) values[i] = (i * 7) % 23 - 11;
  int *tile_in = nullptr, *tile_sums = nullptr;
  CHECK_CUDA(cudaMalloc(&tile_in, tile_threads * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&tile_sums, tile_threads / 64 * sizeof(int)));
  CHECK_CUDA(
      cudaMemcpy(tile_in, values.data(), tile_threads * sizeof(int), cudaMemcpyHostToDevice));
  TileSums<<<4, 256>>>(tile_in, tile_sums);
  CHECK_CUDA(cudaGetLastError());
  std::vector<int> tiles(tile_threads / 64);
  CHECK_CUDA(
      cudaMemcpy(tiles.data(), tile_sums, tiles.size() * sizeof(int), cudaMemcpyDeviceToHost));
  for (size_t t = 0; t < tiles.size(); ++t) {
    int expected = 0;
    for (size_t i = t * 64; i < (t + 1) * 64; ++i) expected += values[i];
    EXPECT(tiles[t] == expected);
  }
  std::printf("predefined: cooperative groups' reduction over tiles of two warps correct\n");
  CHECK_CUDA(cudaFree(tile_sums));
  CHECK_CUDA(cudaFree(tile_in));
  CHECK_CUDA(cudaFree(out));
  CHECK_CUDA(cudaFree(in));
  std::printf("predefined: WARP_SZ and the special registers read as the PTX ISA says\n");
  return 0;
}
