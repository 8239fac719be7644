#include "shim/logs/log_copier.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <future>
#include <optional>
#include <utility>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/no_wait.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "dockerclient/log_stream.h"
#include "dockerclient/stdcopy.h"
#include "observability/hooks.h"
#include "shim/logs/cri_log.h"
#include "shim/logs/json_file_tailer.h"

namespace shim::logs {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using ErrorCode = boost::system::error_code;

namespace {

constexpr absl::Duration kReopenWait = absl::Seconds(5);
constexpr absl::Duration kPingTimeout = absl::Seconds(5);
// Docker's messages are at most 16 KiB (longer lines come as partial messages); a
// TTY's line without a '\n' is cut here.
constexpr std::size_t kMaxMessage = 64 << 10;
// How often a file that cannot be written is tried again.
constexpr absl::Duration kReopenRetry = absl::Seconds(1);
// What a json file's follower reads before it lets the other containers' work run.
constexpr std::size_t kFileReadBudget = 1 << 20;
// With inotify, a json file is still looked at this often, a safety net only: the
// watcher loses no change (the kernel queues them while it pauses, and an overflowed
// queue wakes every follower). Every look stats the file and its rotated names: at 1 s
// that was most of an idle node's cost (100 containers: 100 looks a second).
constexpr absl::Duration kFileSafetyPoll = absl::Seconds(30);

// The kubelet rotates `<log>` by renaming it to `<log>.<YYYYMMDD-hhmmss>` and later
// gzips all but the newest of those: the newest uncompressed one ends where the copy was.
std::optional<std::string> NewestRotatedLog(const std::string& path) {
  const fs::path log(path);
  const std::string prefix = log.filename().string() + ".";
  std::optional<std::string> newest;
  fs::file_time_type newest_time;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(log.parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (!absl::StartsWith(name, prefix) || absl::EndsWith(name, ".gz") || !entry.is_regular_file(ec)) continue;
    const fs::file_time_type time = entry.last_write_time(ec);
    if (ec) continue;
    if (!newest || time > newest_time) {
      newest = entry.path().string();
      newest_time = time;
    }
  }
  return newest;
}

common::UniqueFd OpenLog(const std::string& path) {
  return common::UniqueFd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640));
}

}  // namespace

class LogCopier::Follower final : public std::enable_shared_from_this<Follower> {
 public:
  Follower(LogCopier& copier, std::string id, std::string path, bool tty, std::string api_version,
           std::string json_log)
      : copier_(copier),
        id_(std::move(id)),
        path_(std::move(path)),
        tty_(tty),
        api_version_(std::move(api_version)),
        json_log_(std::move(json_log)),
        retry_(copier.ioc_),
        file_poll_(copier.ioc_),
        frames_([this](dockerclient::StdStream s, std::string_view m) { OnFrame(s, m); }, kMaxMessage) {}

  void Start() {
    // Resume from what the file holds; a partial last line (an interrupted write) is
    // cut, and its message comes again from Docker.
    absl::StatusOr<ResumePoint> resume = FindResumePoint(path_);
    if (!resume.ok()) {
      LOG_WARN << "container " << id_ << " log: " << resume.status().message() << "; appending after it";
    } else {
      last_nanos_ = resume->last_nanos;
      lines_at_last_ = resume->lines_at_last;
      if (last_nanos_ == 0) ResumeAfterRotatedLog();
      struct stat st;
      if (::stat(path_.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_size) > resume->valid_length &&
          ::truncate(path_.c_str(), static_cast<off_t>(resume->valid_length)) != 0) {
        LOG_WARN << "container " << id_ << " log: cannot cut the partial last line of " << path_ << ": "
                 << std::strerror(errno);
      }
    }
    OpenFile();
    if (!json_log_.empty() && StartTailer()) return;
    StartStream();
  }

  void Reopen() {
    fd_.Reset();
    OpenFile();
  }

  // `done` is set once the copy has ended (at once if it has).
  void OnFinished(std::shared_ptr<std::promise<void>> done) {
    if (finished_) return done->set_value();
    finish_waiters_.push_back(std::move(done));
    // Asked once the container exited: Docker closed its log before it said so
    // (daemon/monitor.go resets the log driver before SetStopped), so the file's end
    // is the log's end.
    if (tailer_) DrainFileAndFinish();
  }

