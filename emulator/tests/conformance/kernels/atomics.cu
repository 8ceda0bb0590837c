// Conformance kernels: atomics and reductions of every operation and type on global and shared
// memory, with scopes and memory-order qualifiers (references in ../atomics_cases.cc). Results
// are order-independent unless the case says otherwise.
#define GID (blockIdx.x * blockDim.x + threadIdx.x)

// atom.global.add .u32 .s32 .u64 (a histogram and totals across blocks).
extern "C" __global__ void atomic_add_int(const int* in, int* bins, unsigned* total,
                                          unsigned long long* wide) {
  int v = in[GID];
  atomicAdd(&bins[v & 15], 1);
  atomicAdd(total, (unsigned)v);
  atomicAdd(wide, (unsigned long long)v << 20);
}

// atom.global.add .f32 .f64 with exactly representable values (sums are order-independent).
extern "C" __global__ void atomic_add_float(const int* in, float* fsum, double* dsum) {
  int v = in[GID];
  atomicAdd(&fsum[v & 3], v * 0.25f);
  atomicAdd(&dsum[v & 1], v * 0.125);
}

// atom.global.min/max .s32 .u32 .s64 .u64.
extern "C" __global__ void atomic_minmax(const long long* in, int* i32, unsigned* u32,
                                         long long* i64, unsigned long long* u64) {
  long long v = in[GID];
  atomicMin(&i32[0], (int)v);
  atomicMax(&i32[1], (int)v);
  atomicMin(&u32[0], (unsigned)v);
  atomicMax(&u32[1], (unsigned)v);
  atomicMin(&i64[0], v);
  atomicMax(&i64[1], v);
  atomicMin(&u64[0], (unsigned long long)v);
  atomicMax(&u64[1], (unsigned long long)v);
}

// atom.global.and/or/xor .b32 .b64.
extern "C" __global__ void atomic_bitwise(const unsigned long long* in, unsigned* b32,
                                          unsigned long long* b64) {
  unsigned long long v = in[GID];
  atomicAnd(&b32[0], (unsigned)v | 0x01010101u);
  atomicOr(&b32[1], (unsigned)v & 0x10101010u);
  atomicXor(&b32[2], (unsigned)(v >> 32));
  atomicAnd(&b64[0], v | 0x0f0f0f0f0f0f0f0full);
  atomicOr(&b64[1], v & 0x1000100010001000ull);
  atomicXor(&b64[2], v);
}

// atom.global.exch .b32 .b64 .f32: which value ends in the slot depends on the order.
extern "C" __global__ void atomic_exchange(int* slot, int* olds, float* fslot, float* fold,
                                           unsigned long long* wslot, unsigned long long* wold) {
  unsigned i = GID;
  olds[i] = atomicExch(slot, (int)i + 1);
  fold[i] = atomicExch(fslot, i * 0.5f);
  wold[i] = atomicExch(wslot, (unsigned long long)i << 33);
}

// atom.global.cas .b32 .b64 in retry loops (a product, a double maximum), and atomicAdd's
// return values as unique tickets.
extern "C" __global__ void atomic_cas(const int* in, unsigned* product, unsigned long long* dmax,
                                      unsigned* tickets, unsigned* counter) {
  unsigned i = GID;
  int v = in[i];
  unsigned old = *product, assumed;
  do {
    assumed = old;
    old = atomicCAS(product, assumed, assumed * (unsigned)(2 * v + 1));
  } while (old != assumed);
  double candidate = v * 1.5;
  unsigned long long seen = *dmax, expected;
  do {
    expected = seen;
    if (__longlong_as_double((long long)expected) >= candidate) break;
    seen = atomicCAS(dmax, expected, (unsigned long long)__double_as_longlong(candidate));
  } while (seen != expected);
  tickets[i] = atomicAdd(counter, 1u);
}

// atom.global.inc/dec: wrap at the limit.
extern "C" __global__ void atomic_inc_dec(unsigned* counters) {
  atomicInc(&counters[0], 9u);
  atomicDec(&counters[1], 5u);
  atomicInc(&counters[2], 0xffffffffu);
  atomicDec(&counters[3], 1000u);
}

// Every atomic operation on shared memory, per block, results copied out.
extern "C" __global__ void atomic_shared(const int* in, int* out, float* fout, double* dout,
                                         unsigned long long* wout) {
  __shared__ int s_int[6];
  __shared__ unsigned s_uint[3];
  __shared__ float s_float;
  __shared__ double s_double;
  __shared__ unsigned long long s_wide[2];
  unsigned t = threadIdx.x;
  if (t == 0) {
    s_int[0] = 0;
    s_int[1] = 1 << 30;
    s_int[2] = -(1 << 30);
    s_int[3] = -1;
    s_int[4] = 0;
    s_int[5] = 0;
    s_uint[0] = 0;
    s_uint[1] = 50;
    s_uint[2] = 1;
    s_float = 0.0f;
    s_double = 0.0;
    s_wide[0] = 0;
    s_wide[1] = 0;
  }
  __syncthreads();
  int v = in[GID];
  atomicAdd(&s_int[0], v);
  atomicMin(&s_int[1], v);
  atomicMax(&s_int[2], v);
  atomicAnd(&s_int[3], v | 0x100);
  atomicOr(&s_int[4], v & 0x0f0);
  atomicXor(&s_int[5], v);
  atomicInc(&s_uint[0], 17u);
  atomicDec(&s_uint[1], 60u);
  unsigned old = s_uint[2], assumed;
  do {
    assumed = old;
    old = atomicCAS(&s_uint[2], assumed, assumed * 3u);
  } while (old != assumed);
  atomicAdd(&s_float, (v & 7) * 0.5f);
  atomicAdd(&s_double, v * 0.25);
  atomicAdd(&s_wide[0], (unsigned long long)(v & 0xff) << 32);
  atomicExch(&s_wide[1], 0x1234567890ull + blockIdx.x);
  __syncthreads();
  if (t == 0) {
    for (int k = 0; k < 6; ++k) out[blockIdx.x * 9 + k] = s_int[k];
    for (int k = 0; k < 3; ++k) out[blockIdx.x * 9 + 6 + k] = (int)s_uint[k];
    fout[blockIdx.x] = s_float;
    dout[blockIdx.x] = s_double;
    wout[blockIdx.x * 2] = s_wide[0];
    wout[blockIdx.x * 2 + 1] = s_wide[1];
  }
}

