// Conformance kernels: cp.async (global -> shared, 4/8/16 bytes, commit and wait groups) and
// mbarrier objects (references in ../async_copy_cases.cc).
#define GID (blockIdx.x * blockDim.x + threadIdx.x)

// Double-buffered staging of 3 tiles through shared memory with cp.async of every size.
extern "C" __global__ void cp_async_stages(const int* in, int* out) {
#if __CUDA_ARCH__ >= 800  // cp.async: sm_80 and newer
  __shared__ __align__(16) int stage[2][256];
  unsigned t = threadIdx.x;  // 64 threads, 256 ints per tile
  const int* tile_base = in + blockIdx.x * 3 * 256;
  for (int tile = 0; tile < 3; ++tile) {
    int* dst = stage[tile & 1];
    const int* src = tile_base + tile * 256;
    unsigned s16 = (unsigned)__cvta_generic_to_shared(dst + t * 4);
    if (t < 32) {
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(s16), "l"(src + t * 4)
                   : "memory");
    } else if (t < 48) {
      unsigned s8 = s16;
      asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" :: "r"(s8), "l"(src + t * 4)
                   : "memory");
      asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" :: "r"(s8 + 8), "l"(src + t * 4 + 2)
                   : "memory");
    } else {
      for (int k = 0; k < 4; ++k) {
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(s16 + 4 * k),
                     "l"(src + t * 4 + k)
                     : "memory");
      }
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    __syncthreads();
    for (int k = 0; k < 4; ++k) {
      out[(blockIdx.x * 3 + tile) * 256 + t * 4 + k] = dst[255 - (t * 4 + k)] + tile;
    }
    __syncthreads();
  }
  asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

// A block barrier built from an mbarrier object: init, arrive, test_wait in a loop.
extern "C" __global__ void mbarrier_phase(const int* in, int* out) {
#if __CUDA_ARCH__ >= 800  // mbarrier: sm_80 and newer
  __shared__ __align__(8) unsigned long long barrier;
  __shared__ int s[64];
  unsigned t = threadIdx.x;
  unsigned bar = (unsigned)__cvta_generic_to_shared(&barrier);
  if (t == 0) asm volatile("mbarrier.init.shared.b64 [%0], %1;" :: "r"(bar), "r"(blockDim.x) : "memory");
  __syncthreads();
  s[t] = in[GID] * 2;
  unsigned long long token;
  asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(token) : "r"(bar) : "memory");
  unsigned done = 0;
  while (!done) {
    asm volatile("{ .reg .pred p; mbarrier.test_wait.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(bar), "l"(token) : "memory");
  }
  out[GID] = s[63 - t] + 1;
#endif
}
