// Running conformance cases on the emulator: device copies of a case's arguments, launches
// with the kernel's printed output captured, and the results as Outputs.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "emulator/tests/conformance/conformance.h"
#include "emulator/tests/emu_library.h"

namespace tally::emu::conformance {

// A case's arguments on the device for one run: buffers, and CUDA arrays with their texture or
// surface objects (all freed on destruction).
class DeviceArgs {
 public:
  explicit DeviceArgs(const std::vector<Arg>& args);
  ~DeviceArgs();
  DeviceArgs(const DeviceArgs&) = delete;
  DeviceArgs& operator=(const DeviceArgs&) = delete;

  // kernelParams for cuLaunchKernel: one pointer per argument.
  std::vector<void*> Params();
  // Every argument's bytes now (buffers and surfaces' arrays downloaded), with the lines a run
  // printed.
  Outputs Collect(std::vector<std::string> printed) const;

 private:
  struct Slot {
    CUdeviceptr buffer = 0;   // buffers
    CUarray array = nullptr;  // images, with their object
    unsigned long long object = 0;
  };
  std::vector<Arg> args_;
  std::vector<Slot> slots_;
};

// Runs `launch` (which launches and synchronises, returning the first error) with the
// process's stdout captured, and returns the lines written meanwhile.
std::vector<std::string> CapturePrinted(const std::function<CUresult()>& launch,
                                        CUresult* result);

// The PTX text of a theme module built by `producer`.
std::string ReadModule(const std::string& producer, const std::string& module);

// Runs the case's kernel from `module` in its original form; the launch must succeed.
Outputs RunOriginal(CUmodule module, const Case& c);

// Checks and describes a result: empty when the reference accepts it.
std::string Verify(const Case& c, const Outputs& outputs);

}  // namespace tally::emu::conformance
