// Exports the stream memory operations (CUDA driver API, "Stream Memory Operations"):
// cuStreamWaitValue32/64, cuStreamWriteValue32/64 and cuStreamBatchMemOp, in their v1 forms
// (the plain names) and the _v2 forms cuda.h maps the plain names to. Operations are checked at
// the call and performed by the stream's thread in stream order: a write is visible at once to
// kernels on other streams polling the address, and a wait holds only its own stream.
//
// __CUDA_API_VERSION_INTERNAL makes cuda.h declare both forms under their own names.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "emulator/internal/entry.h"
#include "emulator/internal/submit.h"

namespace tally::emu {
namespace {

// The v1 and v2 forms differ in two features that only v1 (CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER,
// "not supported in the v2 API") or only v2 (CU_STREAM_MEM_OP_BARRIER, "only supported in the
// _v2 API") has (cuda.h, CUstreamWriteValue_flags and CUstreamBatchMemOpParams).
enum class Form { kV1, kV2 };

std::atomic<uint32_t> g_fence_word{0};  // CU_STREAM_MEM_OP_BARRIER's fence

// One checked operation, performed when the stream reaches it.
struct MemOp {
  enum class Kind { kWait, kWrite, kBarrier };
  Kind kind = Kind::kBarrier;
  uint64_t address = 0;
  uint64_t value = 0;
  uint32_t bytes = 4;
  unsigned flags = 0;
};

// "All memory pointers passed as parameters to these operations are device pointers" and "none
// of the operations accepts pointers to managed memory buffers": device memory, or pinned or
// registered host memory through its device pointer, naturally aligned.
absl::Status CheckAddress(Driver& driver, uint64_t address, uint32_t bytes, bool write) {
  if (address % bytes != 0) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "the address is not aligned to the value's size");
  }
  TALLY_RETURN_IF_ERROR(driver.memory().CheckRange(address, bytes, write));
  std::optional<Allocation> allocation = driver.memory().Find(address);
  if (!allocation) return CudaError(CUDA_ERROR_INVALID_VALUE, "the address is not device memory");
  if (allocation->kind == AllocationKind::kManaged) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "stream memory operations refuse managed memory");
  }
  return absl::OkStatus();
}

absl::StatusOr<MemOp> Wait(Driver& driver, uint64_t address, uint64_t value, uint32_t bytes,
                           unsigned flags) {
  if ((flags & ~CU_STREAM_WAIT_VALUE_FLUSH) > CU_STREAM_WAIT_VALUE_NOR) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown wait flags");
  }
  // The flush needs CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES, which the device lacks.
  if ((flags & CU_STREAM_WAIT_VALUE_FLUSH) != 0) {
    return CudaError(CUDA_ERROR_NOT_SUPPORTED, "CU_STREAM_WAIT_VALUE_FLUSH is not supported");
  }
  TALLY_RETURN_IF_ERROR(CheckAddress(driver, address, bytes, false));
  return MemOp{MemOp::Kind::kWait, address, value, bytes, flags};
}

absl::StatusOr<MemOp> Write(Driver& driver, uint64_t address, uint64_t value, uint32_t bytes,
                            unsigned flags, Form form) {
  if (flags > CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown write flags");
  }
  if (flags == CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER && form == Form::kV2) {
    return CudaError(CUDA_ERROR_NOT_SUPPORTED,
                     "CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER is not supported in the v2 API");
  }
  TALLY_RETURN_IF_ERROR(CheckAddress(driver, address, bytes, true));
  return MemOp{MemOp::Kind::kWrite, address, value, bytes, flags};
}

uint64_t Load(const MemOp& op) {
  if (op.bytes == 4) {
    return __atomic_load_n(reinterpret_cast<uint32_t*>(op.address), __ATOMIC_ACQUIRE);
  }
  return __atomic_load_n(reinterpret_cast<uint64_t*>(op.address), __ATOMIC_ACQUIRE);
}

