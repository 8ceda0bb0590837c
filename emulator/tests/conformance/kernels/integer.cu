// Conformance kernels: integer arithmetic, bit manipulation and logic (references in
// ../integer_cases.cc). One thread per input element; each writes a row of results.
#define GID (blockIdx.x * blockDim.x + threadIdx.x)

// add/sub/mul .lo/.hi/.wide on 32 bits (unsigned arithmetic: C++ signed overflow is undefined).
extern "C" __global__ void int_arith32(const int* a, const int* b, int* out) {
  unsigned i = GID;
  int x = a[i], y = b[i];
  unsigned ux = x, uy = y;
  int* o = out + i * 8;
  o[0] = (int)(ux + uy);
  o[1] = (int)(ux - uy);
  o[2] = (int)(ux * uy);
  o[3] = __mulhi(x, y);
  o[4] = (int)__umulhi(ux, uy);
  long long wide = (long long)x * y;
  o[5] = (int)wide;
  o[6] = (int)(wide >> 32);
  o[7] = (int)(((unsigned long long)ux * uy) >> 32);
}

extern "C" __global__ void int_arith64(const long long* a, const long long* b, long long* out) {
  unsigned i = GID;
  long long x = a[i], y = b[i];
  unsigned long long ux = x, uy = y;
  long long* o = out + i * 6;
  o[0] = (long long)(ux + uy);
  o[1] = (long long)(ux - uy);
  o[2] = (long long)(ux * uy);
  o[3] = __mul64hi(x, y);
  o[4] = (long long)__umul64hi(ux, uy);
  o[5] = (long long)(ux * 3 + (uy >> 7));
}

// div/rem, signed and unsigned, 32 and 64 bits (divisors are never 0, never INT_MIN / -1).
extern "C" __global__ void int_divrem(const int* a, const int* b, const long long* c,
                                      const long long* d, int* out32, long long* out64) {
  unsigned i = GID;
  int x = a[i], y = b[i];
  long long p = c[i], q = d[i];
  out32[i * 4 + 0] = x / y;
  out32[i * 4 + 1] = x % y;
  out32[i * 4 + 2] = (int)((unsigned)x / (unsigned)y);
  out32[i * 4 + 3] = (int)((unsigned)x % (unsigned)y);
  out64[i * 4 + 0] = p / q;
  out64[i * 4 + 1] = p % q;
  out64[i * 4 + 2] = (long long)((unsigned long long)p / (unsigned long long)q);
  out64[i * 4 + 3] = (long long)((unsigned long long)p % (unsigned long long)q);
}

// min/max/abs/neg, signed and unsigned, 32 and 64 bits (abs and neg of the minimum wrap).
extern "C" __global__ void int_minmax(const int* a, const int* b, const long long* c,
                                      const long long* d, int* out32, long long* out64) {
  unsigned i = GID;
  int x = a[i], y = b[i];
  long long p = c[i], q = d[i];
  int* o = out32 + i * 6;
  o[0] = min(x, y);
  o[1] = max(x, y);
  o[2] = (int)min((unsigned)x, (unsigned)y);
  o[3] = (int)max((unsigned)x, (unsigned)y);
  o[4] = abs(x);
  o[5] = (int)(0u - (unsigned)x);
  long long* w = out64 + i * 5;
  w[0] = min(p, q);
  w[1] = max(p, q);
  w[2] = (long long)min((unsigned long long)p, (unsigned long long)q);
  w[3] = (long long)max((unsigned long long)p, (unsigned long long)q);
  w[4] = llabs(p);
}

// Shifts with amounts past the register width (PTX clamps them; C++ leaves them undefined).
extern "C" __global__ void int_shifts(const unsigned* a, const unsigned* amount, unsigned* out32,
                                      unsigned long long* out64) {
  unsigned i = GID;
  unsigned x = a[i], n = amount[i];
  unsigned long long w = ((unsigned long long)x << 32) | (x ^ 0x5a5a5a5au);
  unsigned r0, r1, r2;
  asm("shl.b32 %0, %1, %2;" : "=r"(r0) : "r"(x), "r"(n));
  asm("shr.u32 %0, %1, %2;" : "=r"(r1) : "r"(x), "r"(n));
  asm("shr.s32 %0, %1, %2;" : "=r"(r2) : "r"(x), "r"(n));
  out32[i * 3 + 0] = r0;
  out32[i * 3 + 1] = r1;
  out32[i * 3 + 2] = r2;
  unsigned long long s0, s1, s2;
  unsigned n64 = n * 2;
  asm("shl.b64 %0, %1, %2;" : "=l"(s0) : "l"(w), "r"(n64));
  asm("shr.u64 %0, %1, %2;" : "=l"(s1) : "l"(w), "r"(n64));
  asm("shr.s64 %0, %1, %2;" : "=l"(s2) : "l"(w), "r"(n64));
  out64[i * 3 + 0] = s0;
  out64[i * 3 + 1] = s1;
  out64[i * 3 + 2] = s2;
}

