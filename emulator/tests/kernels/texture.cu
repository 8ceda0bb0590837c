// Kernels for texture and surface objects: each thread samples at coordinates from a buffer so
// that the test chooses every case on the host.

extern "C" __global__ void fetch_float(cudaTextureObject_t t, const int* index, float* out) {
  out[threadIdx.x] = tex1Dfetch<float>(t, index[threadIdx.x]);
}

extern "C" __global__ void fetch_int(cudaTextureObject_t t, const int* index, int* out) {
  out[threadIdx.x] = tex1Dfetch<int>(t, index[threadIdx.x]);
}

extern "C" __global__ void sample_1d_uchar(cudaTextureObject_t t, const float* x, unsigned* out) {
  out[threadIdx.x] = tex1D<unsigned char>(t, x[threadIdx.x]);
}

extern "C" __global__ void sample_1d(cudaTextureObject_t t, const float* x, float* out) {
  out[threadIdx.x] = tex1D<float>(t, x[threadIdx.x]);
}

extern "C" __global__ void sample_2d(cudaTextureObject_t t, const float2* xy, float4* out) {
  float2 c = xy[threadIdx.x];
  out[threadIdx.x] = tex2D<float4>(t, c.x, c.y);
}

extern "C" __global__ void sample_3d(cudaTextureObject_t t, const float4* xyz, float* out) {
  float4 c = xyz[threadIdx.x];
  out[threadIdx.x] = tex3D<float>(t, c.x, c.y, c.z);
}

// Every element of a width x height int surface becomes 2v + 1 + its coordinates' sum.
extern "C" __global__ void surface_update(cudaSurfaceObject_t s) {
  int x = threadIdx.x, y = blockIdx.x;
  int v = surf2Dread<int>(s, x * 4, y);
  surf2Dwrite(2 * v + 1 + x + y, s, x * 4, y);
}

// 1-D float surface of n elements: thread i reads element i - 2 (zero outside) and writes
// element i + 2 (clamped to the last one), so the boundary modes show.
extern "C" __global__ void surface_bounds(cudaSurfaceObject_t s, float* seen) {
  int i = threadIdx.x;
  seen[i] = surf1Dread<float>(s, (i - 2) * 4, cudaBoundaryModeZero);
  __syncthreads();
  surf1Dwrite(static_cast<float>(i), s, (i + 2) * 4, cudaBoundaryModeClamp);
}

extern "C" __global__ void surface_trap(cudaSurfaceObject_t s) {
  surf1Dwrite(1.0f, s, (threadIdx.x + 100) * 4);
}
