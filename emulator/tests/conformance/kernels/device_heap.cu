// Conformance kernels: device-side malloc/free (references in ../device_heap_cases.cc).
#define GID (blockIdx.x * blockDim.x + threadIdx.x)

// Every thread allocates a buffer of its own size, fills and sums it, and frees it; thread 0
// of each block also allocates a block-shared buffer that outlives the barrier.
extern "C" __global__ void heap_malloc_free(const int* in, int* out) {
  __shared__ int* shared_buffer;
  unsigned t = threadIdx.x;
  int v = in[GID];
  int count = 1 + (v & 31);
  int* mine = (int*)malloc(count * sizeof(int));
  int sum = -1;
  if (mine != nullptr) {
    for (int k = 0; k < count; ++k) mine[k] = v + k;
    sum = 0;
    for (int k = 0; k < count; ++k) sum += mine[k];
    free(mine);
  }
  if (t == 0) shared_buffer = (int*)malloc(blockDim.x * sizeof(int));
  __syncthreads();
  if (shared_buffer != nullptr) shared_buffer[t] = sum;
  __syncthreads();
  out[GID] = shared_buffer != nullptr ? shared_buffer[blockDim.x - 1 - t] : -2;
  __syncthreads();
  if (t == 0) free(shared_buffer);
}
