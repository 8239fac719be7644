#pragma once
// The addresses a pod's network namespace holds: what cri-dockerd reads with
// `nsenter --net=<netns> ip -o addr show dev eth0 scope global` each time it reports a
// pod's IP. Here without a process: a netlink dump taken inside the namespace, entered
// on a dedicated thread (common::NetnsThread). Used only to adopt pods another runtime
// networked, once per pod (sandbox_adoption.cc).
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/netns_thread.h"

namespace network {

class NetnsAddressReader {
 public:
  virtual ~NetnsAddressReader() = default;
  // The global-scope addresses (no prefix length; no link-local, host or loopback ones)
  // of interface `ifname` in the namespace at `netns_path`, IPv4 ones first. An empty
  // list when it has none; NOT_FOUND when the namespace or the interface is gone.
  virtual absl::StatusOr<std::vector<std::string>> GlobalAddresses(const std::string& netns_path,
                                                                   const std::string& ifname) = 0;
};

class NetlinkAddressReader : public NetnsAddressReader {
 public:
  absl::StatusOr<std::vector<std::string>> GlobalAddresses(const std::string& netns_path,
                                                           const std::string& ifname) override;

 private:
  common::NetnsThread netns_;
};

}  // namespace network
