#include "shim/migrate/migration.h"

#include <sys/stat.h>

#include <algorithm>
#include <functional>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/files.h"
#include "common/status.h"
#include "nlohmann/json.hpp"
#include "shim/migrate/checkpoint_handover.h"
#include "shim/migrate/installation.h"
#include "shim/migrate/node_files.h"

namespace shim::migrate {

namespace {

constexpr char kFromName[] = "from-cri-dockerd";
constexpr char kToName[] = "to-cri-dockerd";
constexpr char kCheckpointsName[] = "checkpoints-to-cri-dockerd";
constexpr absl::Duration kSnapshotTimeout = absl::Seconds(30);

// The file's last change; InfinitePast when it is absent.
absl::Time ModifiedAt(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return absl::InfinitePast();
  return absl::TimeFromTimespec(st.st_mtim);
}

std::string Seconds(absl::Duration d) { return absl::StrFormat("%.1f s", absl::ToDoubleSeconds(d)); }

// An unfinished switch: its direction, and what was served before it (none when the old
// runtime was not running).
struct State {
  std::string direction;
  absl::Time started;
  std::optional<Snapshot> before;
};

std::optional<State> LoadState(const std::string& path) {
  std::optional<std::string> text = common::ReadWholeFile(path);
  if (!text) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("direction") || !j["direction"].is_string()) return std::nullopt;
  State state;
  state.direction = j["direction"].get<std::string>();
  state.started = absl::FromUnixMicros(j.value("started_unix_us", int64_t{0}));
  if (j.contains("before") && j["before"].is_object()) {
    absl::StatusOr<Snapshot> before = SnapshotFromJson(j["before"]);
    if (!before.ok()) return std::nullopt;
    state.before = *std::move(before);
  }
  return state;
}

std::string StateText(const State& state) {
  nlohmann::json j = {{"direction", state.direction},
                      {"started_unix_us", absl::ToUnixMicros(state.started)},
                      {"before", state.before ? ToJson(*state.before) : nlohmann::json()}};
  return j.dump(2) + "\n";
}

struct Names {
  const char* name;
  const char* other;
};
Names NamesOf(Direction direction) {
  switch (direction) {
    case Direction::kFromCriDockerd:
      return {kFromName, kToName};
    case Direction::kToCriDockerd:
      return {kToName, kFromName};
    case Direction::kCheckpointsToCriDockerd:
      return {kCheckpointsName, nullptr};
  }
  return {"", nullptr};
}

class Migration {
 public:
  Migration(const MigrateOptions& options, System& system, std::ostream& out)
      : options_(options), sys_(system), out_(out) {}

  // OK when the steps ran (or would run); whether the check passed is check_passed().
  absl::Status Run() {
    switch (options_.direction) {
      case Direction::kFromCriDockerd:
        return FromCriDockerd();
      case Direction::kToCriDockerd:
        return ToCriDockerd();
      case Direction::kCheckpointsToCriDockerd:
        out_ << (options_.dry_run ? "Would hand" : "Handing") << " dockershim's checkpoints ("
             << options_.paths.dockershim_root << ") over to cri-dockerd (" << options_.paths.cri_dockerd_root
             << "):\n";
        check_passed_ = true;  // nothing to check: no runtime was switched
        return HandOverCheckpoints(options_.paths.cri_dockerd_root);
    }
    return absl::InternalError("unknown direction");
  }
  bool check_passed() const { return check_passed_; }
  bool changed() const { return changed_; }
  const char* name() const { return NamesOf(options_.direction).name; }
  // The switch back, or none (the hand-over alone is not a switch).
  const char* other_name() const { return NamesOf(options_.direction).other; }

 private:
  absl::Status FromCriDockerd();
  absl::Status ToCriDockerd();
  // dockershim's checkpoints to cri-dockerd (checkpoint_handover.h), with dockershim stopped.
  absl::Status HandOverCheckpoints(const std::string& cri_dockerd_root);

