#pragma once
// A NetworkPlugin for unit tests: hands out 10.0.0.N, records calls, fails on demand.
#include <map>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "shim/network/network_plugin.h"

namespace testing_fakes {

class FakeNetwork : public network::NetworkPlugin {
 public:
  std::string Name() const override { return "fake"; }
  std::string DockerNetworkMode() const override { return "none"; }
  absl::Status Ready() override {
    std::lock_guard lock(mu_);
    return ready;
  }
  absl::StatusOr<network::PodNetworkStatus> SetUp(const common::Context&,
                                                  const network::PodNetworkRequest& req) override {
    std::lock_guard lock(mu_);
    calls.push_back("SetUp " + req.sandbox_id);
    if (!setup_error.ok()) return setup_error;
    network::PodNetworkStatus status;
    status.ip = absl::StrCat("10.0.0.", ++next_ip_);
    status.network_name = "fakenet";
    attached[req.sandbox_id] = status.ip;
    last_request = req;
    return status;
  }
  absl::Status TearDown(const common::Context&, const network::PodNetworkRequest& req,
                        const std::string& network_name) override {
    std::lock_guard lock(mu_);
    calls.push_back("TearDown " + req.sandbox_id + " " + network_name);
    if (!teardown_error.ok()) return teardown_error;
    attached.erase(req.sandbox_id);
    return absl::OkStatus();
  }
  void SetPodCidr(const std::string& cidr) override {
    std::lock_guard lock(mu_);
    pod_cidr = cidr;
  }

  std::mutex mu_;
  absl::Status ready = absl::OkStatus();
  absl::Status setup_error = absl::OkStatus();
  absl::Status teardown_error = absl::OkStatus();
  std::vector<std::string> calls;
  std::map<std::string, std::string> attached;  // sandbox ID -> IP
  network::PodNetworkRequest last_request;
  std::string pod_cidr;

 private:
  int next_ip_ = 1;
};

}  // namespace testing_fakes
