#pragma once
// One forwarded connection: bytes from a client channel to a connected TCP socket
// and back, with bounded memory either way (one chunk in flight per direction plus
// what the channel buffers). The client's EOF half-closes the socket. The socket's
// EOF ends the client channel and the forward, as with the Go server (whose socat
// exits then): client-go before 1.32 waits for the error stream's end before it
// closes its side. It is also over when the client resets.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include "absl/status/status.h"
#include "streaming/channel.h"

namespace streaming::portforward {

namespace asio = boost::asio;

class Forward final : public std::enable_shared_from_this<Forward> {
 public:
  struct Ends {
    std::shared_ptr<InChannel> from_client;
    std::shared_ptr<OutChannel> to_client;
  };

  // `on_done` runs once on the socket's executor: OK, or why the socket failed.
  Forward(asio::ip::tcp::socket target, Ends ends, std::function<void(absl::Status)> on_done);
  void Start();
  // Ends it now, without calling on_done.
  void Cancel();

 private:
  void ReadClient();
  void ReadTarget();
  void Done(absl::Status status);

  asio::ip::tcp::socket target_;
  Ends ends_;
  std::function<void(absl::Status)> on_done_;
  std::vector<char> buffer_;
  bool over_ = false;
};

}  // namespace streaming::portforward
