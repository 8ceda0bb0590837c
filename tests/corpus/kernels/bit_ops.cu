// Corpus: integer and bit-manipulation intrinsics, SIMD-in-a-word operations and 64-bit
// division (long instruction sequences without calls).

__global__ void BitOps(const unsigned* in, unsigned* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned x = in[i];
  unsigned long long wide = (static_cast<unsigned long long>(x) << 32) | (x ^ 0xa5a5a5a5u);
  unsigned r = __popc(x) + __popcll(wide) + __clz(x) + __clzll(wide) + __ffs(x) + __ffsll(wide);
  r ^= __brev(x) + __byte_perm(x, ~x, 0x5140) + __funnelshift_l(x, ~x, 7) +
       __funnelshift_r(x, x, 13);
  r += __umulhi(x, 0x9e3779b9u) + __mulhi(static_cast<int>(x), -7) + __umul24(x, 3) +
       __sad(x, 17, 2);
  r += static_cast<unsigned>(__umul64hi(wide, 0x9e3779b97f4a7c15ull));
  r += __vadd4(x, 0x01010101u) + __vabsdiffu4(x, 0x80808080u) + __vcmpgtu2(x, 0x7fff7fffu);
  r += static_cast<unsigned>(__dp4a(static_cast<int>(x), 0x01020304, 5));
  out[i] = r;
}

__global__ void Divisions(const long long* num, const long long* den, long long* quot,
                          unsigned* uquot, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  long long d = den[i] == 0 ? 1 : den[i];
  quot[2 * i] = num[i] / d;
  quot[2 * i + 1] = num[i] % d;
  unsigned ud = static_cast<unsigned>(d) | 1u;
  uquot[i] = static_cast<unsigned>(num[i]) / ud + static_cast<unsigned>(num[i]) % 10u +
             static_cast<unsigned>(static_cast<unsigned long long>(num[i]) / 1000003ull);
}
