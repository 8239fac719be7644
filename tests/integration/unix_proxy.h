#pragma once
// A unix-socket proxy between the shim and a Docker engine, so a test can take
// "dockerd" away and bring it back on any engine: Shut() stops accepting (the socket
// file stays, so connecting is refused, as with a dead dockerd) and cuts every open
// connection (event and log streams break mid-way); Open() accepts again. One thread
// per connection copies bytes both ways; their sockets are closed at destruction.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace testenv {

class UnixProxy {
 public:
  UnixProxy(std::string listen_path, std::string upstream_path)
      : path_(std::move(listen_path)), upstream_(std::move(upstream_path)) {}
  ~UnixProxy() {
    Shut();
    std::lock_guard lock(mu_);
    for (auto& c : conns_) {
      c->thread.join();
      ::close(c->client);
      ::close(c->server);
    }
  }
  // False when the socket cannot be bound.
  bool Open() {
    std::lock_guard lock(mu_);
    if (listener_ >= 0) return true;
    ::unlink(path_.c_str());
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr = Address(path_);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 128) != 0) {
      ::close(fd);
      return false;
    }
    listener_ = fd;
    stop_accepting_ = false;
    if (acceptor_.joinable()) acceptor_.join();
    acceptor_ = std::thread([this, fd] { Accept(fd); });
    return true;
  }
  void Shut() {
    std::thread acceptor;
    {
      std::lock_guard lock(mu_);
      if (listener_ < 0) return;
      stop_accepting_ = true;
      // The file stays: a connect is refused. The acceptor closes the socket.
      ::shutdown(listener_, SHUT_RDWR);
      listener_ = -1;
      for (auto& c : conns_) {
        ::shutdown(c->client, SHUT_RDWR);
        ::shutdown(c->server, SHUT_RDWR);
      }
      acceptor = std::move(acceptor_);
    }
    acceptor.join();
  }

 private:
  struct Conn {
    int client = -1, server = -1;
    std::thread thread;
  };

  static sockaddr_un Address(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    return addr;
  }

  void Accept(int listener) {
    for (;;) {
      pollfd p{listener, POLLIN, 0};
      ::poll(&p, 1, 100);
      {
        std::lock_guard lock(mu_);
        if (stop_accepting_) break;
      }
      if (!(p.revents & POLLIN)) continue;
      int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      int server = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_un addr = Address(upstream_);
      if (::connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(server);
        ::close(client);
        continue;
      }
      std::lock_guard lock(mu_);
      auto conn = std::make_unique<Conn>();
      conn->client = client;
      conn->server = server;
      Conn* c = conn.get();
      c->thread = std::thread([c] { Pump(c->client, c->server); });
      conns_.push_back(std::move(conn));
    }
    ::close(listener);
  }

  // Copies both ways until either side closes or the proxy cuts the connection.
  static void Pump(int a, int b) {
    char buf[64 * 1024];
    pollfd p[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    bool open = true;
    while (open && ::poll(p, 2, -1) > 0) {
      for (int i = 0; i < 2 && open; ++i) {
        if (!p[i].revents) continue;
        ssize_t n = ::recv(p[i].fd, buf, sizeof buf, 0);
        if (n <= 0) {
          open = false;
          break;
        }
        for (ssize_t sent = 0; sent < n;) {
          ssize_t m = ::send(p[1 - i].fd, buf + sent, static_cast<size_t>(n - sent), MSG_NOSIGNAL);
          if (m <= 0) {
            open = false;
            break;
          }
          sent += m;
        }
      }
    }
    // Closed only at destruction, so that Shut never hits a reused descriptor.
    ::shutdown(a, SHUT_RDWR);
    ::shutdown(b, SHUT_RDWR);
  }

  const std::string path_, upstream_;
  std::mutex mu_;
  int listener_ = -1;             // guarded by mu_
  bool stop_accepting_ = false;   // guarded by mu_
  std::thread acceptor_;
  std::list<std::unique_ptr<Conn>> conns_;  // guarded by mu_; joined at destruction
};

}  // namespace testenv
