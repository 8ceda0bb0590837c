// Corpus: device printf with many argument types (vprintf calls with a local argument buffer).

__global__ void PrintValues(const int* ints, const double* doubles, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (i == 0) printf("block dims %u x %u x %u\n", blockDim.x, blockDim.y, blockDim.z);
  printf("[%d] int=%d hex=%08x long=%lld\n", i, ints[i], ints[i],
         static_cast<long long>(ints[i]) << 33);
  printf("[%d] double=%.3f exp=%e float=%f\n", i, doubles[i], doubles[i] * 1e10,
         static_cast<float>(doubles[i]));
  printf("%s %c %p\n", "ptr", 'A' + (i % 26), static_cast<const void*>(ints + i));
}

__global__ void PrintNothing() { printf("no arguments at all\n"); }
