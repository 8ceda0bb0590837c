// Corpus: memory access forms: vector loads/stores, read-only and cache-hinted loads,
// volatile accesses, local (stack) arrays with dynamic indices, and generic-pointer space tests.

__global__ void VectorCopy(const float4* __restrict__ in, float4* __restrict__ out,
                           const int2* pairs, int2* swapped, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float4 v = __ldg(&in[i]);
  out[i] = make_float4(v.w, v.z, v.y, v.x);
  int2 p = pairs[i];
  swapped[i] = make_int2(p.y, p.x);
}

__global__ void CacheHints(const float* in, float* out, const double2* din, double2* dout, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float a = __ldcs(&in[i]);
  float b = __ldcg(&in[(i + 1) % n]);
  float c = __ldca(&in[(i + 2) % n]);
  float d = __ldlu(&in[(i + 3) % n]);
  float e = __ldcv(&in[(i + 4) % n]);
  __stcs(&out[i], a + b);
  __stcg(&out[(i + n / 2) % n], c);
  __stwt(&out[(i + 1) % n], d + e);
  double2 w = __ldg(&din[i]);
  __stwb(&dout[i], make_double2(w.y, w.x));
}

// Spin until another thread publishes; volatile keeps every load.
__global__ void VolatileFlag(volatile int* flag, volatile int* payload, int* out) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    payload[0] = 1234;
    __threadfence();
    flag[0] = 1;
  }
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    while (flag[0] == 0) {
    }
    out[0] = payload[0];
  }
}

// A dynamically indexed local array lives in the local-memory depot.
__global__ void LocalArray(const int* indices, int* out, int n) {
  int values[16];
  for (int k = 0; k < 16; ++k) values[k] = k * k + threadIdx.x;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = values[indices[i] & 15] + values[(indices[i] >> 4) & 15];
}

__device__ int g_marker;

__device__ __noinline__ int SpaceOf(const void* p) {
  return __isGlobal(p) * 1 + __isShared(p) * 2 + __isConstant(p) * 4 + __isLocal(p) * 8;
}

__global__ void AddressSpaces(int* out) {
  __shared__ int shared_value;
  int local_value = threadIdx.x;
  shared_value = 0;
  out[0] = SpaceOf(&g_marker);
  out[1] = SpaceOf(&shared_value);
  out[2] = SpaceOf(&local_value);
  out[3] = static_cast<int>(__cvta_generic_to_shared(&shared_value) & 3);
}
