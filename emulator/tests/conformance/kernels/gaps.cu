// Conformance kernels for instructions the emulator does not implement yet (not registered:
// see ../README.md). References in ../gaps_cases.cc.
#define GID (blockIdx.x * blockDim.x + threadIdx.x)

// Integer dot products (dp4a, dp2a) and mul24.hi.
extern "C" __global__ void int_dot(const int* a, const int* b, const int* c, int* out) {
  unsigned i = GID;
  int x = a[i], y = b[i], z = c[i];
  int* o = out + i * 5;
  o[0] = __dp4a(x, y, z);
  o[1] = (int)__dp4a((unsigned)x, (unsigned)y, (unsigned)z);
  o[2] = __dp2a_lo(x, y, z);
  o[3] = __dp2a_hi(x, y, z);
  int h;
  asm("mul24.hi.s32 %0, %1, %2;" : "=r"(h) : "r"(x), "r"(y));
  o[4] = h;
}

// A 32-bit shared address that wraps: nvcc folds s[191 - t] into [(s + 4 * (63 - t)) + 512],
// whose 32-bit register is negative for t = 64 (the sum wraps to the right address on a GPU).
extern "C" __global__ void shared_address_wrap(const int* in, int* out) {
  __shared__ int s[128];
  unsigned t = threadIdx.x;
  s[t] = in[t] + 1;
  __syncthreads();
  out[t] = t < 64 ? s[63 - t] : s[64 + (127 - t)] * 2;
}

__device__ __noinline__ int MirrorThroughShared(int* s, int v) {
  s[threadIdx.x] = v;
  __syncthreads();
  return s[blockDim.x - 1 - threadIdx.x];
}

// A shared variable only a .func uses: nvcc declares it inside the .func ("demoted variable").
extern "C" __global__ void shared_in_function(const int* in, int* out) {
  __shared__ int s[64];
  out[GID] = MirrorThroughShared(s, in[GID] * 3);
}

// A shared variable that both the kernel and a .func use: nvcc declares it at module scope and
// the .func names it directly.
extern "C" __global__ void module_shared_in_function(const int* in, int* out) {
  __shared__ int s[64];
  int r = MirrorThroughShared(s, in[GID] * 3);
  out[GID] = r + s[threadIdx.x];
}