// Atomics whose result is unused compile to red.global.*.
extern "C" __global__ void atomic_reductions(const int* in, int* ints, unsigned* uints,
                                             float* f, double* d, unsigned long long* w) {
  int v = in[GID];
  atomicAdd(&ints[0], v);
  atomicMin(&ints[1], v);
  atomicMax(&ints[2], v);
  atomicAnd(&uints[0], (unsigned)v | 0xff00ffu);
  atomicOr(&uints[1], (unsigned)v & 0x00f000u);
  atomicXor(&uints[2], (unsigned)v);
  atomicInc(&uints[3], 100u);
  atomicDec(&uints[4], 100u);
  atomicAdd(f, (v & 15) * 0.25f);
  atomicAdd(d, v * 0.5);
  atomicAdd(w, (unsigned long long)(unsigned)v);
}

// Scoped atomics (.cta, .sys) and 16-bit atom.cas.
extern "C" __global__ void atomic_scopes(const int* in, int* out, unsigned short* halves) {
  __shared__ int block_total;
  if (threadIdx.x == 0) block_total = 0;
  __syncthreads();
  int v = in[GID];
  atomicAdd_block(&block_total, v);
  atomicAdd_system(&out[0], v);
  atomicMax_system(&out[1], v);
  atomicOr_block(&out[2], 1 << (v & 15));
  unsigned short old = halves[0], assumed;
  do {
    assumed = old;
    old = atomicCAS(&halves[0], assumed, (unsigned short)(assumed + (v & 3)));
  } while (old != assumed);
  __syncthreads();
  if (threadIdx.x == 0) out[3 + blockIdx.x] = block_total;
}

// Memory-order qualifiers: acquire/release/acq_rel/relaxed atomics with scopes, ld.acquire,
// st.release, red.release, fences.
extern "C" __global__ void atomic_memory_order(const int* in, unsigned* counters, int* out) {
  unsigned i = GID;
  unsigned v = (unsigned)in[i];
  unsigned r0, r1, r2, r3;
  asm volatile("atom.acquire.gpu.global.add.u32 %0, [%1], %2;" : "=r"(r0) : "l"(counters), "r"(v) : "memory");
  asm volatile("atom.release.gpu.global.max.u32 %0, [%1], %2;" : "=r"(r1) : "l"(counters + 1), "r"(v) : "memory");
  asm volatile("atom.acq_rel.sys.global.or.b32 %0, [%1], %2;" : "=r"(r2) : "l"(counters + 2), "r"(v & 0xf0f0u) : "memory");
  asm volatile("atom.relaxed.cta.global.xor.b32 %0, [%1], %2;" : "=r"(r3) : "l"(counters + 3), "r"(v) : "memory");
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" :: "l"(counters + 4), "r"(v & 0xff) : "memory");
  asm volatile("fence.acq_rel.gpu;" ::: "memory");
  asm volatile("fence.sc.cta;" ::: "memory");
  asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"((unsigned*)out + i), "r"(v * 3) : "memory");
  unsigned back;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(back) : "l"((unsigned*)out + i) : "memory");
  out[128 + i] = (int)(back + 1);
  // The returned values depend on the order, but not the bits they can have: inputs are below
  // 2^17 and 128 of them sum to less than 2^24.
  out[256 + i] = (int)((r0 >> 24) | (r1 >> 17) | (r2 & ~0xf0f0u) | (r3 >> 17));
}

// A producer warp publishes data with st.release and a flag; a consumer warp of the same block
// polls the flag with ld.acquire. Polling in a loop may wait for another block in general, but
// not at the block's scope (.cta): the transformation analysis transforms this kernel, and its
// forms must compute what it does.
extern "C" __global__ void acquire_release_polling(const int* in, int* out, unsigned* flags) {
  __shared__ int data[32];
  unsigned lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  unsigned* flag = flags + blockIdx.x;
  if (warp == 0) {
    data[lane] = in[blockIdx.x * 32 + lane] * 7;
    __syncwarp();
    if (lane == 0) asm volatile("st.release.cta.global.u32 [%0], 1;" :: "l"(flag) : "memory");
  } else {
    unsigned seen = 0;
    while (seen == 0) {
      asm volatile("ld.acquire.cta.global.u32 %0, [%1];" : "=r"(seen) : "l"(flag) : "memory");
    }
    out[blockIdx.x * 32 + lane] = data[lane] + 1;
  }
}
