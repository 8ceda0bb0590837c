// A kernel the emulator cannot run yet (recursion): loading its module must fail cleanly.
__device__ __noinline__ float halve(float x) { return x > 1.0f ? halve(x * 0.5f) * 2.0f : x; }

extern "C" __global__ void recursive(float* data) { data[threadIdx.x] = halve(data[threadIdx.x]); }