// popc/clz/brev/ffs on 32 and 64 bits, bfind (.u32, .s32, .shiftamt).
extern "C" __global__ void int_bits(const unsigned* a, const unsigned long long* b,
                                    unsigned* out) {
  unsigned i = GID;
  unsigned x = a[i];
  unsigned long long w = b[i];
  unsigned* o = out + i * 11;
  o[0] = __popc(x);
  o[1] = __clz(x);
  o[2] = __brev(x);
  o[3] = __ffs(x);
  o[4] = __popcll(w);
  o[5] = __clzll(w);
  o[6] = (unsigned)(__brevll(w) >> 16);
  o[7] = __ffsll(w);
  unsigned f0, f1, f2;
  asm("bfind.u32 %0, %1;" : "=r"(f0) : "r"(x));
  asm("bfind.s32 %0, %1;" : "=r"(f1) : "r"(x));
  asm("bfind.shiftamt.u32 %0, %1;" : "=r"(f2) : "r"(x));
  o[8] = f0;
  o[9] = f1;
  o[10] = f2;
}

// Bit-field extract/insert (also past the register width) and funnel shifts.
extern "C" __global__ void int_bitfield(const unsigned* a, const unsigned* b, const unsigned* c,
                                        unsigned* out) {
  unsigned i = GID;
  unsigned x = a[i], y = b[i], pos = c[i] & 0xff, len = (c[i] >> 8) & 0xff;
  unsigned* o = out + i * 7;
  unsigned r0, r1, r2;
  asm("bfe.u32 %0, %1, %2, %3;" : "=r"(r0) : "r"(x), "r"(pos), "r"(len));
  asm("bfe.s32 %0, %1, %2, %3;" : "=r"(r1) : "r"(x), "r"(pos), "r"(len));
  asm("bfi.b32 %0, %1, %2, %3, %4;" : "=r"(r2) : "r"(x), "r"(y), "r"(pos), "r"(len));
  o[0] = r0;
  o[1] = r1;
  o[2] = r2;
  o[3] = __funnelshift_l(x, y, pos);
  o[4] = __funnelshift_lc(x, y, pos);
  o[5] = __funnelshift_r(x, y, pos);
  o[6] = __funnelshift_rc(x, y, pos);
}

// Byte permutation (prmt, default mode) and logic: and/or/xor/not, lop3, 64-bit logic.
extern "C" __global__ void int_logic(const unsigned* a, const unsigned* b, const unsigned* c,
                                     unsigned* out) {
  unsigned i = GID;
  unsigned x = a[i], y = b[i], z = c[i];
  unsigned* o = out + i * 10;
  unsigned perm;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(perm) : "r"(x), "r"(y), "r"(z));
  o[0] = perm;
  o[1] = x & y;
  o[2] = x | ~y;
  o[3] = x ^ y ^ z;
  o[4] = (x & y) | (~x & z);  // select: lop3 0xca
  o[5] = (x & y) | (x & z) | (y & z);  // majority: lop3 0xe8
  unsigned l0, l1;
  asm("lop3.b32 %0, %1, %2, %3, 0x1e;" : "=r"(l0) : "r"(x), "r"(y), "r"(z));
  asm("lop3.b32 %0, %1, %2, %3, 0x6b;" : "=r"(l1) : "r"(x), "r"(y), "r"(z));
  o[6] = l0;
  o[7] = l1;
  unsigned long long w = ((unsigned long long)x << 32) | y;
  unsigned long long v = ((unsigned long long)z << 32) | x;
  unsigned long long r = (w & ~v) ^ (w | (v >> 3));
  o[8] = (unsigned)r;
  o[9] = (unsigned)(r >> 32);
}

