// Conformance kernels for instructions and addressing forms the emulator once lacked
// (references in ../gaps_cases.cc): integer dot products, 24-bit multiplies, the SIMD video
// instructions, 32-bit shared addresses that wrap, and .shared variables used inside .funcs.
#define GID (blockIdx.x * blockDim.x + threadIdx.x)
// One instruction d = op(a, b, c) on 32-bit registers.
#define OP3(op, d, a, b, c) asm(op " %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c))

// dp4a and dp2a in every signedness combination (the intrinsics where they exist).
extern "C" __global__ void int_dot(const int* a, const int* b, const int* c, int* out) {
  unsigned i = GID;
  int x = a[i], y = b[i], z = c[i];
  int* o = out + i * 10;
  o[0] = __dp4a(x, y, z);
  o[1] = (int)__dp4a((unsigned)x, (unsigned)y, (unsigned)z);
  OP3("dp4a.u32.s32", o[2], x, y, z);
  OP3("dp4a.s32.u32", o[3], x, y, z);
  o[4] = __dp2a_lo(x, y, z);
  o[5] = __dp2a_hi(x, y, z);
  o[6] = (int)__dp2a_lo((unsigned)x, (unsigned)y, (unsigned)z);
  o[7] = (int)__dp2a_hi((unsigned)x, (unsigned)y, (unsigned)z);
  OP3("dp2a.lo.u32.s32", o[8], x, y, z);
  OP3("dp2a.hi.s32.u32", o[9], x, y, z);
}

// mul24 and mad24, .lo and .hi, signed and unsigned, and mad24.hi.sat.s32.
extern "C" __global__ void int_mul24(const int* a, const int* b, const int* c, int* out) {
  unsigned i = GID;
  int x = a[i], y = b[i], z = c[i];
  int* o = out + i * 9;
  asm("mul24.lo.s32 %0, %1, %2;" : "=r"(o[0]) : "r"(x), "r"(y));
  asm("mul24.hi.s32 %0, %1, %2;" : "=r"(o[1]) : "r"(x), "r"(y));
  asm("mul24.lo.u32 %0, %1, %2;" : "=r"(o[2]) : "r"(x), "r"(y));
  asm("mul24.hi.u32 %0, %1, %2;" : "=r"(o[3]) : "r"(x), "r"(y));
  OP3("mad24.lo.s32", o[4], x, y, z);
  OP3("mad24.hi.s32", o[5], x, y, z);
  OP3("mad24.lo.u32", o[6], x, y, z);
  OP3("mad24.hi.u32", o[7], x, y, z);
  OP3("mad24.hi.sat.s32", o[8], x, y, z);
}

// The SIMD video instructions: what nvcc emits for the __vabsdiff/__vsad intrinsics, and the
// other vop4/vop2 forms with saturation, accumulation (.add) and mixed signedness.
extern "C" __global__ void video_simd(const unsigned* a, const unsigned* b, const unsigned* c,
                                      unsigned* out) {
  unsigned i = GID;
  unsigned x = a[i], y = b[i], z = c[i];
  unsigned* o = out + i * 16;
  o[0] = __vabsdiffu4(x, y);
  o[1] = __vabsdiffs4(x, y);
  o[2] = __vsadu4(x, y);
  o[3] = __vsadu2(x, y);
  OP3("vadd4.u32.u32.u32.sat", o[4], x, y, z);
  OP3("vsub4.s32.s32.s32.sat", o[5], x, y, z);
  OP3("vavrg4.s32.s32.s32", o[6], x, y, z);
  OP3("vavrg4.u32.u32.u32", o[7], x, y, z);
  OP3("vmin4.s32.s32.s32", o[8], x, y, z);
  OP3("vmax4.u32.u32.u32.add", o[9], x, y, z);
  OP3("vadd4.s32.u32.s32.sat", o[10], x, y, z);
  OP3("vadd2.s32.s32.s32.sat", o[11], x, y, z);
  OP3("vsub2.u32.u32.u32", o[12], x, y, z);
  OP3("vabsdiff2.s32.s32.s32.add", o[13], x, y, z);
  OP3("vmax2.s32.s32.s32", o[14], x, y, z);
  OP3("vavrg2.s32.u32.s32", o[15], x, y, z);
}

// A 32-bit shared address that wraps: nvcc folds s[191 - t] into [(s + 4 * (63 - t)) + 512],
// whose 32-bit register is negative for t = 64 (the sum wraps to the right address on a GPU).
extern "C" __global__ void shared_address_wrap(const int* in, int* out) {
  __shared__ int s[128];
  unsigned t = threadIdx.x;
  s[t] = in[t] + 1;
  __syncthreads();
  out[t] = t < 64 ? s[63 - t] : s[64 + (127 - t)] * 2;
}

// A shared variable declared in a device function: nvcc declares it inside the .func.
__device__ __noinline__ int MirrorThroughOwnShared(int v) {
  __shared__ int s[64];
  s[threadIdx.x] = v;
  __syncthreads();
  return s[blockDim.x - 1 - threadIdx.x];
}

extern "C" __global__ void shared_in_function(const int* in, int* out) {
  out[GID] = MirrorThroughOwnShared(in[GID] * 3);
}

// A shared variable at namespace scope that a kernel and a .func use: module scope in PTX,
// named directly inside the .func.
__shared__ int g_mirror[64];

__device__ __noinline__ int MirrorThroughModuleShared(int v) {
  g_mirror[threadIdx.x] = v;
  __syncthreads();
  return g_mirror[blockDim.x - 1 - threadIdx.x];
}

extern "C" __global__ void module_shared_in_function(const int* in, int* out) {
  int r = MirrorThroughModuleShared(in[GID] * 3);
  out[GID] = r + g_mirror[threadIdx.x];
}
