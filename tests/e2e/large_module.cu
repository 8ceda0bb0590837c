// A module image larger than the client's 64 MiB bulk area (PTX text padded with comments to
// 65 MiB, loaded with cuModuleLoadData) reaches the server in pieces and its kernel computes
// correctly; an image over the server's 1 GiB limit is refused at the call.
#include <cuda.h>

#include <cstdio>
#include <string>
#include <vector>

#include "add_one_ptx.h"
#include "check.h"
#include "check_cu.h"
#include "driver_setup.h"

int main() {
  UsePrimaryContext();

  constexpr size_t kImageBytes = size_t{65} << 20;
  std::string ptx = kAddOnePtx;
  const std::string padding = "// padding that makes this image larger than the bulk area\n";
  ptx.reserve(kImageBytes + padding.size());
  while (ptx.size() < kImageBytes) ptx += padding;
  CUmodule module;
  CUfunction add_one = LoadFunction(&module, ptx.c_str(), "add_one");

  constexpr unsigned kN = 1000;
  std::vector<unsigned> values(kN);
  for (unsigned i = 0; i < kN; ++i) values[i] = i * 7;
  CUdeviceptr data;
  CHECK_CU(cuMemAlloc(&data, kN * sizeof(unsigned)));
  CHECK_CU(cuMemcpyHtoD(data, values.data(), kN * sizeof(unsigned)));
  unsigned n = kN;
  void* params[] = {&data, &n};
  CHECK_CU(cuLaunchKernel(add_one, (kN + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr));
  CHECK_CU(cuMemcpyDtoH(values.data(), data, kN * sizeof(unsigned)));
  for (unsigned i = 0; i < kN; ++i) EXPECT(values[i] == i * 7 + 1);
  CHECK_CU(cuModuleUnload(module));
  ptx.clear();
  ptx.shrink_to_fit();

  // Over the limit: refused before anything is sent.
  const std::string huge((size_t{1} << 30) + 1, ' ');
  EXPECT(cuModuleLoadData(&module, huge.c_str()) == CUDA_ERROR_INVALID_VALUE);

  CHECK_CU(cuMemFree(data));
  std::printf("large_module: a %zu-byte module loaded in pieces; its kernel ran correctly\n",
              kImageBytes);
  return 0;
}
