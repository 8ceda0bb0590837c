// Compiles one CUDA C++ file to PTX with NVRTC, the runtime compiler (builds the corpus's
// NVRTC-produced modules, whose PTX differs from nvcc's in header and name handling).
//
// Usage: nvrtc_ptx INPUT.cu OUTPUT.ptx [NVRTC option...], e.g. --gpu-architecture=compute_80.

#include <nvrtc.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

// Prints the failing call with NVRTC's reason and, when there is one, the compile log.
int Fail(const char* what, nvrtcResult result, nvrtcProgram* program) {
  std::cerr << "nvrtc_ptx: " << what << ": " << nvrtcGetErrorString(result) << "\n";
  size_t log_size = 0;
  if (program != nullptr && nvrtcGetProgramLogSize(*program, &log_size) == NVRTC_SUCCESS &&
      log_size > 1) {
    std::string log(log_size, '\0');
    if (nvrtcGetProgramLog(*program, log.data()) == NVRTC_SUCCESS) std::cerr << log << "\n";
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: nvrtc_ptx INPUT.cu OUTPUT.ptx [NVRTC option...]\n";
    return 2;
  }
  std::ifstream input(argv[1]);
  if (!input) {
    std::cerr << "nvrtc_ptx: cannot read " << argv[1] << "\n";
    return 1;
  }
  std::stringstream source;
  source << input.rdbuf();
  const std::string text = source.str();

  nvrtcProgram program;
  nvrtcResult result = nvrtcCreateProgram(&program, text.c_str(), argv[1], 0, nullptr, nullptr);
  if (result != NVRTC_SUCCESS) return Fail("nvrtcCreateProgram", result, nullptr);
  const std::vector<const char*> options(argv + 3, argv + argc);
  result = nvrtcCompileProgram(program, static_cast<int>(options.size()), options.data());
  if (result != NVRTC_SUCCESS) return Fail(argv[1], result, &program);

  size_t ptx_size = 0;
  result = nvrtcGetPTXSize(program, &ptx_size);
  if (result != NVRTC_SUCCESS) return Fail("nvrtcGetPTXSize", result, &program);
  std::string ptx(ptx_size, '\0');
  result = nvrtcGetPTX(program, ptx.data());
  if (result != NVRTC_SUCCESS) return Fail("nvrtcGetPTX", result, &program);
  nvrtcDestroyProgram(&program);

  // The PTX buffer ends in a NUL that does not belong in the file.
  if (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  std::ofstream output(argv[2], std::ios::binary);
  output << ptx;
  if (!output.flush()) {
    std::cerr << "nvrtc_ptx: cannot write " << argv[2] << "\n";
    return 1;
  }
  return 0;
}
