// Corpus: function and class templates, instantiated for several types and sizes.

template <typename T>
struct Plus {
  __host__ __device__ T operator()(T a, T b) const { return a + b; }
};

template <typename T>
struct Maximum {
  __host__ __device__ T operator()(T a, T b) const { return a > b ? a : b; }
};

// y[i] = a * x[i] + y[i]; one instantiation per arithmetic type.
template <typename T>
__global__ void Axpy(T a, const T* x, T* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// Tree reduction in a static shared array whose size is a template parameter; each thread
// first folds kItems elements so that the shared-memory stage sees one value per thread.
template <typename T, typename Op, int kBlock, int kItems>
__global__ void BlockReduce(const T* in, T* out, int n, T identity) {
  __shared__ T partial[kBlock];
  Op op;
  T acc = identity;
  int base = (blockIdx.x * kBlock + threadIdx.x) * kItems;
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    if (base + k < n) acc = op(acc, in[base + k]);
  }
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = kBlock / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      partial[threadIdx.x] = op(partial[threadIdx.x], partial[threadIdx.x + stride]);
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}

// A class template whose static member function is the kernel body.
template <int kRadius>
struct Stencil {
  __device__ static float Apply(const float* in, int i, int n) {
    float sum = 0.0f;
    for (int d = -kRadius; d <= kRadius; ++d) {
      int j = i + d;
      if (j >= 0 && j < n) sum += in[j] * (1.0f / (2 * kRadius + 1));
    }
    return sum;
  }
};

template <int kRadius>
__global__ void StencilKernel(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = Stencil<kRadius>::Apply(in, i, n);
}

template __global__ void Axpy<float>(float, const float*, float*, int);
template __global__ void Axpy<double>(double, const double*, double*, int);
template __global__ void Axpy<int>(int, const int*, int*, int);
template __global__ void Axpy<unsigned long long>(unsigned long long, const unsigned long long*,
                                                  unsigned long long*, int);
template __global__ void BlockReduce<float, Plus<float>, 128, 4>(const float*, float*, int, float);
template __global__ void BlockReduce<int, Maximum<int>, 64, 2>(const int*, int*, int, int);
template __global__ void BlockReduce<double, Plus<double>, 256, 1>(const double*, double*, int,
                                                                   double);
template __global__ void StencilKernel<1>(const float*, float*, int);
template __global__ void StencilKernel<3>(const float*, float*, int);
