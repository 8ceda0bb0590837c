// A PTX kernel for the driver API programs, loaded with cuModuleLoadData:
// add_one(data, n) adds one to each of n unsigned values (any grid covering n threads).
#pragma once

inline const char* const kAddOnePtx = R"(
.version 7.0
.target sm_50
.address_size 64

.visible .entry add_one(.param .u64 data, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<7>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [data];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r5, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.u32 %r6, [%rd4];
  add.s32 %r6, %r6, 1;
  st.global.u32 [%rd4], %r6;
DONE:
  ret;
}
)";
