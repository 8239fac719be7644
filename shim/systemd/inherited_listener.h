#pragma once
// Serves a gRPC server on a listening socket it did not create (systemd's). gRPC has
// no API to serve a listening fd, only to adopt a connected one: this accepts on its
// own thread and hands each connection to grpc::AddInsecureChannelFromFd, so the
// connection then gets the server's options (message sizes, quota) like any other.
#include <grpcpp/server.h>

#include <memory>
#include <thread>

#include "absl/status/statusor.h"
#include "common/unique_fd.h"

namespace shim::systemd {

class InheritedListener {
 public:
  // `server` must be started and outlive the listener.
  static absl::StatusOr<std::unique_ptr<InheritedListener>> Start(common::UniqueFd listen_fd, grpc::Server& server);
  ~InheritedListener() { Stop(); }
  InheritedListener(const InheritedListener&) = delete;
  InheritedListener& operator=(const InheritedListener&) = delete;

  // Stops accepting (before the server's Shutdown, so that no connection arrives
  // during it); the connections handed over belong to the server. The socket stays
  // open until destruction: systemd queues new clients on it for the next start.
  void Stop();

 private:
  InheritedListener(common::UniqueFd listen_fd, common::UniqueFd wake_fd, grpc::Server& server)
      : listen_fd_(std::move(listen_fd)), wake_fd_(std::move(wake_fd)), server_(server) {}
  void AcceptLoop();

  common::UniqueFd listen_fd_;
  common::UniqueFd wake_fd_;  // an eventfd: written by Stop
  grpc::Server& server_;
  std::thread thread_;
};

}  // namespace shim::systemd
