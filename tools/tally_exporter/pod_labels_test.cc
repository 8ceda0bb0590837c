// Clients' pod labels: the container whose devices' grant name is the client's grant, on the
// server of the device those IDs name.
#include "tools/tally_exporter/pod_labels.h"

#include <catch2/catch.hpp>

namespace tally::tools {
namespace {

constexpr char kGpuA[] = "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f";
constexpr char kGpuB[] = "GPU-ffffffff-0405-0607-0809-0a0b0c0d0e0f";

const std::vector<kubelet::ContainerDevices>& Containers() {
  static const auto* containers = new std::vector<kubelet::ContainerDevices>{
      {"ml",
       "trainer-0",
       "main",
       "tally.dev/gpu-high",
       {std::string(kGpuA) + "-high-0", std::string(kGpuA) + "-high-1"}},
      {"ml",
       "trainer-0",
       "side",
       "tally.dev/gpu-best-effort",
       {std::string(kGpuA) + "-best-effort-3"}},
      {"web", "say \"hi\"", "c", "tally.dev/gpu-high", {std::string(kGpuB) + "-high-0"}},
  };
  return *containers;
}

TEST_CASE("a client of a container's grant gets its namespace, pod and container") {
  const PodLabels pods(Containers());
  CHECK(pods.Of(kGpuA, std::string(kGpuA) + "-high-0") ==
        "namespace=\"ml\",pod=\"trainer-0\",container=\"main\"");
  CHECK(pods.Of(kGpuA, std::string(kGpuA) + "-best-effort-3") ==
        "namespace=\"ml\",pod=\"trainer-0\",container=\"side\"");
  CHECK(pods.Of(kGpuB, std::string(kGpuB) + "-high-0") ==
        "namespace=\"web\",pod=\"say \\\"hi\\\"\",container=\"c\"");
}

TEST_CASE("clients of no container's grant get the labels, empty") {
  const PodLabels pods(Containers());
  const std::string empty = "namespace=\"\",pod=\"\",container=\"\"";
  CHECK(pods.Of(kGpuA, "") == empty);                              // the server's socket
  CHECK(pods.Of(kGpuA, "job1") == empty);                          // tally-ctl's own grant
  CHECK(pods.Of(kGpuA, std::string(kGpuA) + "-high-1") == empty);  // not the smallest ID
  CHECK(pods.Of(kGpuB, std::string(kGpuA) + "-high-0") == empty);  // another GPU's devices
  CHECK(PodLabels({}).Of(kGpuA, std::string(kGpuA) + "-high-0") == empty);
  // A container listed without device IDs names no grant, not the server's socket's.
  CHECK(PodLabels({{"ml", "idle", "main", "tally.dev/gpu-high", {}}}).Of(kGpuA, "") == empty);
}

}  // namespace
}  // namespace tally::tools
