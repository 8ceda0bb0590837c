// Stream memory operations: waits hold only their own stream until the condition holds (released
// by writes from other streams), a write releases a kernel polling the address with
// ld.volatile while it runs, batches run in order, and bad flags, addresses and operations get
// the documented errors.
#include <vector>

#include "emulator/tests/kernel_util.h"

namespace tally::emu::testing {
namespace {

CUstream NewStream() {
  CUstream stream = nullptr;
  EMU_OK(Emu().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  return stream;
}

template <typename T>
void Set(CUdeviceptr address, T value) {
  EMU_OK(Emu().cuMemcpyHtoD_v2(address, &value, sizeof(T)));
}

TEST_CASE("the device offers stream memory operations, 64-bit ones and NOR waits") {
  EnsureContext();
  for (CUdevice_attribute attribute : {CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1,
                                       CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1,
                                       CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1,
                                       CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS,
                                       CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR}) {
    int value = 0;
    EMU_OK(Emu().cuDeviceGetAttribute(&value, attribute, 0));
    CHECK(value == 1);
  }
  int flush = 1;
  EMU_OK(Emu().cuDeviceGetAttribute(&flush, CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES, 0));
  CHECK(flush == 0);
}

TEST_CASE("a wait holds only its stream, until a write on another stream releases it") {
  CUdeviceptr flag = Zeros<uint32_t>(1), after = Zeros<uint32_t>(1), other = Zeros<uint32_t>(1);
  CUstream waiting = NewStream(), writing = NewStream();
  EMU_OK(Emu().cuStreamWaitValue32_v2(waiting, flag, 1, CU_STREAM_WAIT_VALUE_GEQ));
  EMU_OK(Emu().cuMemsetD32Async(after, 7, 1, waiting));
  // Work on other streams goes on.
  EMU_OK(Emu().cuMemsetD32Async(other, 5, 1, writing));
  EMU_OK(Emu().cuStreamSynchronize(writing));
  CHECK(Download<uint32_t>(other, 1)[0] == 5);
  CHECK(Emu().cuStreamQuery(waiting) == CUDA_ERROR_NOT_READY);
  CHECK(Download<uint32_t>(after, 1)[0] == 0);
  EMU_OK(Emu().cuStreamWriteValue32_v2(writing, flag, 1, CU_STREAM_WRITE_VALUE_DEFAULT));
  EMU_OK(Emu().cuStreamSynchronize(waiting));
  CHECK(Download<uint32_t>(after, 1)[0] == 7);
  EMU_OK(Emu().cuStreamDestroy_v2(waiting));
  EMU_OK(Emu().cuStreamDestroy_v2(writing));
}

// One wait condition: the memory's value, the operand, and whether the wait is satisfied;
// `release` is a value that satisfies it.
struct Condition {
  unsigned flags;
  uint64_t memory, operand;
  bool satisfied;
  uint64_t release;
};

TEST_CASE("wait conditions follow CUstreamWaitValue_flags, at the value's width") {
  const std::vector<Condition> conditions32 = {
      {CU_STREAM_WAIT_VALUE_GEQ, 5, 5, true, 0},
      {CU_STREAM_WAIT_VALUE_GEQ, 4, 5, false, 5},
      // Cyclic: (int32_t)(*addr - value) >= 0 across the wraparound.
      {CU_STREAM_WAIT_VALUE_GEQ, 1, 0xfffffff0u, true, 0},
      {CU_STREAM_WAIT_VALUE_GEQ, 0xfffffff0u, 1, false, 1},
      {CU_STREAM_WAIT_VALUE_EQ, 9, 9, true, 0},
      {CU_STREAM_WAIT_VALUE_EQ, 8, 9, false, 9},
      {CU_STREAM_WAIT_VALUE_AND, 0x4, 0x6, true, 0},
      {CU_STREAM_WAIT_VALUE_AND, 0x9, 0x6, false, 0x2},
      // ~(*addr | value) != 0
      {CU_STREAM_WAIT_VALUE_NOR, 0xffff0000u, 0x0000ff00u, true, 0},
      {CU_STREAM_WAIT_VALUE_NOR, 0xffff0000u, 0x0000ffffu, false, 0},
  };
  const std::vector<Condition> conditions64 = {
      {CU_STREAM_WAIT_VALUE_GEQ, 1ull << 32, 0xffffffffull, true, 0},
      {CU_STREAM_WAIT_VALUE_GEQ, 1, ~uint64_t{0} - 15, true, 0},
      {CU_STREAM_WAIT_VALUE_GEQ, ~uint64_t{0} - 15, 1, false, 1},
      // The high half takes part: equal low halves are not equal values.
      {CU_STREAM_WAIT_VALUE_EQ, (1ull << 32) | 5, 5, false, 5},
      {CU_STREAM_WAIT_VALUE_AND, 1ull << 40, 1ull << 40, true, 0},
      {CU_STREAM_WAIT_VALUE_NOR, 0xffffffffull, 0xffffffff00000000ull, false, 0},
      {CU_STREAM_WAIT_VALUE_NOR, 0xffffffffull, 0xfffffffe00000000ull, true, 0},
  };
  CUdeviceptr word = Zeros<uint64_t>(1);
  CUstream waiting = NewStream(), writing = NewStream();
  for (bool wide : {false, true}) {
    for (const Condition& c : wide ? conditions64 : conditions32) {
      INFO("flags " << c.flags << ", memory " << c.memory << ", operand " << c.operand
                    << (wide ? ", 64-bit" : ", 32-bit"));
      if (wide) {
        Set<uint64_t>(word, c.memory);
        EMU_OK(Emu().cuStreamWaitValue64_v2(waiting, word, c.operand, c.flags));
      } else {
        Set<uint32_t>(word, static_cast<uint32_t>(c.memory));
        EMU_OK(
            Emu().cuStreamWaitValue32_v2(waiting, word, static_cast<uint32_t>(c.operand), c.flags));
      }
      if (!c.satisfied) {
        CHECK(Emu().cuStreamQuery(waiting) == CUDA_ERROR_NOT_READY);
        if (wide) {
          EMU_OK(Emu().cuStreamWriteValue64_v2(writing, word, c.release, 0));
        } else {
          EMU_OK(Emu().cuStreamWriteValue32_v2(writing, word, static_cast<uint32_t>(c.release), 0));
        }
      }
      EMU_OK(Emu().cuStreamSynchronize(waiting));
    }
  }
  EMU_OK(Emu().cuStreamDestroy_v2(waiting));
  EMU_OK(Emu().cuStreamDestroy_v2(writing));
}

TEST_CASE("a write on another stream stops persistent blocks polling a flag with ld.volatile") {
  EnsureContext();
  CUfunction poll = KernelFrom("dispatch", "poll_flag");
  int sms = 0, whole = 0;
  EMU_OK(Emu().cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
  EMU_OK(
      Emu().cuDeviceGetAttribute(&whole, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 0));
  EMU_OK(Emu().cuFuncSetAttribute(poll, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, whole));
  CUdeviceptr flag = Zeros<uint32_t>(1), started = Zeros<uint32_t>(1);
  void* args[] = {&flag, &started};
  CUstream kernel = NewStream(), watch = NewStream(), control = NewStream();
  // One block per SM, each with an SM's shared memory: the device is full while they poll.
  EMU_OK(Emu().cuLaunchKernel(poll, sms, 1, 1, 64, 1, 1, whole, kernel, args, nullptr));
  EMU_OK(Emu().cuStreamWaitValue32_v2(watch, started, sms, CU_STREAM_WAIT_VALUE_GEQ));
  EMU_OK(Emu().cuStreamSynchronize(watch));  // every block polls
  CHECK(Emu().cuStreamQuery(kernel) == CUDA_ERROR_NOT_READY);
  EMU_OK(Emu().cuStreamWriteValue32_v2(control, flag, 1, CU_STREAM_WRITE_VALUE_DEFAULT));
  EMU_OK(Emu().cuStreamSynchronize(kernel));
  EMU_OK(Emu().cuStreamDestroy_v2(kernel));
  EMU_OK(Emu().cuStreamDestroy_v2(watch));
  EMU_OK(Emu().cuStreamDestroy_v2(control));
}

TEST_CASE("a batch runs its operations in order; 64-bit writes; registered host memory") {
  EnsureContext();
  CUdeviceptr words = Zeros<uint64_t>(3);
  std::vector<uint64_t> host(2, 0);
  EMU_OK(Emu().cuMemHostRegister_v2(host.data(), host.size() * sizeof(uint64_t), 0));
  CUdeviceptr mapped = 0;
  EMU_OK(Emu().cuMemHostGetDevicePointer_v2(&mapped, host.data(), 0));
  CUstream batch = NewStream(), other = NewStream();
  CUstreamBatchMemOpParams ops[4] = {};
  ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  ops[0].writeValue.address = words;
  ops[0].writeValue.value = 11;
  ops[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_64;
  ops[1].waitValue.address = mapped;
  ops[1].waitValue.value64 = 1ull << 40;
  ops[1].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
  ops[2].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
  ops[2].memoryBarrier.flags = CU_STREAM_MEMORY_BARRIER_TYPE_GPU;
  ops[3].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
  ops[3].writeValue.address = words + 8;
  ops[3].writeValue.value64 = 0x123456789abcdef0ull;
  EMU_OK(Emu().cuStreamBatchMemOp_v2(batch, 4, ops, 0));
  CHECK(Emu().cuStreamQuery(batch) == CUDA_ERROR_NOT_READY);
  EMU_OK(Emu().cuStreamWriteValue64_v2(other, mapped, 1ull << 40, 0));
  EMU_OK(Emu().cuStreamSynchronize(batch));
  CHECK(Download<uint64_t>(words, 3) == std::vector<uint64_t>{11, 0x123456789abcdef0ull, 0});
  CHECK(host[0] == 1ull << 40);
  EMU_OK(Emu().cuStreamBatchMemOp_v2(batch, 0, nullptr, 0));
  EMU_OK(Emu().cuStreamSynchronize(other));
  EMU_OK(Emu().cuMemHostUnregister(host.data()));
  EMU_OK(Emu().cuStreamDestroy_v2(batch));
  EMU_OK(Emu().cuStreamDestroy_v2(other));
}

TEST_CASE("bad flags, addresses and operations get the documented errors") {
  EnsureContext();
  CUdeviceptr word = Zeros<uint64_t>(1), small = Zeros<uint32_t>(1);
  CUstream stream = NewStream();
  const EmuApi& emu = Emu();
  // Flags.
  CHECK(emu.cuStreamWaitValue32_v2(stream, word, 0, 4) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuStreamWaitValue64_v2(stream, word, 0, 0x10) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuStreamWaitValue32_v2(stream, word, 0, CU_STREAM_WAIT_VALUE_FLUSH) ==
        CUDA_ERROR_NOT_SUPPORTED);
  CHECK(emu.cuStreamWriteValue32_v2(stream, word, 0, 2) == CUDA_ERROR_INVALID_VALUE);
  // NO_MEMORY_BARRIER "is not supported in the v2 API"; the v1 form takes it.
  CHECK(emu.cuStreamWriteValue32_v2(stream, word, 0, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER) ==
        CUDA_ERROR_NOT_SUPPORTED);
  CHECK(emu.cuStreamWriteValue64_v2(stream, word, 0, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER) ==
        CUDA_ERROR_NOT_SUPPORTED);
  EMU_OK(emu.cuStreamWriteValue32(stream, word, 3, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER));
  EMU_OK(emu.cuStreamWriteValue64(stream, word, 4, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER));
  EMU_OK(emu.cuStreamWaitValue32(stream, word, 4, CU_STREAM_WAIT_VALUE_EQ));
  EMU_OK(emu.cuStreamWaitValue64(stream, word, 4, CU_STREAM_WAIT_VALUE_EQ));
  EMU_OK(emu.cuStreamSynchronize(stream));
  // Addresses: null, outside any allocation, misaligned, past the allocation's end, managed,
  // pageable host memory.
  CHECK(emu.cuStreamWriteValue32_v2(stream, 0, 1, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuStreamWriteValue32_v2(stream, word + (1ull << 30), 1, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuStreamWriteValue32_v2(stream, word + 2, 1, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuStreamWaitValue64_v2(stream, word + 4, 1, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuStreamWriteValue64_v2(stream, small, 1, 0) == CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr managed = 0;
  EMU_OK(emu.cuMemAllocManaged(&managed, 8, CU_MEM_ATTACH_GLOBAL));
  CHECK(emu.cuStreamWriteValue32_v2(stream, managed, 1, 0) == CUDA_ERROR_INVALID_VALUE);
  uint64_t pageable = 0;
  CHECK(emu.cuStreamWaitValue64_v2(stream, reinterpret_cast<CUdeviceptr>(&pageable), 0, 0) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuStreamWriteValue32_v2(reinterpret_cast<CUstream>(0x77), word, 1, 0) ==
        CUDA_ERROR_INVALID_HANDLE);
  // Batches: flags must be 0, fewer than 256 operations, a known operation each; a batch with a
  // bad operation enqueues none of its operations.
  CUstreamBatchMemOpParams ops[2] = {};
  ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  ops[0].writeValue.address = small;
  ops[0].writeValue.value = 9;
  ops[1].operation = static_cast<CUstreamBatchMemOpType>(7);
  CHECK(emu.cuStreamBatchMemOp_v2(stream, 1, ops, 1) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuStreamBatchMemOp_v2(stream, 256, ops, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuStreamBatchMemOp_v2(stream, 1, nullptr, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuStreamBatchMemOp_v2(stream, 2, ops, 0) == CUDA_ERROR_INVALID_VALUE);
  ops[1].flushRemoteWrites.operation = CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES;
  ops[1].flushRemoteWrites.flags = 0;
  CHECK(emu.cuStreamBatchMemOp_v2(stream, 2, ops, 0) == CUDA_ERROR_NOT_SUPPORTED);
  ops[1].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
  ops[1].memoryBarrier.flags = 2;
  CHECK(emu.cuStreamBatchMemOp_v2(stream, 2, ops, 0) == CUDA_ERROR_INVALID_VALUE);
  // Memory barriers exist only in the _v2 form.
  ops[1].memoryBarrier.flags = CU_STREAM_MEMORY_BARRIER_TYPE_SYS;
  CHECK(emu.cuStreamBatchMemOp(stream, 2, ops, 0) == CUDA_ERROR_NOT_SUPPORTED);
  EMU_OK(emu.cuStreamSynchronize(stream));
  CHECK(Download<uint32_t>(small, 1)[0] == 0);
  EMU_OK(emu.cuStreamBatchMemOp_v2(stream, 2, ops, 0));
  EMU_OK(emu.cuStreamSynchronize(stream));
  CHECK(Download<uint32_t>(small, 1)[0] == 9);
  EMU_OK(emu.cuMemFree_v2(managed));
  EMU_OK(emu.cuStreamDestroy_v2(stream));
}

}  // namespace
}  // namespace tally::emu::testing
