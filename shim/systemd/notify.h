#pragma once
// systemd's service protocol without libsystemd: state datagrams to $NOTIFY_SOCKET
// (Type=notify: READY=1, STOPPING=1) and the watchdog keep-alive (WatchdogSec=).
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace shim::systemd {

class Notifier {
 public:
  // From $NOTIFY_SOCKET (a path, or "@name" for an abstract socket); unset: a no-op.
  static Notifier FromEnvironment();
  explicit Notifier(std::string socket_path) : socket_path_(std::move(socket_path)) {}

  bool enabled() const { return !socket_path_.empty(); }
  // Sends one datagram such as "READY=1"; failures are logged, never fatal.
  void Notify(std::string_view state) const;

 private:
  std::string socket_path_;
};

// The watchdog interval systemd asks for ($WATCHDOG_USEC, for this process when
// $WATCHDOG_PID is set); none when unset or malformed.
std::optional<std::chrono::microseconds> WatchdogInterval();

// Sends WATCHDOG=1 every half interval on its own thread, as sd_watchdog_enabled(3)
// advises, until Stop() (or destruction).
class Watchdog {
 public:
  Watchdog(const Notifier& notifier, std::chrono::microseconds interval);
  ~Watchdog() { Stop(); }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  void Stop();

 private:
  void Run(std::chrono::microseconds period);

  const Notifier& notifier_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace shim::systemd
