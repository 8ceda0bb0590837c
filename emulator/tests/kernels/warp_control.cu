// match.sync, collectives over groups of lanes with different member masks, and brx.idx (an
// indexed branch through a .branchtargets list, written as inline PTX since nvcc emits it only
// for some switches). References are in warp_control_test.cc.
#include <cstdint>

extern "C" __global__ void match(const unsigned* values, const unsigned long long* wide,
                                 unsigned* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned v = values[i];
  unsigned* o = out + i * 5;
  o[0] = __match_any_sync(0xffffffffu, v);
  int predicate = 0;
  o[1] = __match_all_sync(0xffffffffu, v, &predicate);
  o[2] = predicate;
  o[3] = __match_any_sync(0xffffffffu, wide[i]);
  // Only the even lanes take part.
  if (threadIdx.x % 2 == 0) o[4] = __match_any_sync(0x55555555u, v);
}

// Every lane in one instruction with the mask of its own label's group: each must get its
// group's result (redux.sync, vote.sync and match.sync take each lane's membermask).
extern "C" __global__ void grouped(const unsigned* labels, const int* values, unsigned* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned mask = __match_any_sync(0xffffffffu, labels[i]);
  unsigned* o = out + i * 5;
  o[0] = mask;
  o[1] = static_cast<unsigned>(__reduce_add_sync(mask, values[i]));
  o[2] = static_cast<unsigned>(__reduce_max_sync(mask, values[i]));
  o[3] = __ballot_sync(mask, values[i] > 0);
  int all = 0;
  o[4] = __match_all_sync(mask, values[i] > 0, &all) | (all ? 0 : 1);
}

__device__ unsigned JumpTable(unsigned selector, unsigned x) {
  unsigned r;
  asm volatile(
      "{\n\t"
      ".reg .u32 index;\n\t"
      "mov.u32 index, %1;\n\t"
      "bra.uni DISPATCH;\n"
      "CASE_0:\n\t"
      "add.u32 %0, %2, 11;\n\t"
      "bra.uni CASE_END;\n"
      "CASE_1:\n\t"
      "mul.lo.u32 %0, %2, 3;\n\t"
      "bra.uni CASE_END;\n"
      "CASE_2:\n\t"
      "xor.b32 %0, %2, 0xff;\n\t"
      "bra.uni CASE_END;\n"
      "CASE_3:\n\t"
      "shl.b32 %0, %2, 4;\n\t"
      "bra.uni CASE_END;\n"
      "CASE_TABLE: .branchtargets CASE_0, CASE_1, CASE_2, CASE_3;\n\t"
      "DISPATCH:\n\t"
      "brx.idx index, CASE_TABLE;\n"
      "CASE_END:\n\t"
      "}"
      : "=r"(r)
      : "r"(selector), "r"(x));
  return r;
}

// Lanes of one warp select different cases; selectors >= 4 are out of range.
extern "C" __global__ void indexed_branch(const unsigned* selectors, unsigned* values) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  values[i] = JumpTable(selectors[i], values[i]) + 1;
}
