// The CRI calls' worker pools (shim/dispatch/): lanes, bounded queues, refusals, shutdown,
// idle workers leaving.
#include "shim/dispatch/dispatcher.h"

#include <gmock/gmock.h>
#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "api/cri.h"

namespace shim::dispatch {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// What the tests hand the dispatcher: counts its runs, waits at `gate` while running
// when given one, remembers its refusal; answered at once when AnswerAtOnce() was called.
class TestCall final : public Call {
 public:
  explicit TestCall(absl::Notification* gate = nullptr, absl::Time deadline = absl::InfiniteFuture())
      : gate_(gate), deadline_(deadline) {}

  absl::Time deadline() const override { return deadline_; }
  bool cancelled() const override { return cancelled_; }
  bool AnsweredAtOnce() override {
    if (!at_once_) return false;
    answering_thread_ = std::this_thread::get_id();
    ++answers_at_once_;
    done_.Notify();
    return true;
  }
  void Run() override {
    running_thread_ = std::this_thread::get_id();
    started_.Notify();
    if (gate_) gate_->WaitForNotification();
    ++runs_;
    done_.Notify();
  }
  void Refuse(const absl::Status& why) override {
    refusal_ = why;
    done_.Notify();
  }

  void Cancel() { cancelled_ = true; }
  void AnswerAtOnce() { at_once_ = true; }
  int answers_at_once() const { return answers_at_once_; }
  std::thread::id answering_thread() const { return answering_thread_; }
  bool AwaitStarted(absl::Duration timeout = absl::Seconds(5)) {
    return started_.WaitForNotificationWithTimeout(timeout);
  }
  bool AwaitDone(absl::Duration timeout = absl::Seconds(5)) { return done_.WaitForNotificationWithTimeout(timeout); }
  bool HasEnded() const { return done_.HasBeenNotified(); }
  int runs() const { return runs_; }
  const std::optional<absl::Status>& refusal() const { return refusal_; }
  std::thread::id running_thread() const { return running_thread_; }

 private:
  absl::Notification* const gate_;
  const absl::Time deadline_;
  std::atomic<bool> cancelled_{false};
  bool at_once_ = false;
  std::atomic<int> runs_{0}, answers_at_once_{0};
  std::thread::id answering_thread_;
  std::optional<absl::Status> refusal_;
  std::thread::id running_thread_;
  absl::Notification started_, done_;
};

Limits Small(int workers, std::size_t queued, absl::Duration max_idle = absl::Seconds(60)) {
  Limits limits;
  for (LaneLimits& l : limits) l = {workers, queued, max_idle};
  return limits;
}

// This process's threads named `name`, as the kernel (and a leak check) sees them.
int ThreadsNamed(const std::string& name) {
  int count = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");  // gone if the thread just ended
    std::string line;
    if (std::getline(comm, line) && line == name) ++count;
  }
  return count;
}

// Waits up to 10 s for ThreadsNamed(name) to be at most `want`; returns the last count.
int AwaitThreadsNamedAtMost(const std::string& name, int want) {
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  int count = ThreadsNamed(name);
  while (count > want && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(10));
    count = ThreadsNamed(name);
  }
  return count;
}

// Submits `n` calls waiting at `gate` and waits until all run.
std::vector<std::unique_ptr<TestCall>> Busy(Dispatcher& dispatcher, Lane lane, int n, absl::Notification& gate) {
  std::vector<std::unique_ptr<TestCall>> calls;
  for (int i = 0; i < n; ++i) {
    calls.push_back(std::make_unique<TestCall>(&gate));
    dispatcher.Submit(lane, *calls.back());
  }
  for (auto& call : calls) EXPECT_TRUE(call->AwaitStarted());
  return calls;
}

TEST(LanesTest, EveryRpcOfBothServicesHasALaneButTheEventsStream) {
  std::vector<std::string> missing;
  for (const char* service_name : {"runtime.v1.RuntimeService", "runtime.v1.ImageService"}) {
    const google::protobuf::ServiceDescriptor* service =
        google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(service_name);
    ASSERT_NE(service, nullptr) << service_name;
    for (int i = 0; i < service->method_count(); ++i) {
      const std::string& name = service->method(i)->name();
      if (name == "GetContainerEvents") {
        EXPECT_FALSE(LaneOf(name)) << "the events stream runs on no worker";
      } else if (!LaneOf(name)) {
        missing.push_back(name);
      }
    }
  }
  EXPECT_THAT(missing, ::testing::IsEmpty());
  EXPECT_FALSE(LaneOf("NoSuchRpc"));
}

