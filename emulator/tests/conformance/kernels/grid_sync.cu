// Conformance kernels: grid-wide synchronisation under cooperative launches (cooperative
// groups' grid.sync()). References in ../grid_sync_cases.cc.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

// Two phases separated by grid.sync(): every thread then reads a value another block wrote.
extern "C" __global__ void grid_sync_rotate(const int* in, int* scratch, int* out) {
  cg::grid_group grid = cg::this_grid();
  unsigned i = grid.thread_rank(), n = grid.size();
  scratch[i] = in[i] * 3;
  grid.sync();
  out[i] = scratch[(i + blockDim.x) % n] + 1;
  grid.sync();
  scratch[i] = out[(i + n - 1) % n];
  grid.sync();
  out[n + i] = scratch[(i * 7) % n];
}
