// Time to first kernel end for a module of N kernels: the program builds a PTX module of N small
// kernels (k0 ... kN-1, each storing its index), loads it with cuModuleLoadData, launches k0 and
// waits for it. What it reports is the load, the lookup of k0 and the first kernel's end, from
// the load call on (device and context set up before). Run through tally-run, or directly on a
// driver (benchmarks/startup/run_startup.sh), it says what a program with a large module waits
// before its first kernel ends. Usage: startup KERNELS
#include <cuda.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "driver_setup.h"  // tests/e2e: CHECK_CU, UsePrimaryContext

namespace {

// Kernel i stores i at its argument.
std::string ModuleWith(unsigned kernels) {
  std::string ptx = ".version 7.0\n.target sm_75\n.address_size 64\n";
  for (unsigned i = 0; i < kernels; ++i) {
    ptx += ".visible .entry k" + std::to_string(i) +
           "(.param .u64 out) {\n"
           "  .reg .b64 %rd<3>;\n"
           "  ld.param.u64 %rd1, [out];\n"
           "  cvta.to.global.u64 %rd2, %rd1;\n"
           "  st.global.u32 [%rd2], " +
           std::to_string(i) + ";\n  ret;\n}\n";
  }
  return ptx;
}

double MillisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  const long kernels = argc == 2 ? std::strtol(argv[1], nullptr, 10) : 0;
  if (kernels < 1 || kernels > 100000) {
    std::fprintf(stderr, "usage: startup KERNELS (1 to 100000)\n");
    return 2;
  }
  const std::string ptx = ModuleWith(static_cast<unsigned>(kernels));
  UsePrimaryContext();
  CUdeviceptr out;
  CHECK_CU(cuMemAlloc(&out, sizeof(unsigned)));
  CHECK_CU(cuMemsetD32(out, 0xffffffffu, 1));

  const auto start = std::chrono::steady_clock::now();
  CUmodule module;
  CHECK_CU(cuModuleLoadData(&module, ptx.c_str()));
  const double loaded_ms = MillisecondsSince(start);
  CUfunction first;
  CHECK_CU(cuModuleGetFunction(&first, module, "k0"));
  void* params[] = {&out};
  CHECK_CU(cuLaunchKernel(first, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr));
  CHECK_CU(cuCtxSynchronize());
  const double first_end_ms = MillisecondsSince(start);

  unsigned stored = 1;
  CHECK_CU(cuMemcpyDtoH(&stored, out, sizeof(stored)));
  if (stored != 0) {
    std::fprintf(stderr, "startup: k0 stored %u, not 0\n", stored);
    return 1;
  }
  CHECK_CU(cuModuleUnload(module));
  CHECK_CU(cuMemFree(out));
  std::printf("kernels %ld module_bytes %zu load_ms %.3f first_kernel_end_ms %.3f\n", kernels,
              ptx.size(), loaded_ms, first_end_ms);
  return 0;
}