TEST(LanesTest, ShortCallsNeverShareALaneWithCallsThatWaitOnContainersOrRegistries) {
  EXPECT_EQ(LaneOf("Version"), Lane::kHealth);
  EXPECT_EQ(LaneOf("Status"), Lane::kHealth);
  for (const char* name : {"ListPodSandbox", "PodSandboxStatus", "ListContainers", "ContainerStatus", "ImageStatus",
                           "ListContainerStats"})
    EXPECT_EQ(LaneOf(name), Lane::kShort) << name;
  EXPECT_EQ(LaneOf("RunPodSandbox"), Lane::kLifecycle);
  EXPECT_EQ(LaneOf("StopContainer"), Lane::kProcess);
  EXPECT_EQ(LaneOf("ExecSync"), Lane::kProcess);
  EXPECT_EQ(LaneOf("PullImage"), Lane::kPull);
}

TEST(LanesTest, OnlyTheKubeletsPollsThatMemoryAnswersAreTriedAtOnce) {
  for (const char* name : {"Version", "ListPodSandbox", "PodSandboxStatus", "ListContainers", "ContainerStatus"}) {
    EXPECT_TRUE(TriedAtOnce(name)) << name;
    // A call tried at once falls back to a lane that never waits on containers.
    EXPECT_THAT(LaneOf(name), ::testing::AnyOf(Lane::kHealth, Lane::kShort)) << name;
  }
  // Status pings Docker every time; the rest change things or read files and Docker.
  for (const char* name : {"Status", "ListContainerStats", "ImageFsInfo", "RunPodSandbox", "StopContainer",
                           "ExecSync", "PullImage", "StreamContainers", "GetContainerEvents"})
    EXPECT_FALSE(TriedAtOnce(name)) << name;
}

TEST(LanesTest, EveryPodOfAFullNodeCanWaitOutItsGracePeriodAtOnce) {
  // A drain of a node with maxPods raised to 250: every StopContainer sleeps through
  // its pod's grace period on a worker of its own, not in rounds of grace periods.
  EXPECT_GE(DefaultLimits()[static_cast<std::size_t>(Lane::kProcess)].workers, 250);
}

TEST(DispatcherTest, RunsACallOnAWorkerThread) {
  Dispatcher dispatcher(Small(2, 4));
  TestCall call;
  dispatcher.Submit(Lane::kShort, call);
  ASSERT_TRUE(call.AwaitDone());
  EXPECT_EQ(call.runs(), 1);
  EXPECT_FALSE(call.refusal());
  EXPECT_NE(call.running_thread(), std::this_thread::get_id());
}

TEST(DispatcherTest, ACallAnsweredAtOnceIsAnsweredOnTheSubmittingThreadWithoutAWorker) {
  int after = 0;
  Dispatcher dispatcher(Small(2, 4), [&] { ++after; });
  TestCall call;
  call.AnswerAtOnce();
  dispatcher.Submit(Lane::kShort, call);
  EXPECT_TRUE(call.HasEnded()) << "answered before Submit returned";
  EXPECT_EQ(call.answers_at_once(), 1);
  EXPECT_EQ(call.runs(), 0);
  EXPECT_FALSE(call.refusal());
  EXPECT_EQ(call.answering_thread(), std::this_thread::get_id());
  EXPECT_EQ(ThreadsNamed("cri-short"), 0) << "no worker started for it";
  EXPECT_EQ(after, 1) << "the hook notes the end of every call, this one too";
}

TEST(DispatcherTest, ACallThatCannotBeAnsweredAtOnceRunsOnAWorkerAsAnyOther) {
  Dispatcher dispatcher(Small(2, 4));
  TestCall call;  // AnsweredAtOnce says no
  dispatcher.Submit(Lane::kShort, call);
  ASSERT_TRUE(call.AwaitDone());
  EXPECT_EQ(call.runs(), 1);
  EXPECT_NE(call.running_thread(), std::this_thread::get_id());
}

