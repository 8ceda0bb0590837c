// tally-server: accepts clients on the Unix socket and serves each on its own thread until it
// disconnects, while one dispatcher issues all clients' device work. Stops on SIGINT/SIGTERM.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ipc/connection.h"
#include "ipc/cuda_calls.h"
#include "profiler/profiler.h"
#include "server/admission_queue.h"
#include "server/backend/backend.h"
#include "server/dispatcher.h"
#include "server/grants.h"
#include "server/module_registry.h"
#include "server/options.h"
#include "server/service_notify.h"
#include "server/session.h"
#include "server/session_registry.h"

namespace tally::server {

// The device's properties as clients receive them (GetDeviceInfo).
absl::StatusOr<ipc::GetDeviceInfoResponse> QueryDeviceInfo(const Backend& backend);

class Server {
 public:
  // The options read again (the command line and the --config file), on SIGHUP.
  using Reread = std::function<absl::StatusOr<ServerOptions>()>;

  // Loads the backend and listens. SIGINT, SIGTERM and SIGHUP must already be blocked in every
  // thread (main does it first thing), so that Serve receives them through a signalfd.
  static absl::StatusOr<std::unique_ptr<Server>> Create(const ServerOptions& options,
                                                        Reread reread = {});
  ~Server();

  // Serves until SIGINT/SIGTERM, then ends every session (freeing what clients owned). On SIGHUP
  // it rereads its options and applies what can change while it runs (Reload).
  absl::Status Serve();

 private:
  // A peer's thread: its handshake, then its session or the answer to its control request.
  struct PeerThread {
    std::thread thread;
    std::atomic<bool> done{false};
  };

  Server(Backend backend, ipc::GetDeviceInfoResponse device_info, ipc::Listener listener,
         std::unique_ptr<Grants> grants, std::unique_ptr<profiler::Profiler> profiler,
         std::shared_ptr<CodeCache> code_cache, bool build_forms, const ServerOptions& options,
         Reread reread);
  // The dispatcher and what sessions share, once the backend is where it stays.
  absl::Status Start(std::unique_ptr<scheduler::Policy> policy, const SessionLimits& limits);
  // On the accepting thread: the next peer of the server's socket (grant null) or of a grant's,
  // whose conversation then runs on a thread of its own.
  void AcceptPeer(std::shared_ptr<Grant> grant);
  // Runs on the peer's own thread, so that a peer that is slow to speak holds no one else up.
  // `grant`: the grant whose socket it came through, or null.
  void Converse(ipc::PendingPeer peer, const std::shared_ptr<Grant>& grant);
  void Serve(std::unique_ptr<ipc::ServerConnection> connection, Grant* grant);
  // Admission (the handshake's, on the peer's thread): a place among --max-clients ("") or why
  // not; then, under --admission wait, the client's memory (AdmissionQueue).
  std::string TakeClientPlace();
  std::string AwaitMemory(const ipc::ClientInfo& client, const ipc::AdmissionWait& wait);
  // Device memory neither allocated by the connected clients nor promised to them (their
  // memory limits), as --admission wait counts it.
  uint64_t UnpromisedMemory();
  // Forgets the memory promised to a client admitted by --admission wait (none: nothing).
  void SettlePromise(ClientId client);
  void AnswerControl(ipc::ControlConnection& control);
  void AnswerStatus(ipc::ControlConnection& control);
  void AnswerPriority(ipc::ControlConnection& control);
  void AnswerMemoryLimit(ipc::ControlConnection& control);
  void AnswerBudget(ipc::ControlConnection& control);
  void AnswerProfiles(ipc::ControlConnection& control);
  void AnswerDrain(ipc::ControlConnection& control);
  // kCodeCache and kClearCodeCache.
  void AnswerCodeCache(ipc::ControlConnection& control);
  void AnswerGrant(ipc::ControlConnection& control);
  void AnswerRevoke(ipc::ControlConnection& control);
  void JoinFinishedClients();
  // On the accepting thread, every few seconds: the profiler's cache follows its measurements.
  void SaveProfilesNowAndThen();
  // On the accepting thread: WATCHDOG=1 to systemd while the dispatcher makes its rounds.
  void FeedWatchdog();
  // On the accepting thread, on SIGHUP: the options read again; the settings that can change
  // while the server runs take their new values (the limits for clients that connect later),
  // and the log says what changed and what waits for a restart.
  void Reload();
  // The settings in effect (any thread).
  ServerOptions Settings() const;

  Backend backend_;
  ipc::GetDeviceInfoResponse device_info_;
  std::unique_ptr<profiler::Profiler> profiler_;  // with a policy that shapes kernels
  const Reread reread_;
  mutable std::mutex settings_mutex_;
  ServerOptions settings_;  // under settings_mutex_; Reload changes the reloadable ones
  ModuleRegistry modules_;
  SessionRegistry sessions_;
  // Where a fault poisons the context every client shares (Backend::FaultsAreShared).
  std::unique_ptr<ContextFaults> faults_;
  // Set by Start; its library runs calls on the dispatch thread, so it outlives the dispatcher.
  VendorLibraries vendor_;
  // --unfenceable alone (set by Start): used by the dispatcher and the sessions.
  std::unique_ptr<UnfencedGate> unfenced_gate_;
  std::unique_ptr<Dispatcher> dispatcher_;  // set by Start
  std::unique_ptr<ServerContext> context_;  // set by Start
  ipc::Listener listener_;
  const std::unique_ptr<Grants> grants_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> draining_{false};  // tally-ctl drain: no new clients; exit after the last
  std::atomic<int> handshakes_{0};  // peers whose handshake is under way
  std::atomic<int> abandoned_{0};   // sessions whose work outlived the teardown timeout
  std::atomic<int> clients_{0};     // admitted, session not yet ended
  std::unique_ptr<AdmissionQueue> admission_;  // under --admission wait
  std::mutex promises_mutex_;
  // Memory of clients the queue admitted whose sessions do not count it yet.
  absl::flat_hash_map<ClientId, uint64_t> promises_;
  std::list<PeerThread> peers_;     // the accept loop's thread only
  std::chrono::steady_clock::time_point profiles_saved_ = std::chrono::steady_clock::now();
  const ServiceNotifier notifier_ = ServiceNotifier::FromEnvironment();
  std::chrono::steady_clock::time_point watchdog_fed_;
};

}  // namespace tally::server