  void Stop() {
    stopped_ = true;
    StopTailer();
    retry_.cancel();
    if (stream_) stream_->Cancel();
    fd_.Reset();
    Deactivate();
  }

 private:
  // Nothing in the file: rotated away, and the shim restarted before anything new came.
  void ResumeAfterRotatedLog() {
    const std::optional<std::string> rotated = NewestRotatedLog(path_);
    if (!rotated) return;
    if (absl::StatusOr<ResumePoint> before = FindResumePoint(*rotated); before.ok()) {
      last_nanos_ = before->last_nanos;
      lines_at_last_ = before->lines_at_last;
    }
  }

  void OpenFile() {
    fd_ = OpenLog(path_);
    if (fd_) {
      write_failing_ = false;
      return;
    }
    if (!write_failing_) {
      LOG_WARN << "container " << id_ << ": cannot open its log " << path_ << ": " << std::strerror(errno)
               << "; its output is dropped until that works";
    }
    write_failing_ = true;
    last_open_attempt_ = absl::Now();
  }

  // --- Docker's json file, read directly. ---

  bool StartTailer() {
    // Watched before the files are looked at: a change from now on wakes the follower.
    WatchLogDirectory();
    absl::StatusOr<std::unique_ptr<JsonFileTailer>> tailer = JsonFileTailer::Open(json_log_, last_nanos_);
    if (!tailer.ok()) {
      watch_.reset();
      ++copier_.fallbacks_;
      LOG_WARN << "container " << id_ << ": copying its log from Docker's logs API, not its json file: "
               << tailer.status().message();
      return false;
    }
    tailer_ = *std::move(tailer);
    ++copier_.from_files_;
    LOG_DEBUG << "container " << id_ << ": copying its log from Docker's json file " << json_log_;
    // Entries at the last timestamp come again, as with the API's inclusive `since`.
    skip_nanos_ = last_nanos_;
    skip_lines_ = lines_at_last_;
    ReadFile();
    return true;
  }

  void WatchLogDirectory() {
    if (!copier_.watcher_.available()) return;  // said once, by the watcher
    absl::StatusOr<std::unique_ptr<DirectoryWatcher::Watch>> watch =
        copier_.watcher_.Add(fs::path(json_log_).parent_path().string(), [weak = weak_from_this()] {
          if (auto self = weak.lock()) self->OnLogDirectoryChanged();
        });
    if (watch.ok()) {
      watch_ = *std::move(watch);
    } else {
      LOG_WARN << "container " << id_ << ": its json log is looked at every "
               << copier_.options_.json_poll_interval << ": " << watch.status().message();
    }
  }

  // Reads what is there (a budget at a time, letting other containers' work run in
  // between), then waits for the directory to change.
  void ReadFile() {
    waiting_for_file_ = false;
    ++wait_generation_;  // a poll still pending is stale
    if (!tailer_ || stopped_) return;
    absl::StatusOr<JsonFileTailer::Progress> progress = CopyFromFile();
    if (!progress.ok()) return FallBackToApi(progress.status());
    if (*progress == JsonFileTailer::Progress::kMore) {
      asio::post(copier_.ioc_, [weak = weak_from_this()] {
        if (auto self = weak.lock()) self->ReadFile();
      });
      return;
    }
    WaitForFile();
  }

  // For the watcher's word (OnLogDirectoryChanged), or a poll: without a watch the only
  // way to see more; with one, a safety net for a missed change.
  void WaitForFile() {
    waiting_for_file_ = true;
    const uint64_t generation = ++wait_generation_;
    file_poll_.expires_after(
        absl::ToChronoNanoseconds(watch_ ? kFileSafetyPoll : copier_.options_.json_poll_interval));
    file_poll_.async_wait([weak = weak_from_this(), generation](ErrorCode ec) {
      auto self = weak.lock();
      if (!self || ec == asio::error::operation_aborted || generation != self->wait_generation_) return;
      self->ReadFile();
    });
  }

  // A change while a read is under way or due is seen by that read. (The watcher
  // calls at most once per DirectoryWatcher::kCoalesce, so that one read takes what
  // came meanwhile.)
  void OnLogDirectoryChanged() {
    if (tailer_ && waiting_for_file_) ReadFile();
  }

