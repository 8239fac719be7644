#pragma once
// A streaming::Runtime for tests of the streaming server, without Docker. Each
// Exec/Attach hands the server one end of a socket pair; the test plays dockerd on
// the other end through a FakeProcess: it writes the output (stdcopy frames without
// a TTY, raw bytes with one), reads stdin, sees the server's shutdown(SHUT_WR) as
// stdin EOF, and ends the output when the process "exits". The runtime records what
// the server asked of it: requests, first sizes, resizes, Wait and Abandon.
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/unique_fd.h"
#include "streaming/runtime.h"

namespace streamtest {

// One frame of Docker's multiplexed stream (dockerclient/stdcopy.h): stream 1
// stdout, 2 stderr, 3 a system error.
std::string StdcopyFrame(uint8_t stream, std::string_view data);

class FakeProcess {
 public:
  FakeProcess(streaming::Request request, std::optional<streaming::TerminalSize> first_size, common::UniqueFd fd,
              bool multiplexed);

  const streaming::Request& request() const { return request_; }
  std::optional<streaming::TerminalSize> first_size() const { return first_size_; }
  int fd() const { return fd_.get(); }

  // Output as dockerd sends it: a stdcopy frame each without a TTY, raw with one
  // (Stderr then needs no TTY). False once the server stopped reading for good.
  bool Stdout(std::string_view data);
  bool Stderr(std::string_view data);
  // The process ends: Wait() will report `exit` and the server sees the output end.
  void Exit(absl::StatusOr<std::optional<int>> exit);

  // The next `n` bytes of stdin the server wrote (fewer at its EOF);
  // DEADLINE_EXCEEDED when they did not come within `timeout`.
  absl::StatusOr<std::string> ReadStdin(std::size_t n, absl::Duration timeout);
  // Everything until the server half-closes stdin (or closes the stream).
  absl::StatusOr<std::string> ReadStdinToEof(absl::Duration timeout);

  // Sizes the server applied with Resize, in order. While held, each Resize call is
  // recorded at once but returns only once released.
  std::vector<streaming::TerminalSize> resizes();
  bool WaitResizes(std::size_t count, absl::Duration timeout);
  void HoldResizes(bool hold);
  bool WaitAbandoned(absl::Duration timeout);
  bool abandoned();
  bool waited();

 private:
  friend class FakeRuntime;
  class Handle;

  void RecordResize(streaming::TerminalSize size);
  absl::StatusOr<std::optional<int>> RecordWait();
  void RecordAbandon();

  const streaming::Request request_;
  const std::optional<streaming::TerminalSize> first_size_;
  common::UniqueFd fd_;  // dockerd's end
  const bool multiplexed_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<streaming::TerminalSize> resizes_;
  absl::StatusOr<std::optional<int>> exit_;
  bool waited_ = false, abandoned_ = false, hold_resizes_ = false;
};

class FakeRuntime final : public streaming::Runtime {
 public:
  absl::StatusOr<streaming::StartedProcess> Exec(const streaming::ExecRequest& req,
                                                 std::optional<streaming::TerminalSize> size) override;
  absl::StatusOr<streaming::StartedProcess> Attach(const streaming::AttachRequest& req,
                                                   std::optional<streaming::TerminalSize> size) override;
  // Always the host's namespace: port-forward reaches 127.0.0.1 of the test.
  absl::StatusOr<std::string> PortForwardNetns(const std::string& pod_sandbox_id) override;

  // While held, Exec, Attach and PortForwardNetns are counted at once but return
  // only once released (a runtime call that blocks in dockerd).
  void HoldCalls(bool hold);
  std::size_t calls();

  // Every later Exec/Attach fails with `status` (OK starts processes again).
  void FailStarts(absl::Status status);
  // Runs on the server's worker thread for each process before the server gets it,
  // e.g. to script output that is already waiting when the session starts.
  void OnStart(std::function<void(FakeProcess&)> script);
  // Output that later processes hand over with their stream (ProcessIo::buffered),
  // as it came after dockerd's 101: stdcopy frames without a TTY.
  void HandOver(std::string output);

  // The processes started so far, oldest first; waits up to `timeout` for the
  // `index`th (0-based); nullptr if it did not come.
  std::shared_ptr<FakeProcess> WaitProcess(std::size_t index, absl::Duration timeout);
  std::size_t starts();
  std::vector<std::string> netns_requests();

 private:
  absl::StatusOr<streaming::StartedProcess> Start(streaming::Request request,
                                                  std::optional<streaming::TerminalSize> size, bool tty);
  void CountCall(std::unique_lock<std::mutex>& lock);  // waits while held

  std::mutex mu_;
  std::condition_variable cv_;
  absl::Status start_error_;
  std::function<void(FakeProcess&)> script_;
  std::string handover_;
  std::vector<std::shared_ptr<FakeProcess>> processes_;
  std::vector<std::string> netns_requests_;
  std::size_t calls_ = 0;
  bool hold_calls_ = false;
};

}  // namespace streamtest
