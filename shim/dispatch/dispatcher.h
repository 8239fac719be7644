#pragma once
// Runs CRI calls on bounded worker pools, one per lane (lanes.h), each behind a
// bounded queue. gRPC's callback API hands every call over at once and holds no
// thread for it: a burst waits here, in memory, instead of being refused for lack of
// threads. A call is refused only when its lane's queue is full, when it can no
// longer be useful (its deadline passed or its client left while it waited), or at
// shutdown. The call runs on the worker's thread from start to end, so what is
// bound to a thread (observability::RpcScope) covers all of its Docker calls.
// Workers start as calls come and leave after LaneLimits::max_idle without a call,
// so the threads a burst started do not stay; the most recently idle worker takes
// the next call, so a steady trickle keeps only the workers it needs. A call that can
// be answered without waiting is answered where it is submitted, without a worker:
// the kubelet's relists and status polls, which the container view answers, cost less
// than handing them to a worker and back.
#include <atomic>
#include <condition_variable>
#include <functional>
#include <list>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "shim/dispatch/lanes.h"

namespace shim::dispatch {

// A call given to the dispatcher: it is answered at once, or exactly one of Run and
// Refuse is called, once.
class Call {
 public:
  virtual absl::Time deadline() const = 0;
  virtual bool cancelled() const = 0;
  // Tried first, on the thread that submits the call: answers it if that needs no wait
  // (common/no_wait.h), as a call that memory answers does; false when it must run on
  // a worker.
  virtual bool AnsweredAtOnce() = 0;
  virtual void Run() = 0;                              // on a worker of its lane
  virtual void Refuse(const absl::Status& why) = 0;    // instead of running; any thread

 protected:
  ~Call() = default;
};

class Dispatcher {
 public:
  // `after_call` runs after each call that was answered, run or refused: on the worker, or
  // on the submitting thread for a call answered at once (the heap trimmer notes the end
  // of a burst there).
  explicit Dispatcher(Limits limits = DefaultLimits(), std::function<void()> after_call = nullptr);
  ~Dispatcher();  // Stop, then Join
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // Answers `call` at once (Call::AnsweredAtOnce), or queues it (it must stay alive until
  // run or refused), or refuses it at once: RESOURCE_EXHAUSTED when the lane's queue is
  // full, UNAVAILABLE after Stop.
  void Submit(Lane lane, Call& call);
  // gRPC cancelled the call (its client left or its deadline passed): refused
  // DEADLINE_EXCEEDED or CANCELLED if it still waits; otherwise it runs or ran, and
  // nothing happens.
  void Withdraw(Call& call);
  // Refuses the queued calls and every later one UNAVAILABLE; running calls go on.
  void Stop();
  // Waits for the running calls to end and joins the workers. After Stop.
  void Join();

 private:
  struct Queued {
    Call* call;
    absl::Time since;
  };
  struct Worker {
    std::thread thread;
    std::condition_variable wake;
    bool woken = false;  // Submit took it off the idle stack for a call
  };
  struct LaneState {
    LaneLimits limits;
    std::list<Queued> queue;
    std::list<Worker> workers;   // the lane's threads; an entry leaves with its thread
    std::vector<Worker*> idle;   // waiting for a call; the last one is woken first
    bool full = false;  // its queue refused a call since it last ran empty (logged once)
  };
  struct Where {
    Lane lane;
    std::list<Queued>::iterator it;
  };

  void Work(Lane lane, Worker& self);
  LaneState& StateOf(Lane lane) { return lanes_[static_cast<std::size_t>(lane)]; }
  void NoteDepth(Lane lane);  // mu_ held

  const std::function<void()> after_call_;
  std::mutex mu_;
  LaneState lanes_[kLaneCount];                   // guarded by mu_
  std::unordered_map<const Call*, Where> queued_;  // guarded by mu_
  std::atomic<bool> stopped_ = false;              // written under mu_
  // The last worker that left: it has returned or is about to, and is joined by the
  // next worker to leave, the next Submit or Join. Guarded by mu_.
  std::thread left_;
};

}  // namespace shim::dispatch