  // Prints the step; runs `act` unless it is done already or this is a dry run.
  absl::Status Step(const std::string& what, bool done, const std::function<absl::Status()>& act) {
    if (done) {
      out_ << "  already  " << what << "\n";
      return absl::OkStatus();
    }
    if (options_.dry_run) {
      out_ << "  would    " << what << "\n";
      return absl::OkStatus();
    }
    // The line first, so that a step that hangs is seen; then how long it took.
    out_ << "  now      " << what << std::flush;
    changed_ = true;
    const absl::Time start = sys_.Now();
    absl::Status status = act();
    out_ << (status.ok() ? absl::StrCat(" (", Seconds(sys_.Now() - start), ")\n") : std::string(": failed\n"));
    return status;
  }

  absl::StatusOr<std::vector<std::pair<std::string, UnitStatus>>> Units(const std::vector<std::string>& names) {
    std::vector<std::pair<std::string, UnitStatus>> units;
    for (const std::string& unit : names) {
      if (unit.empty()) continue;
      ASSIGN_OR_RETURN(UnitStatus status, sys_.Unit(unit));
      units.emplace_back(unit, status);
    }
    return units;
  }

  // systemctl `verb` for the units whose state `wanted` says is not there yet.
  absl::Status UnitsStep(const std::string& verb, const std::vector<std::string>& names,
                         const std::function<bool(const UnitStatus&)>& wanted, const std::function<void()>& before = {}) {
    ASSIGN_OR_RETURN(auto units, Units(names));
    std::vector<std::string> todo;
    for (const auto& [unit, status] : units)
      if (!wanted(status)) todo.push_back(unit);
    std::vector<std::string> all;
    for (const auto& [unit, status] : units) all.push_back(unit);
    return Step(absl::StrCat(verb, " ", absl::StrJoin(todo.empty() ? all : todo, ", ")), todo.empty(), [&] {
      if (before) before();
      return sys_.Systemctl(verb, todo);
    });
  }
  absl::Status Stop(const std::vector<std::string>& units, const std::function<void()>& before = {}) {
    return UnitsStep("stop", units, [](const UnitStatus& s) { return !s.active; }, before);
  }
  absl::Status Disable(const std::vector<std::string>& units) {
    return UnitsStep("disable", units, [](const UnitStatus& s) { return !s.enabled; });
  }
  absl::Status Enable(const std::vector<std::string>& units) {
    return UnitsStep("enable", units, [](const UnitStatus& s) { return s.enabled; });
  }
  absl::Status Start(const std::vector<std::string>& units) {
    return UnitsStep("start", units, [](const UnitStatus& s) { return s.active; });
  }
  // `files_change`: this run writes (or would write) unit files.
  absl::Status Reload(const std::vector<std::string>& units, bool files_change) {
    ASSIGN_OR_RETURN(auto statuses, Units(units));
    bool needed = files_change;
    for (const auto& [unit, status] : statuses) needed |= status.need_reload;
    return Step("systemctl daemon-reload", !needed, [&] { return sys_.Systemctl("daemon-reload", {}); });
  }

