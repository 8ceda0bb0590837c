// Corpus: kernel parameter layouts (scalars of every width, by-value structs of unusual size
// and alignment, a 1 KB struct, no params) and launch-bound attributes. The round-trip test
// checks ComputeSignatures on these kernels against layouts computed by hand.

struct Record24 {  // 24 bytes, 8-aligned
  double weight;
  int count;
  float scale;
  long long tag;
};

struct Odd7 {  // 7 bytes, 1-aligned
  char bytes[7];
};

struct alignas(16) Big {  // 4 * 64 + 4 = 260 bytes, padded to 272, 16-aligned
  float values[64];
  int tag;
};

extern "C" __global__ void MixedParams(float* data, int n, double scale, Record24 record) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    data[i] = static_cast<float>(data[i] * scale * record.weight + record.count * record.scale +
                                 record.tag);
}

extern "C" __global__ void NarrowParams(char c, short s, int i, long long ll, bool flag, float4 v,
                                        double* out) {
  out[threadIdx.x] = c + s + i + ll + (flag ? 1.0 : 0.0) + v.x + v.y + v.z + v.w;
}

extern "C" __global__ void OddSizes(Odd7 odd, int x, short s) {
  if (odd.bytes[x & 7] == s) __trap();
}

extern "C" __global__ void BigStruct(Big big, float* out) {
  out[threadIdx.x] = big.values[threadIdx.x % 64] + big.tag;
}

extern "C" __global__ void NoParams() {}

// A mangled name: the test checks its demangled form as well as its layout.
__global__ void __launch_bounds__(256, 2) Bounded(const Record24* records, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<float>(records[i].weight);
}

__global__ void __launch_bounds__(1024) WideBlocks(unsigned long long* out) {
  out[threadIdx.x] = threadIdx.x;
}

__global__ void __maxnreg__(32) FewRegisters(const float2* in, float2* out, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = make_float2(in[i].y, in[i].x);
}
