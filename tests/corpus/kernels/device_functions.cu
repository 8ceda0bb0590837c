// Corpus: device functions that stay calls (__noinline__), recursion, struct returns and
// indirect calls through a function-pointer table (which make nvcc emit `.callprototype`).

struct MinMax {
  int lo;
  int hi;
  long long sum;
};

__device__ __noinline__ MinMax Summarise(const int* values, int count) {
  MinMax r{values[0], values[0], 0};
  for (int k = 0; k < count; ++k) {
    r.lo = min(r.lo, values[k]);
    r.hi = max(r.hi, values[k]);
    r.sum += values[k];
  }
  return r;
}

__device__ __noinline__ unsigned long long Factorial(unsigned n) {
  return n <= 1 ? 1ull : n * Factorial(n - 1);
}

__device__ __noinline__ int Fibonacci(int n) {
  return n < 2 ? n : Fibonacci(n - 1) + Fibonacci(n - 2);
}

__device__ __forceinline__ float Lerp(float a, float b, float t) { return a + t * (b - a); }

__device__ __noinline__ float Scale(float x, float by) { return x * by; }
__device__ __noinline__ float Offset(float x, float by) { return x + by; }
__device__ __noinline__ float Clamp(float x, float by) { return fminf(fmaxf(x, -by), by); }

using UnaryOp = float (*)(float, float);
__device__ UnaryOp g_ops[] = {Scale, Offset, Clamp};

__global__ void CallFunctions(const int* values, int count, MinMax* summary,
                              unsigned long long* factorials, int* fibs) {
  int t = threadIdx.x;
  if (t == 0) *summary = Summarise(values, count);
  factorials[t] = Factorial(t % 21);
  fibs[t] = Fibonacci(t % 16);
}

__global__ void IndirectCalls(const float* in, const int* which, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  UnaryOp op = g_ops[which[i] % 3];
  out[i] = Lerp(op(in[i], 2.0f), in[i], 0.25f);
}
