// Conformance kernels: memory spaces (shared static and dynamic, local, const, module globals,
// param), generic addressing, vector and narrow accesses, cache qualifiers (references in
// ../memory_cases.cc).
#define GID (blockIdx.x * blockDim.x + threadIdx.x)

// Static shared memory: a padded 16x16 tile transpose (2-D blocks and grid).
extern "C" __global__ void shared_transpose(const int* in, int* out, int n) {
  __shared__ int tile[16][17];
  int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
  tile[threadIdx.y][threadIdx.x] = in[y * n + x];
  __syncthreads();
  int tx = blockIdx.y * 16 + threadIdx.x, ty = blockIdx.x * 16 + threadIdx.y;
  out[ty * n + tx] = tile[threadIdx.x][threadIdx.y];
}

// Dynamic shared memory next to static shared memory; %dynamic_smem_size.
extern "C" __global__ void shared_dynamic(const int* in, int* out, unsigned* sizes) {
  extern __shared__ double dynamic_doubles[];
  __shared__ int static_ints[64];
  int t = threadIdx.x;
  int* dynamic_ints = (int*)(dynamic_doubles + blockDim.x);
  dynamic_doubles[t] = in[GID] * 0.5;
  dynamic_ints[t] = in[GID] ^ 0x55;
  static_ints[t % 64] = t;
  __syncthreads();
  int r = blockDim.x - 1 - t;
  out[GID] = (int)(dynamic_doubles[r] * 4.0) + dynamic_ints[(t + 1) % blockDim.x] +
             static_ints[r % 64];
  if (t == 0) {
    unsigned dynamic_size;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dynamic_size));
    sizes[blockIdx.x] = dynamic_size;
  }
}

// Local memory: an array indexed by data (st.local/ld.local) and a struct copied through it.
extern "C" __global__ void local_memory(const int* in, int* out) {
  int values[40];
  int seed = in[GID];
  for (int k = 0; k < 40; ++k) values[k] = seed * (k + 1) ^ k;
  int acc = 0;
  for (int k = 0; k < 40; ++k) acc += values[(seed + k * 7) & 31] + values[(unsigned)(seed >> 3) % 40];
  out[GID] = acc;
}

__constant__ int c_table[16] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3};
__constant__ float c_scale[4] = {0.5f, 1.5f, -2.0f, 0.25f};

// The const space: module-scope __constant__ arrays with initializers, indexed by data.
extern "C" __global__ void const_space(const int* in, float* out) {
  int v = in[GID];
  out[GID] = c_table[v & 15] * c_scale[(v >> 4) & 3] + c_table[(v >> 8) & 15];
}

__device__ int d_lookup[8] = {10, 20, 30, 40, 50, 60, 70, 80};
__device__ int d_scratch[256];

// Module-scope __device__ variables: an initialized table and a scratch array.
extern "C" __global__ void global_variables(const int* in, int* out) {
  unsigned i = GID;
  d_scratch[i] = in[i] * 2;
  __syncthreads();
  out[i] = d_scratch[i ^ 1] + d_lookup[i & 7];
}

__device__ __noinline__ int SumThrough(const int* p, int n) {
  int s = 0;
  for (int k = 0; k < n; ++k) s += p[k] * (k + 1);
  return s;
}

// Generic addressing: one function reads through generic pointers to shared, global and local
// memory; isspacep and cvta in both directions.
extern "C" __global__ void generic_addressing(const int* in, int* out) {
  __shared__ int shared_values[8];
  int local_values[8];
  int t = threadIdx.x;
  if (t < 8) shared_values[t] = in[t] + 100;
  for (int k = 0; k < 8; ++k) local_values[k] = in[(GID + k) % 64] - k;
  __syncthreads();
  const int* pointers[3] = {shared_values, in + (t % 8), local_values};
  const int* p = pointers[t % 3];
  int* o = out + GID * 6;
  o[0] = SumThrough(p, 8);
  o[1] = __isShared(p);
  o[2] = __isGlobal(p);
  o[3] = __isLocal(p);
  size_t shared_address = __cvta_generic_to_shared(&shared_values[t % 8]);
  o[4] = *(const int*)__cvta_shared_to_generic(shared_address);
  o[5] = (int)(shared_address - __cvta_generic_to_shared(shared_values));
}

