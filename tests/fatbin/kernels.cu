// Device code for the fatbin reader tests: kernels whose parameter layouts are known by hand.
#include <cstdint>

// 24 bytes, 8-byte aligned: a by-value struct parameter.
struct Record {
  double weight;
  float scale;
  int32_t id;
  int64_t tag;
};

// Parameters at offsets 0 (8 bytes), 8 (4), 16 (8), 24 (24).
__global__ void Saxpy(float* y, int n, double a, Record r) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * y[i] + r.weight * r.scale + r.id + r.tag;
}

// One parameter at offset 0 (8 bytes).
__global__ void AddOne(int* x) { x[threadIdx.x] += 1; }

// Parameters at offsets 0 (8 bytes), 8 (2), 12 (4), 16 (1).
template <typename T>
__global__ void Fill(T* out, T value, unsigned n, char tag) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value + tag;
}
template __global__ void Fill<short>(short*, short, unsigned, char);

int main() { return 0; }