  // The switch's first step: what `runtime` (its `units`) serves on `path` now; or, when
  // a switch in this direction was interrupted, what it served before that switch began
  // (the state file).
  absl::Status Begin(const std::string& runtime, const std::string& next, const std::vector<std::string>& units,
                     const std::string& path, const std::string& path_problem) {
    previous_ = runtime;
    out_ << (options_.dry_run ? "Would switch" : "Switching") << " from " << runtime << " to " << next << ":\n";
    ASSIGN_OR_RETURN(auto statuses, Units(units));
    const bool serving = std::any_of(statuses.begin(), statuses.end(), [](const auto& u) { return u.second.active; });
    if (std::optional<State> state = LoadState(options_.paths.state); state && state->direction == name()) {
      before_ = state->before;
      out_ << "  already  snapshot of what " << runtime << " served, from the switch begun at "
           << absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", state->started, absl::UTCTimeZone()) << " ("
           << options_.paths.state << ")\n";
      return absl::OkStatus();
    }
    before_.reset();
    if (!serving) {
      out_ << "  note     " << runtime << " is not running: there is nothing to compare after the switch\n";
    } else if (path.empty()) {
      out_ << "  note     " << runtime << " cannot be asked (" << path_problem
           << "): there is nothing to compare after the switch\n";
    } else if (options_.dry_run) {
      out_ << "  would    take a snapshot of what " << runtime << " serves on " << path << " (pods, IPs, containers)\n";
    } else {
      absl::StatusOr<Snapshot> snapshot = sys_.TakeSnapshot(path, kSnapshotTimeout);
      if (!snapshot.ok()) {
        return absl::UnavailableError(absl::StrCat("cannot list what ", runtime, " serves: ", snapshot.status().message(),
                                                   "; nothing was changed"));
      }
      snapshot->runtime = runtime;
      before_ = *std::move(snapshot);
      const auto running = std::count_if(before_->containers.begin(), before_->containers.end(),
                                         [](const ContainerRecord& c) { return c.state == "CONTAINER_RUNNING"; });
      out_ << "  now      snapshot of what " << runtime << " serves on " << path << ": " << before_->pods.size()
           << " pods, " << running << " running containers\n";
    }
    if (options_.dry_run) return absl::OkStatus();
    return sys_.WriteFile(options_.paths.state, StateText({name(), sys_.Now(), before_}));
  }

  // Asks `runtime` on `path` until it answers with everything the snapshot before had, or
  // the check's time is up; prints the comparison.
  void Check(const std::string& runtime, const std::string& path) {
    if (options_.dry_run) {
      out_ << "  would    check over " << path << " that " << runtime
           << " lists every pod, with its IP, and every running container\n";
      check_passed_ = true;
      return;
    }
    out_ << "  now      check over " << path << "\n" << std::flush;
    const absl::Time deadline = sys_.Now() + options_.check_timeout;
    std::optional<absl::Time> answered;
    std::optional<CheckResult> result;
    absl::Status last = absl::DeadlineExceededError("no answer");
    for (;;) {
      absl::StatusOr<Snapshot> after =
          sys_.TakeSnapshot(path, std::max(deadline - sys_.Now(), absl::Seconds(1)));
      if (after.ok()) {
        if (!answered) answered = sys_.Now();
        result = Compare(before_ ? *before_ : Snapshot(), *after);
        if (result->ok()) break;
      } else {
        last = after.status();
      }
      if (sys_.Now() >= deadline) break;
      sys_.Sleep(absl::Seconds(1));
    }
    if (!answered) {
      out_ << "\nThe check failed: " << runtime << " does not answer on " << path << ": " << last.message() << "\n";
    } else {
      out_ << "\n" << FormatCheck(*result);
    }
    if (switch_started_ && answered) {
      out_ << "The switch took " << Seconds(*answered - *switch_started_) << ": from stopping " << previous_
           << " to " << runtime << "'s first answer.\n";
    }
    check_passed_ = answered && result->ok();
    if (check_passed_) {
      out_ << (before_ ? "Every pod, its IP and every running container came through. " : "")
           << runtime << " serves the node now.\n";
      if (absl::Status s = sys_.RemoveFile(options_.paths.state); !s.ok()) out_ << "note: " << s.message() << "\n";
      return;
    }
    if (answered) out_ << "The check failed: what differs is listed above.\n";
    out_ << runtime << " runs now; no pod was stopped. Run this command again to check again (it compares with the "
         << "snapshot taken before the switch), or switch back: dockershim migrate " << other_name() << "\n";
  }

  const MigrateOptions& options_;
  System& sys_;
  std::ostream& out_;
  std::optional<Snapshot> before_;
  std::optional<absl::Time> switch_started_;  // when this run stopped the old runtime
  std::string previous_;                      // the old runtime's name
  bool check_passed_ = false;
  bool changed_ = false;  // a step changed the node
};

std::string RefusalText(const CriDockerdUnits& cri) {
  std::string text = absl::StrCat("cri-dockerd runs with flags that dockershim has no equivalent for (",
                                  cri.service, ": ", absl::StrJoin(cri.files, ", "), "):\n");
  for (const Refusal& r : cri.flags.refused) absl::StrAppend(&text, "  ", r.flag, ": ", r.reason, "\n");
  absl::StrAppend(&text, "Nothing was changed. Take them out of cri-dockerd's command line (systemctl edit ",
                  cri.service, ": an empty ExecStart= line, then ExecStart= with the command without them) and run "
                  "this again.");
  return text;
}

void Describe(std::ostream& out, const CriDockerdUnits& cri) {
  out << "cri-dockerd: " << cri.service << (cri.socket.empty() ? "" : ", " + cri.socket) << " ("
      << absl::StrJoin(cri.files, ", ") << ")\n"
      << "  runs   " << absl::StrJoin(cri.argv, " ") << "\n"
      << "  serves " << (cri.socket_path.empty() ? cri.socket_problem : cri.socket_path) << "\n";
}

absl::Status Migration::FromCriDockerd() {
  ASSIGN_OR_RETURN(CriDockerdUnits cri, ReadCriDockerdUnits(options_.paths.unit_dirs));
  Describe(out_, cri);
  if (!cri.flags.refused.empty()) return absl::FailedPreconditionError(RefusalText(cri));
  ASSIGN_OR_RETURN(DockershimUnits ours, ReadDockershimUnits(options_.paths.unit_dirs));
  const std::string previous_config = common::ReadWholeFile(options_.paths.config).value_or("");
  ASSIGN_OR_RETURN(std::string config, RenderConfig(cri, previous_config));
  if (absl::Status s = sys_.CheckConfig(config); !s.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("dockershim would not start with cri-dockerd's settings: ", s.message(), "\nNothing was changed."));
  }
  for (const std::string& note : cri.flags.notes) out_ << "  note     " << note << "\n";
  // The kubelet keeps its endpoint when dockershim.socket can listen where cri-dockerd did.
  const bool take_socket = !cri.socket_path.empty();
  const std::string dropin = take_socket ? RenderSocketDropIn(cri) : "";
  const std::vector<std::string> cri_units = {cri.socket, cri.service};
  const std::vector<std::string> our_units = {kDockershimSocket, kDockershimService};

