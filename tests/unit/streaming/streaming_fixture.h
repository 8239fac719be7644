#pragma once
// What the streaming server's tests share: a real streaming::Server on 127.0.0.1:0
// over a FakeRuntime, the protocol names and helpers to drive it.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/unique_fd.h"
#include "streaming/server.h"
#include "streaming/spdy/header_block.h"
#include "tests/support/fake_runtime.h"
#include "tests/support/stream_clients.h"

namespace streaming {

// How long a test waits for something that should happen at once.
inline constexpr absl::Duration kWait = absl::Seconds(5);

inline const std::string kV4 = "v4.channel.k8s.io";
// What client-go's SPDY executor offers, in its order.
inline const std::vector<std::string> kClientGoProtocols = {"v5.channel.k8s.io", "v4.channel.k8s.io",
                                                            "v3.channel.k8s.io", "v2.channel.k8s.io",
                                                            "channel.k8s.io"};
inline const std::string kSuccessStatus = R"({"metadata":{},"status":"Success"})";

inline const std::string kSandbox = "sandbox-1";

// The requests the tests issue URLs for: an exec of "sh" (or attach) in container
// "c1" with the given stdio, a port-forward to kSandbox.
enum class Io { kStdin, kStdout, kStderr, kTty };
ExecRequest Exec(std::initializer_list<Io> io);
AttachRequest Attach(std::initializer_list<Io> io);
PortForwardRequest PortForward(std::vector<uint16_t> ports = {});

class StreamingTest : public ::testing::Test {
 protected:
  void TearDown() override;
  // Starts the server (ADD_FAILURE if it does not start).
  void StartServer(ServerOptions options = {});
  // The URL the server issues for `request`.
  std::string Url(Request request);

  streamtest::FakeRuntime runtime_;
  std::unique_ptr<Server> server_;
};

// Polls `done` until it holds; false after `timeout`.
bool Eventually(const std::function<bool()>& done, absl::Duration timeout = kWait);

spdy::Headers StreamType(const std::string& type);
// Opens one stream per type in order, each waiting for its SYN_REPLY, as client-go
// does; the ids in the same order (empty on a failure, which is reported).
std::vector<uint32_t> OpenStreams(streamtest::SpdyClient& client, const std::vector<std::string>& types);

// The messages a WebSocket client gets until the server closes (ADD_FAILURE if it
// does not within `timeout`).
std::vector<std::string> ReceiveUntilClosed(streamtest::WsClient& client, absl::Duration timeout = kWait);

// Sends a `method` request for `url` with `headers` ("Name: value" each) and
// returns the server's answer.
streamtest::UpgradeResponse RawRequest(const std::string& url, const std::string& method,
                                       const std::vector<std::string>& headers);

// A listener on 127.0.0.1 that port-forward reaches; the test takes each accepted
// connection and plays the pod's server on it.
class TcpTarget {
 public:
  TcpTarget();
  uint16_t port() const { return port_; }
  // The next connection; invalid after `timeout`.
  common::UniqueFd Accept(absl::Duration timeout = kWait);

 private:
  uint16_t port_ = 0;  // before listener_: set while it is made
  common::UniqueFd listener_;
};

// A port on 127.0.0.1 that refuses connections: bound, never listening, so that
// nothing else takes it while `held` lives.
uint16_t ClosedPort(common::UniqueFd& held);

// This process's resident set size (VmRSS).
std::size_t RssBytes();

// Waits until `counter` stops moving for `quiet` (its producer is blocked) and
// returns its value; ADD_FAILURE if it never does.
std::size_t WaitStalled(const std::atomic<std::size_t>& counter, absl::Duration quiet);

}  // namespace streaming