  // One budget of the file's entries, written out.
  absl::StatusOr<JsonFileTailer::Progress> CopyFromFile() {
    absl::StatusOr<JsonFileTailer::Progress> progress = tailer_->Read(
        [this](const JsonLogEntry& entry) { OnEntry(entry.stream, entry.timestamp, entry.nanos, entry.content); },
        kFileReadBudget);
    Flush();
    return progress;
  }

  void DrainFileAndFinish() {
    for (;;) {
      absl::StatusOr<JsonFileTailer::Progress> progress = CopyFromFile();
      if (!progress.ok()) return FallBackToApi(progress.status());  // the API's stream ends and finishes
      if (*progress == JsonFileTailer::Progress::kIdle) break;
    }
    Finish();
  }

  void FallBackToApi(const absl::Status& why) {
    ++copier_.fallbacks_;
    LOG_WARN << "container " << id_ << ": following its json log stopped (" << why.message()
             << "); copying from Docker's logs API after the last line copied";
    StopTailer();
    StartStream();
  }

  void StopTailer() {
    if (!tailer_) return;
    tailer_.reset();
    watch_.reset();
    --copier_.from_files_;
    ++wait_generation_;
    waiting_for_file_ = false;
    file_poll_.cancel();
  }

  // --- Docker's logs API. ---

  void StartStream() {
    // Messages at the last timestamp come again (`since` is inclusive); the lines
    // made from them that the file already holds are skipped.
    skip_nanos_ = last_nanos_;
    skip_lines_ = lines_at_last_;
    dockerclient::LogStreamOptions options;
    options.socket_path = copier_.options_.docker_socket_path;
    options.api_version = api_version_;
    options.container_id = id_;
    options.follow = !final_read_;
    if (last_nanos_ > 0) options.since = SinceParameter(last_nanos_);
    std::weak_ptr<Follower> weak = weak_from_this();
    stream_ = std::make_shared<dockerclient::LogStream>(
        copier_.ioc_.get_executor(), options,
        [weak](std::string_view data) {
          if (auto self = weak.lock()) self->OnData(data);
        },
        [weak](absl::Status status) {
          if (auto self = weak.lock()) self->OnEnd(std::move(status));
        });
    stream_->Start();
  }

  void OnData(std::string_view data) {
    if (tty_) {
      SplitTtyLines(data);
    } else if (!frames_.Feed(data)) {
      LOG_WARN << "container " << id_ << ": Docker's log stream is not in its multiplexed format; stopping the copy";
      return Finish();
    }
    Flush();
  }

  // A TTY's stream has no frames: each message is one line.
  void SplitTtyLines(std::string_view data) {
    while (!data.empty()) {
      const std::size_t nl = data.find('\n');
      const std::size_t take = nl == std::string_view::npos ? data.size() : nl + 1;
      tty_line_.append(data.substr(0, take));
      data.remove_prefix(take);
      if (tty_line_.back() == '\n' || tty_line_.size() >= kMaxMessage) {
        OnMessage(LogStream::kStdout, tty_line_);
        tty_line_.clear();
      }
    }
  }

  void OnFrame(dockerclient::StdStream stream, std::string_view message) {
    if (stream != dockerclient::StdStream::kStdout && stream != dockerclient::StdStream::kStderr) return;
    OnMessage(stream == dockerclient::StdStream::kStdout ? LogStream::kStdout : LogStream::kStderr, message);
  }

  void OnMessage(LogStream stream, std::string_view message) {
    absl::StatusOr<DockerLogMessage> parsed = ParseDockerLogMessage(message);
    if (!parsed.ok()) {
      LOG_DEBUG << "container " << id_ << " log: skipping a message: " << parsed.status().message();
      return;
    }
    absl::StatusOr<int64_t> nanos = TimestampNanos(parsed->timestamp);
    if (!nanos.ok()) return;
    OnEntry(stream, parsed->timestamp, *nanos, parsed->content);
  }

