// Seed for the fatbin fuzzer: a tiny kernel whose fatbin (PTX + cubin, compressed) is built
// at configure time of the fuzz build.
__global__ void seed_scale(float* data, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}