  RETURN_IF_ERROR(Begin("cri-dockerd", "dockershim", cri_units, cri.socket_path, cri.socket_problem));

  const bool config_changes = previous_config != config;
  const std::string backup =
      absl::StrCat(options_.paths.config, ".bak-", absl::FormatTime("%Y%m%d-%H%M%S", sys_.Now(), absl::UTCTimeZone()));
  const bool backup_needed = config_changes && !previous_config.empty();
  RETURN_IF_ERROR(Step(absl::StrCat("write ", options_.paths.config,
                                    backup_needed ? absl::StrCat(" (the one there now kept as ", backup, ")") : ""),
                       !config_changes, [&]() -> absl::Status {
                         // A run killed after the link, rerun within the second, finds it made.
                         if (backup_needed && common::ReadWholeFile(backup) != previous_config)
                           RETURN_IF_ERROR(sys_.LinkFile(options_.paths.config, backup));
                         return sys_.WriteFile(options_.paths.config, config);
                       }));
  if (config_changes && options_.dry_run) out_ << config;

  const std::optional<std::string> dropin_now = common::ReadWholeFile(options_.paths.dropin);
  const bool dropin_changes = take_socket ? dropin_now != dropin : dropin_now.has_value();
  if (take_socket) {
    RETURN_IF_ERROR(Step(absl::StrCat("write ", options_.paths.dropin, ": dockershim.socket listens on ",
                                      cri.socket_path, " (the kubelet's endpoint stays)"),
                         !dropin_changes, [&] { return sys_.WriteFile(options_.paths.dropin, dropin); }));
    if (dropin_changes && options_.dry_run) out_ << dropin;
  } else {
    out_ << "  note     dockershim cannot take cri-dockerd's socket over (" << cri.socket_problem << ")\n";
    RETURN_IF_ERROR(Step(absl::StrCat("remove ", options_.paths.dropin), !dropin_changes,
                         [&] { return sys_.RemoveFile(options_.paths.dropin); }));
  }
  RETURN_IF_ERROR(Reload(our_units, dropin_changes));

