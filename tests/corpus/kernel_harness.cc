// The corpus kernel harness (see kernel_harness.h).
#include "tests/corpus/kernel_harness.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

namespace tally::ptx::corpus {

using emu::testing::Emu;

namespace {

bool IsFloatType(const std::string& type) {
  return type == "f16" || type == "f32" || type == "f64";
}

// 1.5 in the parameter's float format.
Bytes FloatValue(const std::string& type) {
  Bytes bytes;
  auto append = [&](auto value) {
    bytes.resize(sizeof(value));
    std::memcpy(bytes.data(), &value, sizeof(value));
  };
  if (type == "f16") append(uint16_t{0x3e00});
  if (type == "f32") append(1.5f);
  if (type == "f64") append(1.5);
  return bytes;
}

}  // namespace

Arguments::Arguments(const Function& kernel, const KernelSignature& signature,
                     const ArgStrategy& strategy)
    : strategy_(strategy) {
  REQUIRE(kernel.params.size() == signature.params.size());
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    const VarDecl& param = kernel.params[i];
    const uint32_t size = signature.params[i].size;
    Bytes value(size, 0);
    if (!param.dims.empty() || param.vector_width != 0) {  // an aggregate passed by value
      if (strategy.struct_pointers) {
        for (uint32_t offset = 0; offset + 8 <= size; offset += 8) {
          CUdeviceptr buffer = NewBuffer();
          std::memcpy(value.data() + offset, &buffer, 8);
        }
      }
    } else if (IsFloatType(param.type)) {
      value = FloatValue(param.type);
    } else if (size == 8) {
      CUdeviceptr buffer = NewBuffer();
      std::memcpy(value.data(), &buffer, 8);
    } else {
      std::memcpy(value.data(), &strategy.int_value, size);  // little-endian: the low bytes
    }
    values_.push_back(std::move(value));
  }
  initial_.resize(buffers_.size() * kBufferBytes);
  if (strategy.pattern_buffers) {
    for (size_t word = 0; word < initial_.size() / 4; ++word) {
      uint32_t v = static_cast<uint32_t>(word % 13);
      std::memcpy(&initial_[word * 4], &v, 4);
    }
  }
}

std::pair<CUdeviceptr, CUdeviceptr> Arguments::Span() const {
  if (buffers_.empty()) return {0, 0};
  auto [low, high] = std::minmax_element(buffers_.begin(), buffers_.end());
  return {*low, *high + kBufferBytes};
}

Arguments::~Arguments() {
  for (CUdeviceptr buffer : buffers_) Emu().cuMemFree_v2(buffer);
}

CUdeviceptr Arguments::NewBuffer() {
  CUdeviceptr buffer = 0;
  EMU_OK(Emu().cuMemAlloc_v2(&buffer, kBufferBytes));
  buffers_.push_back(buffer);
  return buffer;
}

std::vector<const void*> Arguments::pointers() const {
  std::vector<const void*> pointers;
  for (const Bytes& value : values_) pointers.push_back(value.data());
  return pointers;
}

void Arguments::Reset() const {
  for (size_t i = 0; i < buffers_.size(); ++i) {
    EMU_OK(Emu().cuMemcpyHtoD_v2(buffers_[i], initial_.data() + i * kBufferBytes, kBufferBytes));
  }
}

Bytes Arguments::Snapshot() const {
  Bytes bytes(initial_.size());
  for (size_t i = 0; i < buffers_.size(); ++i) {
    EMU_OK(Emu().cuMemcpyDtoH_v2(bytes.data() + i * kBufferBytes, buffers_[i], kBufferBytes));
  }
  return bytes;
}

ModuleGlobals::ModuleGlobals(const Module& module, CUmodule handle) {
  auto widen = [&](CUdeviceptr address, size_t size) {
    if (span_.second == 0) span_ = {address, address};
    span_.first = std::min(span_.first, address);
    span_.second = std::max(span_.second, address + size);
  };
  for (const TopLevel& item : module.items) {
    const auto* var = std::get_if<VarDecl>(&item.value);
    if (var == nullptr || var->linkage == "extern") continue;
    if (var->state_space == "const") {
      CUdeviceptr address = 0;
      size_t size = 0;
      if (Emu().cuModuleGetGlobal_v2(&address, &size, handle, var->name.c_str()) == CUDA_SUCCESS) {
        widen(address, size);
      }
      continue;
    }
    if (var->state_space != "global") continue;
    Global global;
    size_t size = 0;
    EMU_OK(Emu().cuModuleGetGlobal_v2(&global.address, &size, handle, var->name.c_str()));
    widen(global.address, size);
    global.initial.resize(size);
    EMU_OK(Emu().cuMemcpyDtoH_v2(global.initial.data(), global.address, size));
    globals_.push_back(std::move(global));
  }
}