  // One message of either source: its CRI lines, less those the file already holds.
  void OnEntry(LogStream stream, std::string_view timestamp, int64_t nanos, std::string_view content) {
    if (nanos < skip_nanos_) return;  // already copied
    lines_.clear();
    AppendCriLines(stream, timestamp, content, lines_);
    std::string_view fresh = lines_;
    if (nanos == skip_nanos_) {
      for (; skip_lines_ > 0 && !fresh.empty(); --skip_lines_) fresh.remove_prefix(fresh.find('\n') + 1);
    } else {
      skip_nanos_ = 0;
    }
    const int count = static_cast<int>(std::count(fresh.begin(), fresh.end(), '\n'));
    if (count == 0) return;
    if (nanos == last_nanos_) {
      lines_at_last_ += count;
    } else {
      last_nanos_ = nanos;
      lines_at_last_ = count;
    }
    pending_.append(fresh);
  }

  // One write per piece read from Docker (up to 64 KiB of messages).
  void Flush() {
    if (pending_.empty()) return;
    if (!fd_ && absl::Now() - last_open_attempt_ >= kReopenRetry) OpenFile();
    std::string_view left = pending_;
    while (fd_ && !left.empty()) {
      const ssize_t n = ::write(fd_.get(), left.data(), left.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        LOG_WARN << "container " << id_ << ": cannot write its log " << path_ << ": " << std::strerror(errno)
                 << "; its output is dropped until that works";
        write_failing_ = true;
        last_open_attempt_ = absl::Now();
        fd_.Reset();
        break;
      }
      left.remove_prefix(static_cast<std::size_t>(n));
      copier_.bytes_written_ += static_cast<uint64_t>(n);
    }
    const std::size_t written = pending_.size() - left.size();
    if (written > 0) observability::LogCopied(written, absl::FromUnixNanos(last_nanos_));
    pending_.clear();
  }

  void OnEnd(absl::Status status) {
    stream_.reset();
    if (stopped_) return;
    // dockerd (20.10 at least) can end a followed stream when the container stops
    // before its follower has read the last messages: those logged as the container's
    // output closes, e.g. a last line without a newline. What it stored is read once
    // more, without follow, from the last line copied (the lines already copied are
    // skipped as on any resume). Not with a TTY, whose unfinished line is held here.
    if (status.ok() && !final_read_ && !tty_) {
      final_read_ = true;
      return StartStream();
    }
    if (status.ok() || absl::IsNotFound(status)) return Finish();  // stopped, or removed
    if (absl::IsInvalidArgument(status) || absl::IsUnimplemented(status)) {
      LOG_WARN << "container " << id_ << ": " << status.message() << "; its CRI log stays empty";
      return Finish();
    }
    LOG_INFO << "container " << id_ << " log: " << status.message() << "; resuming in "
             << copier_.options_.retry_delay;
    retry_.expires_after(absl::ToChronoNanoseconds(copier_.options_.retry_delay));
    retry_.async_wait([self = shared_from_this()](ErrorCode ec) {
      if (!ec && !self->stopped_) self->StartStream();
    });
  }

  void Finish() {
    StopTailer();
    if (!tty_line_.empty()) {
      OnMessage(LogStream::kStdout, tty_line_);
      tty_line_.clear();
      Flush();
    }
    if (stream_) stream_->Cancel();
    fd_.Reset();
    Deactivate();
  }

  // Counted in Stats() from Start until its copy finished or stopped.
  void Deactivate() {
    if (finished_) return;
    finished_ = true;
    --copier_.following_;
    for (auto& waiter : finish_waiters_) waiter->set_value();
    finish_waiters_.clear();
  }

  LogCopier& copier_;
  const std::string id_, path_;
  const bool tty_;
  const std::string api_version_;
  const std::string json_log_;  // empty: the API only
  asio::steady_timer retry_;
  asio::steady_timer file_poll_;
  std::unique_ptr<JsonFileTailer> tailer_;                      // while the json file is read
  std::unique_ptr<DirectoryWatcher::Watch> watch_;             // its directory, while the file is read
  bool waiting_for_file_ = false;                               // for a change or the next poll
  uint64_t wait_generation_ = 0;
  dockerclient::StdFrameReader frames_;
  std::shared_ptr<dockerclient::LogStream> stream_;
  common::UniqueFd fd_;
  bool write_failing_ = false, stopped_ = false, finished_ = false;
  bool final_read_ = false;  // the followed stream ended: reading what Docker stored, to its end
  absl::Time last_open_attempt_ = absl::InfinitePast();
  std::string tty_line_, pending_;
  std::string lines_;  // of the message at hand, reused
  std::vector<std::shared_ptr<std::promise<void>>> finish_waiters_;
  int64_t last_nanos_ = 0;  // the last line written
  int lines_at_last_ = 0;
  int64_t skip_nanos_ = 0;  // while resuming
  int skip_lines_ = 0;
};

