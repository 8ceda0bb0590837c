// Thread-block cluster launches on an sm_90 device: cluster shapes from
// CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION and from the kernel (.reqnctapercluster,
// .explicitcluster, .maxclusterrank), implicit one-CTA clusters of plain launches, the launch
// errors of a misconfigured cluster, the function and device attributes, and the failures of
// a mapa outside the cluster and of a cluster that never finishes. The conformance theme
// `clusters` checks the instructions' results.
#include <vector>

#include "emulator/tests/kernel_util.h"

namespace tally::emu::testing {
namespace {

CUresult LaunchClustered(CUfunction f, unsigned grid, unsigned block, std::vector<void*> args,
                         const CUlaunchAttribute* cluster) {
  CUlaunchConfig config{};
  config.gridDimX = grid;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = block;
  config.blockDimY = config.blockDimZ = 1;
  config.attrs = const_cast<CUlaunchAttribute*>(cluster);
  config.numAttrs = cluster != nullptr ? 1 : 0;
  CUresult result = Emu().cuLaunchKernelEx(&config, f, args.data(), nullptr);
  return result != CUDA_SUCCESS ? result : Emu().cuCtxSynchronize();
}

CUlaunchAttribute ClusterOf(unsigned x) {
  CUlaunchAttribute attribute{};
  attribute.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attribute.value.clusterDim.x = x;
  attribute.value.clusterDim.y = attribute.value.clusterDim.z = 1;
  return attribute;
}

// What cluster_ranks writes per block.
std::vector<unsigned> Ranks(unsigned blocks, unsigned cluster, bool is_explicit) {
  std::vector<unsigned> out;
  for (unsigned b = 0; b < blocks; ++b) {
    unsigned rank = b % cluster, base = b - rank;
    out.insert(out.end(), {rank, cluster, b / cluster, is_explicit ? 1u : 0u,
                           (base + (rank + 1) % cluster) * 10});
  }
  return out;
}

TEST_CASE("clusters: shapes from the launch and from the kernel, implicit one-CTA clusters") {
  EnsureContext();
  int supported = 0;
  EMU_OK(Emu().cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 0));
  CHECK(supported == 1);
  CUfunction ranks = KernelFrom("cluster", "cluster_ranks");
  CUdeviceptr out = Zeros<unsigned>(16 * 5);
  for (unsigned size : {1u, 2u, 4u, 8u}) {
    INFO("cluster of " << size);
    const CUlaunchAttribute cluster = ClusterOf(size);
    EMU_OK(LaunchClustered(ranks, 16, 64, {&out}, &cluster));
    CHECK(Download<unsigned>(out, 16 * 5) == Ranks(16, size, true));
  }
  // A plain launch: every CTA is a cluster of its own, not an explicit one.
  EMU_OK(LaunchAndWait(ranks, 16, 64, {&out}));
  CHECK(Download<unsigned>(out, 16 * 5) == Ranks(16, 1, false));

  CUfunction pairs = KernelFrom("cluster", "fixed_pairs");
  EMU_OK(LaunchAndWait(pairs, 6, 32, {&out}));
  CHECK(Download<unsigned>(out, 6) == std::vector<unsigned>{0, 1, 0, 1, 0, 1});
  const CUlaunchAttribute same = ClusterOf(2);
  EMU_OK(LaunchClustered(pairs, 6, 32, {&out}, &same));
  int value = -1;
  EMU_OK(Emu().cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, pairs));
  CHECK(value == 2);
  EMU_OK(Emu().cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, pairs));
  CHECK(value == 1);
  EMU_OK(Emu().cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, pairs));
  CHECK(value == 1);
  EMU_OK(Emu().cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, ranks));
  CHECK(value == 0);
}

