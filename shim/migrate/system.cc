#include "shim/migrate/system.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/files.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "dockerclient/docker_client_impl.h"
#include "shim/migrate/cri_snapshot.h"

extern char** environ;

namespace shim::migrate {

namespace {

struct Output {
  int exit_code = -1;
  std::string text;  // stdout and stderr, interleaved
};

// Runs `argv` (argv[0] looked up in PATH) and collects what it prints.
absl::StatusOr<Output> Run(const std::vector<std::string>& argv) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  common::UniqueFd read_end(fds[0]), write_end(fds[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return absl::FailedPreconditionError(absl::StrCat("cannot run ", argv[0], ": ", std::strerror(rc)));
  write_end.Reset();
  Output out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(read_end.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.text.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

std::string Trimmed(const std::string& text) { return std::string(absl::StripAsciiWhitespace(text)); }

class NodeSystemImpl : public System {
 public:
  explicit NodeSystemImpl(std::string self) : self_(std::move(self)) {}

  absl::StatusOr<UnitStatus> Unit(const std::string& unit) override {
    ASSIGN_OR_RETURN(Output out, Run({"systemctl", "show", "--timestamp=us+utc", "-p", "UnitFileState", "-p",
                                      "ActiveState", "-p", "NeedDaemonReload", "-p", "ActiveEnterTimestamp", unit}));
    if (out.exit_code != 0)
      return absl::FailedPreconditionError(absl::StrCat("systemctl show ", unit, ": ", Trimmed(out.text)));
    return ParseSystemctlShow(out.text);
  }

  absl::Status Systemctl(const std::string& verb, const std::vector<std::string>& units) override {
    std::vector<std::string> argv = {"systemctl", verb};
    argv.insert(argv.end(), units.begin(), units.end());
    ASSIGN_OR_RETURN(Output out, Run(argv));
    if (out.exit_code == 0) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat("systemctl ", absl::StrJoin(argv.begin() + 1, argv.end(), " "), " failed (exit code ",
                     out.exit_code, "): ", Trimmed(out.text)));
  }

  absl::Status WriteFile(const std::string& path, const std::string& content) override {
    return common::WriteFileAtomically(path, content, 0644);
  }

  absl::Status WriteCriDockerdFile(const std::string& path, const std::string& content) override {
    return common::WriteFileAtomically(path, content, 0600, /*hidden_temp=*/true);
  }

  absl::Status LinkFile(const std::string& existing, const std::string& link) override {
    if (::link(existing.c_str(), link.c_str()) == 0) return absl::OkStatus();
    return absl::InternalError(absl::StrCat("cannot link ", existing, " to ", link, ": ", std::strerror(errno)));
  }

  absl::Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) == 0 || errno == ENOENT) return absl::OkStatus();
    return absl::InternalError(absl::StrCat("cannot remove ", path, ": ", std::strerror(errno)));
  }

  absl::Status Relink(const std::string& path, const std::string& target) override {
    return migrate::Relink(path, target);
  }

  absl::Status CheckConfig(const std::string& content) override {
    std::string path = "/tmp/dockershim-migrate-XXXXXX.toml";
    common::UniqueFd fd(::mkostemps(path.data(), 5, O_CLOEXEC));
    if (!fd) return absl::InternalError(absl::StrCat("cannot create a file in /tmp: ", std::strerror(errno)));
    const bool written = ::write(fd.get(), content.data(), content.size()) == static_cast<ssize_t>(content.size());
    fd.Reset();
    // As the unit runs it (the socket from systemd, fd://), stopping after the parse.
    absl::StatusOr<Output> run = Run({self_, "--config", path, "--container-runtime-endpoint", "fd://", "--print-config"});
    ::unlink(path.c_str());
    if (!written) return absl::InternalError(absl::StrCat("cannot write ", path));
    ASSIGN_OR_RETURN(Output out, std::move(run));
    if (out.exit_code == 0) return absl::OkStatus();
    std::string message = Trimmed(out.text);
    absl::string_view m = message;
    absl::ConsumePrefix(&m, "dockershim: ");
    absl::ConsumeSuffix(&m, " (see --help)");
    absl::ConsumePrefix(&m, path + ": ");  // the temporary file means nothing to the reader
    return absl::InvalidArgumentError(m);
  }

  absl::StatusOr<Snapshot> TakeSnapshot(const std::string& socket_path, absl::Duration timeout) override {
    return migrate::TakeSnapshot(socket_path, timeout);
  }

  absl::StatusOr<std::vector<ContainerLog>> RunningContainerLogs(const std::string& docker_endpoint) override {
    ASSIGN_OR_RETURN(std::unique_ptr<dockerclient::DockerClientImpl> docker,
                     dockerclient::DockerClientImpl::Create(docker_endpoint));
    return migrate::RunningContainerLogs(*docker, common::Context::WithTimeout(absl::Minutes(1)));
  }

  absl::Time Now() override { return absl::Now(); }
  void Sleep(absl::Duration d) override { absl::SleepFor(d); }

 private:
  std::string self_;
};

}  // namespace

UnitStatus ParseSystemctlShow(const std::string& text) {
  UnitStatus status;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) continue;
    const absl::string_view key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "UnitFileState") status.enabled = value == "enabled" || value == "enabled-runtime";
    if (key == "ActiveState") status.active = value == "active" || value == "activating" || value == "reloading";
    if (key == "NeedDaemonReload") status.need_reload = value == "yes";
    // "Sun 2026-12-06 04:40:00.123456 UTC"; empty for a unit never active.
    const size_t space = value.find(' ');
    absl::Time since;
    std::string error;
    if (key == "ActiveEnterTimestamp" && space != absl::string_view::npos &&
        absl::ParseTime("%Y-%m-%d %H:%M:%E*S UTC", std::string(value.substr(space + 1)), absl::UTCTimeZone(), &since,
                        &error))
      status.active_since = since;
  }
  return status;
}

std::unique_ptr<System> NodeSystem(const std::string& self) { return std::make_unique<NodeSystemImpl>(self); }

}  // namespace shim::migrate
