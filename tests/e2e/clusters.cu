// Thread-block clusters through the shim (compute capability 9.0; the e2e test runs the server's
// emulated GPU as one, TALLY_EMU_CC=90): a kernel compiled with __cluster_dims__ and launched
// with <<<>>>, and a kernel without them launched by cudaLaunchKernelEx with the cluster
// dimension attribute, run their blocks in pairs that synchronise (cluster.sync) and read each
// other's shared memory (distributed shared memory); each block gets its partner's value.
#include <cooperative_groups.h>

#include "check.h"

namespace cg = cooperative_groups;

__device__ void ExchangeWithPartner(int* out) {
  __shared__ int mine;
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) mine = 100 + static_cast<int>(blockIdx.x);
  cluster.sync();
  const int* partner = cluster.map_shared_rank(&mine, cluster.block_rank() ^ 1);
  if (threadIdx.x == 0) out[blockIdx.x] = *partner;
  cluster.sync();  // the partner's shared memory stays alive until both have read
}

__global__ void __cluster_dims__(2, 1, 1) ReadPartner(int* out) { ExchangeWithPartner(out); }

// Its clusters come from the launch.
__global__ void ReadPartnerLaunched(int* out) { ExchangeWithPartner(out); }

constexpr int kBlocks = 8;

void ExpectPartners(const int* out) {
  int host[kBlocks] = {};
  CHECK_CUDA(cudaMemcpy(host, out, sizeof(host), cudaMemcpyDeviceToHost));
  for (int block = 0; block < kBlocks; ++block) EXPECT(host[block] == 100 + (block ^ 1));
  CHECK_CUDA(cudaMemset(const_cast<int*>(out), 0, sizeof(host)));
}

// The cluster queries: the kernel's compile-time cluster shape, and how many clusters of a shape
// fit on the device at once. On the emulated GPU (TALLY_TEST_REQUIRE_CLUSTERS, set by the e2e
// test) that is exactly what the device's resident blocks hold, since it schedules a cluster on
// any of its SMs; a real GPU's GPCs may hold fewer.
void CheckClusterQueries(cudaLaunchConfig_t config) {
  cudaFuncAttributes attributes{};
  CHECK_CUDA(cudaFuncGetAttributes(&attributes, ReadPartner));
  EXPECT(attributes.requiredClusterWidth == 2 && attributes.requiredClusterHeight == 1 &&
         attributes.clusterDimMustBeSet == 1);
  CHECK_CUDA(cudaFuncGetAttributes(&attributes, ReadPartnerLaunched));
  EXPECT(attributes.requiredClusterWidth == 0);
  int per_sm = 0, sms = 0;
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ReadPartnerLaunched, 64, 0));
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const bool emulated = std::getenv("TALLY_TEST_REQUIRE_CLUSTERS") != nullptr;
  config.gridDim = dim3(kBlocks);
  for (unsigned size : {2u, 4u}) {
    config.attrs[0].val.clusterDim.x = size;
    int clusters = 0;
    CHECK_CUDA(cudaOccupancyMaxActiveClusters(&clusters, ReadPartnerLaunched, &config));
    EXPECT(clusters > 0 && clusters <= per_sm * sms / static_cast<int>(size));
    if (emulated) EXPECT(clusters == per_sm * sms / static_cast<int>(size));
  }
  // The kernel's own shape needs no attribute; a kernel without one needs it.
  config.numAttrs = 0;
  int own = 0;
  CHECK_CUDA(cudaOccupancyMaxActiveClusters(&own, ReadPartner, &config));
  EXPECT(own > 0 && own <= per_sm * sms / 2);
  int none = 0;
  EXPECT(cudaOccupancyMaxActiveClusters(&none, ReadPartnerLaunched, &config) ==
         cudaErrorInvalidClusterSize);
  EXPECT(cudaGetLastError() == cudaErrorInvalidClusterSize);
}

int main() {
  int major = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  // The e2e test asks for a device with clusters; elsewhere (the GPU check on an older GPU, its
  // dry run on the default emulated GPU) a device without them has nothing to check.
  if (major < 9) {
    EXPECT(std::getenv("TALLY_TEST_REQUIRE_CLUSTERS") == nullptr);
    std::printf("clusters: compute capability %d has no clusters, nothing to check\n", major);
    return 0;
  }
  int* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, kBlocks * sizeof(int)));
  ReadPartner<<<kBlocks, 64>>>(out);
  CHECK_CUDA(cudaGetLastError());
  ExpectPartners(out);

  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(kBlocks);
  config.blockDim = dim3(64);
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = 2;
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  CHECK_CUDA(cudaLaunchKernelEx(&config, ReadPartnerLaunched, out));
  ExpectPartners(out);
  // Refused at the launch, as CUDA refuses them: clusters that do not divide the grid.
  config.gridDim = dim3(kBlocks - 1);
  EXPECT(cudaLaunchKernelEx(&config, ReadPartnerLaunched, out) == cudaErrorInvalidClusterSize);
  EXPECT(cudaGetLastError() == cudaErrorInvalidClusterSize);
  CHECK_CUDA(cudaDeviceSynchronize());
  CheckClusterQueries(config);
  CHECK_CUDA(cudaFree(out));
  std::printf("clusters: %d blocks in pairs read each other's shared memory\n", kBlocks);
  return 0;
}