// Extended-precision arithmetic with carries: 96-bit add/sub, a 64x64->128 multiply.
extern "C" __global__ void int_carry(const unsigned* a, const unsigned* b, unsigned* out) {
  unsigned i = GID;
  const unsigned* x = a + i * 3;
  const unsigned* y = b + i * 3;
  unsigned* o = out + i * 10;
  asm("add.cc.u32 %0, %3, %6;\n\t"
      "addc.cc.u32 %1, %4, %7;\n\t"
      "addc.u32 %2, %5, %8;"
      : "=r"(o[0]), "=r"(o[1]), "=r"(o[2])
      : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(y[0]), "r"(y[1]), "r"(y[2]));
  asm("sub.cc.u32 %0, %3, %6;\n\t"
      "subc.cc.u32 %1, %4, %7;\n\t"
      "subc.u32 %2, %5, %8;"
      : "=r"(o[3]), "=r"(o[4]), "=r"(o[5])
      : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(y[0]), "r"(y[1]), "r"(y[2]));
  // (x1:x0) * (y1:y0) as four 32-bit words with mad.lo/hi.cc and madc.
  unsigned r0, r1, r2, r3;
  asm("{\n\t"
      "mul.lo.u32 %0, %4, %6;\n\t"
      "mul.hi.u32 %1, %4, %6;\n\t"
      "mad.lo.cc.u32 %1, %5, %6, %1;\n\t"
      "madc.hi.u32 %2, %5, %6, 0;\n\t"
      "mad.lo.cc.u32 %1, %4, %7, %1;\n\t"
      "madc.hi.cc.u32 %2, %4, %7, %2;\n\t"
      "madc.hi.u32 %3, %5, %7, 0;\n\t"
      "mad.lo.cc.u32 %2, %5, %7, %2;\n\t"
      "addc.u32 %3, %3, 0;\n\t"
      "}"
      : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
      : "r"(x[0]), "r"(x[1]), "r"(y[0]), "r"(y[1]));
  o[6] = r0;
  o[7] = r1;
  o[8] = r2;
  o[9] = r3;
}

// 8- and 16-bit types: narrow loads/stores with sign and zero extension, wrapping arithmetic.
extern "C" __global__ void int_narrow(const signed char* a, const unsigned char* b,
                                      const short* c, const unsigned short* d, int* out,
                                      short* out16, unsigned char* out8) {
  unsigned i = GID;
  signed char sa = a[i];
  unsigned char ub = b[i];
  short sc = c[i];
  unsigned short ud = d[i];
  int* o = out + i * 4;
  o[0] = sa * ub;
  o[1] = sc + ud;
  o[2] = (short)(sc * sa);
  o[3] = (unsigned short)(ud * ub + sc);
  out16[i] = (short)(sc >> 3) ^ (short)ud;
  out8[i] = (unsigned char)(ub + sa * 3);
}

// sad, mul24 (.lo, as nvcc expands __mul24) and halving adds.
extern "C" __global__ void int_sad_mul24(const int* a, const int* b, const int* c, int* out) {
  unsigned i = GID;
  int x = a[i], y = b[i], z = c[i];
  int* o = out + i * 6;
  o[0] = __sad(x, y, (unsigned)z);
  o[1] = (int)__usad((unsigned)x, (unsigned)y, (unsigned)z);
  o[2] = __mul24(x, y);
  o[3] = (int)__umul24((unsigned)x, (unsigned)y);
  o[4] = __hadd(x, y);
  o[5] = __rhadd(x, y);
}

// Comparisons of every kind and type (setp), combined predicates and selp: one bit each.
extern "C" __global__ void int_compare(const int* a, const int* b, const long long* c,
                                       const long long* d, unsigned* out) {
  unsigned i = GID;
  int x = a[i], y = b[i];
  unsigned ux = x, uy = y;
  long long p = c[i], q = d[i];
  unsigned long long up = p, uq = q;
  unsigned bits = 0, k = 0;
#define BIT(cond) bits |= (cond) ? 1u << k : 0u, ++k
  BIT(x == y); BIT(x != y); BIT(x < y); BIT(x <= y); BIT(x > y); BIT(x >= y);
  BIT(ux < uy); BIT(ux <= uy); BIT(ux > uy); BIT(ux >= uy);
  BIT(p == q); BIT(p != q); BIT(p < q); BIT(p <= q); BIT(p > q); BIT(p >= q);
  BIT(up < uq); BIT(up <= uq); BIT(up > uq); BIT(up >= uq);
  BIT(x < y && p > q); BIT(x < y || up < uq); BIT((x > 0) != (p > 0));
#undef BIT
  out[i * 2] = bits;
  out[i * 2 + 1] = x > y ? ux * 3 : uy ^ 0xffu;
}
