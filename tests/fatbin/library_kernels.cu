// Device code of the shared library that the fatbin reader tests read.
__global__ void ScaleInLibrary(float* x, float s, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}
