// What kernels/special_registers.cu writes per thread, shared with special_registers_test.cc.
#pragma once

struct SpecialValues {
  unsigned warp_size, warp_size_expression;
  unsigned tid_w, ntid_w, ctaid_w, nctaid_w;
  unsigned tid[4], ntid[4], ctaid[4], nctaid[4];  // mov.v4.u32 {...}, %tid; ...
  unsigned tid16, ntid16;  // the 16-bit reads of legacy PTX: mov.u16 and cvt.u32.u16
  unsigned pm0, pm7;
  unsigned long long pm3_64, graph_exec;
  unsigned long long clock_before, clock_after, timer_before, timer_after;
  unsigned clock_hi, timer_lo, timer_hi;
  unsigned total_smem, dynamic_smem, aggr_smem;
  unsigned reserved_begin, reserved_end, reserved_cap;
  unsigned reserved_neighbour;  // what the next thread stored in the reserved region
};
