// systemd's notify protocol and watchdog against a real datagram socket.
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "common/unique_fd.h"
#include "shim/systemd/notify.h"
#include "tests/unit/stats_fake_tree.h"

namespace shim::systemd {
namespace {

// A NOTIFY_SOCKET as systemd makes it: a bound datagram socket.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path), fd_(::socket(AF_UNIX, SOCK_DGRAM, 0)) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    bound_ = ::bind(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  bool bound() const { return bound_; }
  // The next datagram, "" after `timeout_ms`.
  std::string Next(int timeout_ms = 5000) {
    pollfd p{fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return "";
    char buf[512];
    ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }

 private:
  std::string path_;
  common::UniqueFd fd_;
  bool bound_ = false;
};

TEST(SystemdNotifyTest, SendsStatesToTheSocket) {
  testutil::FakeTree tree;
  NotifySocket socket(tree.Path("notify"));
  ASSERT_TRUE(socket.bound());
  Notifier notifier(tree.Path("notify"));
  EXPECT_TRUE(notifier.enabled());
  notifier.Notify("READY=1");
  notifier.Notify("STOPPING=1");
  EXPECT_EQ(socket.Next(), "READY=1");
  EXPECT_EQ(socket.Next(), "STOPPING=1");
}

TEST(SystemdNotifyTest, WithoutNotifySocketNothingIsSentAndNothingFails) {
  ::unsetenv("NOTIFY_SOCKET");
  Notifier notifier = Notifier::FromEnvironment();
  EXPECT_FALSE(notifier.enabled());
  notifier.Notify("READY=1");
  // A socket that went away is logged, not fatal.
  Notifier("/nonexistent/notify").Notify("READY=1");
}

TEST(SystemdNotifyTest, WatchdogIntervalIsForThisProcessOnly) {
  ::setenv("WATCHDOG_USEC", "3000000", 1);
  ::unsetenv("WATCHDOG_PID");
  EXPECT_EQ(WatchdogInterval(), std::chrono::seconds(3));
  ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
  EXPECT_EQ(WatchdogInterval(), std::chrono::seconds(3));
  ::setenv("WATCHDOG_PID", std::to_string(::getpid() + 1).c_str(), 1);
  EXPECT_EQ(WatchdogInterval(), std::nullopt);
  ::unsetenv("WATCHDOG_PID");
  ::setenv("WATCHDOG_USEC", "soon", 1);
  EXPECT_EQ(WatchdogInterval(), std::nullopt);
  ::unsetenv("WATCHDOG_USEC");
  EXPECT_EQ(WatchdogInterval(), std::nullopt);
}

TEST(SystemdNotifyTest, WatchdogPingsUntilStopped) {
  testutil::FakeTree tree;
  NotifySocket socket(tree.Path("notify"));
  ASSERT_TRUE(socket.bound());
  Notifier notifier(tree.Path("notify"));
  {
    Watchdog watchdog(notifier, std::chrono::milliseconds(100));
    for (int i = 0; i < 3; ++i) EXPECT_EQ(socket.Next(), "WATCHDOG=1") << i;
    watchdog.Stop();
  }
  // What was in flight at Stop may still arrive; then nothing more.
  while (!socket.Next(200).empty()) {
  }
  EXPECT_EQ(socket.Next(300), "");
}

}  // namespace
}  // namespace shim::systemd
