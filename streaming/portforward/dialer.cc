#include "streaming/portforward/dialer.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace streaming::portforward {

namespace {

using asio::ip::tcp;
using ErrorCode = boost::system::error_code;

common::UniqueFd NewSocket(int family) {
  return common::UniqueFd(::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
}

std::string Where(const std::string& netns_path) {
  return netns_path.empty() ? "on the host" : "in the pod's network namespace";
}

// Connects the IPv4 socket, then the IPv6 one when the first is refused (a server
// listening on ::1 only); both were made in the pod's namespace.
void ConnectInOrder(std::shared_ptr<tcp::socket> v4, std::shared_ptr<tcp::socket> v6, uint16_t port,
                    std::string where, NetnsDialer::Handler handler) {
  const tcp::endpoint target(asio::ip::make_address_v4("127.0.0.1"), port);
  v4->async_connect(target, [v4, v6, port, where, handler = std::move(handler)](ErrorCode ec) mutable {
    if (!ec) return handler(std::move(*v4));
    if (ec == asio::error::connection_refused && v6 && v6->is_open()) {
      const tcp::endpoint target6(asio::ip::make_address_v6("::1"), port);
      return v6->async_connect(target6, [v6, port, where, ec, handler = std::move(handler)](ErrorCode ec6) {
        if (!ec6) return handler(std::move(*v6));
        // Docker's pods have no ::1 (IPv6 off): the IPv4 refusal is what matters then.
        const std::string v6_error = ec6.value() == EADDRNOTAVAIL ? "" : ", [::1]: " + ec6.message();
        handler(absl::UnavailableError(
            absl::StrCat("connect to 127.0.0.1:", port, " ", where, ": ", ec.message(), v6_error)));
      });
    }
    handler(absl::UnavailableError(absl::StrCat("connect to 127.0.0.1:", port, " ", where, ": ", ec.message())));
  });
}

}  // namespace

struct NetnsDialer::Sockets {
  absl::Status status;
  common::UniqueFd v4, v6;
};

NetnsDialer::NetnsDialer()
    : host_netns_(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)),
      work_(asio::make_work_guard(ioc_)),
      thread_([this] { ioc_.run(); }) {}

NetnsDialer::~NetnsDialer() {
  work_.reset();
  ioc_.stop();
  thread_.join();
}

// Runs on the dedicated thread only.
NetnsDialer::Sockets NetnsDialer::MakeSockets(const std::string& netns_path) {
  Sockets out;
  const auto make = [&out, &netns_path] {
    out.v4 = NewSocket(AF_INET);
    if (!out.v4) {
      out.status = absl::UnavailableError(
          absl::StrCat("cannot make a socket ", Where(netns_path), ": ", std::strerror(errno)));
    }
    out.v6 = NewSocket(AF_INET6);  // fails where there is no IPv6: then IPv4 only
  };
  if (netns_path.empty()) {
    make();
    return out;
  }
  if (broken_ || !host_netns_) {
    out.status = absl::InternalError("port forwarding into pods is unavailable (cannot switch network namespaces)");
    return out;
  }
  common::UniqueFd target(::open(netns_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!target) {
    out.status = absl::UnavailableError(
        absl::StrCat("cannot open the pod's network namespace ", netns_path, ": ", std::strerror(errno)));
    return out;
  }
  if (::setns(target.get(), CLONE_NEWNET) != 0) {
    out.status = absl::UnavailableError(
        absl::StrCat("cannot enter the pod's network namespace ", netns_path, ": ", std::strerror(errno)));
    return out;
  }
  make();
  if (::setns(host_netns_.get(), CLONE_NEWNET) != 0) {
    LOG_ERROR << "port forwarding: cannot return to the host's network namespace: " << std::strerror(errno)
              << "; refusing further forwards";
    broken_ = true;
    return Sockets{absl::InternalError("port forwarding into pods is unavailable"), {}, {}};
  }
  return out;
}

void NetnsDialer::AsyncConnect(asio::any_io_executor executor, std::string netns_path, uint16_t port,
                               Handler handler) {
  asio::post(ioc_, [this, executor, netns_path = std::move(netns_path), port, handler = std::move(handler)]() mutable {
    auto sockets = std::make_shared<Sockets>(MakeSockets(netns_path));
    asio::post(executor, [executor, sockets, port, where = Where(netns_path), handler = std::move(handler)]() mutable {
      if (!sockets->status.ok()) return handler(sockets->status);
      ErrorCode ec;
      auto v4 = std::make_shared<tcp::socket>(executor);
      v4->assign(tcp::v4(), sockets->v4.Release(), ec);
      std::shared_ptr<tcp::socket> v6;
      if (sockets->v6) {
        v6 = std::make_shared<tcp::socket>(executor);
        v6->assign(tcp::v6(), sockets->v6.Release(), ec);
      }
      ConnectInOrder(std::move(v4), std::move(v6), port, where, std::move(handler));
    });
  });
}

}  // namespace streaming::portforward
