// Conformance kernels: texture objects over a 2-D CUDA array sampled with point and linear
// filtering, clamp/border/wrap/mirror addressing and unnormalized or normalized coordinates, and
// surface objects read (trap and zero boundary modes) and written. References in
// ../texture_cases.cc; the arrays and objects are made through the driver API (run.cc).

// Six samplers at the same points, given in texels (normalized samplers get them scaled by
// 1/width and 1/height, exact for power-of-two sizes).
extern "C" __global__ void tex2d_samplers(cudaTextureObject_t point_clamp,
                                          cudaTextureObject_t linear_clamp,
                                          cudaTextureObject_t linear_border,
                                          cudaTextureObject_t point_wrap,
                                          cudaTextureObject_t linear_wrap,
                                          cudaTextureObject_t linear_mirror, const float2* points,
                                          float inv_width, float inv_height, float* out) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  float x = points[i].x, y = points[i].y;
  float u = x * inv_width, v = y * inv_height;
  float* o = out + i * 6;
  o[0] = tex2D<float>(point_clamp, x, y);
  o[1] = tex2D<float>(linear_clamp, x, y);
  o[2] = tex2D<float>(linear_border, x, y);
  o[3] = tex2D<float>(point_wrap, u, v);
  o[4] = tex2D<float>(linear_wrap, u, v);
  o[5] = tex2D<float>(linear_mirror, u, v);
}

// out(x, y) = 2 * in(width - 1 - x, y) + in(x - 1, y) + in(x + 1, y), the neighbours outside
// the array reading as 0. Surface x coordinates are in bytes.
extern "C" __global__ void surf2d_mirror(cudaSurfaceObject_t in, cudaSurfaceObject_t out,
                                         int width) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= width) return;
  float mirrored = surf2Dread<float>(in, (width - 1 - x) * 4, y);
  float left = surf2Dread<float>(in, (x - 1) * 4, y, cudaBoundaryModeZero);
  float right = surf2Dread<float>(in, (x + 1) * 4, y, cudaBoundaryModeZero);
  surf2Dwrite(2 * mirrored + left + right, out, x * 4, y);
}
