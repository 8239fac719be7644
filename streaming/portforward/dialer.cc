#include "streaming/portforward/dialer.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>

#include "absl/strings/str_cat.h"

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

void NetnsDialer::AsyncConnect(asio::any_io_executor executor, std::string netns_path, uint16_t port,
                               Handler handler) {
  std::string where = Where(netns_path);
  netns_.Post(std::move(netns_path), [executor, port, where = std::move(where), handler = std::move(handler)](
                                         const absl::Status& entered) mutable {
    // Made here, in the pod's namespace; everything else happens on the caller's executor.
    absl::Status status = entered;
    common::UniqueFd v4, v6;
    if (status.ok()) {
      v4 = NewSocket(AF_INET);
      if (!v4) status = absl::UnavailableError(absl::StrCat("cannot make a socket ", where, ": ", std::strerror(errno)));
      v6 = NewSocket(AF_INET6);  // fails where there is no IPv6: then IPv4 only
    }
    auto sockets = std::make_shared<std::pair<common::UniqueFd, common::UniqueFd>>(std::move(v4), std::move(v6));
    asio::post(executor, [executor, status, sockets, port, where, handler = std::move(handler)]() mutable {
      if (!status.ok()) return handler(status);
      ErrorCode ec;
      auto socket4 = std::make_shared<tcp::socket>(executor);
      socket4->assign(tcp::v4(), sockets->first.Release(), ec);
      std::shared_ptr<tcp::socket> socket6;
      if (sockets->second) {
        socket6 = std::make_shared<tcp::socket>(executor);
        socket6->assign(tcp::v6(), sockets->second.Release(), ec);
      }
      ConnectInOrder(std::move(socket4), std::move(socket6), port, where, std::move(handler));
    });
  });
}

}  // namespace streaming::portforward