// Vector loads and stores (.v2 .v4) of several element types, global and shared.
extern "C" __global__ void vector_access(const int4* a, const double2* b, const char4* c,
                                         int4* out4, double2* out2, char4* out_c,
                                         float2* out_f) {
  __shared__ int4 staged[64];
  unsigned i = GID, t = threadIdx.x;
  int4 v = a[i];
  staged[t] = make_int4(v.w, v.z, v.y, v.x);
  __syncthreads();
  int4 w = staged[(t + 1) % blockDim.x];
  out4[i] = make_int4(w.x + 1, w.y * 2, w.z ^ 3, w.w - 4);
  double2 d = b[i];
  out2[i] = make_double2(d.y * 2.0, d.x + 1.0);
  char4 ch = c[i];
  out_c[i] = make_char4(ch.w, ch.z, ch.y + 1, ch.x);
  float2 f = make_float2((float)v.x, (float)(v.y & 0xff));
  out_f[i] = f;
}

// Cache-qualified loads and stores (ld.global.nc/.cg/.ca/.cs/.lu/.cv, st.global.wb/.cg/.cs/.wt).
extern "C" __global__ void cache_qualifiers(const int* __restrict__ in, int* out) {
  unsigned i = GID;
  int a = __ldg(in + i);
  int b = __ldcg(in + (i + 1) % 128);
  int c = __ldca(in + (i + 2) % 128);
  int d = __ldcs(in + (i + 3) % 128);
  int e = __ldlu(in + (i + 4) % 128);
  int f = __ldcv(in + (i + 5) % 128);
  __stwb(out + i * 4, a + b);
  __stcg(out + i * 4 + 1, c - d);
  __stcs(out + i * 4 + 2, e ^ f);
  __stwt(out + i * 4 + 3, a * f);
}

struct LargeParams {
  int weights[12];
  double scale;
  char tag;
  short offset;
  float bias[3];
  long long big;
};

// A large struct by value (param space, mixed alignment) and scalar params of every width.
extern "C" __global__ void params_by_value(LargeParams p, char c, short s, unsigned char u,
                                           long long l, float f, double d, int* out) {
  unsigned i = GID;
  double v = p.weights[i % 12] * p.scale + p.bias[i % 3] + p.offset + p.tag;
  out[i * 2] = (int)(v * 4.0) + c + s + u;
  out[i * 2 + 1] = (int)(l >> 20) + (int)(f * 8.0f) + (int)(d * 16.0) + (int)(p.big % 1000);
}

// Byte and halfword accesses at every offset, and a struct copied with memcpy.
struct Record {
  char name[5];
  short code;
  int value;
};

extern "C" __global__ void byte_access(const unsigned char* in, unsigned char* out,
                                       const Record* records, Record* copies) {
  unsigned i = GID;
  out[i] = in[(i * 7) % 256] ^ in[255 - i];
  const unsigned short* halves = (const unsigned short*)in;
  if (i < 128) out[256 + i] = (unsigned char)(halves[i] >> 4);
  if (i < 32) {
    Record r;
    memcpy(&r, &records[i], sizeof(Record));
    r.name[i % 5] = 'x';
    r.code = (short)(r.code + 1);
    r.value = -r.value;
    memcpy(&copies[i], &r, sizeof(Record));
  }
}

// Volatile shared memory: a warp-synchronous reduction (each step fenced with __syncwarp).
extern "C" __global__ void volatile_shared(const int* in, int* out) {
  __shared__ volatile int partial[128];
  unsigned t = threadIdx.x;
  partial[t] = in[GID];
  __syncwarp();
  for (int offset = 16; offset > 0; offset /= 2) {
    if ((t & 31) < offset) partial[t] += partial[t + offset];
    __syncwarp();
  }
  if ((t & 31) == 0) out[GID / 32] = partial[t];
}
