#pragma once
// Blocking SPDY/3.1 and WebSocket clients for the streaming server's tests and
// benchmarks. They behave as client-go's do where that matters: the SPDY client
// upgrades with one X-Stream-Protocol-Version line per protocol, creates streams one
// at a time waiting for each SYN_REPLY, and echoes nothing the server does not ask for.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/unique_fd.h"
#include "streaming/spdy/frame.h"

namespace streamtest {

struct Url {
  std::string host;
  uint16_t port = 0;
  std::string target;  // path and query
};
absl::StatusOr<Url> ParseUrl(std::string_view url);

// The answer to an upgrade request.
struct UpgradeResponse {
  int status = 0;
  std::map<std::string, std::vector<std::string>> headers;  // lower-case names
  std::string body;
  std::string Header(const std::string& name) const;  // first value or ""
  std::vector<std::string> Values(const std::string& name) const;  // every line's value
};

// Connects to host:port (IPv4 or IPv6 literal).
absl::StatusOr<common::UniqueFd> Dial(const Url& url);

// Carries a TLS connection's plaintext through a local socket pair on a thread of
// its own, so that the blocking clients speak plain bytes over TLS too. Any
// certificate is accepted.
class TlsBridge {
 public:
  // `plain` gets the local end: what is written there goes to the server encrypted.
  static absl::StatusOr<std::unique_ptr<TlsBridge>> Connect(const Url& url, common::UniqueFd* plain);
  ~TlsBridge();
  class Impl;

 private:
  explicit TlsBridge(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Blocking I/O on a socket with a deadline. WriteAll: false if the peer is gone.
bool WriteAll(int fd, std::string_view data);
// `n` bytes, or fewer if the peer ended its side first; DEADLINE_EXCEEDED (with
// what came in the message) when neither happened in time.
absl::StatusOr<std::string> ReadFdExactly(int fd, std::size_t n, absl::Duration timeout);
// Everything until the peer ends its side.
absl::StatusOr<std::string> ReadFdToEof(int fd, absl::Duration timeout);
// Sends `request_head` (the request line and headers, ending in a blank line) and
// reads the response head; for a non-101 answer also its body (Content-Length).
// Bytes read past the head go to `leftover`.
absl::StatusOr<UpgradeResponse> Upgrade(int fd, const std::string& request_head, std::string* leftover);

class SpdyClient {
 public:
  // Upgrades `url` (http:// or https://) offering `protocols` (in order). A non-101
  // answer is returned in `response` and then the call fails with FAILED_PRECONDITION.
  static absl::StatusOr<std::unique_ptr<SpdyClient>> Connect(const std::string& url,
                                                             const std::vector<std::string>& protocols,
                                                             UpgradeResponse* response = nullptr,
                                                             const std::string& method = "POST");
  // Runs SPDY over an already-connected byte stream (e.g. the WebSocket tunnel's).
  explicit SpdyClient(common::UniqueFd fd, std::string leftover = {});
  ~SpdyClient();

  const std::string& protocol() const { return protocol_; }

  // Opens a stream and waits for its SYN_REPLY; UNAVAILABLE if it was reset,
  // DEADLINE_EXCEEDED after `timeout`.
  absl::StatusOr<uint32_t> OpenStream(const streaming::spdy::Headers& headers,
                                      absl::Duration timeout = absl::Seconds(10));
  // A SYN_STREAM with a chosen id, not waiting for the answer (for protocol errors).
  absl::Status SendSynStream(uint32_t id, const streaming::spdy::Headers& headers);
  absl::Status Write(uint32_t id, std::string_view data);
  absl::Status CloseStream(uint32_t id);  // DATA with FIN
  absl::Status ResetStream(uint32_t id);
  absl::Status SendPing(uint32_t id);
  absl::Status SendRaw(std::string_view bytes);

  // Waits for data on `id`: "" once the stream ended (FIN or RST) and nothing is left.
  absl::StatusOr<std::string> ReadSome(uint32_t id, absl::Duration timeout);
  // Everything the server sends on `id` until its FIN or RST.
  absl::StatusOr<std::string> ReadAll(uint32_t id, absl::Duration timeout);
  bool WasReset(uint32_t id);
  // The frames received so far, in order: "syn_reply 1", "data 3" (non-empty
  // payload), "fin 3", "rst 5", "ping 1", "goaway", "settings", ...
  std::vector<std::string> FrameLog();
  // While paused the client reads nothing from the connection (a slow client);
  // one read already under way still completes.
  void PauseReading(bool paused);
  bool WaitGoAway(absl::Duration timeout);
  bool WaitPingEcho(uint32_t id, absl::Duration timeout);
  // Waits until the server closed the connection.
  bool WaitClosed(absl::Duration timeout);
  // Sends GOAWAY and closes the connection, as client-go does at its end.
  void Close();

 private:
  struct StreamState {
    bool replied = false, fin = false, reset = false;
    std::string data;
  };
  class Sink;
  absl::Status Send(const std::string& bytes);
  void ReadLoop();

  std::unique_ptr<TlsBridge> tls_;  // under fd_ for https
  common::UniqueFd fd_;
  std::string leftover_;
  std::string protocol_;
  std::mutex write_mu_;
  streaming::spdy::FrameWriter writer_;  // guarded by write_mu_
  uint32_t next_id_ = 1;                  // guarded by write_mu_
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint32_t, StreamState> streams_;  // guarded by mu_
  std::vector<uint32_t> ping_echoes_;
  std::vector<std::string> frame_log_;
  bool goaway_ = false, closed_ = false, paused_ = false;
  std::thread reader_;
};

struct WsMessage {
  bool text = false;
  std::string data;
};

class WsClient {
 public:
  // Handshakes with `url`, offering `protocols` in one Sec-WebSocket-Protocol line
  // (none if empty). A refused handshake is returned in `response` (its status) and
  // then the call fails with FAILED_PRECONDITION.
  static absl::StatusOr<std::unique_ptr<WsClient>> Connect(const std::string& url,
                                                           const std::vector<std::string>& protocols,
                                                           UpgradeResponse* response = nullptr);
  ~WsClient();

  const std::string& protocol() const { return protocol_; }
  absl::Status Send(std::string_view message, bool binary = true);
  // The next message; UNAVAILABLE once the server closed (close_code() tells how).
  absl::StatusOr<WsMessage> Receive(absl::Duration timeout);
  int close_code();  // -1 until a close frame came; 0 if the connection dropped without one
  void Ping();
  bool WaitPong(absl::Duration timeout);
  // While paused no message is read (a slow client); one already under way still
  // completes.
  void PauseReading(bool paused);
  void Close();
  // From now on the WebSocket carries the bytes of the returned socket's peer as
  // binary messages both ways, as the client-go tunnel does (a SpdyClient then runs
  // on the returned end). The WsClient must outlive that use; Receive gets nothing.
  common::UniqueFd StartTunnel();
  class Impl;

 private:
  explicit WsClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::string protocol_;
};

}  // namespace streamtest
