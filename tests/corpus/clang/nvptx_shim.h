// Minimal CUDA vocabulary for clang's CUDA mode without NVIDIA's headers (clang 14 cannot
// parse CUDA 13's), built on clang's own NVPTX builtins and attributes.
#pragma once

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __noinline__ __attribute__((noinline))

__device__ inline unsigned ThreadX() { return __nvvm_read_ptx_sreg_tid_x(); }
__device__ inline unsigned ThreadY() { return __nvvm_read_ptx_sreg_tid_y(); }
__device__ inline unsigned ThreadZ() { return __nvvm_read_ptx_sreg_tid_z(); }
__device__ inline unsigned BlockX() { return __nvvm_read_ptx_sreg_ctaid_x(); }
__device__ inline unsigned BlockY() { return __nvvm_read_ptx_sreg_ctaid_y(); }
__device__ inline unsigned BlockZ() { return __nvvm_read_ptx_sreg_ctaid_z(); }
__device__ inline unsigned BlockDimX() { return __nvvm_read_ptx_sreg_ntid_x(); }
__device__ inline unsigned GridDimX() { return __nvvm_read_ptx_sreg_nctaid_x(); }
__device__ inline unsigned GlobalX() { return BlockX() * BlockDimX() + ThreadX(); }
