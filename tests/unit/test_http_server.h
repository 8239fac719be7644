#pragma once
// A scripted HTTP/1.1 server on a temporary unix socket, for transport and client
// tests: every accepted connection runs the handler on its own thread; the server
// closes the connection when the handler returns.
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace testhttp {

// A streamed answer (logs, events) written piece by piece: the head of a chunked 200,
// each piece as a chunk, and the body's end.
inline constexpr std::string_view kChunkedOk = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
inline constexpr std::string_view kChunkedEnd = "0\r\n\r\n";
inline std::string Chunk(std::string_view data) {
  std::ostringstream size;
  size << std::hex << data.size();
  return absl::StrCat(size.str(), "\r\n", std::string(data), "\r\n");
}

struct ReceivedRequest {
  std::string method, target, head, body;
};

inline bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Reads one request (head and Content-Length body); nullopt when the peer closed.
// `buffer` carries bytes read past the request to the next call.
inline std::optional<ReceivedRequest> ReadRequest(int fd, std::string& buffer) {
  const auto fill = [&] {
    char chunk[4096];
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<size_t>(n));
    return true;
  };
  size_t end;
  while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
    if (!fill()) return std::nullopt;
  }
  ReceivedRequest req;
  req.head = buffer.substr(0, end);
  buffer.erase(0, end + 4);
  std::vector<std::string> first = absl::StrSplit(req.head.substr(0, req.head.find("\r\n")), ' ');
  if (first.size() >= 2) {
    req.method = first[0];
    req.target = first[1];
  }
  size_t length = 0;
  for (absl::string_view line : absl::StrSplit(req.head, "\r\n")) {
    if (absl::StartsWith(absl::AsciiStrToLower(line), "content-length:")) {
      (void)absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(15)), &length);
    }
  }
  while (buffer.size() < length) {
    if (!fill()) return std::nullopt;
  }
  req.body = buffer.substr(0, length);
  buffer.erase(0, length);
  return req;
}

inline std::string Response(int status, std::string_view body, std::string_view extra_headers = "") {
  return absl::StrCat("HTTP/1.1 ", status, " X\r\nContent-Length: ", body.size(), "\r\n",
                      absl::string_view(extra_headers.data(), extra_headers.size()), "\r\n",
                      absl::string_view(body.data(), body.size()));
}

class UnixHttpServer {
 public:
  // `handler(fd, index)` serves the index-th accepted connection (0-based).
  using Handler = std::function<void(int fd, int index)>;

  explicit UnixHttpServer(Handler handler) : handler_(std::move(handler)) {
    char dir[] = "/tmp/dshttp.XXXXXX";
    dir_ = ::mkdtemp(dir);
    path_ = dir_ + "/docker.sock";
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(listen_fd_, 16) != 0) {
      std::abort();
    }
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }

  ~UnixHttpServer() {
    ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
    acceptor_.join();
    ::close(listen_fd_);
    std::vector<std::unique_ptr<Conn>> conns;
    {
      std::lock_guard<std::mutex> lock(mu_);
      conns.swap(conns_);
      for (auto& c : conns) {
        if (!c->closed) ::shutdown(c->fd, SHUT_RDWR);  // wakes handlers blocked in read()
      }
    }
    for (auto& c : conns) c->thread.join();
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }

  const std::string& path() const { return path_; }
  std::string endpoint() const { return "unix://" + path_; }
  int accepted() const { return accepted_; }

 private:
  struct Conn {
    int fd = -1;
    bool closed = false;  // guarded by mu_
    std::thread thread;
  };

  void AcceptLoop() {
    for (;;) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      std::lock_guard<std::mutex> lock(mu_);
      auto conn = std::make_unique<Conn>();
      Conn* c = conn.get();
      c->fd = fd;
      const int index = accepted_++;
      c->thread = std::thread([this, c, index] {
        handler_(c->fd, index);
        std::lock_guard<std::mutex> lock(mu_);
        ::close(c->fd);
        c->closed = true;
      });
      conns_.push_back(std::move(conn));
    }
  }

  Handler handler_;
  std::string dir_, path_;
  int listen_fd_ = -1;
  std::atomic<int> accepted_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Conn>> conns_;
};

}  // namespace testhttp
