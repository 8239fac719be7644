#include "streaming/remotecommand/command.h"

#include <utility>

#include <boost/asio/error.hpp>
#include <boost/asio/write.hpp>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/strings.h"
#include "streaming/blocking.h"

namespace streaming::remotecommand {

namespace {

constexpr std::size_t kOutputChunk = 128 << 10;

const std::string& ContainerOf(const Request& r) {
  if (const auto* exec = std::get_if<ExecRequest>(&r)) return exec->container_id;
  return std::get<AttachRequest>(r).container_id;
}

}  // namespace

Command::Command(const Environment& env, asio::any_io_executor strand, Request request, Version version,
                 Channels channels, std::function<void()> on_done)
    : env_(env),
      strand_(strand),
      request_(std::move(request)),
      version_(version),
      channels_(std::move(channels)),
      on_done_(std::move(on_done)),
      socket_(strand),
      first_size_timer_(strand) {}

bool Command::tty() const {
  if (const auto* exec = std::get_if<ExecRequest>(&request_)) return exec->tty;
  return std::get<AttachRequest>(request_).tty;
}

void Command::Start() {
  if (channels_.resize) ReadResize();
  if (!tty() || !channels_.resize) return Launch();
  first_size_timer_.expires_after(absl::ToChronoNanoseconds(env_.first_size_wait));
  first_size_timer_.async_wait([self = shared_from_this()](ErrorCode) { self->Launch(); });
}

void Command::ReadResize() {
  channels_.resize->AsyncRead([self = shared_from_this()](ErrorCode ec, std::string data) {
    if (ec || self->cancelled_ || self->finished_) return;
    std::vector<TerminalSize> sizes;
    if (absl::Status s = self->resize_decoder_.Feed(data, sizes); !s.ok()) {
      LOG_DEBUG << "resize stream of " << ContainerOf(self->request_) << ": " << s.message() << "; ignoring it";
      return;
    }
    for (const TerminalSize& size : sizes) {
      if (size.width == 0 || size.height == 0) continue;  // as cri-dockerd: nothing to apply
      if (!self->launched_ && !self->first_size_) {
        self->first_size_ = size;
      } else {
        self->pending_size_ = size;  // only the latest matters
      }
    }
    if (!self->launched_ && self->first_size_) {
      self->first_size_timer_.cancel();
    } else {
      self->ApplyPendingSize();
    }
    self->ReadResize();
  });
}

void Command::Launch() {
  if (launched_ || cancelled_) return;
  launched_ = true;
  Runtime* runtime = env_.runtime;
  RunBlocking(
      env_.workers, strand_,
      [runtime, request = request_, size = first_size_] {
        if (const auto* exec = std::get_if<ExecRequest>(&request)) return runtime->Exec(*exec, size);
        return runtime->Attach(std::get<AttachRequest>(request), size);
      },
      [self = shared_from_this()](absl::StatusOr<StartedProcess> started) { self->OnStarted(std::move(started)); });
}

void Command::OnStarted(absl::StatusOr<StartedProcess> started) {
  if (!started.ok()) {
    const bool exec = std::holds_alternative<ExecRequest>(request_);
    LOG_INFO << (exec ? "exec in " : "attach to ") << ContainerOf(request_) << ": " << started.status().message();
    return Finish(FailureStatus(absl::StrCat(exec ? "error executing command in container: "
                                                  : "error attaching to container: ",
                                             started.status().message())));
  }
  process_ = std::move(started->process);
  if (cancelled_) {
    RunBlocking(env_.workers, strand_, [process = process_] { process->Abandon(); }, [] {});
    return;
  }
  ErrorCode ec;
  socket_.assign(asio::local::stream_protocol(), started->io.fd.Release(), ec);
  if (ec) return Finish(FailureStatus(absl::StrCat("cannot use the process's stream: ", ec.message())));
  if (started->io.multiplexed) {
    demuxer_.emplace([this](dockerclient::StdStream stream, std::string_view data) {
      switch (stream) {
        case dockerclient::StdStream::kStdout: out_piece_.append(data); break;
        // dockerd's own errors about the exec ("exec failed: ...") are for the user to see.
        case dockerclient::StdStream::kStderr:
        case dockerclient::StdStream::kSystemErr: err_piece_.append(data); break;
        case dockerclient::StdStream::kStdin: break;
      }
    });
  }
  read_buffer_.resize(kOutputChunk);
  ApplyPendingSize();
  half_close_stdin_ = started->io.half_close_stdin;
  if (channels_.stdin) {
    ReadStdin();
  } else {
    // Nothing will come: the process sees stdin closed at once, as with cri-dockerd.
    stdin_eof_ = true;
    CloseStdin();
  }
  if (!started->io.buffered.empty()) {
    ProcessOutput(started->io.buffered);
  } else {
    ReadOutput();
  }
}

void Command::ReadOutput() {
  if (cancelled_ || finished_) return;
  socket_.async_read_some(asio::buffer(read_buffer_), [self = shared_from_this()](ErrorCode ec, std::size_t n) {
    if (self->cancelled_ || self->finished_) return;
    if (ec) {
      if (ec != asio::error::eof) LOG_DEBUG << "output of " << ContainerOf(self->request_) << ": " << ec.message();
      return self->OnOutputEnded();
    }
    self->ProcessOutput(std::string_view(self->read_buffer_.data(), n + self->ReadAvailable(n)));
  });
}

// A terminal's output arrives in small reads (a pty hands over a few KiB at a time):
// what is already there joins the chunk, so it goes out in fewer, larger frames.
std::size_t Command::ReadAvailable(std::size_t used) {
  std::size_t more = 0;
  ErrorCode ec;
  while (used + more < read_buffer_.size() && socket_.available(ec) > 0 && !ec) {
    more += socket_.read_some(asio::buffer(read_buffer_.data() + used + more, read_buffer_.size() - used - more), ec);
    if (ec) break;  // the next read reports the end
  }
  return more;
}

// Splits output into its streams and writes them; reads on once both channels can
// take more.
void Command::ProcessOutput(std::string_view bytes) {
  if (demuxer_) {
    if (!demuxer_->Feed(bytes)) {
      LOG_WARN << "output of " << ContainerOf(request_) << " is not in Docker's stream format; ending the session";
      return OnOutputEnded();
    }
  } else {
    out_piece_.append(bytes);
  }
  const auto send = [this](std::shared_ptr<OutChannel>& channel, std::string& piece) {
    if (piece.empty()) return;
    if (!channel) return piece.clear();  // not asked for
    ++output_writes_pending_;
    channel->AsyncWrite(std::exchange(piece, {}),
                        [self = shared_from_this()](ErrorCode ec) { self->OnOutputWritten(ec); });
  };
  send(channels_.stdout, out_piece_);
  send(channels_.stderr, err_piece_);
  if (output_writes_pending_ == 0) ReadOutput();
}

void Command::OnOutputWritten(ErrorCode ec) {
  if (--output_writes_pending_ > 0) return;
  // A channel that failed belongs to a session that is ending; Cancel follows.
  if (!ec) ReadOutput();
}

void Command::ReadStdin() {
  channels_.stdin->AsyncRead([self = shared_from_this()](ErrorCode ec, std::string data) {
    if (self->cancelled_ || self->finished_) return;
    if (ec) {
      // EOF or a reset of stdin: the process sees its stdin closed.
      self->stdin_eof_ = true;
      return self->CloseStdin();
    }
    self->WriteStdin(std::move(data));
  });
}

void Command::WriteStdin(std::string data) {
  if (resize_in_flight_) {
    held_stdin_ = std::move(data);
    return;
  }
  auto buffer = std::make_shared<std::string>(std::move(data));
  asio::async_write(socket_, asio::buffer(*buffer), [self = shared_from_this(), buffer](ErrorCode ec, std::size_t) {
    if (ec || self->cancelled_ || self->finished_) return;  // the process is gone; its output's end finishes
    self->ReadStdin();
  });
}

// Passes the client's stdin EOF on once what came before it (stdin, a resize) is
// through; a terminal keeps its stdin (see ProcessIo::half_close_stdin).
void Command::CloseStdin() {
  if (!stdin_eof_ || !half_close_stdin_ || resize_in_flight_ || held_stdin_) return;
  ErrorCode ignored;
  socket_.shutdown(asio::socket_base::shutdown_send, ignored);
}

// Sizes go to the runtime one at a time, and stdin that came after a size waits for
// it, so a program reading its size after a line of input sees the new one.
void Command::ApplyPendingSize() {
  if (!process_ || resize_in_flight_ || !pending_size_ || cancelled_ || finished_) return;
  resize_in_flight_ = true;
  RunBlocking(
      env_.workers, strand_,
      [process = process_, size = *std::exchange(pending_size_, std::nullopt)] { return process->Resize(size); },
      [self = shared_from_this()](absl::Status resized) {
        self->resize_in_flight_ = false;
        if (!resized.ok()) LOG_DEBUG << "resize of " << ContainerOf(self->request_) << ": " << resized.message();
        if (self->pending_size_) return self->ApplyPendingSize();
        if (self->held_stdin_) {
          self->WriteStdin(*std::exchange(self->held_stdin_, std::nullopt));
        } else {
          self->CloseStdin();
        }
      });
}

void Command::OnOutputEnded() {
  if (output_ended_) return;
  output_ended_ = true;
  ErrorCode ignored;
  socket_.close(ignored);
  RunBlocking(
      env_.workers, strand_, [process = process_] { return process->Wait(); },
      [self = shared_from_this()](absl::StatusOr<std::optional<int>> exit) {
        if (self->cancelled_) return;
        self->Finish(self->StatusFor(exit));
      });
}

std::string Command::StatusFor(const absl::StatusOr<std::optional<int>>& exit) const {
  if (!exit.ok()) return FailureStatus(absl::StrCat("error executing command in container: ", exit.status().message()));
  if (!exit->has_value() || **exit == 0) return version_ >= Version::kV4 ? SuccessStatus() : std::string();
  const int code = **exit;
  if (code < 0 || code > 255) {
    return FailureStatus(absl::StrCat("error executing command in container: exit code ", code, " out of range"));
  }
  const std::string error = absl::StrCat("exit code ", code);
  if (version_ >= Version::kV4) return ExitCodeStatus(code, error);
  return absl::StrCat("command terminated with non-zero exit code: ", error);
}

// v4+ carry a JSON Status; v1-v3 the bare message.
std::string Command::FailureStatus(std::string_view message) const {
  if (version_ >= Version::kV4) return InternalErrorStatus(message);
  return absl::StrCat("Internal error occurred: ", common::Av(message));
}

void Command::Finish(const std::string& status_text) {
  if (finished_ || cancelled_) return;
  finished_ = true;
  first_size_timer_.cancel();
  if (channels_.error && !status_text.empty()) channels_.error->AsyncWrite(status_text, [](ErrorCode) {});
  for (auto* channel : {&channels_.stdout, &channels_.stderr, &channels_.error}) {
    if (*channel) (*channel)->CloseWrite();
  }
  channels_ = {};
  if (auto done = std::move(on_done_)) done();
}

void Command::Cancel() {
  if (cancelled_ || finished_) return;
  cancelled_ = true;
  first_size_timer_.cancel();
  ErrorCode ignored;
  socket_.close(ignored);
  channels_ = {};
  on_done_ = nullptr;
  if (process_ && !output_ended_) {
    RunBlocking(env_.workers, strand_, [process = process_] { process->Abandon(); }, [] {});
  }
}

}  // namespace streaming::remotecommand
