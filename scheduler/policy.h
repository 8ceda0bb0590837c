// The scheduling policy interface: given the heads of the clients' non-empty command queues,
// decide whose command the device gets next. Pure: no clock, device or threads of its own, so
// the same policy runs in tally-server and in tests with fake inputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

namespace tally::scheduler {

// What a policy sees of one client queue.
struct QueueHead {
  uint64_t client_id = 0;
  int32_t priority = 0;  // higher is more important (TALLY_PRIORITY)
  uint64_t arrival = 0;  // server-wide enqueue order of the head command
  size_t depth = 0;      // commands queued, head included
};

// The form in which a kernel launch runs (ARCHITECTURE.md, "Transformations").
enum class FormKind : uint8_t { kOriginal, kSliced, kPreemptible };

struct LaunchForm {
  FormKind kind = FormKind::kOriginal;
  uint32_t slices = 0;   // kSliced: consecutive pieces of the grid, launched in order
  uint32_t workers = 0;  // kPreemptible: worker blocks; 0 for as many as can be resident
  bool preempt = false;  // kPreemptible: stopped at random moments and resumed (validation)
  friend bool operator==(const LaunchForm&, const LaunchForm&) = default;
};

// What a policy sees of a kernel launch when it chooses the form.
struct LaunchInfo {
  uint64_t client_id = 0;
  int32_t priority = 0;
  bool sliceable = false;    // the kernel has a sliced form
  bool preemptible = false;  // the kernel has a PTB form
};

class Policy {
 public:
  virtual ~Policy() = default;
  // An index into `queues` (every one non-empty), or nullopt to issue nothing now.
  virtual std::optional<size_t> PickNext(std::span<const QueueHead> queues) = 0;

  // The form of a kernel launch about to be issued: one the kernel has, else kOriginal.
  virtual LaunchForm ChooseForm(const LaunchInfo& launch) {
    static_cast<void>(launch);
    return {};
  }
  // Whether ChooseForm can pick transformed forms: only then does the server build them.
  virtual bool UsesTransformedForms() const { return false; }
};

// Commands in server-wide arrival order, whatever their client or priority.
std::unique_ptr<Policy> MakeFifoPolicy();

// Validation mode (tally-server --validate): FIFO order, and every kernel that has `form` runs
// in it, so that operators can check their programs under Tally's transformations.
std::unique_ptr<Policy> MakeValidationPolicy(LaunchForm form);

}  // namespace tally::scheduler
