// Corpus: static shared arrays, dynamic (extern) shared memory, and shared memory reused
// under several types.

constexpr int kTile = 32;

// Transpose through a padded tile (the +1 column avoids bank conflicts).
__global__ void TransposeTile(const float* in, float* out, int width, int height) {
  __shared__ float tile[kTile][kTile + 1];
  int x = blockIdx.x * kTile + threadIdx.x;
  int y = blockIdx.y * kTile + threadIdx.y;
  if (x < width && y < height) tile[threadIdx.y][threadIdx.x] = in[y * width + x];
  __syncthreads();
  x = blockIdx.y * kTile + threadIdx.x;
  y = blockIdx.x * kTile + threadIdx.y;
  if (x < height && y < width) out[y * height + x] = tile[threadIdx.x][threadIdx.y];
}

// Reverses each block's slice through dynamic shared memory sized at launch.
__global__ void ReverseDynamic(int* data, int n) {
  extern __shared__ int buffer[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) buffer[threadIdx.x] = data[i];
  __syncthreads();
  int j = blockDim.x - 1 - threadIdx.x;
  int src = blockIdx.x * blockDim.x + j;
  if (i < n && src < n) data[i] = buffer[j];
}

// One dynamic allocation carved into a double and an int region, the layout that libraries
// use to pass several arrays in one launch-time size.
__global__ void CarveDynamic(const double* values, const int* counts, double* out, int n) {
  extern __shared__ double2 raw[];
  double* sums = reinterpret_cast<double*>(raw);
  int* tallies = reinterpret_cast<int*>(sums + blockDim.x);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  sums[threadIdx.x] = i < n ? values[i] : 0.0;
  tallies[threadIdx.x] = i < n ? counts[i] : 0;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    int count = 0;
    for (unsigned t = 0; t < blockDim.x; ++t) {
      total += sums[t];
      count += tallies[t];
    }
    out[blockIdx.x] = count > 0 ? total / count : 0.0;
  }
}

// A function-scope static shared variable inside a device function.
__device__ int BlockFirstNonZero(int value) {
  __shared__ int first;
  if (threadIdx.x == 0) first = 0x7fffffff;
  __syncthreads();
  if (value != 0) atomicMin(&first, static_cast<int>(threadIdx.x));
  __syncthreads();
  return first;
}

__global__ void FirstNonZero(const int* in, int* out) {
  int r = BlockFirstNonZero(in[blockIdx.x * blockDim.x + threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = r;
}
