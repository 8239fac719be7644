#pragma once
// Connects to a port inside a pod's network namespace without forking (cri-dockerd
// runs nsenter + socat per connection). A socket belongs to the namespace it was
// created in, so only socket creation needs the namespace: a dedicated thread does
// setns(pod), socket(), setns(back), and the connect then runs asynchronously on the
// caller's strand like any other. No other code ever runs in a pod's namespace.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "absl/status/statusor.h"
#include "common/unique_fd.h"

namespace streaming::portforward {

namespace asio = boost::asio;

class NetnsDialer {
 public:
  using Handler = std::function<void(absl::StatusOr<asio::ip::tcp::socket>)>;

  NetnsDialer();
  ~NetnsDialer();  // joins the thread
  NetnsDialer(const NetnsDialer&) = delete;
  NetnsDialer& operator=(const NetnsDialer&) = delete;

  // Connects to 127.0.0.1:`port`, then to [::1]:`port` if that is refused, in the
  // namespace at `netns_path` (empty: the host's own). `handler` runs on `executor`.
  void AsyncConnect(asio::any_io_executor executor, std::string netns_path, uint16_t port, Handler handler);

 private:
  struct Sockets;
  Sockets MakeSockets(const std::string& netns_path);

  common::UniqueFd host_netns_;
  bool broken_ = false;  // could not return to the host namespace once: refuse from then on
  asio::io_context ioc_{1};
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
};

}  // namespace streaming::portforward
