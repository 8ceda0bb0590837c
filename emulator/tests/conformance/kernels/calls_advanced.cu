// Conformance kernels: match.sync, an indexed branch (brx.idx), recursion and indirect calls
// (references in ../calls_advanced_cases.cc).
#define GID (blockIdx.x * blockDim.x + threadIdx.x)

// match.any / match.all on 32- and 64-bit values.
extern "C" __global__ void warp_match(const int* in, unsigned* out) {
#if __CUDA_ARCH__ >= 700
  int v = in[GID];
  int pred = 0;
  out[GID * 3] = __match_any_sync(0xffffffffu, v);
  out[GID * 3 + 1] = __match_any_sync(0xffffffffu, (long long)v << 33);
  out[GID * 3 + 2] = __match_all_sync(0xffffffffu, v & 0x100, &pred) + (pred ? 7u : 0u);
#endif
}

// An indexed branch over a .branchtargets table (brx.idx): nvcc 13 lowers dense switches to
// compare-and-branch chains, so the table is written in inline PTX. __noinline__ keeps the
// labels unique within the module.
__device__ __noinline__ unsigned JumpTable(unsigned selector, unsigned x) {
  unsigned r;
  asm volatile(
      "{\n\t"
      ".reg .u32 index;\n\t"
      "and.b32 index, %1, 3;\n"
      "JT_TABLE: .branchtargets JT_0, JT_1, JT_2, JT_3;\n\t"
      "brx.idx index, JT_TABLE;\n"
      "JT_0:\n\t"
      "add.u32 %0, %2, 11;\n\t"
      "bra.uni JT_END;\n"
      "JT_1:\n\t"
      "mul.lo.u32 %0, %2, 3;\n\t"
      "bra.uni JT_END;\n"
      "JT_2:\n\t"
      "xor.b32 %0, %2, 0xff;\n\t"
      "bra.uni JT_END;\n"
      "JT_3:\n\t"
      "shl.b32 %0, %2, 4;\n"
      "JT_END:\n\t"
      "}"
      : "=r"(r)
      : "r"(selector), "r"(x));
  return r;
}

extern "C" __global__ void jump_table(const unsigned* in, unsigned* out) {
  unsigned v = in[GID];
  out[GID] = JumpTable(v >> 8, v);  // divergent: lanes take different targets
}

__device__ __noinline__ int Fibonacci(int n) { return n < 2 ? n : Fibonacci(n - 1) + Fibonacci(n - 2); }

// Recursion with a per-thread depth.
extern "C" __global__ void recursion(const int* in, int* out) { out[GID] = Fibonacci(in[GID] & 15); }

__device__ __noinline__ int Twice(int x) { return 2 * x; }
__device__ __noinline__ int Square(int x) { return x * x; }
__device__ __noinline__ int Negate(int x) { return -x; }

// Indirect calls through a table of device function pointers.
extern "C" __global__ void indirect_calls(const int* in, int* out) {
  int (*table[3])(int) = {Twice, Square, Negate};
  int v = in[GID];
  out[GID] = table[(unsigned)v % 3](v);
}