LogCopier::LogCopier(dockerclient::DockerClient& docker, CopierOptions options)
    : docker_(docker), options_(std::move(options)), work_(asio::make_work_guard(ioc_)), thread_([this] { ioc_.run(); }) {}

LogCopier::~LogCopier() { Stop(); }

void LogCopier::Follow(const std::string& container_id, const std::string& path, bool tty,
                       const std::string& json_log) {
  absl::StatusOr<std::string> api = ApiVersion();
  if (!api.ok()) {
    LOG_WARN << "container " << container_id << ": cannot copy its log: " << api.status().message();
    return;
  }
  std::string file = options_.read_json_files ? json_log : std::string();
  asio::post(ioc_, [this, container_id, path, tty, api = *api, file = std::move(file)] {
    if (stopped_ || followers_.count(container_id)) return;
    auto follower = std::make_shared<Follower>(*this, container_id, path, tty, api, file);
    followers_.emplace(container_id, follower);
    ++following_;
    follower->Start();
  });
}

absl::Status LogCopier::Reopen(const std::string& container_id) {
  auto done = std::make_shared<std::promise<absl::Status>>();
  std::future<absl::Status> result = done->get_future();
  asio::post(ioc_, [this, container_id, done] {
    auto it = followers_.find(container_id);
    if (it == followers_.end()) {
      return done->set_value(absl::NotFoundError(absl::StrCat("the log of container ", container_id, " is not copied")));
    }
    it->second->Reopen();
    done->set_value(absl::OkStatus());
  });
  if (result.wait_for(absl::ToChronoNanoseconds(kReopenWait)) != std::future_status::ready) {
    return absl::DeadlineExceededError("the log copier did not answer");
  }
  return result.get();
}

void LogCopier::Forget(const std::string& container_id) {
  asio::post(ioc_, [this, container_id] {
    auto it = followers_.find(container_id);
    if (it == followers_.end()) return;
    it->second->Stop();
    followers_.erase(it);
  });
}

bool LogCopier::AwaitFinished(const std::string& container_id, absl::Duration timeout) {
  if (!common::MayWait()) return true;  // what the call answers is dropped: no warning for it
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  asio::post(ioc_, [this, container_id, done] {
    auto it = followers_.find(container_id);
    if (it == followers_.end()) return done->set_value();
    it->second->OnFinished(done);
  });
  return finished.wait_for(absl::ToChronoNanoseconds(timeout)) == std::future_status::ready;
}

std::string LogCopier::DockerJsonLogPath(const std::string& container_id, const std::string& log_path) {
  if (!log_path.empty()) return log_path;
  std::lock_guard lock(api_mu_);
  if (docker_root_.empty()) {
    absl::StatusOr<dockerclient::SystemInfo> info = docker_.Info(common::Context::WithTimeout(kPingTimeout));
    if (!info.ok() || info->docker_root_dir.empty()) return "";
    docker_root_ = info->docker_root_dir;
  }
  return absl::StrCat(docker_root_, "/containers/", container_id, "/", container_id, "-json.log");
}

absl::StatusOr<std::string> LogCopier::ApiVersion() {
  std::lock_guard lock(api_mu_);
  if (api_version_.empty()) {
    ASSIGN_OR_RETURN(api_version_, docker_.Ping(common::Context::WithTimeout(kPingTimeout)));
  }
  return api_version_;
}

CopierStats LogCopier::Stats() {
  return CopierStats{bytes_written_.load(), following_.load(), from_files_.load(), fallbacks_.load()};
}

void LogCopier::Stop() {
  if (stopped_ || !thread_.joinable()) return;
  std::promise<void> done;
  asio::post(ioc_, [this, &done] {
    stopped_ = true;
    for (auto& [id, follower] : followers_) follower->Stop();
    followers_.clear();
    done.set_value();
  });
  done.get_future().wait();
  work_.reset();
  ioc_.stop();
  thread_.join();
}

}  // namespace shim::logs
