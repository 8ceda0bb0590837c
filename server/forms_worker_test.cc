// The background forms worker alone: jobs run in order on its thread, at its lower OS priority,
// after the thread's setup; its queue is bounded; Stop drops what is queued, waits for the job
// that runs, and refuses later jobs; the wake-up follows every job; Pause holds jobs while the
// context is reset.
#include "server/forms_worker.h"

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tally::server {
namespace {

constexpr auto kLimit = std::chrono::seconds(30);

// A job that waits until the returned promise is set (at most kLimit).
std::function<void()> Gate(std::promise<void>& release) {
  return [gate = release.get_future().share()] { gate.wait_for(kLimit); };
}

TEST_CASE("Jobs run in order at the worker's nice value, after the thread's setup") {
  std::atomic<bool> set_up{false};
  FormsWorker worker(1, 8, [&] { set_up = true; });
  std::mutex mutex;
  std::vector<int> order;
  std::promise<int> nice;
  std::promise<void> last;
  std::atomic<int> done_calls{0};
  worker.SetOnDone([&] { ++done_calls; });
  bool set_up_first = false;
  REQUIRE(worker.Submit([&] {
    set_up_first = set_up.load();
    nice.set_value(getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())));
  }));
  for (int i = 0; i < 3; ++i) {
    REQUIRE(worker.Submit([&, i] {
      std::lock_guard lock(mutex);
      order.push_back(i);
    }));
  }
  REQUIRE(worker.Submit([&] { last.set_value(); }));
  std::future<int> niced = nice.get_future();
  REQUIRE(niced.wait_for(kLimit) == std::future_status::ready);
  // Unprivileged processes may only raise it: from the test's own value, at least kNice more.
  CHECK(niced.get() >= FormsWorker::kNice);
  CHECK(set_up_first);
  REQUIRE(last.get_future().wait_for(kLimit) == std::future_status::ready);
  std::lock_guard lock(mutex);
  CHECK(order == std::vector<int>{0, 1, 2});
  worker.Stop();  // joins: the last wake-up has been made
  CHECK(done_calls.load() == 5);
}

TEST_CASE("The queue is bounded, and Stop drops it, waits for the running job and refuses more") {
  FormsWorker worker(1, 2, [] {});
  std::promise<void> release;
  std::promise<void> started;
  REQUIRE(worker.Submit([&, gate = Gate(release)] {
    started.set_value();
    gate();
  }));
  REQUIRE(started.get_future().wait_for(kLimit) == std::future_status::ready);
  std::atomic<int> ran{0};
  CHECK(worker.Submit([&] { ++ran; }));
  CHECK(worker.Submit([&] { ++ran; }));
  CHECK_FALSE(worker.Submit([&] { ++ran; }));  // two queued: full
  CHECK(worker.queued() == 2);
  std::thread stopper([&] { worker.Stop(); });
  // Stop cleared the queue at once, and waits for the gated job.
  const auto deadline = std::chrono::steady_clock::now() + kLimit;
  while (worker.queued() != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(worker.queued() == 0);
  release.set_value();
  stopper.join();
  CHECK(ran.load() == 0);
  CHECK_FALSE(worker.Submit([&] { ++ran; }));
}

TEST_CASE("Pause waits for the running job and holds the queued ones until Resume") {
  std::atomic<int> setups{0};
  FormsWorker worker(1, 8, [&] { ++setups; });
  std::promise<void> release;
  std::promise<void> started;
  std::atomic<bool> first_done{false};
  REQUIRE(worker.Submit([&, gate = Gate(release)] {
    started.set_value();
    gate();
    first_done = true;
  }));
  REQUIRE(started.get_future().wait_for(kLimit) == std::future_status::ready);
  std::promise<void> second_ran;
  REQUIRE(worker.Submit([&] { second_ran.set_value(); }));
  std::atomic<bool> paused{false};
  std::thread pauser([&] {
    worker.Pause();
    paused = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(paused.load());  // the first job still runs
  release.set_value();
  pauser.join();
  CHECK(first_done.load());
  std::future<void> second = second_ran.get_future();
  CHECK(second.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout);
  CHECK(worker.queued() == 1);
  worker.Resume();
  REQUIRE(second.wait_for(kLimit) == std::future_status::ready);
  worker.Stop();
  CHECK(setups.load() == 2);  // the context made current before each job
}

}  // namespace
}  // namespace tally::server
