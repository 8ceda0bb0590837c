// Corpus: inline PTX: scoped `{ .reg ... }` blocks, predicates, labels, special registers and
// named barriers (`bar.sync 1, 64`).

// Rounds up to a multiple of 8 with its own registers and predicate inside a scope.
__device__ unsigned RoundUp8(unsigned x) {
  unsigned r;
  asm volatile(
      "{\n\t"
      ".reg .u32 t;\n\t"
      ".reg .pred p;\n\t"
      "and.b32 t, %1, 7;\n\t"
      "setp.ne.u32 p, t, 0;\n\t"
      "and.b32 %0, %1, 0xfffffff8;\n\t"
      "@p add.u32 %0, %0, 8;\n\t"
      "}"
      : "=r"(r)
      : "r"(x));
  return r;
}

// A counted loop with a label; __noinline__ keeps the label unique within the module.
__device__ __noinline__ unsigned long long SumTo(unsigned n) {
  unsigned long long sum;
  asm volatile(
      "{\n\t"
      ".reg .u32 i;\n\t"
      ".reg .u64 wide;\n\t"
      ".reg .pred done;\n\t"
      "mov.u64 %0, 0;\n\t"
      "mov.u32 i, %1;\n"
      "SUM_LOOP:\n\t"
      "setp.eq.u32 done, i, 0;\n\t"
      "@done bra SUM_END;\n\t"
      "cvt.u64.u32 wide, i;\n\t"
      "add.u64 %0, %0, wide;\n\t"
      "sub.u32 i, i, 1;\n\t"
      "bra.uni SUM_LOOP;\n"
      "SUM_END:\n\t"
      "}"
      : "=l"(sum)
      : "r"(n));
  return sum;
}

__device__ unsigned LaneId() {
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}

__global__ void AsmBasics(const unsigned* in, unsigned* out, unsigned long long* sums,
                          unsigned long long* clocks) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned x = in[i];
  unsigned permuted, merged, field;
  asm("prmt.b32 %0, %1, %2, 0x3210;" : "=r"(permuted) : "r"(x), "r"(~x));
  asm("lop3.b32 %0, %1, %2, %3, 0xe8;" : "=r"(merged) : "r"(x), "r"(permuted), "r"(0x0f0f0f0fu));
  asm("bfe.u32 %0, %1, 4, 8;" : "=r"(field) : "r"(x));
  float f = __uint_as_float(x & 0x3fffffffu);
  float g;
  asm("{ .reg .f32 tmp; mul.rn.f32 tmp, %1, 0f40000000; add.f32 %0, tmp, 0f3F800000; }"
      : "=f"(g)
      : "f"(f));
  out[i] = RoundUp8(x) + merged + field + LaneId() + __float_as_uint(g);
  sums[i] = SumTo(x & 15);
  unsigned long long start, stop;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(start));
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(stop));
  if (threadIdx.x == 0) clocks[blockIdx.x] = stop - start;
}

// Launched with 128 threads. Each half of the block synchronises on its own named barrier,
// then warps 0-1 publish values that warps 2-3 wait for on barrier 3 (bar.arrive does not
// wait, so the producers run on), and finally the whole block meets at barrier 0.
__global__ void NamedBarriers(int* data) {
  __shared__ int stage[128];
  __shared__ int published[64];
  int t = threadIdx.x;
  stage[t] = t * 2;
  if (t < 64) {
    asm volatile("bar.sync 1, 64;" ::: "memory");
    data[t] = stage[63 - t];
    published[t] = data[t] + 1;
    asm volatile("bar.arrive 3, 128;" ::: "memory");
  } else {
    asm volatile("bar.sync 2, 64;" ::: "memory");
    data[t] = stage[191 - t];
    asm volatile("bar.sync 3, 128;" ::: "memory");
    data[64 + t] = published[t - 64];
  }
  asm volatile("barrier.sync 0;" ::: "memory");
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  data[192 + t] = stage[127 - t] + (smid > 100000 ? 1 : 0);
}
