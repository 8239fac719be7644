#pragma once
// The streaming server's only view of the runtime. The CRI service validates an
// Exec/Attach/PortForward call, hands the request to a UrlIssuer and returns the
// URL; when the client connects there, the server asks its Runtime to start the
// process (or where to forward ports) and carries the bytes itself.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/unique_fd.h"

namespace streaming {

struct TerminalSize {
  uint16_t width = 0, height = 0;
  bool operator==(const TerminalSize&) const = default;
};

struct ExecRequest {
  std::string container_id;
  std::vector<std::string> cmd;
  bool tty = false, stdin = false, stdout = false, stderr = false;
};

struct AttachRequest {
  std::string container_id;
  bool tty = false, stdin = false, stdout = false, stderr = false;
};

struct PortForwardRequest {
  std::string pod_sandbox_id;
  std::vector<uint16_t> ports;  // WebSocket clients get these channels; SPDY names ports per stream
};

using Request = std::variant<ExecRequest, AttachRequest, PortForwardRequest>;

// A process's stdio as the runtime hands it over: one full-duplex stream socket.
// Writing sends stdin, shutdown(SHUT_WR) closes stdin, and reading yields the output
// until the process ends (then EOF).
struct ProcessIo {
  common::UniqueFd fd;
  std::string buffered;      // output that arrived with the handover
  bool multiplexed = false;  // output framed per dockerclient/stdcopy.h (no TTY); raw when false
  // Whether the client's stdin EOF is passed on as shutdown(SHUT_WR). Not for a
  // terminal: Docker answers a TTY's stdin EOF by ending the output, while the process
  // runs on (and a terminal has no end of input to pass; ^D is a byte).
  bool half_close_stdin = true;
};

// A started exec or attach. Calls block; the server makes them on its worker threads.
class Process {
 public:
  virtual ~Process() = default;
  virtual absl::Status Resize(TerminalSize size) = 0;
  // Called once the output has ended: the exit code, or nullopt when there is none to
  // report (attach).
  virtual absl::StatusOr<std::optional<int>> Wait() = 0;
  // The client went away while the process ran: an exec is killed (as containerd
  // does), an attach is left running.
  virtual void Abandon() = 0;
};

struct StartedProcess {
  std::unique_ptr<Process> process;
  ProcessIo io;
};

// Implemented by the shim. Calls block; the server makes them on its worker threads.
class Runtime {
 public:
  virtual ~Runtime() = default;
  // `size` is the terminal's first size when the client sent it before the start.
  virtual absl::StatusOr<StartedProcess> Exec(const ExecRequest& req, std::optional<TerminalSize> size) = 0;
  virtual absl::StatusOr<StartedProcess> Attach(const AttachRequest& req, std::optional<TerminalSize> size) = 0;
  // The network namespace where the sandbox's ports are reached: a path such as
  // /proc/<pid>/ns/net, or empty for the host's own (host-network pods).
  virtual absl::StatusOr<std::string> PortForwardNetns(const std::string& pod_sandbox_id) = 0;
};

// What the CRI service needs of the streaming server.
class UrlIssuer {
 public:
  virtual ~UrlIssuer() = default;
  // An absolute URL (http://host:port/exec/<token>) that serves `req` once.
  virtual absl::StatusOr<std::string> IssueUrl(Request req) = 0;
};

}  // namespace streaming
