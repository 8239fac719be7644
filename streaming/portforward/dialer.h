#pragma once
// Connects to a port inside a pod's network namespace without forking (cri-dockerd
// runs nsenter + socat per connection). A socket belongs to the namespace it was
// created in, so only socket creation needs the namespace: the dialer's
// common::NetnsThread does setns(pod), socket(), setns(back), and the connect then runs
// asynchronously on the caller's strand like any other.
#include <cstdint>
#include <functional>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "absl/status/statusor.h"
#include "common/netns_thread.h"

namespace streaming::portforward {

namespace asio = boost::asio;

class NetnsDialer {
 public:
  using Handler = std::function<void(absl::StatusOr<asio::ip::tcp::socket>)>;

  NetnsDialer() = default;
  NetnsDialer(const NetnsDialer&) = delete;
  NetnsDialer& operator=(const NetnsDialer&) = delete;

  // Connects to 127.0.0.1:`port`, then to [::1]:`port` if that is refused, in the
  // namespace at `netns_path` (empty: the host's own). `handler` runs on `executor`.
  void AsyncConnect(asio::any_io_executor executor, std::string netns_path, uint16_t port, Handler handler);

 private:
  common::NetnsThread netns_;  // joined first, on destruction
};

}  // namespace streaming::portforward