void ModuleGlobals::Reset() const {
  for (const Global& g : globals_) {
    EMU_OK(Emu().cuMemcpyHtoD_v2(g.address, g.initial.data(), g.initial.size()));
  }
}

Bytes ModuleGlobals::Snapshot() const {
  Bytes bytes;
  for (const Global& g : globals_) {
    size_t at = bytes.size();
    bytes.resize(at + g.initial.size());
    EMU_OK(Emu().cuMemcpyDtoH_v2(bytes.data() + at, g.address, g.initial.size()));
  }
  return bytes;
}

std::pair<uint64_t, uint64_t> FenceRange(std::pair<uint64_t, uint64_t> span) {
  if (span.second == 0) return {0, 0};
  uint64_t begin = span.first & ~uint64_t{255}, end = (span.second + 255) & ~uint64_t{255};
  return {begin, end - begin};
}

Dim3 BlockShape(const Function& kernel) {
  Dim3 shape{64, 1, 1};
  for (const Directive& d : kernel.performance_directives) {
    Dim3 given;
    int n = std::sscanf(d.args.c_str(), "%u , %u , %u", &given.x, &given.y, &given.z);
    if (n < 1) continue;
    if (d.name == "reqntid") return given;
    if (d.name == "maxntid" && uint64_t{given.x} * given.y * given.z < 64) shape = given;
  }
  return shape;
}

RedirectedFd::RedirectedFd(int fd, std::FILE* target) : fd_(fd) {
  std::fflush(fd == 1 ? stdout : stderr);
  saved_ = dup(fd);
  REQUIRE(saved_ >= 0);
  REQUIRE(dup2(fileno(target), fd) >= 0);
}

RedirectedFd::~RedirectedFd() {
  std::fflush(fd_ == 1 ? stdout : stderr);
  dup2(saved_, fd_);
  close(saved_);
}

SilencedStdout::SilencedStdout() : null_(std::fopen("/dev/null", "w")), redirect_(1, null_) {}
SilencedStdout::~SilencedStdout() { std::fclose(null_); }  // fd 1 holds its own duplicate

CapturedStderr::CapturedStderr() : file_(std::tmpfile()), redirect_(2, file_) {}
CapturedStderr::~CapturedStderr() { std::fclose(file_); }

std::string CapturedStderr::Text() {
  std::fflush(stderr);
  std::string text;
  char buffer[4096];
  std::rewind(file_);
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, file_)) > 0) text.append(buffer, n);
  return text;
}

namespace {

constexpr auto kRunLimit = std::chrono::seconds(60);

std::mutex g_watch_mu;
std::string g_watched;  // what runs now; empty when nothing does
std::chrono::steady_clock::time_point g_deadline;
std::atomic<bool> g_watchdog_stop{false};
std::thread g_watchdog;
int g_watchdog_fd = -1;  // the test's stderr, even while the harness captures fd 2

}  // namespace

Watchdog::Watchdog() {
  g_watchdog_stop = false;
  g_watchdog_fd = dup(2);
  g_watchdog = std::thread([] {
    while (!g_watchdog_stop) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      std::lock_guard lock(g_watch_mu);
      if (!g_watched.empty() && std::chrono::steady_clock::now() > g_deadline) {
        dprintf(g_watchdog_fd, "corpus semantics: %s did not finish within a minute\n",
                g_watched.c_str());
        std::_Exit(1);
      }
    }
  });
}

Watchdog::~Watchdog() {
  g_watchdog_stop = true;
  g_watchdog.join();
  close(g_watchdog_fd);
}

Watchdog::Guard::Guard(const std::string& what) {
  std::lock_guard lock(g_watch_mu);
  g_watched = what;
  g_deadline = std::chrono::steady_clock::now() + kRunLimit;
}

Watchdog::Guard::~Guard() {
  std::lock_guard lock(g_watch_mu);
  g_watched.clear();
}

}  // namespace tally::ptx::corpus