// CUstreamWaitValue_flags: GEQ is the cyclic (int32_t)(*addr - value) >= 0 (int64_t for 64-bit
// values); EQ, AND and NOR compare the value's width.
bool Satisfied(const MemOp& op, uint64_t current) {
  const uint64_t mask = op.bytes == 4 ? 0xffffffffu : ~uint64_t{0};
  switch (op.flags) {
    case CU_STREAM_WAIT_VALUE_GEQ:
      return op.bytes == 4 ? static_cast<int32_t>(static_cast<uint32_t>(current - op.value)) >= 0
                           : static_cast<int64_t>(current - op.value) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ:
      return current == op.value;
    case CU_STREAM_WAIT_VALUE_AND:
      return (current & op.value) != 0;
    default:  // CU_STREAM_WAIT_VALUE_NOR
      return (~(current | op.value) & mask) != 0;
  }
}

// Polls: briefly by yielding (a writer on another stream or a kernel usually answers soon), then
// in sleeps growing to 100 µs, so that a long wait costs no core. Library teardown ends the
// wait, which must not keep an exiting process alive.
void AwaitValue(const MemOp& op) {
  for (uint32_t polls = 0; !Satisfied(op, Load(op)); ++polls) {
    if (Driver::State() != DriverState::kReady) return;
    if (polls < 64) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(std::min<uint32_t>(polls - 63, 100)));
    }
  }
}

// A default write is ordered after the stream's earlier work (which has finished when the stream
// reaches it) by a fence "similar to __threadfence_system()"; NO_MEMORY_BARRIER drops the fence.
void Perform(const MemOp& op) {
  const int order =
      op.flags == CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER ? __ATOMIC_RELAXED : __ATOMIC_SEQ_CST;
  switch (op.kind) {
    case MemOp::Kind::kWait:
      AwaitValue(op);
      break;
    case MemOp::Kind::kWrite:
      if (op.bytes == 4) {
        __atomic_store_n(reinterpret_cast<uint32_t*>(op.address), static_cast<uint32_t>(op.value),
                         order);
      } else {
        __atomic_store_n(reinterpret_cast<uint64_t*>(op.address), op.value, order);
      }
      break;
    case MemOp::Kind::kBarrier:
      // A sequentially consistent read-modify-write on one word: a full fence that
      // ThreadSanitizer also understands (as the interpreter's fence instructions).
      g_fence_word.fetch_add(0, std::memory_order_seq_cst);
      break;
  }
}

absl::Status Enqueue(Driver& driver, CUstream stream, std::vector<MemOp> ops) {
  return Submit(
      driver, stream,
      [ops = std::move(ops)] {
        for (const MemOp& op : ops) Perform(op);
      },
      false);
}

absl::Status EnqueueOne(Driver& driver, CUstream stream, absl::StatusOr<MemOp> op) {
  TALLY_RETURN_IF_ERROR(op.status());
  return Enqueue(driver, stream, {*op});
}

// Checks every operation before enqueueing any, in array order ("the operations are enqueued in
// the order they appear in the array").
absl::Status BatchMemOp(Driver& driver, CUstream stream, unsigned count,
                        const CUstreamBatchMemOpParams* params, unsigned flags, Form form) {
  if (flags != 0) return CudaError(CUDA_ERROR_INVALID_VALUE, "flags must be 0");
  if (count >= 256) return CudaError(CUDA_ERROR_INVALID_VALUE, "count must be less than 256");
  if (count > 0 && params == nullptr) return CudaError(CUDA_ERROR_INVALID_VALUE, "null array");
  std::vector<MemOp> ops;
  for (unsigned i = 0; i < count; ++i) {
    const CUstreamBatchMemOpParams& param = params[i];
    absl::StatusOr<MemOp> op;
    switch (param.operation) {
      case CU_STREAM_MEM_OP_WAIT_VALUE_32:
        op = Wait(driver, param.waitValue.address, param.waitValue.value, 4, param.waitValue.flags);
        break;
      case CU_STREAM_MEM_OP_WAIT_VALUE_64:
        op = Wait(driver, param.waitValue.address, param.waitValue.value64, 8,
                  param.waitValue.flags);
        break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_32:
        op = Write(driver, param.writeValue.address, param.writeValue.value, 4,
                   param.writeValue.flags, form);
        break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_64:
        op = Write(driver, param.writeValue.address, param.writeValue.value64, 8,
                   param.writeValue.flags, form);
        break;
      case CU_STREAM_MEM_OP_BARRIER:
        if (form == Form::kV1) {
          return CudaError(CUDA_ERROR_NOT_SUPPORTED, "memory barriers need the _v2 API");
        }
        if (param.memoryBarrier.flags != CU_STREAM_MEMORY_BARRIER_TYPE_SYS &&
            param.memoryBarrier.flags != CU_STREAM_MEMORY_BARRIER_TYPE_GPU) {
          return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown memory barrier type");
        }
        op = MemOp{};
        break;
      case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
        return CudaError(CUDA_ERROR_NOT_SUPPORTED, "CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES");
      default:
        return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown stream memory operation");
    }
    TALLY_RETURN_IF_ERROR(op.status());
    ops.push_back(*op);
  }
  if (ops.empty()) return driver.ResolveStream(stream).status();
  return Enqueue(driver, stream, std::move(ops));
}

