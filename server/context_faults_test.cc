// A fault of the shared context: who gets which error, who waits, and when the reset is due.
#include "server/context_faults.h"

#include <catch2/catch.hpp>

#include <thread>

namespace tally::server {
namespace {

using namespace std::chrono_literals;

const ClientId kCulprit(2);
const ClientId kBystander(1);

TEST_CASE("Only the errors that leave a CUDA context unusable poison it") {
  for (CUresult poison : {CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_MISALIGNED_ADDRESS,
                          CUDA_ERROR_ASSERT, CUDA_ERROR_HARDWARE_STACK_ERROR,
                          CUDA_ERROR_ILLEGAL_INSTRUCTION, CUDA_ERROR_LAUNCH_FAILED,
                          CUDA_ERROR_INVALID_PC, CUDA_ERROR_INVALID_ADDRESS_SPACE,
                          CUDA_ERROR_LAUNCH_TIMEOUT}) {
    CHECK(ContextFaults::Poisons(poison));
  }
  for (CUresult other : {CUDA_SUCCESS, CUDA_ERROR_NOT_READY, CUDA_ERROR_INVALID_VALUE,
                         CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_INVALID_HANDLE}) {
    CHECK_FALSE(ContextFaults::Poisons(other));
  }
  ContextFaults faults(1s);
  faults.Observe(CUDA_ERROR_INVALID_VALUE);
  CHECK_FALSE(faults.faulted());
}

TEST_CASE("The culprits get the fault's error, the other clients of the context 'unavailable'") {
  ContextFaults faults(1h);
  int wakes = 0;
  faults.set_wake([&] { ++wakes; });
  const uint64_t generation = *faults.Join(ContextFaults::Clock::now());
  faults.Join(ContextFaults::Clock::now());
  CHECK(faults.ErrorFor(kCulprit, generation) == CUDA_SUCCESS);
  faults.Observe(CUDA_ERROR_ILLEGAL_ADDRESS);
  faults.Observe(CUDA_ERROR_ASSERT);  // the first fault is the context's
  CHECK(faults.faulted());
  CHECK(wakes == 1);
  CHECK(faults.AttributionPending());
  CHECK_FALSE(faults.ResetDue());
  // A client that asks first waits for the attribution.
  CUresult culprit_error = CUDA_SUCCESS;
  std::thread asker([&] { culprit_error = faults.ErrorFor(kCulprit, generation); });
  std::this_thread::sleep_for(20ms);
  faults.Attribute({kCulprit});
  asker.join();
  CHECK(culprit_error == CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK(faults.ErrorFor(kBystander, generation) == CUDA_ERROR_DEVICE_UNAVAILABLE);
  CHECK_FALSE(faults.AttributionPending());
  // A driver error the bystander saw becomes its own answer; other errors pass unchanged.
  const ContextFaultView bystander{&faults, kBystander, generation, nullptr};
  CHECK(bystander.Answer(CUDA_ERROR_ILLEGAL_ADDRESS) == CUDA_ERROR_DEVICE_UNAVAILABLE);
  CHECK(bystander.Answer(CUDA_ERROR_INVALID_VALUE) == CUDA_ERROR_INVALID_VALUE);
  CHECK(ContextFaultView{}.Answer(CUDA_ERROR_ILLEGAL_ADDRESS) == CUDA_ERROR_ILLEGAL_ADDRESS);
}

TEST_CASE("New clients wait for the reset, which is due once the faulted context's clients left") {
  ContextFaults faults(1h);
  const uint64_t old_generation = *faults.Join(ContextFaults::Clock::now());
  faults.Observe(CUDA_ERROR_LAUNCH_FAILED);
  faults.Attribute({});
  // Nobody can join a faulted context.
  CHECK_FALSE(faults.Join(ContextFaults::Clock::now() + 10ms).has_value());
  std::optional<uint64_t> joined;
  std::thread newcomer([&] { joined = faults.Join(ContextFaults::Clock::now() + 10s); });
  CHECK_FALSE(faults.ResetDue());
  faults.Leave(old_generation);
  CHECK(faults.ResetDue());
  faults.Recovered();
  newcomer.join();
  REQUIRE(joined.has_value());
  CHECK(*joined == old_generation + 1);
  CHECK_FALSE(faults.faulted());
  CHECK_FALSE(faults.ResetDue());
  CHECK(faults.ErrorFor(kCulprit, *joined) == CUDA_SUCCESS);
  // A new fault is the new generation's.
  faults.Observe(CUDA_ERROR_ILLEGAL_ADDRESS);
  faults.Attribute({kCulprit});
  CHECK(faults.ErrorFor(kCulprit, *joined) == CUDA_ERROR_ILLEGAL_ADDRESS);
}

TEST_CASE("Clients of a faulted context are disconnected after the grace period") {
  ContextFaults faults(1h);
  const auto now = [] { return ContextFaults::Clock::now(); };
  const uint64_t generation = *faults.Join(now());
  CHECK_FALSE(faults.Evicted(generation, now() + 2h));  // no fault
  faults.Observe(CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK_FALSE(faults.Evicted(generation, now()));  // within the grace period
  CHECK(faults.Evicted(generation, now() + 1h));   // at its end
  CHECK_FALSE(faults.Evicted(generation + 1, now() + 2h));  // only the faulted generation
  faults.Attribute({});
  faults.Leave(generation);
  faults.Recovered();
  CHECK_FALSE(faults.Evicted(generation, now() + 2h));
}

}  // namespace
}  // namespace tally::server
