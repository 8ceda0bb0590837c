// Device code for server_kernel_launcher_test: a kernel every form can run, which records which
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
