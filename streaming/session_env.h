#pragma once
// What every session of one server shares, and the registry through which the
// server ends them all on shutdown.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

#include <boost/asio/any_io_executor.hpp>

#include "absl/time/time.h"
#include "streaming/portforward/dialer.h"
#include "streaming/remotecommand/command.h"
#include "streaming/runtime.h"

namespace streaming {

// Live sessions. Each registers a way to end itself (run on its own strand).
class SessionRegistry {
 public:
  // Once ShutdownAll has begun, a session that registers is asked to end at once.
  // `kind` ("exec", "attach", "portforward") counts the session in the metrics; a
  // connection not yet upgraded registers without one.
  uint64_t Add(boost::asio::any_io_executor strand, std::function<void()> shutdown, const char* kind = nullptr);
  void Remove(uint64_t id);
  // Asks every session to end; waits up to `grace` for them to be gone. False if
  // some were still there.
  bool ShutdownAll(absl::Duration grace);
  std::size_t size() const;

 private:
  struct Entry {
    boost::asio::any_io_executor strand;
    std::function<void()> shutdown;
    const char* kind;
  };
  mutable std::mutex mu_;
  std::condition_variable empty_;
  std::map<uint64_t, Entry> sessions_;
  uint64_t next_id_ = 1;
  bool shutting_down_ = false;
};

struct SessionEnv {
  Runtime* runtime = nullptr;
  boost::asio::any_io_executor workers;
  portforward::NetnsDialer* dialer = nullptr;
  SessionRegistry* registry = nullptr;
  remotecommand::Environment command;
  absl::Duration idle_timeout = absl::Hours(4);
  absl::Duration stream_creation_timeout = absl::Seconds(30);
};

}  // namespace streaming
