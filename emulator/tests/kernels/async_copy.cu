// Kernels for cp.async and mbarrier as nvcc emits them for sm_80: the __pipeline_* primitives,
// cuda::pipeline (thread scope, double-buffered), cuda::barrier with cuda::memcpy_async, and
// raw mbarrier operations.
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda_pipeline.h>

#include <cuda/barrier>
#include <cuda/pipeline>

// cuda::barrier in __shared__ has a constructor nvcc warns about; init() sets it up.
#pragma nv_diag_suppress static_var_with_dynamic_init

namespace cg = cooperative_groups;

// 16-byte copies (cp.async.cg), 4-byte copies with zero fill for odd threads (src-size 0), and
// 8-byte copies; then reversed through shared memory. Blocks of 64 threads.
extern "C" __global__ void pipeline_primitives(const int4* in, int4* out, const int* small,
                                               int* small_out, const int2* pairs, int2* pairs_out) {
  __shared__ int4 s[64];
  __shared__ int t[64];
  __shared__ int2 u[64];
  unsigned i = threadIdx.x;
  __pipeline_memcpy_async(&s[i], &in[i], sizeof(int4));
  __pipeline_memcpy_async(&t[i], &small[i], sizeof(int), (i & 1) ? sizeof(int) : 0);
  __pipeline_commit();
  __pipeline_memcpy_async(&u[i], &pairs[i], sizeof(int2));
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  out[i] = s[63 - i];
  small_out[i] = t[63 - i];
  pairs_out[i] = u[63 - i];
}

// A double-buffered per-thread pipeline: stage k+1's copy is in flight while stage k is summed.
extern "C" __global__ void pipeline_stages(const int* in, int* out, int stages) {
  __shared__ int buffer[2][128];
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  unsigned i = threadIdx.x;
  auto issue = [&](int stage) {
    pipe.producer_acquire();
    cuda::memcpy_async(&buffer[stage % 2][i], &in[stage * 128 + i], sizeof(int), pipe);
    pipe.producer_commit();
  };
  issue(0);
  int sum = 0;
  for (int stage = 0; stage < stages; ++stage) {
    if (stage + 1 < stages) issue(stage + 1);
    cuda::pipeline_consumer_wait_prior<1>(pipe);
    if (stage + 1 >= stages) pipe.consumer_wait();
    sum += buffer[stage % 2][i] * (stage + 1);
    pipe.consumer_release();
  }
  out[i] = sum;
}

// cuda::barrier completing a block-wide cuda::memcpy_async, reused over two rounds.
extern "C" __global__ void barrier_copy(const int* in, int* out) {
  __shared__ int buffer[128];
  __shared__ cuda::barrier<cuda::thread_scope_block> barrier;
  auto block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&barrier, block.size());
  block.sync();
  for (int round = 0; round < 2; ++round) {
    cuda::memcpy_async(block, buffer, in + round * 128, sizeof(int) * 128, barrier);
    barrier.arrive_and_wait();
    out[round * 128 + threadIdx.x] = buffer[127 - threadIdx.x];
    barrier.arrive_and_wait();  // everyone read before the next round overwrites
  }
}

// Raw mbarrier semantics, one warp: phases, arrive counts, arrive_drop, pending_count, parity
// waits and (sm_90) transaction counts. Thread 0 records what it observes in `log`.
extern "C" __global__ void mbarrier_ops(unsigned* log) {
  __shared__ unsigned long long bar;
  unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(&bar));
  if (threadIdx.x != 0) return;
  unsigned long long state;
  unsigned pending, done;
  asm volatile("mbarrier.init.shared.b64 [%0], 3;" ::"r"(addr));
  asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(state) : "r"(addr));
  asm volatile("mbarrier.pending_count.b64 %0, %1;" : "=r"(pending) : "l"(state));
  log[0] = pending;  // 2
  asm volatile("{.reg .pred p; mbarrier.test_wait.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p;}"
               : "=r"(done)
               : "r"(addr), "l"(state));
  log[1] = done;  // 0: phase 0 still pending
  asm volatile("mbarrier.arrive.shared.b64 %0, [%1], 2;" : "=l"(state) : "r"(addr));
  asm volatile("mbarrier.pending_count.b64 %0, %1;" : "=r"(pending) : "l"(state));
  log[2] = pending;  // 0
  asm volatile("{.reg .pred p; mbarrier.test_wait.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p;}"
               : "=r"(done)
               : "r"(addr), "l"(state));
  log[3] = done;  // 1: phase 0 completed
  asm volatile(
      "{.reg .pred p; mbarrier.test_wait.parity.shared.b64 p, [%1], 1; selp.u32 %0, 1, 0, p;}"
      : "=r"(done)
      : "r"(addr));
  log[4] = done;  // 0: phase 1 (parity 1) is the current one
  // arrive_drop: one arrival now, and later phases expect one fewer (3 -> 2).
  asm volatile("mbarrier.arrive_drop.shared.b64 %0, [%1];" : "=l"(state) : "r"(addr));
  asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(state) : "r"(addr));
  asm volatile("mbarrier.pending_count.b64 %0, %1;" : "=r"(pending) : "l"(state));
  log[5] = pending;  // 1: phase 1 still expects 3
  asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(state) : "r"(addr));
  asm volatile("mbarrier.pending_count.b64 %0, %1;" : "=r"(pending) : "l"(state));
  log[6] = pending;  // 0: phase 1 completed; phase 2 expects 2
  // Transactions: the phase needs its arrivals and its bytes.
  asm volatile("mbarrier.expect_tx.shared.b64 [%0], 64;" ::"r"(addr));
  asm volatile("mbarrier.arrive.shared.b64 %0, [%1], 2;" : "=l"(state) : "r"(addr));
  asm volatile("{.reg .pred p; mbarrier.try_wait.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p;}"
               : "=r"(done)
               : "r"(addr), "l"(state));
  log[7] = done;  // 0: 64 bytes outstanding
  asm volatile("mbarrier.complete_tx.shared.b64 [%0], 32;" ::"r"(addr));
  // sm_90 spelling with cluster scope (clusters are 1x1x1 here).
  asm volatile("mbarrier.complete_tx.relaxed.cluster.shared::cluster.b64 [%0], 32;" ::"r"(addr));
  asm volatile(
      "{.reg .pred p; mbarrier.try_wait.parity.shared.b64 p, [%1], 0; selp.u32 %0, 1, 0, p;}"
      : "=r"(done)
      : "r"(addr));
  log[8] = done;  // 1: phase 2 (parity 0) completed
  asm volatile("mbarrier.inval.shared.b64 [%0];" ::"r"(addr));
}