TEST(DispatcherTest, ALaneRunsAtMostItsWorkersAtOnceAndQueuesTheRest) {
  Dispatcher dispatcher(Small(2, 10));
  absl::Notification gate;
  std::vector<std::unique_ptr<TestCall>> calls;
  for (int i = 0; i < 5; ++i) {
    calls.push_back(std::make_unique<TestCall>(&gate));
    dispatcher.Submit(Lane::kProcess, *calls.back());
  }
  ASSERT_TRUE(calls[0]->AwaitStarted());
  ASSERT_TRUE(calls[1]->AwaitStarted());
  EXPECT_FALSE(calls[2]->AwaitStarted(absl::Milliseconds(100))) << "only two workers";
  gate.Notify();
  for (auto& call : calls) {
    ASSERT_TRUE(call->AwaitDone());
    EXPECT_EQ(call->runs(), 1);
  }
}

TEST(DispatcherTest, ABusyLaneDoesNotDelayAnother) {
  Dispatcher dispatcher(Small(1, 10));
  absl::Notification gate;
  TestCall slow(&gate), queued(&gate), quick;
  dispatcher.Submit(Lane::kProcess, slow);
  dispatcher.Submit(Lane::kProcess, queued);
  ASSERT_TRUE(slow.AwaitStarted());
  dispatcher.Submit(Lane::kShort, quick);
  EXPECT_TRUE(quick.AwaitDone());
  EXPECT_FALSE(queued.HasEnded());
  gate.Notify();
  EXPECT_TRUE(queued.AwaitDone());
}

TEST(DispatcherTest, AFullQueueRefusesResourceExhaustedSayingTheQueueIsFull) {
  Dispatcher dispatcher(Small(1, 2));
  absl::Notification gate;
  TestCall running(&gate), first(&gate), second(&gate), refused;
  dispatcher.Submit(Lane::kPull, running);
  ASSERT_TRUE(running.AwaitStarted());
  dispatcher.Submit(Lane::kPull, first);
  dispatcher.Submit(Lane::kPull, second);
  dispatcher.Submit(Lane::kPull, refused);
  ASSERT_TRUE(refused.AwaitDone(absl::Milliseconds(100))) << "refused at once";
  ASSERT_TRUE(refused.refusal());
  EXPECT_EQ(refused.refusal()->code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(refused.refusal()->message()), HasSubstr("queue of pull calls is full"));
  EXPECT_THAT(std::string(refused.refusal()->message()), Not(HasSubstr("thread")));
  EXPECT_EQ(refused.runs(), 0);
  gate.Notify();
  for (TestCall* call : {&running, &first, &second}) {
    ASSERT_TRUE(call->AwaitDone());
    EXPECT_EQ(call->runs(), 1);
  }
  // Room again: accepted.
  TestCall later;
  dispatcher.Submit(Lane::kPull, later);
  ASSERT_TRUE(later.AwaitDone());
  EXPECT_EQ(later.runs(), 1);
}

TEST(DispatcherTest, AQueuedCallWhoseDeadlinePassedIsRefusedWithoutRunning) {
  Dispatcher dispatcher(Small(1, 4));
  absl::Notification gate;
  TestCall running(&gate), expiring(nullptr, absl::Now() + absl::Milliseconds(50));
  dispatcher.Submit(Lane::kLifecycle, running);
  ASSERT_TRUE(running.AwaitStarted());
  dispatcher.Submit(Lane::kLifecycle, expiring);
  absl::SleepFor(absl::Milliseconds(100));
  gate.Notify();
  ASSERT_TRUE(expiring.AwaitDone());
  EXPECT_EQ(expiring.runs(), 0);
  ASSERT_TRUE(expiring.refusal());
  EXPECT_EQ(expiring.refusal()->code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(expiring.refusal()->message()), HasSubstr("lifecycle"));
}

TEST(DispatcherTest, AfterCallRunsOnTheWorkerOnceAfterEachCallRanOrWasRefused) {
  std::atomic<int> after{0};
  std::atomic<bool> before_end{false};  // a call seen still running when its hook ran
  absl::Notification gate;
  TestCall running(&gate), expiring(nullptr, absl::Now() + absl::Milliseconds(50));
  Dispatcher dispatcher(Small(1, 4), [&] {
    if (!running.HasEnded()) before_end = true;
    ++after;
  });
  dispatcher.Submit(Lane::kLifecycle, running);
  ASSERT_TRUE(running.AwaitStarted());
  dispatcher.Submit(Lane::kLifecycle, expiring);
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(after.load(), 0) << "nothing ended yet";
  gate.Notify();
  ASSERT_TRUE(expiring.AwaitDone());
  ASSERT_TRUE(expiring.refusal());
  const absl::Time until = absl::Now() + absl::Seconds(5);
  while (after.load() < 2 && absl::Now() < until) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(after.load(), 2) << "one for the call that ran, one for the one refused on the worker";
  EXPECT_FALSE(before_end.load());
}