  // Boot-time settings first: the node goes without a runtime only from the stop of one
  // to the start of the other.
  RETURN_IF_ERROR(Disable(cri_units));
  RETURN_IF_ERROR(Enable(our_units));
  RETURN_IF_ERROR(Stop(cri_units, [&] { switch_started_ = sys_.Now(); }));
  // A running dockershim read its configuration, or systemd bound its socket, before
  // those files changed: it restarts with them.
  {
    ASSIGN_OR_RETURN(UnitStatus socket, sys_.Unit(kDockershimSocket));
    ASSIGN_OR_RETURN(UnitStatus service, sys_.Unit(kDockershimService));
    const bool socket_stale =
        socket.active && (options_.dry_run ? dropin_changes : socket.active_since < ModifiedAt(options_.paths.dropin));
    const bool service_stale =
        service.active && (socket_stale || (options_.dry_run ? config_changes
                                                              : service.active_since < ModifiedAt(options_.paths.config)));
    std::vector<std::string> stale;
    if (service_stale) stale.push_back(kDockershimService);
    if (socket_stale) stale.push_back(kDockershimSocket);
    RETURN_IF_ERROR(Step(absl::StrCat("stop ", stale.empty() ? "dockershim" : absl::StrJoin(stale, ", "),
                                      " to start with the new settings"),
                         stale.empty(), [&] { return sys_.Systemctl("stop", stale); }));
  }
  RETURN_IF_ERROR(Start(our_units));

  std::string check_path = cri.socket_path;
  if (!take_socket) {
    // dockershim's own socket, as its units say once the drop-in is gone.
    ASSIGN_OR_RETURN(DockershimUnits now, ReadDockershimUnits(options_.paths.unit_dirs));
    check_path = options_.dry_run ? ours.socket_path : now.socket_path;
    out_ << "\nThe kubelet must be pointed at dockershim's socket: --container-runtime-endpoint=unix://" << check_path
         << " (containerRuntimeEndpoint in its KubeletConfiguration), then restart the kubelet.\n";
  }
  Check("dockershim", check_path);
  return absl::OkStatus();
}

absl::Status Migration::ToCriDockerd() {
  ASSIGN_OR_RETURN(CriDockerdUnits cri, ReadCriDockerdUnits(options_.paths.unit_dirs));
  Describe(out_, cri);
  if (!cri.argv.empty() && cri.argv[0].front() == '/' && ModifiedAt(cri.argv[0]) == absl::InfinitePast()) {
    return absl::FailedPreconditionError(absl::StrCat("cri-dockerd's program ", cri.argv[0], " (ExecStart of ",
                                                      cri.service, ") is missing: reinstall cri-dockerd. "
                                                      "Nothing was changed."));
  }
  if (cri.socket_path.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("cannot tell where cri-dockerd would serve CRI (",
                                                      cri.socket_problem, "). Nothing was changed."));
  }
  ASSIGN_OR_RETURN(DockershimUnits ours, ReadDockershimUnits(options_.paths.unit_dirs));
  const std::vector<std::string> cri_units = {cri.socket, cri.service};
  const std::vector<std::string> our_units = {kDockershimSocket, kDockershimService};

  RETURN_IF_ERROR(Begin("dockershim", "cri-dockerd", our_units, ours.socket_path, ours.socket_problem));

  // A running dockershim serves on the socket it was given through the reload; stopped,
  // it frees cri-dockerd's path for good.
  const bool dropin_present = common::ReadWholeFile(options_.paths.dropin).has_value();
  RETURN_IF_ERROR(Step(absl::StrCat("remove ", options_.paths.dropin, " (cri-dockerd's socket path is free again)"),
                       !dropin_present, [&] { return sys_.RemoveFile(options_.paths.dropin); }));
  RETURN_IF_ERROR(Reload({kDockershimSocket, cri.socket, cri.service}, dropin_present));
  // Boot-time settings first: the node goes without a runtime only from the stop of one
  // to the start of the other.
  RETURN_IF_ERROR(Disable(our_units));
  RETURN_IF_ERROR(Enable(cri_units));
  RETURN_IF_ERROR(Stop(our_units, [&] { switch_started_ = sys_.Now(); }));

