#pragma once
// A client that speaks just enough HTTP/2 to open gRPC calls on a unix socket and then
// never reads a byte: what a stuck or hostile client looks like to the server. It
// announces a stream window of `initial_window` bytes (0: the server may send no
// response data at all), answers no ping and acknowledges no settings.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/unique_fd.h"

namespace testsupport {

class RawH2Connection {
 public:
  static absl::StatusOr<std::unique_ptr<RawH2Connection>> Open(const std::string& socket_path,
                                                               uint32_t initial_window) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (socket_path.size() >= sizeof(addr.sun_path)) return absl::InvalidArgumentError("socket path too long");
    std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
    common::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) return absl::ErrnoToStatus(errno, "socket");
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0)
      return absl::ErrnoToStatus(errno, absl::StrCat("connect ", socket_path));
    std::unique_ptr<RawH2Connection> conn(new RawH2Connection(std::move(fd)));
    std::string settings;
    AppendSetting(&settings, 0x2, 0);               // ENABLE_PUSH
    AppendSetting(&settings, 0x4, initial_window);  // INITIAL_WINDOW_SIZE
    std::string out = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    AppendFrame(&out, 0x4, 0, 0, settings);
    if (absl::Status s = conn->Send(out); !s.ok()) return s;
    return conn;
  }

  // Opens a stream calling `path` ("/runtime.v1.RuntimeService/ListContainers") with
  // `message`, a serialized request; without `complete`, the request never ends.
  absl::Status Call(const std::string& path, const std::string& message, bool complete) {
    std::string block;
    for (const auto& [name, value] : {std::pair<std::string, std::string>{":method", "POST"},
                                      {":scheme", "http"},
                                      {":path", path},
                                      {":authority", "localhost"},
                                      {"content-type", "application/grpc"},
                                      {"te", "trailers"}}) {
      block.push_back('\0');  // literal header field without indexing, new name
      AppendString(&block, name);
      AppendString(&block, value);
    }
    const uint32_t stream = next_stream_;
    next_stream_ += 2;
    std::string out;
    AppendFrame(&out, 0x1, 0x4, stream, block);  // HEADERS, END_HEADERS
    std::string grpc_message(1, '\0');
    for (int shift = 24; shift >= 0; shift -= 8) grpc_message.push_back(static_cast<char>(message.size() >> shift));
    grpc_message += message;
    AppendFrame(&out, 0x0, complete ? 0x1 : 0x0, stream, grpc_message);  // DATA, END_STREAM when complete
    return Send(out);
  }

  // Whether the server closed the connection; reads (and drops) what it sent meanwhile.
  bool ClosedByServer() {
    char buf[65536];
    for (;;) {
      const ssize_t n = ::recv(fd_.get(), buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0) continue;
      if (n == 0) return true;
      return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
    }
  }

 private:
  explicit RawH2Connection(common::UniqueFd fd) : fd_(std::move(fd)) {}

  static void AppendSetting(std::string* out, uint16_t id, uint32_t value) {
    out->push_back(static_cast<char>(id >> 8));
    out->push_back(static_cast<char>(id));
    for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(value >> shift));
  }
  static void AppendFrame(std::string* out, uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload) {
    for (int shift = 16; shift >= 0; shift -= 8) out->push_back(static_cast<char>(payload.size() >> shift));
    out->push_back(static_cast<char>(type));
    out->push_back(static_cast<char>(flags));
    for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(stream >> shift));
    *out += payload;
  }
  // An HPACK string literal, not Huffman-coded; its length as a 7-bit prefix integer.
  static void AppendString(std::string* out, const std::string& s) {
    std::size_t n = s.size();
    if (n < 127) {
      out->push_back(static_cast<char>(n));
    } else {
      out->push_back(static_cast<char>(127));
      for (n -= 127; n >= 128; n >>= 7) out->push_back(static_cast<char>((n & 0x7f) | 0x80));
      out->push_back(static_cast<char>(n));
    }
    *out += s;
  }

  absl::Status Send(const std::string& bytes) {
    for (std::size_t off = 0; off < bytes.size();) {
      const ssize_t n = ::send(fd_.get(), bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return absl::ErrnoToStatus(errno, "send");
      off += static_cast<std::size_t>(n);
    }
    return absl::OkStatus();
  }

  common::UniqueFd fd_;
  uint32_t next_stream_ = 1;
};

}  // namespace testsupport
