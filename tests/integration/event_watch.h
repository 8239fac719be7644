#pragma once
// One GetContainerEvents stream of a test, read on its own thread until cancelled.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/cri.h"

namespace testenv {

class EventWatch {
 public:
  explicit EventWatch(const std::shared_ptr<grpc::Channel>& channel)
      : stub_(runtime::v1::RuntimeService::NewStub(channel)) {
    ctx_.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(3));
    reader_ = stub_->GetContainerEvents(&ctx_, runtime::v1::GetEventsRequest());
    reader_->WaitForInitialMetadata();  // subscribed
    thread_ = std::thread([this] {
      runtime::v1::ContainerEventResponse event;
      while (reader_->Read(&event)) {
        std::lock_guard lock(mu_);
        events_.push_back(event);
      }
      std::lock_guard lock(mu_);
      ended_ = true;
    });
  }
  ~EventWatch() {
    ctx_.TryCancel();
    thread_.join();
    reader_->Finish();
  }
  // True once the server ended the stream.
  bool Ended() {
    std::lock_guard lock(mu_);
    return ended_;
  }
  // The events of `id`, once `done` says they are complete (or after 60 s).
  std::vector<runtime::v1::ContainerEventResponse> Of(const std::string& id,
                                             const std::function<bool(const std::vector<runtime::v1::ContainerEventResponse>&)>& done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
      std::vector<runtime::v1::ContainerEventResponse> of;
      {
        std::lock_guard lock(mu_);
        for (const auto& e : events_) {
          if (e.container_id() == id) of.push_back(e);
        }
      }
      if (done(of) || std::chrono::steady_clock::now() > until) return of;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

 private:
  std::unique_ptr<runtime::v1::RuntimeService::Stub> stub_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReader<runtime::v1::ContainerEventResponse>> reader_;
  std::mutex mu_;
  std::vector<runtime::v1::ContainerEventResponse> events_;
  bool ended_ = false;
  std::thread thread_;
};

}  // namespace testenv
