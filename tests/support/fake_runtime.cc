#include "tests/support/fake_runtime.h"

#include <sys/socket.h>

#include <utility>

#include "tests/support/stream_clients.h"

namespace streamtest {

// {stream, 0, 0, 0, size as big-endian uint32} and the payload.
std::string StdcopyFrame(uint8_t stream, std::string_view data) {
  const auto size = static_cast<uint32_t>(data.size());
  std::string frame = {static_cast<char>(stream), 0, 0, 0, static_cast<char>(size >> 24),
                       static_cast<char>(size >> 16), static_cast<char>(size >> 8), static_cast<char>(size)};
  frame.append(data);
  return frame;
}

// What the server owns: forwards its calls to the FakeProcess the test holds.
class FakeProcess::Handle final : public streaming::Process {
 public:
  explicit Handle(std::shared_ptr<FakeProcess> process) : process_(std::move(process)) {}
  absl::Status Resize(streaming::TerminalSize size) override {
    process_->RecordResize(size);
    return absl::OkStatus();
  }
  absl::StatusOr<std::optional<int>> Wait() override { return process_->RecordWait(); }
  void Abandon() override { process_->RecordAbandon(); }

 private:
  std::shared_ptr<FakeProcess> process_;
};

FakeProcess::FakeProcess(streaming::Request request, std::optional<streaming::TerminalSize> first_size,
                         common::UniqueFd fd, bool multiplexed)
    : request_(std::move(request)),
      first_size_(first_size),
      fd_(std::move(fd)),
      multiplexed_(multiplexed),
      // An attach has no exit code to report; an exec that just ends exited 0.
      exit_(std::holds_alternative<streaming::AttachRequest>(request_) ? std::optional<int>()
                                                                       : std::optional<int>(0)) {}

bool FakeProcess::Stdout(std::string_view data) {
  return WriteAll(fd(), multiplexed_ ? StdcopyFrame(1, data) : std::string(data));
}

bool FakeProcess::Stderr(std::string_view data) { return WriteAll(fd(), StdcopyFrame(2, data)); }

void FakeProcess::Exit(absl::StatusOr<std::optional<int>> exit) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    exit_ = std::move(exit);
  }
  ::shutdown(fd(), SHUT_WR);
}

absl::StatusOr<std::string> FakeProcess::ReadStdin(std::size_t n, absl::Duration timeout) {
  return ReadFdExactly(fd(), n, timeout);
}

absl::StatusOr<std::string> FakeProcess::ReadStdinToEof(absl::Duration timeout) { return ReadFdToEof(fd(), timeout); }

std::vector<streaming::TerminalSize> FakeProcess::resizes() {
  std::lock_guard<std::mutex> lock(mu_);
  return resizes_;
}

bool FakeProcess::WaitResizes(std::size_t count, absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [&] { return resizes_.size() >= count; });
}

bool FakeProcess::WaitAbandoned(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [&] { return abandoned_; });
}

bool FakeProcess::abandoned() {
  std::lock_guard<std::mutex> lock(mu_);
  return abandoned_;
}

bool FakeProcess::waited() {
  std::lock_guard<std::mutex> lock(mu_);
  return waited_;
}

void FakeProcess::HoldResizes(bool hold) {
  std::lock_guard<std::mutex> lock(mu_);
  hold_resizes_ = hold;
  cv_.notify_all();
}

void FakeProcess::RecordResize(streaming::TerminalSize size) {
  std::unique_lock<std::mutex> lock(mu_);
  resizes_.push_back(size);
  cv_.notify_all();
  cv_.wait(lock, [this] { return !hold_resizes_; });
}

absl::StatusOr<std::optional<int>> FakeProcess::RecordWait() {
  std::lock_guard<std::mutex> lock(mu_);
  waited_ = true;
  cv_.notify_all();
  return exit_;
}

void FakeProcess::RecordAbandon() {
  std::lock_guard<std::mutex> lock(mu_);
  abandoned_ = true;
  cv_.notify_all();
}

absl::StatusOr<streaming::StartedProcess> FakeRuntime::Exec(const streaming::ExecRequest& req,
                                                            std::optional<streaming::TerminalSize> size) {
  return Start(req, size, req.tty);
}

absl::StatusOr<streaming::StartedProcess> FakeRuntime::Attach(const streaming::AttachRequest& req,
                                                              std::optional<streaming::TerminalSize> size) {
  return Start(req, size, req.tty);
}

absl::StatusOr<std::string> FakeRuntime::PortForwardNetns(const std::string& pod_sandbox_id) {
  std::unique_lock<std::mutex> lock(mu_);
  netns_requests_.push_back(pod_sandbox_id);
  CountCall(lock);
  return std::string();
}

void FakeRuntime::HoldCalls(bool hold) {
  std::lock_guard<std::mutex> lock(mu_);
  hold_calls_ = hold;
  cv_.notify_all();
}

std::size_t FakeRuntime::calls() {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

void FakeRuntime::CountCall(std::unique_lock<std::mutex>& lock) {
  ++calls_;
  cv_.notify_all();
  cv_.wait(lock, [this] { return !hold_calls_; });
}

absl::StatusOr<streaming::StartedProcess> FakeRuntime::Start(streaming::Request request,
                                                             std::optional<streaming::TerminalSize> size, bool tty) {
  std::function<void(FakeProcess&)> script;
  streaming::StartedProcess started;
  {
    std::unique_lock<std::mutex> lock(mu_);
    CountCall(lock);
    if (!start_error_.ok()) return start_error_;
    script = script_;
    started.io.buffered = handover_;
  }
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return absl::InternalError("socketpair");
  auto process = std::make_shared<FakeProcess>(std::move(request), size, common::UniqueFd(pair[1]), !tty);
  if (script) script(*process);
  started.process = std::make_unique<FakeProcess::Handle>(process);
  started.io.fd = common::UniqueFd(pair[0]);
  started.io.multiplexed = !tty;
  started.io.half_close_stdin = !tty;  // as DockerStreamingRuntime
  std::lock_guard<std::mutex> lock(mu_);
  processes_.push_back(std::move(process));
  cv_.notify_all();
  return started;
}

void FakeRuntime::FailStarts(absl::Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  start_error_ = std::move(status);
}

void FakeRuntime::OnStart(std::function<void(FakeProcess&)> script) {
  std::lock_guard<std::mutex> lock(mu_);
  script_ = std::move(script);
}

void FakeRuntime::HandOver(std::string output) {
  std::lock_guard<std::mutex> lock(mu_);
  handover_ = std::move(output);
}

std::shared_ptr<FakeProcess> FakeRuntime::WaitProcess(std::size_t index, absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [&] { return processes_.size() > index; })) {
    return nullptr;
  }
  return processes_[index];
}

std::size_t FakeRuntime::starts() {
  std::lock_guard<std::mutex> lock(mu_);
  return processes_.size();
}

std::vector<std::string> FakeRuntime::netns_requests() {
  std::lock_guard<std::mutex> lock(mu_);
  return netns_requests_;
}

}  // namespace streamtest
