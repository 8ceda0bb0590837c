// Conformance kernels: match.sync, an indexed branch (brx.idx), recursion (also mutual, and to
// per-lane depths), indirect calls, device function-pointer tables and virtual functions
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

// Recursion to a per-lane depth through a binary tree (node i has children 2i+1 and 2i+2 below
// `count`): each activation records its value in the kernel's local `path` array (a generic
// pointer into an outer frame) and keeps a local array of its own across the recursive calls.
__device__ __noinline__ int TreeWalk(const int* values, int node, int count, int* path, int depth) {
  int own[8];
  for (int i = 0; i < 8; ++i) own[i] = values[node] * (i + 1);
  path[depth] = values[node];
  int sum = 0;
  for (int d = 0; d <= depth; ++d) sum += path[d];
  int left = 2 * node + 1, right = 2 * node + 2;
  if (left < count) sum += TreeWalk(values, left, count, path, depth + 1);
  if (right < count) sum += TreeWalk(values, right, count, path, depth + 1);
  return sum + own[(node + depth) & 7];
}

extern "C" __global__ void tree_walk(const int* values, int count, int* out) {
  int path[16];
  out[GID] = TreeWalk(values, GID % count, count, path, 0);
}

// Mutual recursion with per-lane depths.
__device__ __noinline__ unsigned Odd(int n, unsigned acc);
__device__ __noinline__ unsigned Even(int n, unsigned acc) {
  return n == 0 ? acc : Odd(n - 1, acc * 3 + 1);
}
__device__ __noinline__ unsigned Odd(int n, unsigned acc) {
  return n == 0 ? 0u - acc : Even(n - 1, acc ^ (n << 2));
}

extern "C" __global__ void mutual_recursion(const int* in, unsigned* out) {
  int v = in[GID];
  out[GID] = (v & 1) ? Odd(v % 41, v) : Even(v % 37, v);
}

// A device function-pointer table in global memory (a .global initializer naming functions),
// indexed per lane.
__device__ __noinline__ int OpAdd(int a, int b) { return a + b; }
__device__ __noinline__ int OpSub(int a, int b) { return a - b; }
__device__ __noinline__ int OpMul(int a, int b) { return a * b; }
__device__ __noinline__ int OpXor(int a, int b) { return a ^ b; }
__device__ int (*g_ops[4])(int, int) = {OpAdd, OpSub, OpMul, OpXor};

extern "C" __global__ void pointer_table(const int* in, int* out) {
  int v = in[GID];
  out[GID] = g_ops[(v >> 4) & 3](v, GID);
}

// Virtual functions in a class hierarchy: vtables are .global initializers naming the methods,
// and Pick hides each object's dynamic type from the caller.
struct Shape {
  int a, b;
  __device__ Shape(int a, int b) : a(a), b(b) {}
  __device__ virtual int Area() const { return 0; }
  __device__ virtual int Scaled(int k) const { return k * Area(); }
};
struct SquareShape : Shape {
  __device__ explicit SquareShape(int a) : Shape(a, a) {}
  __device__ int Area() const override { return a * a; }
};
struct RectShape : Shape {
  __device__ RectShape(int a, int b) : Shape(a, b) {}
  __device__ int Area() const override { return a * b; }
  __device__ int Scaled(int k) const override { return Area() + k; }
};
struct TriShape : RectShape {
  __device__ TriShape(int a, int b) : RectShape(a, b) {}
  __device__ int Area() const override { return a * b / 2; }
};

__device__ __noinline__ const Shape* Pick(int kind, const Shape* s0, const Shape* s1,
                                          const Shape* s2, const Shape* s3) {
  return kind == 0 ? s0 : kind == 1 ? s1 : kind == 2 ? s2 : s3;
}

extern "C" __global__ void virtual_calls(const int* in, int* out) {
  int v = in[GID];
  Shape base(v & 15, 3);
  SquareShape square(v & 31);
  RectShape rect(v & 7, (v >> 3) & 7);
  TriShape tri((v >> 2) & 15, 5);
  const Shape* shape = Pick((v >> 6) & 3, &base, &square, &rect, &tri);
  out[2 * GID] = shape->Area();
  out[2 * GID + 1] = shape->Scaled(v & 3);
}

// Recursion as deep as asked: the emulator's stack limit test (call_stack_test.cc) runs it past
// the stack size. The work after the recursive call keeps it a real recursion.
__device__ __noinline__ int Deep(int n, int* trail) {
  if (n == 0) return 1;
  int r = Deep(n - 1, trail);
  trail[n & 3] += r;
  return (r * 3 + n) & 0xffff;
}

extern "C" __global__ void deep_recursion(const int* depth, int* out) {
  int trail[4] = {0, 0, 0, 0};
  int r = Deep(depth[GID], trail);
  out[GID] = r + trail[0] + trail[1] + trail[2] + trail[3];
}