  // dockershim has stopped: nothing writes its CRI files any more.
  absl::StatusOr<std::vector<ContainerLog>> logs = sys_.RunningContainerLogs(cri.flags.docker_endpoint);
  if (!logs.ok()) {
    return absl::UnavailableError(absl::StrCat("cannot list the running containers' logs (Docker at ",
                                               cri.flags.docker_endpoint, "): ", logs.status().message()));
  }
  int linked = 0, to_link = 0;
  for (const ContainerLog& log : *logs) {
    const LinkPlan plan = PlanLink(log);
    if (plan.state == LinkState::kNotLinkable) {
      out_ << "  note     " << log.name << ": " << log.cri_path << " stays dockershim's copy, no longer updated: "
           << plan.why << "\n";
      continue;
    }
    if (plan.state == LinkState::kLinked) {
      ++linked;
      continue;
    }
    ++to_link;
    RETURN_IF_ERROR(Step(absl::StrCat("link ", log.cri_path, " to ", log.docker_log), false,
                         [&] { return sys_.Relink(log.cri_path, log.docker_log); }));
  }
  if (linked > 0) out_ << "  already  " << linked << " container logs link to Docker's json log\n";
  if (to_link == 0 && linked == 0) out_ << "  already  no running container's log to link\n";

  // dockershim has stopped: nothing writes its checkpoints any more.
  RETURN_IF_ERROR(HandOverCheckpoints(cri.flags.root_directory));

  RETURN_IF_ERROR(Start(cri_units));
  if (ours.socket_path != cri.socket_path) {
    out_ << "\nThe kubelet must be pointed at cri-dockerd's socket again: --container-runtime-endpoint=unix://"
         << cri.socket_path << " (containerRuntimeEndpoint in its KubeletConfiguration), then restart the kubelet.\n";
  }
  Check("cri-dockerd", cri.socket_path);
  return absl::OkStatus();
}

absl::Status Migration::HandOverCheckpoints(const std::string& cri_dockerd_root) {
  const CheckpointHandover handover = PlanCheckpointHandover(options_.paths.dockershim_root, cri_dockerd_root);
  for (const std::string& left : handover.left) out_ << "  note     " << left << "\n";
  for (const CheckpointHandover::Write& w : handover.writes) {
    // Written before ours goes: a rerun after a kill in between finds it and removes ours.
    RETURN_IF_ERROR(Step(absl::StrCat("write cri-dockerd's checkpoint ", w.theirs, " of pod ", w.pod.namespace_, "/",
                                      w.pod.name, " (", w.pod.port_mappings.size(),
                                      " port mappings, for cri-dockerd to tear down), then remove ", w.ours),
                         false, [&]() -> absl::Status {
                           RETURN_IF_ERROR(sys_.WriteCriDockerdFile(w.theirs, w.content));
                           return sys_.RemoveFile(w.ours);
                         }));
  }
  if (!handover.removals.empty()) {
    RETURN_IF_ERROR(Step(absl::StrCat("remove dockershim's checkpoints of ", handover.removals.size(),
                                      " pods that cri-dockerd has a checkpoint of (a later switch adopts them again)"),
                         false, [&]() -> absl::Status {
                           for (const std::string& path : handover.removals) RETURN_IF_ERROR(sys_.RemoveFile(path));
                           return absl::OkStatus();
                         }));
  }
  if (handover.writes.empty() && handover.removals.empty()) out_ << "  already  no checkpoint of dockershim's to hand over\n";
  return absl::OkStatus();
}

}  // namespace

int Migrate(const MigrateOptions& options, System& system, std::ostream& out, std::ostream& err) {
  Migration migration(options, system, out);
  if (absl::Status s = migration.Run(); !s.ok()) {
    out << std::flush;
    err << "dockershim migrate " << migration.name() << ": " << s.message() << "\n";
    if (migration.changed() && migration.other_name() != nullptr) {
      err << "The switch is half done; no pod was stopped. Run the same command again to finish it, or go back: "
             "dockershim migrate "
          << migration.other_name() << "\n";
    } else if (migration.changed()) {
      err << "Part of it is done; no pod was stopped. Run the same command again to finish it.\n";
    }
    return 1;
  }
  return migration.check_passed() ? 0 : 1;
}

}  // namespace shim::migrate
