// Device code for server_dispatcher_test: a kernel every form can run, which records which
// blocks ran and how often, and one the analysis must refuse (it depends on %smid).
extern "C" __global__ void RecordBlocks(int* runs, int* ids) {
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  __syncthreads();
  if (threadIdx.x == 0) {
    atomicAdd(&runs[block], 1);
    ids[block] = static_cast<int>(blockIdx.x + 100 * blockIdx.y + 10000 * blockIdx.z);
  }
}

extern "C" __global__ void ReadSmid(int* out) {
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  if (threadIdx.x == 0) out[blockIdx.x] = smid < 100000 ? 1 : 2;
}

// A long kernel: each block computes for `iterations` steps before it records itself, so that
// other work can arrive while it runs.
extern "C" __global__ void SlowRecordBlocks(int* runs, int* ids, unsigned iterations) {
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned value = threadIdx.x;
  for (unsigned i = 0; i < iterations; ++i) value = value * 1664525u + 1013904223u;
  __syncthreads();
  if (threadIdx.x == 0) {
    atomicAdd(&runs[block], 1);
    ids[block] = static_cast<int>(blockIdx.x + 100 * blockIdx.y + 10000 * blockIdx.z);
  }
  if (value == 0x12345678u) atomicAdd(&runs[block], 0);  // keeps the loop: adds nothing
}
