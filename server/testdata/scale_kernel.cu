// Device code for server_session_test, compiled to a raw fatbin at test-build time
// (nvcc -fatbin): one kernel with a pointer, an int and a double parameter.
extern "C" __global__ void Scale(int* data, int n, double factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = static_cast<int>(data[i] * factor);
}