// The entry points' bodies, shared by the v1 and _v2 forms.
CUresult WaitValue(CUstream stream, CUdeviceptr address, uint64_t value, uint32_t bytes,
                   unsigned flags) noexcept {
  return Run([&](Driver& driver) {
    return EnqueueOne(driver, stream, Wait(driver, address, value, bytes, flags));
  });
}

CUresult WriteValue(CUstream stream, CUdeviceptr address, uint64_t value, uint32_t bytes,
                    unsigned flags, Form form) noexcept {
  return Run([&](Driver& driver) {
    return EnqueueOne(driver, stream, Write(driver, address, value, bytes, flags, form));
  });
}

CUresult Batch(CUstream stream, unsigned count, const CUstreamBatchMemOpParams* params,
               unsigned flags, Form form) noexcept {
  return Run(
      [&](Driver& driver) { return BatchMemOp(driver, stream, count, params, flags, form); });
}

}  // namespace
}  // namespace tally::emu

using tally::emu::Batch;
using tally::emu::Form;
using tally::emu::WaitValue;
using tally::emu::WriteValue;

// The five entry points of one form: `suffix` is _v2 for the v2 forms and empty for the v1 ones.
// Waits are the same in both; v1 writes also accept CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER and
// v1 batches have no memory barrier operation (Form).
#define TALLY_STREAM_MEMOPS(suffix, form)                                                         \
  CUresult cuStreamWaitValue32##suffix(CUstream stream, CUdeviceptr addr, cuuint32_t value,       \
                                       unsigned int flags) {                                      \
    return WaitValue(stream, addr, value, 4, flags);                                              \
  }                                                                                               \
  CUresult cuStreamWaitValue64##suffix(CUstream stream, CUdeviceptr addr, cuuint64_t value,       \
                                       unsigned int flags) {                                      \
    return WaitValue(stream, addr, value, 8, flags);                                              \
  }                                                                                               \
  CUresult cuStreamWriteValue32##suffix(CUstream stream, CUdeviceptr addr, cuuint32_t value,      \
                                        unsigned int flags) {                                     \
    return WriteValue(stream, addr, value, 4, flags, form);                                       \
  }                                                                                               \
  CUresult cuStreamWriteValue64##suffix(CUstream stream, CUdeviceptr addr, cuuint64_t value,      \
                                        unsigned int flags) {                                     \
    return WriteValue(stream, addr, value, 8, flags, form);                                       \
  }                                                                                               \
  CUresult cuStreamBatchMemOp##suffix(CUstream stream, unsigned int count,                        \
                                      CUstreamBatchMemOpParams* paramArray, unsigned int flags) { \
    return Batch(stream, count, paramArray, flags, form);                                         \
  }

extern "C" {

TALLY_STREAM_MEMOPS(_v2, Form::kV2)
TALLY_STREAM_MEMOPS(, Form::kV1)

}  // extern "C"

#undef TALLY_STREAM_MEMOPS
