#include "shim/dispatch/dispatcher.h"

#include <string>
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

Dispatcher::Dispatcher(Limits limits) {
  for (std::size_t i = 0; i < kLaneCount; ++i) lanes_[i].limits = limits[i];
}

Dispatcher::~Dispatcher() {
  Stop();
  Join();
}

void Dispatcher::Submit(Lane lane, Call& call) {
  absl::Status refusal;
  {
    std::lock_guard lock(mu_);
    LaneState& state = StateOf(lane);
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
      if (state.queue.size() > static_cast<std::size_t>(state.idle) &&
          state.workers.size() < static_cast<std::size_t>(state.limits.workers)) {
        state.workers.emplace_back([this, lane] { Work(lane); });
      } else {
        state.wake.notify_one();
      }
      return;
    }
  }
  call.Refuse(refusal);
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
      for (const Queued& q : lanes_[i].queue) refused.push_back(q.call);
      lanes_[i].queue.clear();
      NoteDepth(static_cast<Lane>(i));
      lanes_[i].wake.notify_all();
    }
    queued_.clear();
  }
  if (!refused.empty()) LOG_INFO << "shutting down: " << refused.size() << " queued CRI calls refused";
  for (Call* call : refused) call->Refuse(absl::UnavailableError("dockershim is shutting down"));
}

void Dispatcher::Join() {
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(mu_);
    for (LaneState& state : lanes_) {
      for (std::thread& t : state.workers) workers.push_back(std::move(t));
      state.workers.clear();
    }
  }
  for (std::thread& t : workers) t.join();
}

void Dispatcher::Work(Lane lane) {
  LaneState& state = StateOf(lane);
  std::unique_lock lock(mu_);
  for (;;) {
    ++state.idle;
    state.wake.wait(lock, [&] { return !state.queue.empty() || stopped_; });
    --state.idle;
    if (state.queue.empty()) return;  // stopped
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
    lock.lock();
  }
}

void Dispatcher::NoteDepth(Lane lane) {
  observability::Metrics().cri_queued.With({LaneName(lane)}).Set(static_cast<int64_t>(StateOf(lane).queue.size()));
}

}  // namespace shim::dispatch
