#include "shim/dispatch/dispatcher.h"

#include <pthread.h>

#include <string>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "observability/families.h"

namespace shim::dispatch {

namespace {

// Why a call that waited `waited` must not run any more; OK when it may.
absl::Status Expired(const Call& call, Lane lane, absl::Time now, absl::Duration waited) {
  const std::string where =
      absl::StrCat(" while it waited ", absl::FormatDuration(absl::Trunc(waited, absl::Milliseconds(1))),
                   " for a worker of the ", LaneName(lane), " lane");
  if (now >= call.deadline()) return absl::DeadlineExceededError(absl::StrCat("the call's deadline passed", where));
  if (call.cancelled()) return absl::CancelledError(absl::StrCat("the client cancelled the call", where));
  return absl::OkStatus();
}

}  // namespace

Dispatcher::Dispatcher(Limits limits, std::function<void()> after_call) : after_call_(std::move(after_call)) {
  for (std::size_t i = 0; i < kLaneCount; ++i) lanes_[i].limits = limits[i];
}

Dispatcher::~Dispatcher() {
  Stop();
  Join();
}

void Dispatcher::Submit(Lane lane, Call& call) {
  if (!stopped_ && call.AnsweredAtOnce()) {
    if (after_call_) after_call_();
    return;
  }
  absl::Status refusal;
  std::thread left;
  {
    std::lock_guard lock(mu_);
    LaneState& state = StateOf(lane);
    if (!stopped_) left = std::move(left_);  // joined below, off the lock; after Stop, Join's
    if (stopped_) {
      refusal = absl::UnavailableError("dockershim is shutting down");
    } else if (state.queue.size() >= state.limits.max_queued) {
      refusal = absl::ResourceExhaustedError(absl::StrCat(
          "dockershim's queue of ", LaneName(lane), " calls is full (", state.limits.max_queued,
          " calls wait for its ", state.limits.workers, " workers); retry later"));
      if (!state.full) {
        state.full = true;
        LOG_WARN << "the " << LaneName(lane) << " queue is full (" << state.limits.max_queued
                 << " calls): refusing calls until it has room";
      }
    } else {
      state.queue.push_back({&call, absl::Now()});
      queued_[&call] = {lane, std::prev(state.queue.end())};
      NoteDepth(lane);
      if (!state.idle.empty()) {
        // Notified under mu_: once unlocked, the worker may take another call and leave.
        Worker* next = state.idle.back();
        state.idle.pop_back();
        next->woken = true;
        next->wake.notify_one();
      } else if (state.workers.size() < static_cast<std::size_t>(state.limits.workers)) {
        Worker& worker = state.workers.emplace_back();
        try {
          worker.thread = std::thread([this, lane, &worker] { Work(lane, worker); });
        } catch (const std::system_error& e) {
          // The call waits for a busy worker of the lane, or its deadline.
          state.workers.pop_back();
          LOG_WARN << "cannot start a worker for the " << LaneName(lane) << " lane: " << e.what();
        }
      }
    }
  }
  if (left.joinable()) left.join();
  if (!refusal.ok()) call.Refuse(refusal);
}

void Dispatcher::Withdraw(Call& call) {
  Lane lane;
  absl::Time since;
  {
    std::lock_guard lock(mu_);
    auto found = queued_.find(&call);
    if (found == queued_.end()) return;
    lane = found->second.lane;
    since = found->second.it->since;
    StateOf(lane).queue.erase(found->second.it);
    queued_.erase(found);
    NoteDepth(lane);
  }
  const absl::Time now = absl::Now();
  observability::Metrics().cri_queue_wait.With({LaneName(lane)}).Observe(absl::ToDoubleSeconds(now - since));
  absl::Status why = Expired(call, lane, now, now - since);
  call.Refuse(why.ok() ? absl::CancelledError("the call was cancelled while it waited for a worker") : why);
}

void Dispatcher::Stop() {
  std::vector<Call*> refused;
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    for (std::size_t i = 0; i < kLaneCount; ++i) {
      LaneState& state = lanes_[i];
      for (const Queued& q : state.queue) refused.push_back(q.call);
      state.queue.clear();
      NoteDepth(static_cast<Lane>(i));
      for (Worker* idle : state.idle) idle->wake.notify_one();
      state.idle.clear();
    }
    queued_.clear();
  }
  if (!refused.empty()) LOG_INFO << "shutting down: " << refused.size() << " queued CRI calls refused";
  for (Call* call : refused) call->Refuse(absl::UnavailableError("dockershim is shutting down"));
}

void Dispatcher::Join() {
  // Workers no longer leave (Stop came first): their entries stay until joined.
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    for (LaneState& state : lanes_)
      for (Worker& worker : state.workers) threads.push_back(std::move(worker.thread));
    threads.push_back(std::move(left_));
  }
  for (std::thread& t : threads)
    if (t.joinable()) t.join();
  std::lock_guard lock(mu_);
  for (LaneState& state : lanes_) state.workers.clear();
}

void Dispatcher::Work(Lane lane, Worker& self) {
  pthread_setname_np(pthread_self(), absl::StrCat("cri-", LaneName(lane)).c_str());  // "cri-lifecycle" fits 15
  LaneState& state = StateOf(lane);
  std::unique_lock lock(mu_);
  for (;;) {
    if (state.queue.empty()) {
      if (stopped_) return;
      self.woken = false;
      state.idle.push_back(&self);
      if (self.wake.wait_for(lock, absl::ToChronoNanoseconds(state.limits.max_idle),
                             [&] { return self.woken || stopped_; }))
        continue;
      std::erase(state.idle, &self);
      if (!state.queue.empty()) continue;  // a call came as the wait timed out: take it
      // Leave: the thread that left before is joined here, this one by whoever is next.
      std::thread previous = std::exchange(left_, std::move(self.thread));
      state.workers.remove_if([&](const Worker& worker) { return &worker == &self; });  // destroys self
      lock.unlock();
      if (previous.joinable()) previous.join();
      return;
    }
    const Queued next = state.queue.front();
    state.queue.pop_front();
    queued_.erase(next.call);
    if (state.queue.empty()) state.full = false;
    NoteDepth(lane);
    lock.unlock();

    const absl::Time now = absl::Now();
    observability::Metrics().cri_queue_wait.With({LaneName(lane)}).Observe(absl::ToDoubleSeconds(now - next.since));
    if (absl::Status why = Expired(*next.call, lane, now, now - next.since); !why.ok()) {
      next.call->Refuse(why);
    } else {
      next.call->Run();
    }
    if (after_call_) after_call_();
    lock.lock();
  }
}

void Dispatcher::NoteDepth(Lane lane) {
  observability::Metrics().cri_queued.With({LaneName(lane)}).Set(static_cast<int64_t>(StateOf(lane).queue.size()));
}

}  // namespace shim::dispatch
