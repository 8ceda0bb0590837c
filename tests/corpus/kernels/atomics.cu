// Corpus: atomics (add, cas, exch, min, max, inc, and/or/xor) on int, unsigned, 64-bit, float
// and double, in global and shared memory, with block and system scopes.

// Float maximum through compare-and-swap on the bit pattern (there is no native float max).
__device__ float AtomicMaxFloat(float* address, float value) {
  int* bits = reinterpret_cast<int*>(address);
  int old = *bits;
  while (__int_as_float(old) < value) {
    int assumed = old;
    old = atomicCAS(bits, assumed, __float_as_int(value));
    if (old == assumed) break;
  }
  return __int_as_float(old);
}

// Double add through a 64-bit CAS loop, the pre-sm_60 idiom still found in libraries.
__device__ double AtomicAddDoubleCas(double* address, double value) {
  auto* bits = reinterpret_cast<unsigned long long*>(address);
  unsigned long long old = *bits;
  unsigned long long assumed;
  do {
    assumed = old;
    old = atomicCAS(bits, assumed, __double_as_longlong(__longlong_as_double(assumed) + value));
  } while (assumed != old);
  return __longlong_as_double(old);
}

struct Counters {
  int sum;
  unsigned bits_or;
  unsigned bits_and;
  unsigned bits_xor;
  int minimum;
  int maximum;
  unsigned wrapped;
  unsigned long long total64;
  long long min64;
  float fsum;
  float fmax;
  double dsum;
  double dsum_cas;
};

__global__ void GlobalAtomics(const int* in, Counters* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = in[i];
  atomicAdd(&c->sum, v);
  atomicOr(&c->bits_or, 1u << (v & 31));
  atomicAnd(&c->bits_and, ~(1u << (v & 31)));
  atomicXor(&c->bits_xor, static_cast<unsigned>(v));
  atomicMin(&c->minimum, v);
  atomicMax(&c->maximum, v);
  atomicInc(&c->wrapped, 16u);
  atomicAdd(&c->total64, static_cast<unsigned long long>(v));
  atomicMin(&c->min64, static_cast<long long>(v) - 1000);
  atomicAdd(&c->fsum, v * 0.5f);
  AtomicMaxFloat(&c->fmax, v * 0.25f);
  atomicAdd(&c->dsum, v * 0.125);
  AtomicAddDoubleCas(&c->dsum_cas, v * 2.0);
}

// Histogram in shared memory, merged into global memory once per block.
__global__ void SharedHistogram(const unsigned char* in, unsigned* bins, int n) {
  __shared__ unsigned local[64];
  __shared__ float weight;
  __shared__ double dweight;
  for (int b = threadIdx.x; b < 64; b += blockDim.x) local[b] = 0;
  if (threadIdx.x == 0) {
    weight = 0.0f;
    dweight = 0.0;
  }
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    atomicAdd(&local[in[i] & 63], 1u);
    atomicAdd(&weight, 1.0f);
    atomicAdd(&dweight, 0.5);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < 64; b += blockDim.x) atomicAdd(&bins[b], local[b]);
  if (threadIdx.x == 0) {
    atomicMax(&bins[64], static_cast<unsigned>(weight));
    atomicMax(&bins[65], static_cast<unsigned>(dweight));
  }
}

// Exchange and 16-bit CAS; per-scope variants map to `.cta` and `.sys` qualified atomics.
__global__ void ExchangeAndScopes(int* slots, unsigned short* halves, int* scoped, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int previous = atomicExch(&slots[i % 4], i);
  float fprev = atomicExch(reinterpret_cast<float*>(&slots[4]), static_cast<float>(i));
  unsigned short h =
      atomicCAS(&halves[i % 2], static_cast<unsigned short>(0), static_cast<unsigned short>(i));
  atomicAdd_block(&scoped[0], previous);
  atomicAdd_system(&scoped[1], static_cast<int>(fprev));
  atomicCAS_block(&scoped[2], 0, h);
  __threadfence_block();
  atomicExch_system(&scoped[3], i);
  __threadfence();
  atomicDec(reinterpret_cast<unsigned*>(&scoped[4]), 7u);
  __threadfence_system();
}
