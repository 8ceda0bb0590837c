; Corpus (llc): a hand-written kernel with a counted loop, phi nodes, <4 x float> global loads,
; a select, shared memory and a barrier; and a second kernel with narrow integer types and a
; switch. Typed pointers: LLVM 14 syntax.
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@tile = internal addrspace(3) global [256 x float] undef, align 16

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare void @llvm.nvvm.barrier0()

; out[gid] = factor * sum over rows of clamp(sum of in[row * 64 + gid]) plus the mirrored
; thread's value, read back through shared memory (launched with 256 threads per block).
define void @scale_rows(<4 x float> addrspace(1)* %in, float addrspace(1)* %out, i32 %rows,
                        float %factor) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %bdim = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %bid, %bdim
  %gid = add i32 %base, %tid
  %empty = icmp sle i32 %rows, 0
  br i1 %empty, label %store, label %loop

loop:
  %r = phi i32 [ 0, %entry ], [ %r.next, %loop ]
  %acc = phi float [ 0.0, %entry ], [ %acc.next, %loop ]
  %row_base = shl i32 %r, 6
  %idx = add i32 %row_base, %gid
  %idx64 = zext i32 %idx to i64
  %ptr = getelementptr <4 x float>, <4 x float> addrspace(1)* %in, i64 %idx64
  %v = load <4 x float>, <4 x float> addrspace(1)* %ptr, align 16
  %x = extractelement <4 x float> %v, i32 0
  %y = extractelement <4 x float> %v, i32 1
  %z = extractelement <4 x float> %v, i32 2
  %w = extractelement <4 x float> %v, i32 3
  %s1 = fadd float %x, %y
  %s2 = fadd float %z, %w
  %s = fadd float %s1, %s2
  %big = fcmp ogt float %s, 1.000000e+02
  %clamped = select i1 %big, float 1.000000e+02, float %s
  %acc.next = fadd float %acc, %clamped
  %r.next = add nuw nsw i32 %r, 1
  %done = icmp eq i32 %r.next, %rows
  br i1 %done, label %store, label %loop

store:
  %total = phi float [ 0.0, %entry ], [ %acc.next, %loop ]
  %scaled = fmul float %total, %factor
  %lane = and i32 %tid, 255
  %lane64 = zext i32 %lane to i64
  %slot = getelementptr [256 x float], [256 x float] addrspace(3)* @tile, i64 0, i64 %lane64
  store float %scaled, float addrspace(3)* %slot, align 4
  call void @llvm.nvvm.barrier0()
  %mirror = xor i32 %lane, 255
  %mirror64 = zext i32 %mirror to i64
  %other_slot = getelementptr [256 x float], [256 x float] addrspace(3)* @tile, i64 0, i64 %mirror64
  %other = load float, float addrspace(3)* %other_slot, align 4
  %result = fadd float %scaled, %other
  %gid64 = zext i32 %gid to i64
  %dst = getelementptr float, float addrspace(1)* %out, i64 %gid64
  store float %result, float addrspace(1)* %dst, align 4
  ret void
}

; Byte-code classifier over i8/i16 values.
define void @classify(i8 addrspace(1)* %codes, i16 addrspace(1)* %classes, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %inside = icmp slt i32 %tid, %n
  br i1 %inside, label %body, label %exit

body:
  %tid64 = zext i32 %tid to i64
  %src = getelementptr i8, i8 addrspace(1)* %codes, i64 %tid64
  %code = load i8, i8 addrspace(1)* %src, align 1
  switch i8 %code, label %other [
    i8 48, label %digit
    i8 49, label %digit
    i8 32, label %space
    i8 10, label %space
    i8 65, label %upper
  ]

digit:
  br label %join
space:
  br label %join
upper:
  br label %join
other:
  %wide = zext i8 %code to i16
  %mixed = mul i16 %wide, 257
  br label %join

join:
  %class = phi i16 [ 1, %digit ], [ 2, %space ], [ 3, %upper ], [ %mixed, %other ]
  %dst = getelementptr i16, i16 addrspace(1)* %classes, i64 %tid64
  store i16 %class, i16 addrspace(1)* %dst, align 2
  br label %exit

exit:
  ret void
}

!nvvm.annotations = !{!0, !1, !2}
!0 = !{void (<4 x float> addrspace(1)*, float addrspace(1)*, i32, float)* @scale_rows, !"kernel", i32 1}
!1 = !{void (<4 x float> addrspace(1)*, float addrspace(1)*, i32, float)* @scale_rows, !"maxntidx", i32 256}
!2 = !{void (i8 addrspace(1)*, i16 addrspace(1)*, i32)* @classify, !"kernel", i32 1}