TEST(DispatcherTest, AWithdrawnCallIsRefusedAtOnceAndARunningOneIsLeftAlone) {
  Dispatcher dispatcher(Small(1, 4));
  absl::Notification gate;
  TestCall running(&gate), withdrawn;
  dispatcher.Submit(Lane::kShort, running);
  ASSERT_TRUE(running.AwaitStarted());
  dispatcher.Submit(Lane::kShort, withdrawn);
  withdrawn.Cancel();
  dispatcher.Withdraw(withdrawn);
  ASSERT_TRUE(withdrawn.AwaitDone(absl::Milliseconds(100))) << "refused before the worker is free";
  ASSERT_TRUE(withdrawn.refusal());
  EXPECT_EQ(withdrawn.refusal()->code(), absl::StatusCode::kCancelled);
  dispatcher.Withdraw(running);  // runs: nothing happens
  gate.Notify();
  ASSERT_TRUE(running.AwaitDone());
  EXPECT_EQ(running.runs(), 1);
  EXPECT_FALSE(running.refusal());
  EXPECT_EQ(withdrawn.runs(), 0);
}

TEST(DispatcherTest, StopRefusesTheQueuedAndLaterCallsAndLetsRunningOnesEnd) {
  Dispatcher dispatcher(Small(1, 4));
  absl::Notification gate;
  TestCall running(&gate), queued, later;
  dispatcher.Submit(Lane::kProcess, running);
  ASSERT_TRUE(running.AwaitStarted());
  dispatcher.Submit(Lane::kProcess, queued);
  dispatcher.Stop();
  ASSERT_TRUE(queued.AwaitDone(absl::Milliseconds(100)));
  ASSERT_TRUE(queued.refusal());
  EXPECT_EQ(queued.refusal()->code(), absl::StatusCode::kUnavailable);
  dispatcher.Submit(Lane::kShort, later);
  ASSERT_TRUE(later.refusal());
  EXPECT_EQ(later.refusal()->code(), absl::StatusCode::kUnavailable);
  TestCall answerable;
  answerable.AnswerAtOnce();
  dispatcher.Submit(Lane::kShort, answerable);
  ASSERT_TRUE(answerable.refusal()) << "not answered after Stop, even from memory";
  EXPECT_EQ(answerable.answers_at_once(), 0);
  EXPECT_FALSE(running.HasEnded());
  std::thread release([&] {
    absl::SleepFor(absl::Milliseconds(50));
    gate.Notify();
  });
  dispatcher.Join();  // waits for the running call
  EXPECT_EQ(running.runs(), 1);
  release.join();
}

TEST(DispatcherTest, WorkersAreNamedAfterTheirLane) {
  Dispatcher dispatcher(Small(2, 4));
  absl::Notification gate;
  std::vector<std::unique_ptr<TestCall>> calls;
  for (Lane lane : {Lane::kHealth, Lane::kShort, Lane::kLifecycle, Lane::kProcess, Lane::kPull})
    for (auto& call : Busy(dispatcher, lane, 1, gate)) calls.push_back(std::move(call));
  EXPECT_EQ(ThreadsNamed("cri-health"), 1);
  EXPECT_EQ(ThreadsNamed("cri-short"), 1);
  EXPECT_EQ(ThreadsNamed("cri-lifecycle"), 1);
  EXPECT_EQ(ThreadsNamed("cri-process"), 1);
  EXPECT_EQ(ThreadsNamed("cri-pull"), 1);
  gate.Notify();
  for (auto& call : calls) EXPECT_TRUE(call->AwaitDone());
}

TEST(DispatcherTest, TheWorkersABurstStartedLeaveOnceIdleAndTheLaneStillServes) {
  Dispatcher dispatcher(Small(8, 100, absl::Milliseconds(200)));
  absl::Notification gate;
  auto burst = Busy(dispatcher, Lane::kShort, 8, gate);
  EXPECT_EQ(ThreadsNamed("cri-short"), 8);
  gate.Notify();
  for (auto& call : burst) ASSERT_TRUE(call->AwaitDone());
  EXPECT_EQ(AwaitThreadsNamedAtMost("cri-short", 0), 0);

  TestCall later;
  dispatcher.Submit(Lane::kShort, later);
  ASSERT_TRUE(later.AwaitDone());
  EXPECT_EQ(later.runs(), 1);
  EXPECT_EQ(ThreadsNamed("cri-short"), 1);
}

