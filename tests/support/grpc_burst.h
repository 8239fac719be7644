#pragma once
// Calls issued at once through gRPC's callback client API, as the kubelet's pod
// workers issue theirs on one connection, without a thread per call; each outcome is
// kept with its latency. Used by the server's load tests and the lanes bench.
#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <google/protobuf/message.h>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace testsupport {

class Burst {
 public:
  struct Outcome {
    std::string rpc;
    grpc::Status status;
    absl::Duration latency;
  };

  // `start(ctx, req, resp, done)` starts the call, e.g. stub->async()->Version(...).
  template <typename Resp, typename Req, typename Start>
  grpc::ClientContext& Issue(const std::string& rpc, const Req& req, absl::Duration timeout, Start start) {
    auto pending = std::make_unique<Pending>();
    Pending* p = pending.get();
    p->rpc = rpc;
    p->req = std::make_unique<Req>(req);
    p->resp = std::make_unique<Resp>();
    p->ctx.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    {
      absl::MutexLock lock(&mu_);
      pending_.push_back(std::move(pending));
      ++outstanding_;
    }
    p->start = absl::Now();
    start(&p->ctx, static_cast<const Req*>(p->req.get()), static_cast<Resp*>(p->resp.get()),
          [this, p](grpc::Status status) {
            absl::MutexLock lock(&mu_);
            p->outcome = Outcome{p->rpc, std::move(status), absl::Now() - p->start};
            --outstanding_;
          });
    return p->ctx;
  }

  // Every outcome once all calls answered; false when some did not within `timeout`.
  bool Await(absl::Duration timeout, std::vector<Outcome>* outcomes) {
    absl::MutexLock lock(&mu_);
    auto done = [this] {
      mu_.AssertHeld();
      return outstanding_ == 0;
    };
    if (!mu_.AwaitWithTimeout(absl::Condition(&done), timeout)) return false;
    outcomes->clear();
    for (const auto& p : pending_) outcomes->push_back(*p->outcome);
    return true;
  }

 private:
  struct Pending {
    std::string rpc;
    grpc::ClientContext ctx;
    std::unique_ptr<google::protobuf::Message> req, resp;
    absl::Time start;
    std::optional<Outcome> outcome;
  };
  absl::Mutex mu_;
  std::vector<std::unique_ptr<Pending>> pending_;
  int outstanding_ = 0;
};

}  // namespace testsupport
