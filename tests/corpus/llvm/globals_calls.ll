; Corpus (llc): hand-written globals with initialisers (arrays, a struct, a string, constant
; memory), a non-inlined function returning a struct, and atomics (atomicrmw, cmpxchg).
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

%Stats = type { i32, float, i64 }

@table = addrspace(1) global [4 x i32] [i32 1, i32 2, i32 3, i32 4], align 4
@weights = addrspace(4) constant [3 x double] [double 5.000000e-01, double -2.500000e-01, double 0x3FD5555555555555], align 8
@stats = addrspace(1) global %Stats { i32 7, float 1.500000e+00, i64 -9 }, align 8
@message = private unnamed_addr addrspace(1) constant [6 x i8] c"tally\00", align 1
@counter = addrspace(1) global i32 0, align 4

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.laneid()
declare void @llvm.nvvm.membar.gl()

; Quotient and remainder in one call; the two-field return goes through func_retval0.
define internal { i32, i32 } @divmod(i32 %a, i32 %b) noinline {
  %nonzero = icmp eq i32 %b, 0
  %d = select i1 %nonzero, i32 1, i32 %b
  %q = sdiv i32 %a, %d
  %r = srem i32 %a, %d
  %t = insertvalue { i32, i32 } undef, i32 %q, 0
  %res = insertvalue { i32, i32 } %t, i32 %r, 1
  ret { i32, i32 } %res
}

define void @use_globals(i32 addrspace(1)* %out, double addrspace(1)* %dout, i32 %divisor) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %lane = call i32 @llvm.nvvm.read.ptx.sreg.laneid()
  %i = and i32 %tid, 3
  %i64 = zext i32 %i to i64
  %tp = getelementptr [4 x i32], [4 x i32] addrspace(1)* @table, i64 0, i64 %i64
  %tv = load i32, i32 addrspace(1)* %tp, align 4
  %j = urem i32 %tid, 3
  %j64 = zext i32 %j to i64
  %wp = getelementptr [3 x double], [3 x double] addrspace(4)* @weights, i64 0, i64 %j64
  %wv = load double, double addrspace(4)* %wp, align 8
  %sp = getelementptr %Stats, %Stats addrspace(1)* @stats, i64 0, i32 0
  %sv = load i32, i32 addrspace(1)* %sp, align 8
  ; Index the 6-byte string with tid % 6: reading past its end (tid & 7 did) is undefined, and
  ; the emulator, which bounds-checks every global, reports it as an illegal address.
  %k = urem i32 %tid, 6
  %k64 = zext i32 %k to i64
  %mp = getelementptr [6 x i8], [6 x i8] addrspace(1)* @message, i64 0, i64 %k64
  %mv = load i8, i8 addrspace(1)* %mp, align 1
  %mw = sext i8 %mv to i32
  %qr = call { i32, i32 } @divmod(i32 %tv, i32 %divisor)
  %q = extractvalue { i32, i32 } %qr, 0
  %r = extractvalue { i32, i32 } %qr, 1
  %old = atomicrmw add i32 addrspace(1)* @counter, i32 %tv monotonic
  %pair = cmpxchg i32 addrspace(1)* %tp, i32 %tv, i32 %lane seq_cst seq_cst
  %swapped = extractvalue { i32, i1 } %pair, 1
  %flag = zext i1 %swapped to i32
  %x = atomicrmw xchg i32 addrspace(1)* getelementptr (%Stats, %Stats addrspace(1)* @stats, i64 0, i32 0), i32 %q monotonic
  call void @llvm.nvvm.membar.gl()
  %s1 = add i32 %q, %r
  %s2 = add i32 %s1, %sv
  %s3 = add i32 %s2, %mw
  %s4 = add i32 %s3, %flag
  %s5 = add i32 %s4, %x
  %s6 = add i32 %s5, %old
  %tid64 = zext i32 %tid to i64
  %dst = getelementptr i32, i32 addrspace(1)* %out, i64 %tid64
  store i32 %s6, i32 addrspace(1)* %dst, align 4
  %neg = fneg double %wv
  %dd = getelementptr double, double addrspace(1)* %dout, i64 %tid64
  store double %neg, double addrspace(1)* %dd, align 8
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (i32 addrspace(1)*, double addrspace(1)*, i32)* @use_globals, !"kernel", i32 1}