TEST(DispatcherTest, AQuietLaneKeepsOnlyTheWorkersItsCallsNeed) {
  // One call at a time, far more often than a worker may stay idle: the most recently
  // idle worker takes each, so the rest of the burst's workers stay idle and leave
  // (woken in turn, all eight would stay).
  Dispatcher dispatcher(Small(8, 100, absl::Milliseconds(300)));
  absl::Notification gate;
  auto burst = Busy(dispatcher, Lane::kShort, 8, gate);
  gate.Notify();
  for (auto& call : burst) ASSERT_TRUE(call->AwaitDone());
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  int workers = ThreadsNamed("cri-short");
  while (workers > 2 && absl::Now() < give_up) {
    TestCall call;
    dispatcher.Submit(Lane::kShort, call);
    ASSERT_TRUE(call.AwaitDone());
    ASSERT_EQ(call.runs(), 1);
    absl::SleepFor(absl::Milliseconds(10));  // its worker is idle again
    workers = ThreadsNamed("cri-short");
  }
  EXPECT_LE(workers, 2);
}

TEST(DispatcherTest, CallsSubmittedAsWorkersLeaveRun) {
  // One worker per lane, which leaves after 1 ms idle; on each of four lanes a thread
  // submits one call at a time at gaps around that, so some arrive just as the lane's
  // only worker decides to leave. A call lost then would wait for a worker forever.
  constexpr Lane kLanes[] = {Lane::kShort, Lane::kLifecycle, Lane::kProcess, Lane::kPull};
  constexpr int kCallsPerLane = 400;
  std::vector<std::unique_ptr<TestCall>> calls[std::size(kLanes)];  // outlive the dispatcher
  Dispatcher dispatcher(Small(1, 10, absl::Milliseconds(1)));
  std::vector<std::thread> submitters;
  for (std::size_t lane = 0; lane < std::size(kLanes); ++lane) {
    submitters.emplace_back([&, lane] {
      for (int i = 0; i < kCallsPerLane; ++i) {
        TestCall& call = *calls[lane].emplace_back(std::make_unique<TestCall>());
        dispatcher.Submit(kLanes[lane], call);
        if (!call.AwaitDone()) return;
        absl::SleepFor(absl::Microseconds(900 + (i * 37) % 200));
      }
    });
  }
  for (std::thread& t : submitters) t.join();
  for (auto& of_lane : calls) {
    ASSERT_EQ(of_lane.size(), std::size_t{kCallsPerLane}) << "a call waited 5 s for a worker";
    for (auto& call : of_lane) {
      EXPECT_EQ(call->runs(), 1);
      EXPECT_FALSE(call->refusal());
    }
  }
}

TEST(DispatcherTest, StopAndJoinJoinWorkersThatLeftAndWorkersStillRunning) {
  // A worker that left and was not joined would end the process when its std::thread
  // is destroyed.
  auto dispatcher = std::make_unique<Dispatcher>(Small(4, 10, absl::Milliseconds(50)));
  absl::Notification quick_gate, slow_gate;
  auto quick = Busy(*dispatcher, Lane::kShort, 4, quick_gate);
  auto slow = Busy(*dispatcher, Lane::kProcess, 2, slow_gate);
  quick_gate.Notify();
  for (auto& call : quick) EXPECT_TRUE(call->AwaitDone());
  EXPECT_EQ(AwaitThreadsNamedAtMost("cri-short", 0), 0);
  EXPECT_EQ(ThreadsNamed("cri-process"), 2) << "running calls keep their workers";

  dispatcher->Stop();
  std::thread release([&] {
    absl::SleepFor(absl::Milliseconds(50));
    slow_gate.Notify();
  });
  dispatcher->Join();
  for (auto& call : slow) EXPECT_EQ(call->runs(), 1);
  EXPECT_EQ(ThreadsNamed("cri-process"), 0);
  dispatcher.reset();
  release.join();
}

}  // namespace
}  // namespace shim::dispatch
