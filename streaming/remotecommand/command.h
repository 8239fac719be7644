#pragma once
// One exec or attach session, whatever the transport: starts the process through the
// Runtime once the client's channels exist, copies stdin to it (half-closing at the
// client's EOF) and its output to stdout/stderr (demultiplexed without a TTY),
// applies terminal sizes in order with stdin, and when the output ends writes the
// exit status on the error channel (the v4 JSON Status, or v1-v3 text on failure)
// and closes the channels. The session ends with the process, whatever stdin does.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dockerclient/stdcopy.h"
#include "streaming/channel.h"
#include "streaming/remotecommand/protocol.h"
#include "streaming/runtime.h"

namespace streaming::remotecommand {

namespace asio = boost::asio;

struct Channels {
  std::shared_ptr<InChannel> stdin, resize;
  std::shared_ptr<OutChannel> stdout, stderr, error;
};

// What every command of a server shares.
struct Environment {
  Runtime* runtime = nullptr;
  asio::any_io_executor workers;  // where runtime calls block
  // A TTY session waits this long for the client's first terminal size before it
  // starts the process, so the process starts with the right size.
  absl::Duration first_size_wait = absl::Milliseconds(250);
};

class Command final : public std::enable_shared_from_this<Command> {
 public:
  // `request` is an ExecRequest or an AttachRequest. `on_done` runs once, on
  // `strand`, after the status was queued and the channels closed; not after Cancel.
  Command(const Environment& env, asio::any_io_executor strand, Request request, Version version, Channels channels,
          std::function<void()> on_done);

  void Start();
  // The client is gone: stop copying; an exec still running is abandoned (killed).
  void Cancel();

 private:
  bool tty() const;
  void ReadResize();
  void Launch();
  void OnStarted(absl::StatusOr<StartedProcess> started);
  void ProcessOutput(std::string_view bytes);
  std::size_t ReadAvailable(std::size_t used);
  void ReadOutput();
  void OnOutputWritten(ErrorCode ec);
  void ReadStdin();
  void WriteStdin(std::string data);
  void CloseStdin();
  void ApplyPendingSize();
  void OnOutputEnded();
  void Finish(const std::string& status_text);
  std::string StatusFor(const absl::StatusOr<std::optional<int>>& exit) const;
  std::string FailureStatus(std::string_view message) const;

  const Environment& env_;
  const asio::any_io_executor strand_;
  const Request request_;
  const Version version_;
  Channels channels_;
  std::function<void()> on_done_;

  bool launched_ = false, cancelled_ = false, finished_ = false, output_ended_ = false;
  std::shared_ptr<Process> process_;
  asio::local::stream_protocol::socket socket_;
  std::optional<dockerclient::StdDemuxer> demuxer_;
  std::vector<char> read_buffer_;
  std::string out_piece_, err_piece_;
  int output_writes_pending_ = 0;

  asio::steady_timer first_size_timer_;
  ResizeDecoder resize_decoder_;
  std::optional<TerminalSize> first_size_, pending_size_;
  bool resize_in_flight_ = false;
  std::optional<std::string> held_stdin_;  // waits for a resize sent before it
  bool stdin_eof_ = false;
  bool half_close_stdin_ = true;
};

}  // namespace streaming::remotecommand
