// The CUDA runtime's device functions that the driver implements: printf (vprintf), assert
// (__assertfail) and the device heap (malloc/free). Printed text goes to the launch's tenant
// (tenant_output.h), or without one to this process's stdout and stderr. Strings and arguments are read through the same
// bounds-checked translation as every other access, so a bad pointer passed to printf is a fault,
// not a host crash.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "cuda_abi/device_printf.h"
#include "fmt/format.h"
#include "emulator/exec/block.h"
#include "emulator/exec/lanes.h"

namespace tally::emu::exec {
namespace {

constexpr size_t kMaxString = 4096;

std::mutex& OutputMutex() {
  static std::mutex mu;
  return mu;
}

}  // namespace

uint8_t* Block::CallVariable(const Warp& warp, int lane, uint64_t offset) {
  return LaneLocal(warp, lane) +
         warp.regs[static_cast<uint32_t>(SpecialSlot::kFrameBase) * 32 + lane] + offset;
}

uint64_t Block::LocalWord(const Warp& warp, int lane, uint64_t offset, uint32_t size) {
  uint64_t value = 0;
  std::memcpy(&value, CallVariable(warp, lane, offset), size);
  return value;
}

bool Block::ReadString(uint64_t address, const Warp& warp, int lane, uint32_t pc,
                       std::string* out) {
  out->clear();
  for (size_t i = 0; i < kMaxString; ++i) {
    const uint8_t* c = Translate(Space::kGeneric, address + i, 1, warp, lane, pc, false);
    if (c == nullptr) return false;
    if (*c == 0) return true;
    out->push_back(static_cast<char>(*c));
  }
  return true;
}

// printf's arguments as this lane's vprintf got them (cuda_abi/device_printf.h): read through the
// lane's own address translation, so a bad pointer is the lane's fault.
class Block::LaneArguments : public PrintfArguments {
 public:
  LaneArguments(Block& block, uint64_t arguments, const Warp& warp, int lane, uint32_t pc)
      : block_(block), arguments_(arguments), warp_(warp), lane_(lane), pc_(pc) {}

  std::optional<uint64_t> Scalar(uint32_t size) override {
    cursor_ = (cursor_ + size - 1) / size * size;
    uint64_t value = 0;
    if (!block_.ReadGeneric(arguments_ + cursor_, size, warp_, lane_, pc_, &value)) {
      return std::nullopt;
    }
    cursor_ += size;
    return value;
  }
  std::optional<std::string> String() override {
    const std::optional<uint64_t> address = Scalar(8);
    std::string text;
    if (!address || !block_.ReadString(*address, warp_, lane_, pc_, &text)) return std::nullopt;
    return text;
  }

 private:
  Block& block_;
  uint64_t arguments_;
  const Warp& warp_;
  int lane_;
  uint32_t pc_;
  uint64_t cursor_ = 0;
};

bool Block::ReadGeneric(uint64_t address, uint32_t size, const Warp& warp, int lane, uint32_t pc,
                        uint64_t* value) {
  const uint8_t* p = Translate(Space::kGeneric, address, size, warp, lane, pc, false);
  if (p == nullptr) return false;
  *value = 0;
  std::memcpy(value, p, size);
  return true;
}

bool Block::FormatPrintf(const Warp& warp, int lane, uint32_t pc, uint64_t format_address,
                         uint64_t arguments, std::string* out) {
  std::string format;
  if (!ReadString(format_address, warp, lane, pc, &format)) return false;
  LaneArguments reader(*this, arguments, warp, lane, pc);
  std::optional<std::string> text = FormatDevicePrintf(format, reader);
  if (!text) return false;
  *out = *std::move(text);
  return true;
}

void Block::Print(TenantOutput::Stream stream, std::string text) const {
  if (setup_->output != nullptr) {
    setup_->output->Append(setup_->tenant, stream, std::move(text));
    return;
  }
  std::lock_guard lock(OutputMutex());
  FILE* file = stream == TenantOutput::Stream::kStdout ? stdout : stderr;
  std::fwrite(text.data(), 1, text.size(), file);
  std::fflush(file);
}

bool Block::ExecuteBuiltin(const Inst& in, Warp& warp, uint32_t mask, uint32_t pc) {
  auto argument = [&](int k, int lane, uint32_t size = 8) {
    return LocalWord(warp, lane, warp.regs[in.src[k] * 32 + lane], size);
  };
  auto result = [&](int lane, const void* value, size_t size) {
    std::memcpy(CallVariable(warp, lane, in.offset), value, size);
  };
  bool ok = true;
  bool asserted = false;  // every failing lane prints its line before the block stops
  ForLanes(mask, [&](int l) {
    if (!ok) return;
    switch (static_cast<Builtin>(in.mod)) {
      case Builtin::kPrintf: {
        std::string text;
        if (!FormatPrintf(warp, l, pc, argument(0, l), argument(1, l), &text)) {
          ok = false;
          return;
        }
        int32_t written = static_cast<int32_t>(text.size());
        Print(TenantOutput::Stream::kStdout, std::move(text));
        if (in.flags & kFlagHasResult) result(l, &written, sizeof(written));
        return;
      }
      case Builtin::kAssert: {
        // The message, file, line and function of the failed assertion.
        std::string message, file, function;
        if (!ReadString(argument(0, l), warp, l, pc, &message) ||
            !ReadString(argument(1, l), warp, l, pc, &file) ||
            !ReadString(argument(3, l), warp, l, pc, &function)) {
          ok = false;
          return;
        }
        const std::string where = file + ":" + std::to_string(argument(2, l, 4)) + ": " + function;
        // As CUDA prints it to the program's stderr, one line per failing thread.
        const uint32_t thread = warp.index * 32 + l;
        const Dim3& block = setup_->block;
        Print(TenantOutput::Stream::kStderr,
              fmt::format("{}: block: [{},{},{}], thread: [{},{},{}] Assertion `{}` failed.\n",
                          where, ctaid_.x, ctaid_.y, ctaid_.z, thread % block.x,
                          thread / block.x % block.y, thread / (block.x * block.y), message));
        Fault(warp, l, pc, CUDA_ERROR_ASSERT, where + ": Assertion `" + message + "` failed");
        asserted = true;
        return;
      }
      case Builtin::kMalloc: {
        uint64_t address = setup_->heap->Malloc(argument(0, l), setup_->tenant);
        result(l, &address, sizeof(address));
        ++writes_;  // a new allocation is progress for whoever waits on it
        return;
      }
      case Builtin::kFree: {
        uint64_t address = argument(0, l);
        if (!setup_->heap->Free(address, setup_->tenant)) {
          char text[96];
          std::snprintf(text, sizeof(text), "free of 0x%llx, which malloc did not return",
                        static_cast<unsigned long long>(address));
          Fault(warp, l, pc, CUDA_ERROR_ILLEGAL_ADDRESS, text);
          ok = false;
        }
        ++writes_;
        return;
      }
    }
  });
  return ok && !asserted;
}

}  // namespace tally::emu::exec
