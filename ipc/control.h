// The control connection: tools such as `tally-ctl` connect to the server's socket like a client
// but open with a ControlRequest instead of a Hello, get one answer on the socket and hang up.
// No segment, no session: asking the server never counts as a client. Each answer is a reply
// struct (starting with a HandshakePrefix whose size is the struct's) and `count` records.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/client_priority.h"
#include "common/device_uuid.h"
#include "ipc/handshake.h"
#include "ipc/latency_histograms.h"
#include "ipc/library_calls.h"
#include "ipc/peer_access.h"
#include "ipc/unique_fd.h"

namespace tally::ipc {

inline constexpr uint32_t kControlMagic = 0x544c5943;        // 'TLYC'
inline constexpr uint32_t kControlReplyMagic = 0x544c5954;   // 'TLYT'
inline constexpr uint32_t kMaxReportedClients = 4096;        // bounds what a reader accepts
inline constexpr uint32_t kMaxReportedProfiles = 65536;
inline constexpr uint32_t kMaxReportedGrants = 4096;
inline constexpr size_t kControlTextSize = 256;

enum class ControlKind : uint32_t {
  kStatus = 1,           // StatusReply + ClientStatus records
  kSetPriority = 2,      // PriorityReply, no records
  kProfiles = 3,         // ProfilesReply + ProfileStatus records
  kSetMemoryLimit = 4,   // LimitReply, no records
  kDrain = 5,            // DrainReply, no records
  kGrant = 6,            // GrantReply, no records
  kRevoke = 7,           // GrantReply, no records
  kSetBudget = 8,        // BudgetReply, no records
  kCodeCache = 9,        // CodeCacheReply, no records
  kClearCodeCache = 10,  // CodeCacheReply (after clearing), no records
};

inline constexpr size_t kGrantNameSize = 64;  // NUL included

// A limit that is not set (memory limits in ControlRequest and ClientStatus).
inline constexpr uint64_t kNoLimit = UINT64_MAX;

struct ControlRequest {
  HandshakePrefix prefix;  // kControlMagic
  uint32_t kind;           // ControlKind
  uint32_t reserved;
  ClientId client_id;             // kSetPriority, kSetMemoryLimit: whose
  int32_t client_priority_level;  // kSetPriority: the new level
  uint32_t reserved2;
  uint64_t memory_limit;  // kSetMemoryLimit, kGrant: device bytes, kNoLimit for none
  // kGrant: the ceiling's priority is client_priority_level, its limits memory_limit and this.
  uint64_t pinned_limit;
  char grant_name[kGrantNameSize];  // kGrant (empty: the server names it), kRevoke
  uint32_t end_clients;             // kRevoke: 1 ends the grant's clients, 0 lets them finish
  uint32_t reserved3;
  WireSlowdownBudget slowdown_budget;  // kSetBudget (client_id: whose); checked by the server
};

enum class Backend : uint32_t { kEmulator = 0, kNvidiaDriver = 1 };

// tally-server --isolation: how clients are kept out of each other's device memory.
enum class Isolation : uint32_t {
  kNone = 0,    // kernels run as they are
  kFenced = 1,  // kernels fenced into their client's partition; unfenceable ones: Unfenceable
  kStrict = 2,  // as kFenced, and modules with unfenceable code refused at load
};
// "none", "fenced", "strict"; "unknown" for a value that is none of them.
std::string_view IsolationName(Isolation isolation);

// tally-server --unfenceable: what --isolation fenced does with a launch of a kernel that cannot
// be fenced.
enum class Unfenceable : uint32_t {
  kRefuse = 0,  // fails with cudaErrorNotSupported
  kAlone = 1,   // runs while no other client holds memory on the device
};
// "refuse", "alone"; "unknown" for a value that is neither.
std::string_view UnfenceableName(Unfenceable unfenceable);

// The answer to kStatus, followed by client_count ClientStatus records.
// What the scheduler did for the clients that have left the server, and their library calls,
// summed over them (the counters of ClientStatus of the same names).
struct DepartedStatus {
  uint64_t clients;
  uint64_t kernels_original;
  uint64_t kernels_sliced;
  uint64_t slices;
  uint64_t kernels_preemptible;
  uint64_t kernels_preempted;
  uint64_t preemptions;
  uint64_t resumes;
  uint64_t risky_launches;
  uint64_t unfit_launches;
  LibraryCalls library_calls;
  LibraryCalls vendor_library_calls;
  uint64_t faulted_clients;  // of them, those whose CUDA context had a sticky error
};

// What the server's module registry did since it started (server/module_registry.h,
// ModuleCounters): registrations answered with a module, kernels of the images parsed (their
// names and parameter layouts), kernels whose transformed forms were made (each once the
// scheduler first wanted one, or its whole module's at the parse where they share module state or
// are fenced) and the transformed forms loaded on the device; of the kernels made one by one, those
// queued for the background worker and those it finished, and the launches the dispatcher held
// until their kernel's forms were made.
struct ModuleStatus {
  uint64_t modules_registered;
  uint64_t kernels_indexed;
  uint64_t kernels_transformed;
  uint64_t forms_loaded;
  uint64_t forms_queued;
  uint64_t forms_made;
  uint64_t forms_waited;
};

// The machine code of modules with PTX in the code cache (server/machine_code.h), since the server
// started: linked by the driver and stored, loaded from the cache, refused by the driver when
// loaded from it (linked again), and PTX the linker refused (loaded as PTX, never cached); and the
// links queued or running on the server's filler now.
struct MachineCodeStatus {
  uint64_t linked;
  uint64_t loaded;
  uint64_t refused;
  uint64_t link_failed;
  uint64_t filling;
};

// The server's code cache (server/code_cache.h): its folder now and its counters since the server
// started.
struct CodeCacheStatus {
  uint32_t enabled;  // 0: --code-cache none (or the default folder could not be used)
  uint32_t reserved;
  uint64_t entries;
  uint64_t bytes;
  uint64_t limit_bytes;
  uint64_t hits;
  uint64_t misses;
  uint64_t stored;
  uint64_t evicted;
  uint64_t corrupt;  // entries found damaged or of another key, and removed
  MachineCodeStatus machine_code;
  char dir[kControlTextSize];  // NUL-terminated
};

struct StatusReply {
  HandshakePrefix prefix;  // kControlReplyMagic; size = sizeof(StatusReply)
  int32_t server_pid;
  uint32_t backend;  // Backend
  uint32_t client_count;
  Isolation isolation;
  uint32_t grant_count;  // GrantStatus records after the clients'
  Unfenceable unfenceable;  // meaningful under Isolation::kFenced
  // Faults of the device context every client shares (NVIDIA's driver) since the server
  // started; each was recovered from by resetting the context.
  uint64_t context_faults;
  uint64_t total_memory;  // bytes on the device
  uint64_t free_memory;   // cuMemGetInfo at the time of the answer
  char device_name[kControlTextSize];          // NUL-terminated
  char backend_description[kControlTextSize];  // NUL-terminated: which library and why
  int32_t device_ordinal;                      // on the driver (tally-server --device)
  uint8_t device_uuid[16];                     // cuDeviceGetUuid
  uint32_t max_clients;                        // tally-server --max-clients, now
  uint32_t draining;                           // 1 after tally-ctl drain: no new clients
  uint32_t admission_waiting;  // clients waiting for memory (tally-server --admission wait)
  DepartedStatus departed;
  ClassLatencies latencies[kPriorityClassCount];  // since the server started, by PriorityClass
  ModuleStatus modules;
  // Nanoseconds since the server started during which a kernel or library call of a client
  // above best-effort was on the device (at least one; overlapping ones count once): a counter.
  uint64_t high_busy_ns;
  CodeCacheStatus code_cache;
};

struct ClientStatus {
  ClientId client_id;
  int32_t pid;
  WireClientPriority client_priority;  // its level is what the scheduler uses
  // 1 once a fenced kernel of it reached outside its memory (its calls then fail with
  // cudaErrorIllegalAddress), else 0.
  uint32_t fence_violated;
  uint64_t memory_bytes;     // device memory the client has allocated and not freed
  uint64_t allocations;      // how many allocations that is
  uint64_t memory_limit;     // the most memory_bytes may reach; kNoLimit for none
  uint64_t pinned_bytes;     // page-locked host memory registered for it
  uint64_t pinned_limit;     // the most pinned_bytes may reach; kNoLimit for none
  uint64_t streams;          // besides its default stream
  uint64_t events;
  uint64_t modules;
  uint64_t queued_commands;  // stream work accepted but not yet issued to the device
  // What the scheduler did for it (server/scheduling_stats.h).
  uint64_t kernels_original;
  uint64_t kernels_sliced;
  uint64_t slices;
  uint64_t kernels_preemptible;
  uint64_t kernels_preempted;
  uint64_t preemptions;
  uint64_t resumes;
  uint64_t risky_launches;
  uint64_t unfit_launches;  // run in their original form: no transformed form fits the launch
  uint64_t held_ns;
  uint64_t preemption_latency_ns_total;
  uint64_t preemption_latency_ns_max;
  uint64_t preemption_latencies;
  // Its calls of cuBLAS, cuBLASLt and cuDNN served by Tally's own kernels (libraries/), counted
  // at their first kernel launch: a call that launched nothing is not among them.
  LibraryCalls library_calls;
  // Its calls run in the vendor library inside the server (ipc/vendor_calls.h), counted when
  // the server queued them.
  LibraryCalls vendor_library_calls;
  // Launches refused because the kernel cannot be fenced (--isolation fenced|strict; under
  // --unfenceable alone: those that waited too long to run alone).
  uint64_t unfenced_refused;
  // --unfenceable alone: launches of unfenceable kernels that ran alone, and those waiting now
  // for the other clients' memory to go (0 or 1: the queue's head).
  uint64_t unfenced_alone;
  uint64_t unfenced_waiting;
  // Its sticky error (a CUresult: a kernel of it faulted, it reached outside its fence, or the
  // shared context faulted); 0 while it has none.
  uint32_t sticky_error;
  uint32_t reserved_fault;
  char command[kCommandSize];  // NUL-terminated
  char grant[kGrantNameSize];  // the grant it connected through; empty: the server's socket
  // Its slowdown budget (its own, else the server's default; used by `priority-budget`), and
  // the policy's latest measured slowdown of its kernels at the budget's percentile (0.12: 12%
  // longer than alone; negative while unmeasured).
  WireSlowdownBudget slowdown_budget;
  double measured_slowdown;
};

// A grant (tally-ctl grant): a socket of its own whose clients get its ceiling.
struct GrantStatus {
  char name[kGrantNameSize];      // NUL-terminated
  char socket[kControlTextSize];  // NUL-terminated
  int32_t client_priority_level;  // the most a client of it gets
  uint32_t clients;               // connected through it now
  uint64_t memory_limit;          // kNoLimit for none
  uint64_t pinned_limit;
};

// What a grant's socket (tally-ctl grant) fixes for every client that connects through it,
// whatever the client asks: its priority at most `max_priority` (a client that asks nothing
// gets it, one that asks less gets what it asks) and its limits at most these.
struct ClientCeiling {
  std::string grant;
  ClientPriority max_priority = ClientPriority::Unset();
  uint64_t memory_limit = kNoLimit;
  uint64_t pinned_limit = kNoLimit;
};

// The answer to kGrant and kRevoke.
struct GrantReply {
  HandshakePrefix prefix;          // kControlReplyMagic; size = sizeof(GrantReply)
  uint32_t ok;                     // 0: refused, the message says why
  uint32_t clients;                // kRevoke: the grant's clients when it was revoked
  GrantStatus grant;               // the grant made or revoked
  char message[kControlTextSize];  // NUL-terminated: what happened
};

// The answer to kSetPriority.
struct PriorityReply {
  HandshakePrefix prefix;          // kControlReplyMagic; size = sizeof(PriorityReply)
  uint32_t found;                  // 0: no client with that id
  int32_t client_priority_level;   // the client's level now
  char message[kControlTextSize];  // NUL-terminated: what happened
};

// The answer to kSetBudget.
struct BudgetReply {
  HandshakePrefix prefix;  // kControlReplyMagic; size = sizeof(BudgetReply)
  uint32_t found;          // 0: no client with that id, or the budget was refused
  uint32_t reserved;
  WireSlowdownBudget slowdown_budget;  // the client's budget now
  char message[kControlTextSize];      // NUL-terminated: what happened
};

// The answer to kSetMemoryLimit.
struct LimitReply {
  HandshakePrefix prefix;  // kControlReplyMagic; size = sizeof(LimitReply)
  uint32_t found;          // 0: no client with that id
  uint32_t reserved;
  uint64_t memory_limit;           // the client's limit now (kNoLimit for none)
  uint64_t memory_bytes;           // what it has allocated now
  char message[kControlTextSize];  // NUL-terminated: what happened
};

// The answer to kDrain: the server takes no new clients from now on and exits once the last
// connected one has left.
struct DrainReply {
  HandshakePrefix prefix;  // kControlReplyMagic; size = sizeof(DrainReply)
  uint32_t clients;        // connected when the request arrived
  uint32_t reserved;
  char message[kControlTextSize];  // NUL-terminated: what happens now
};

// The answer to kCodeCache and kClearCodeCache.
struct CodeCacheReply {
  HandshakePrefix prefix;  // kControlReplyMagic; size = sizeof(CodeCacheReply)
  uint32_t ok;             // 0: the cache could not be cleared, or there is none; message: why
  uint32_t reserved;
  CodeCacheStatus cache;           // after clearing, for kClearCodeCache
  char message[kControlTextSize];  // NUL-terminated: what happened
};

// The answer to kProfiles, followed by `count` ProfileStatus records.
struct ProfilesReply {
  HandshakePrefix prefix;  // kControlReplyMagic; size = sizeof(ProfilesReply)
  uint32_t count;
  uint32_t reserved;
};

// One launch configuration the profiler knows (profiler/profiler.h, ProfileRecord).
struct ProfileStatus {
  KernelId kernel;  // identity: module content and kernel name
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_bytes;
  uint32_t form;  // scheduler::FormKind of the chosen form
  uint32_t slices;
  uint32_t workers;
  uint32_t complete;          // every candidate measured
  uint32_t short_turnaround;  // the chosen form may run beside more important clients
  uint32_t candidates;
  uint32_t measured;  // candidates measured
  uint32_t reserved;
  int64_t original_ns;                 // -1 while unknown
  int64_t turnaround_ns;               // of the chosen form; -1 while unknown
  double normalized_speed;             // of the chosen form; -1 while unknown
  char kernel_name[kControlTextSize];  // NUL-terminated; empty while unknown
};

static_assert(std::is_trivially_copyable_v<ControlRequest> &&
              std::is_standard_layout_v<ControlRequest>);
static_assert(std::is_trivially_copyable_v<StatusReply> && std::is_standard_layout_v<StatusReply>);
static_assert(std::is_trivially_copyable_v<ClientStatus> &&
              std::is_standard_layout_v<ClientStatus>);
static_assert(std::is_trivially_copyable_v<PriorityReply> &&
              std::is_standard_layout_v<PriorityReply>);
static_assert(std::is_trivially_copyable_v<BudgetReply> && std::is_standard_layout_v<BudgetReply>);
static_assert(std::is_trivially_copyable_v<LimitReply> && std::is_standard_layout_v<LimitReply>);
static_assert(std::is_trivially_copyable_v<DrainReply> && std::is_standard_layout_v<DrainReply>);
static_assert(std::is_trivially_copyable_v<GrantReply> && std::is_standard_layout_v<GrantReply>);
static_assert(std::is_trivially_copyable_v<CodeCacheReply> &&
              std::is_standard_layout_v<CodeCacheReply>);
static_assert(std::is_trivially_copyable_v<ProfilesReply> &&
              std::is_standard_layout_v<ProfilesReply>);
static_assert(std::is_trivially_copyable_v<ProfileStatus> &&
              std::is_standard_layout_v<ProfileStatus>);

// The server's end of a control connection, as Listener::AcceptAny returns it.
class ControlConnection {
 public:
  ControlConnection(UniqueFd socket, const ControlRequest& request, pid_t pid, uid_t uid)
      : socket_(std::move(socket)), request_(request), pid_(pid), uid_(uid) {}
  ControlKind kind() const { return static_cast<ControlKind>(request_.kind); }
  const ControlRequest& request() const { return request_; }
  pid_t pid() const { return pid_; }
  uid_t uid() const { return uid_; }
  int socket() const { return socket_.get(); }
  // The answers (prefix and counts are filled in here). Bounded in time: a peer that does not
  // read cannot hold the caller.
  absl::Status SendStatus(StatusReply reply, std::span<const ClientStatus> clients,
                          std::span<const GrantStatus> grants);
  absl::Status SendGrant(GrantReply reply);
  absl::Status SendPriority(PriorityReply reply);
  absl::Status SendLimit(LimitReply reply);
  absl::Status SendBudget(BudgetReply reply);
  absl::Status SendDrain(DrainReply reply);
  absl::Status SendCodeCache(CodeCacheReply reply);
  absl::Status SendProfiles(std::span<const ProfileStatus> profiles);

