// Device code with module state for server_session_test: a __device__ counter that each launch
// increments, so that clients sharing the fatbin can check they do not share the variable.
__device__ int counter;

extern "C" __global__ void Bump(int* out) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *out = ++counter;
}
