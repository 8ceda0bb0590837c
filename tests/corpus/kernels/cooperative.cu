// Corpus: cooperative groups: tiled partitions, tile collectives and a grid-wide barrier
// (a kernel Tally must never slice or make preemptible).
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

__global__ void TileReduce(const int* in, int* out) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<16> tile = cg::tiled_partition<16>(block);
  int v = in[block.group_index().x * block.size() + block.thread_rank()];
  int sum = cg::reduce(tile, v, cg::plus<int>());
  int biggest = cg::reduce(tile, v, cg::greater<int>());
  int left = tile.shfl_up(v, 1);
  if (tile.thread_rank() == 0) {
    int slot = block.group_index().x * (block.size() / 16) + block.thread_rank() / 16;
    out[2 * slot] = sum + left;
    out[2 * slot + 1] = biggest;
  }
  block.sync();
}

// Two phases separated by grid.sync(): phase two reads what other blocks wrote in phase one.
__global__ void GridPhases(int* data, int* result, int n) {
  cg::grid_group grid = cg::this_grid();
  for (int i = grid.thread_rank(); i < n; i += grid.size()) data[i] = i * 3;
  grid.sync();
  for (int i = grid.thread_rank(); i < n; i += grid.size()) result[i] = data[n - 1 - i] + 1;
}

__global__ void CoalescedGroups(const int* in, int* out) {
  int v = in[threadIdx.x];
  if (v % 3 == 0) {
    cg::coalesced_group active = cg::coalesced_threads();
    out[threadIdx.x] = active.thread_rank() * 100 + active.size();
  } else {
    out[threadIdx.x] = -1;
  }
}