 private:
  absl::Status Send(std::span<const std::byte> bytes);

  UniqueFd socket_;
  ControlRequest request_;
  pid_t pid_;
  uid_t uid_;
};

// The device's UUID a status reply carries.
DeviceUuid DeviceUuidOf(const StatusReply& reply);

// Copies `text` into a fixed NUL-terminated field, truncating it.
void CopyText(const std::string& text, char* field, size_t field_size);

struct StatusReport {
  StatusReply server;
  std::vector<ClientStatus> clients;
  std::vector<GrantStatus> grants;
};

// Asks the server on `path` for its status. Unavailable (naming the path) when no server
// answers there; FailedPrecondition for another protocol version.
absl::StatusOr<StatusReport> QueryStatus(const std::string& path,
                                         absl::Duration timeout = absl::Seconds(5),
                                         const ServerTrust& trust = ServerTrust());
// Sets a client's priority level (tally-ctl priority); the reply says whether it exists.
absl::StatusOr<PriorityReply> SetClientPriority(const std::string& path, ClientId client_id,
                                                int32_t priority,
                                                absl::Duration timeout = absl::Seconds(5),
                                                const ServerTrust& trust = ServerTrust());
// Sets a client's slowdown budget (tally-ctl budget); the reply says whether the server took it.
absl::StatusOr<BudgetReply> SetClientBudget(const std::string& path, ClientId client_id,
                                            const SlowdownBudget& budget,
                                            absl::Duration timeout = absl::Seconds(5),
                                            const ServerTrust& trust = ServerTrust());
// Sets a client's device-memory limit (tally-ctl limit; kNoLimit removes it); the reply says
// whether the client exists.
absl::StatusOr<LimitReply> SetClientMemoryLimit(const std::string& path, ClientId client_id,
                                                uint64_t memory_limit,
                                                absl::Duration timeout = absl::Seconds(5),
                                                const ServerTrust& trust = ServerTrust());
// Drains the server (tally-ctl drain): it takes no new clients and exits when the last leaves.
absl::StatusOr<DrainReply> DrainServer(const std::string& path,
                                       absl::Duration timeout = absl::Seconds(5),
                                       const ServerTrust& trust = ServerTrust());
// The server's code cache (tally-ctl cache), cleared first with `clear` (tally-ctl cache clear).
absl::StatusOr<CodeCacheReply> QueryCodeCache(const std::string& path, bool clear,
                                              absl::Duration timeout = absl::Seconds(5),
                                              const ServerTrust& trust = ServerTrust());
// Makes a grant (tally-ctl grant; an empty name lets the server choose one); the reply says
// whether the server made it, and where its socket is.
absl::StatusOr<GrantReply> MakeGrant(const std::string& path, const ClientCeiling& terms,
                                     absl::Duration timeout = absl::Seconds(5),
                                     const ServerTrust& trust = ServerTrust());
// Revokes the grant NAME (tally-ctl revoke), ending its clients or letting them finish.
absl::StatusOr<GrantReply> RevokeGrant(const std::string& path, const std::string& name,
                                       bool end_clients, absl::Duration timeout = absl::Seconds(5),
                                       const ServerTrust& trust = ServerTrust());
// What the server's profiler knows (tally-ctl profiles).
absl::StatusOr<std::vector<ProfileStatus>> QueryProfiles(const std::string& path,
                                                         absl::Duration timeout = absl::Seconds(5),
                                                         const ServerTrust& trust = ServerTrust());

}  // namespace tally::ipc
