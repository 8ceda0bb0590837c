// Corpus: 3-D grids and blocks, and the counting/and/or forms of __syncthreads.

__global__ void Grid3D(const float* in, float* out, int nx, int ny, int nz) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  int z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x >= nx || y >= ny || z >= nz) return;
  int i = (z * ny + y) * nx + x;
  float v = in[i];
  if (x > 0) v += in[i - 1];
  if (y > 0) v += in[i - nx];
  if (z > 0) v += in[i - nx * ny];
  out[i] = v / (1 + (x > 0) + (y > 0) + (z > 0));
}

// Block-wide predicates: every thread sees how many / whether all / whether any passed.
__global__ void SyncPredicates(const int* in, int* out) {
  int flat_block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  int threads = blockDim.x * blockDim.y * blockDim.z;
  int t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  int v = in[flat_block * threads + t];
  int count = __syncthreads_count(v > 0);
  int all = __syncthreads_and(v != 0);
  int any = __syncthreads_or(v < 0);
  if (t == 0) out[flat_block] = count * 4 + all * 2 + any;
}

// Writes its own coordinates: a direct check that a runtime maps every block exactly once.
__global__ void WhoAmI(uint4* ids) {
  unsigned block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  unsigned thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  ids[block * threads + thread] = make_uint4(blockIdx.x, blockIdx.y, blockIdx.z, thread);
}
