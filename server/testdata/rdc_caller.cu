// Half of a relocatable program for server_device_code_test (nvcc -rdc=true -fatbin): uses a
// function and a variable that rdc_callee.cu defines.
extern __device__ int g_factor;
__device__ int Scaled(int x);

extern "C" __global__ void Apply(int* out) { out[threadIdx.x] = Scaled(threadIdx.x) + g_factor; }
