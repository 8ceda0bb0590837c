// The other half of rdc_caller.cu's program.
__device__ int g_factor = 4;
__device__ int Scaled(int x) { return x * g_factor; }
