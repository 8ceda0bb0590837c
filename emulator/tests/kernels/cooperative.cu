// Kernels for cooperative launches: grid-wide synchronisation through cooperative_groups.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

// Iterated neighbour averaging over the whole grid: every step reads values other blocks wrote
// in the previous step, so a missing or early grid.sync() gives a wrong result.
extern "C" __global__ void grid_stencil(int* a, int* b, int n, int steps) {
  cg::grid_group grid = cg::this_grid();
  unsigned i = grid.thread_rank();
  for (int s = 0; s < steps; ++s) {
    if (i < n) {
      int left = a[(i + n - 1) % n], right = a[(i + 1) % n];
      b[i] = left + 2 * a[i] + right + s;
    }
    grid.sync();
    int* t = a;
    a = b;
    b = t;
  }
}

// Every thread adds to a global sum; after grid.sync() everyone reads the total. Also reports
// the grid group's view of the launch.
extern "C" __global__ void grid_total(const int* in, int* total, int* out, unsigned* info) {
  cg::grid_group grid = cg::this_grid();
  unsigned i = grid.thread_rank();
  atomicAdd(total, in[i]);
  grid.sync();
  out[i] = *total;
  if (i == 0) {
    info[0] = grid.is_valid();
    info[1] = static_cast<unsigned>(grid.size());
    info[2] = grid.num_blocks();
  }
}

// Block 0 leaves before the grid barrier: the others can never pass it.
extern "C" __global__ void grid_deadlock(int* out) {
  if (blockIdx.x == 0) return;
  cg::this_grid().sync();
  out[blockIdx.x] = 1;
}