// The emulated GPU places a cluster on any of its SMs: as many clusters fit at once as the
// device's resident blocks hold.
TEST_CASE("clusters: how many fit at once (cuOccupancyMaxActiveClusters)") {
  EnsureContext();
  CUfunction ranks = KernelFrom("cluster", "cluster_ranks");
  CUfunction pairs = KernelFrom("cluster", "fixed_pairs");
  int per_sm = 0, sms = 0;
  EMU_OK(Emu().cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ranks, 32, 0));
  EMU_OK(Emu().cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
  CUlaunchConfig config = {};
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 32;
  config.blockDimY = config.blockDimZ = 1;
  const CUlaunchAttribute four = ClusterOf(4);
  config.attrs = const_cast<CUlaunchAttribute*>(&four);
  config.numAttrs = 1;
  int clusters = 0;
  EMU_OK(Emu().cuOccupancyMaxActiveClusters(&clusters, ranks, &config));
  CHECK(clusters == per_sm * sms / 4);
  const CUlaunchAttribute thirty_two = ClusterOf(32);
  config.attrs = const_cast<CUlaunchAttribute*>(&thirty_two);
  CHECK(Emu().cuOccupancyMaxActiveClusters(&clusters, ranks, &config) ==
        CUDA_ERROR_INVALID_CLUSTER_SIZE);
  // The kernel's own .reqnctapercluster needs no attribute; without one, the query has no shape.
  config.numAttrs = 0;
  EMU_OK(Emu().cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, pairs, 32, 0));
  EMU_OK(Emu().cuOccupancyMaxActiveClusters(&clusters, pairs, &config));
  CHECK(clusters == per_sm * sms / 2);
  CHECK(Emu().cuOccupancyMaxActiveClusters(&clusters, ranks, &config) ==
        CUDA_ERROR_INVALID_CLUSTER_SIZE);
  CHECK(Emu().cuOccupancyMaxActiveClusters(&clusters, ranks, nullptr) == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("clusters: misconfigured shapes are launch errors") {
  EnsureContext();
  CUfunction ranks = KernelFrom("cluster", "cluster_ranks");
  CUdeviceptr out = Zeros<unsigned>(32 * 5);
  const CUlaunchAttribute two = ClusterOf(2), sixteen = ClusterOf(16), zero = ClusterOf(0);
  CHECK(LaunchClustered(ranks, 5, 32, {&out}, &two) == CUDA_ERROR_INVALID_CLUSTER_SIZE);
  CHECK(LaunchClustered(ranks, 4, 32, {&out}, &zero) == CUDA_ERROR_INVALID_CLUSTER_SIZE);
  // 8 CTAs are portable; 16 need the kernel's consent.
  CHECK(LaunchClustered(ranks, 32, 32, {&out}, &sixteen) == CUDA_ERROR_INVALID_CLUSTER_SIZE);
  int allowed = -1;
  EMU_OK(Emu().cuFuncGetAttribute(&allowed, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                                  ranks));
  CHECK(allowed == 0);
  EMU_OK(Emu().cuFuncSetAttribute(ranks, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
  EMU_OK(LaunchClustered(ranks, 32, 32, {&out}, &sixteen));
  CHECK(Download<unsigned>(out, 32 * 5) == Ranks(32, 16, true));
  const CUlaunchAttribute thirty_two = ClusterOf(32);
  CHECK(LaunchClustered(ranks, 32, 32, {&out}, &thirty_two) == CUDA_ERROR_INVALID_CLUSTER_SIZE);
  // A compile-time shape cannot be changed at launch.
  const CUlaunchAttribute four = ClusterOf(4);
  CHECK(LaunchClustered(KernelFrom("cluster", "fixed_pairs"), 8, 32, {&out}, &four) ==
        CUDA_ERROR_INVALID_CLUSTER_SIZE);
  CHECK(LaunchAndWait(KernelFrom("cluster", "fixed_pairs"), 7, 32, {&out}) ==
        CUDA_ERROR_INVALID_CLUSTER_SIZE);

  // .explicitcluster without a shape needs one at launch; .maxclusterrank bounds it.
  const char* ptx = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry needs_cluster() .explicitcluster .maxclusterrank 2 { ret; }
)";
  CUmodule module = nullptr;
  EMU_OK(Emu().cuModuleLoadData(&module, ptx));
  CUfunction needs_cluster = nullptr;
  EMU_OK(Emu().cuModuleGetFunction(&needs_cluster, module, "needs_cluster"));
  CHECK(LaunchAndWait(needs_cluster, 4, 32, {}) == CUDA_ERROR_INVALID_CLUSTER_SIZE);
  EMU_OK(LaunchClustered(needs_cluster, 4, 32, {}, &two));
  CHECK(LaunchClustered(needs_cluster, 4, 32, {}, &four) == CUDA_ERROR_INVALID_CLUSTER_SIZE);
  EMU_OK(Emu().cuModuleUnload(module));
}

TEST_CASE("clusters: a mapa outside the cluster and a cluster that never ends fail the launch") {
  {
    ScratchContext scratch("cluster.ptx");
    CUdeviceptr out = Zeros<int>(4);
    unsigned rank = 1;
    const CUlaunchAttribute two = ClusterOf(2);
    EMU_OK(LaunchClustered(scratch.Kernel("mapa_rank"), 4, 32, {&rank, &out}, &two));
    CHECK(Download<int>(out, 4) == std::vector<int>{7, 7, 7, 7});
    rank = 2;
    CHECK(LaunchClustered(scratch.Kernel("mapa_rank"), 4, 32, {&rank, &out}, &two) ==
          CUDA_ERROR_ILLEGAL_ADDRESS);
  }
  {
    ScratchContext scratch("cluster.ptx");
    CUdeviceptr out = Zeros<int>(2);
    const CUlaunchAttribute two = ClusterOf(2);
    CHECK(LaunchClustered(scratch.Kernel("cluster_spin"), 2, 32, {&out}, &two) ==
          CUDA_ERROR_LAUNCH_FAILED);
  }
}

}  // namespace
}  // namespace tally::emu::testing
