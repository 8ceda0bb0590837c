// Conformance kernels: barriers of every form (bar.sync/barrier.sync with and without counts,
// bar.red, bar.arrive), memory fences, divergent control flow within warps and nested loops
// with barriers (references in ../sync_cases.cc).
#define GID (blockIdx.x * blockDim.x + threadIdx.x)

// Tree reduction: a barrier in a loop.
extern "C" __global__ void sync_tree_reduce(const int* in, int* out) {
  __shared__ int s[128];
  unsigned t = threadIdx.x;
  s[t] = in[GID];
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

// Tiled integer matrix multiply: barriers inside nested loops.
extern "C" __global__ void sync_tiled_matmul(const int* a, const int* b, int* c, int n) {
  __shared__ int ta[8][8], tb[8][8];
  int row = blockIdx.y * 8 + threadIdx.y, col = blockIdx.x * 8 + threadIdx.x;
  int acc = 0;
  for (int tile = 0; tile < n / 8; ++tile) {
    ta[threadIdx.y][threadIdx.x] = a[row * n + tile * 8 + threadIdx.x];
    tb[threadIdx.y][threadIdx.x] = b[(tile * 8 + threadIdx.y) * n + col];
    __syncthreads();
    for (int k = 0; k < 8; ++k) acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
    __syncthreads();
  }
  c[row * n + col] = acc;
}

// Bitonic sort of 128 keys per block in shared memory: barriers in doubly nested loops, with
// predicated compare-and-swap.
extern "C" __global__ void sync_bitonic_sort(const int* in, int* out) {
  __shared__ int keys[128];
  unsigned t = threadIdx.x;
  keys[t] = in[GID];
  __syncthreads();
  for (unsigned size = 2; size <= 128; size *= 2) {
    for (unsigned stride = size / 2; stride > 0; stride /= 2) {
      unsigned partner = t ^ stride;
      if (partner > t) {
        bool ascending = (t & size) == 0;
        int a = keys[t], b = keys[partner];
        if ((a > b) == ascending) {
          keys[t] = b;
          keys[partner] = a;
        }
      }
      __syncthreads();
    }
  }
  out[GID] = keys[t];
}

// Barrier instruction forms without thread counts: bar.sync, barrier.sync, barrier.sync.aligned,
// a nonzero barrier id for the whole block.
extern "C" __global__ void sync_barrier_forms(const int* in, int* out) {
  __shared__ int s[64];
  unsigned t = threadIdx.x;
  s[t] = in[GID];
  asm volatile("bar.sync 0;" ::: "memory");
  int a = s[63 - t];
  asm volatile("barrier.sync 0;" ::: "memory");
  s[t] = a * 3;
  asm volatile("barrier.sync.aligned 0;" ::: "memory");
  int b = s[(t + 5) % 64];
  asm volatile("bar.sync 3;" ::: "memory");
  s[t] = b - t;
  asm volatile("barrier.sync 3;" ::: "memory");
  out[GID] = s[(t + 17) % 64];
}

// Barriers with thread counts: warps 0-1 synchronise on barrier 1, warps 2-3 on barrier 2,
// each with a count of 64 (bar.sync a, b / barrier.sync a, b).
extern "C" __global__ void sync_barrier_counts(const int* in, int* out) {
  __shared__ int s[128];
  unsigned t = threadIdx.x;
  s[t] = in[GID] + 1;
  if (t < 64) {
    asm volatile("bar.sync 1, 64;" ::: "memory");
    out[GID] = s[63 - t];
  } else {
    asm volatile("barrier.sync 2, 64;" ::: "memory");
    out[GID] = s[64 + ((t + 7) & 63)] * 2;
  }
}

// bar.red.popc/and/or (__syncthreads_count/and/or), also with threads that exited.
extern "C" __global__ void sync_reductions(const int* in, int* out) {
  unsigned t = threadIdx.x;
  int v = in[GID];
  int count = __syncthreads_count(v > 0);
  int all = __syncthreads_and(v > -900);
  int any = __syncthreads_or(v > 990);
  if (t >= blockDim.x - 16) return;
  int late = __syncthreads_count(v & 1);
  out[GID] = count * 1000 + all * 100 + any * 10 + (late & 7) + (late >> 3) * 10000;
}

// Named barriers as producer/consumer: warps 0-1 produce and bar.arrive on barrier 1; warps 2-3
// bar.sync on it and consume, then bar.arrive on barrier 2 so the producers may reuse the buffer.
extern "C" __global__ void sync_producer_consumer(const int* in, int* out, int rounds) {
  __shared__ int buffer[64];
  unsigned t = threadIdx.x;
  for (int r = 0; r < rounds; ++r) {
    if (t < 64) {
      if (r > 0) asm volatile("bar.sync 2, 128;" ::: "memory");
      buffer[t] = in[(blockIdx.x * rounds + r) * 64 + t] * (r + 1);
      asm volatile("bar.arrive 1, 128;" ::: "memory");
    } else {
      asm volatile("bar.sync 1, 128;" ::: "memory");
      out[(blockIdx.x * rounds + r) * 64 + (t - 64)] = buffer[127 - t] + r;
      if (r + 1 < rounds) asm volatile("bar.arrive 2, 128;" ::: "memory");
    }
  }
}

// Threads that exit early count as arrived at later barriers (Volta and newer).
extern "C" __global__ void sync_early_exit(const int* in, int* out) {
  __shared__ int s[96];
  unsigned t = threadIdx.x;
  int v = in[GID];
  if (v % 5 == 0) return;  // divergent early exit, including whole warps for some blocks
  s[t] = v;
  __syncthreads();
  int left = t > 0 ? s[t - 1] : 0;  // may be stale for exited neighbours: not read then
  __syncthreads();
  out[GID] = (t > 0 && in[GID - 1] % 5 != 0) ? v + left : v;
}

// Barriers in branches that are uniform per block but differ between blocks.
extern "C" __global__ void sync_uniform_branches(const int* in, int* out) {
  __shared__ int s[64];
  unsigned t = threadIdx.x;
  int v = in[GID];
  if (blockIdx.x % 3 == 0) {
    s[t] = v;
    __syncthreads();
    out[GID] = s[63 - t];
  } else if (blockIdx.x % 3 == 1) {
    for (int k = 0; k < 3; ++k) {
      s[t] = v + k;
      __syncthreads();
      v += s[(t + 1) % 64];
      __syncthreads();
    }
    out[GID] = v;
  } else {
    out[GID] = -v;
  }
}

// Memory fences: membar.cta/.gl/.sys (__threadfence_block/__threadfence/__threadfence_system)
// between writes and barrier-ordered reads, and fence.sc/acq_rel forms.
extern "C" __global__ void sync_fences(const int* in, int* scratch, int* out) {
  unsigned i = GID, t = threadIdx.x;
  scratch[i] = in[i] * 2;
  __threadfence_block();
  scratch[256 + i] = in[i] + 7;
  __threadfence();
  scratch[512 + i] = in[i] - 3;
  __threadfence_system();
  asm volatile("fence.sc.gpu;" ::: "memory");
  asm volatile("fence.acq_rel.sys;" ::: "memory");
  __syncthreads();
  unsigned base = blockIdx.x * blockDim.x, n = blockDim.x;
  out[i] = scratch[base + (t + 1) % n] + scratch[256 + base + (t + 2) % n] +
           scratch[512 + base + (t + 3) % n];
}

// __syncwarp with partial masks in divergent branches (bar.warp.sync), exchanging data through
// shared memory within each half-warp.
extern "C" __global__ void sync_warp_masks(const int* in, int* out) {
  __shared__ int s[64];
  unsigned t = threadIdx.x, lane = t & 31;
  int v = in[GID];
  if (lane < 16) {
    s[t] = v * 2;
    __syncwarp(0x0000ffffu);
    v += s[(t & ~15u) + ((lane + 1) & 15)];
  } else {
    s[t] = v - 1;
    __syncwarp(0xffff0000u);
    v ^= s[(t & ~15u) + ((lane + 3) & 15)];
  }
  __syncwarp();
  out[GID] = v;
}

// Divergent control flow within warps: nested branches, loops of per-lane trip counts with
// break/continue, a small switch, and a ballot after reconvergence.
extern "C" __global__ void divergent_control_flow(const int* in, int* out) {
  int v = in[GID];
  int acc = 0;
  for (int i = 0; i < (v & 15); ++i) {
    if ((i ^ v) & 1) continue;
    if (i * v > 200) break;
    switch ((v + i) & 3) {
      case 0: acc += i; break;
      case 1: acc -= 2 * i; break;
      case 2: acc ^= v; break;
      default: acc += 7;
    }
    if (v & 16) {
      for (int j = 0; j < (v >> 5 & 3); ++j) acc += j * i;
    } else if (v & 32) {
      acc *= 3;
    }
  }
  unsigned converged = __ballot_sync(0xffffffffu, acc > 0);
  out[GID * 2] = acc;
  out[GID * 2 + 1] = (int)converged;
}

// The same per-thread work in a 3-D block: a stencil iterated with barriers in nested loops.
extern "C" __global__ void sync_stencil_3d(const int* in, int* out, int steps) {
  __shared__ int grid[2][4][4][8];
  unsigned x = threadIdx.x, y = threadIdx.y, z = threadIdx.z;
  unsigned flat = x + 8 * (y + 4 * z);
  unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  grid[0][z][y][x] = in[block * 128 + flat];
  __syncthreads();
  int cur = 0;
  for (int s = 0; s < steps; ++s) {
    for (int half = 0; half < 2; ++half) {
      int sum = grid[cur][z][y][x] * 2 + grid[cur][z][y][(x + 1) % 8] +
                grid[cur][z][(y + 1) % 4][x] - grid[cur][(z + 1) % 4][y][x];
      grid[1 - cur][z][y][x] = sum / 2 + half;
      __syncthreads();
      cur = 1 - cur;
    }
  }
  out[block * 128 + flat] = grid[cur][z][y][x];
}
