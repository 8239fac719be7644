#include "shim/migrate/installation.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "shim/migrate/exec_line.h"
#include "shim/migrate/unit_file.h"

namespace shim::migrate {

namespace {

// The first of `names` that the directories hold; NOT_FOUND when none.
absl::StatusOr<std::pair<std::string, UnitFile>> LoadFirst(const std::vector<std::string>& names,
                                                           const std::vector<std::string>& unit_dirs) {
  for (const std::string& name : names) {
    absl::StatusOr<UnitFile> unit = LoadUnit(name, unit_dirs);
    if (unit.ok()) return std::make_pair(name, *std::move(unit));
    if (!absl::IsNotFound(unit.status())) return unit.status();
  }
  return absl::NotFoundError(absl::StrCat("no ", absl::StrJoin(names, " or "), " in ", absl::StrJoin(unit_dirs, ", ")));
}

// The one ListenStream= path of a socket unit; "" with `problem` set otherwise.
std::string ListenPath(const UnitFile& socket, const std::string& name, std::string* problem) {
  std::vector<std::string> listen = socket.Values("Socket", "ListenStream");
  if (listen.size() != 1) {
    *problem = absl::StrCat(name, " has ", listen.size(), " ListenStream= settings, not one");
    return "";
  }
  absl::StatusOr<std::string> path = ExpandSpecifiers(listen.front(), name);
  if (!path.ok()) {
    *problem = absl::StrCat(name, ": ", path.status().message());
    return "";
  }
  if (!absl::StartsWith(*path, "/")) {
    *problem = absl::StrCat(name, " listens on ", *path, ", not a unix socket path");
    return "";
  }
  return *path;
}

}  // namespace

absl::StatusOr<CriDockerdUnits> ReadCriDockerdUnits(const std::vector<std::string>& unit_dirs) {
  absl::StatusOr<std::pair<std::string, UnitFile>> service =
      LoadFirst({"cri-docker.service", "cri-dockerd.service"}, unit_dirs);
  if (absl::IsNotFound(service.status()))
    return absl::NotFoundError(absl::StrCat("cri-dockerd is not installed: ", service.status().message()));
  if (!service.ok()) return service.status();
  CriDockerdUnits units;
  units.service = service->first;
  const UnitFile& unit = service->second;
  units.files = unit.sources();

  std::vector<std::string> exec = unit.Values("Service", "ExecStart");
  if (exec.size() != 1) {
    return absl::FailedPreconditionError(absl::StrCat(units.service, " has ", exec.size(),
                                                      " ExecStart= commands (", absl::StrJoin(units.files, ", "),
                                                      "): one is expected"));
  }
  ASSIGN_OR_RETURN(Environment env, ServiceEnvironment(unit, units.service));
  absl::StatusOr<std::string> expanded = ExpandSpecifiers(exec.front(), units.service);
  if (!expanded.ok()) return common::Annotate(expanded.status(), units.service + ": ExecStart=");
  absl::StatusOr<std::vector<std::string>> argv = CommandLine(*expanded, env);
  if (!argv.ok()) return common::Annotate(argv.status(), units.service + ": ExecStart=");
  units.argv = *std::move(argv);
  units.flags = MapCriDockerdFlags(std::vector<std::string>(units.argv.begin() + 1, units.argv.end()));

  const std::string stem = units.service.substr(0, units.service.rfind('.'));
  absl::StatusOr<std::pair<std::string, UnitFile>> socket =
      LoadFirst({stem + ".socket", "cri-docker.socket", "cri-dockerd.socket"}, unit_dirs);
  if (socket.ok()) {
    units.socket = socket->first;
    units.files.insert(units.files.end(), socket->second.sources().begin(), socket->second.sources().end());
  } else if (!absl::IsNotFound(socket.status()) && !absl::IsFailedPrecondition(socket.status())) {
    return socket.status();  // unreadable; a masked socket unit is as good as none
  }

  if (units.flags.runtime_endpoint == "fd://") {
    units.socket_activated = true;
    if (units.socket.empty()) {
      units.socket_problem = absl::StrCat(units.service, " serves fd:// but there is no socket unit");
    } else {
      units.socket_path = ListenPath(socket->second, units.socket, &units.socket_problem);
      const UnitFile& s = socket->second;
      if (!s.Value("Socket", "SocketMode").empty()) units.access.mode = s.Value("Socket", "SocketMode");
      if (!s.Value("Socket", "SocketUser").empty()) units.access.user = s.Value("Socket", "SocketUser");
      if (!s.Value("Socket", "SocketGroup").empty()) units.access.group = s.Value("Socket", "SocketGroup");
    }
  } else {
    units.socket_path = UnixSocketPath(units.flags.runtime_endpoint);
    if (units.socket_path.empty())
      units.socket_problem = absl::StrCat("--container-runtime-endpoint ", units.flags.runtime_endpoint);
  }
  return units;
}

absl::StatusOr<DockershimUnits> ReadDockershimUnits(const std::vector<std::string>& unit_dirs) {
  auto explain = [](const absl::Status& status) {
    if (!absl::IsNotFound(status)) return status;
    return absl::NotFoundError(absl::StrCat("dockershim's systemd units are not installed (", status.message(),
                                            "): install the dockershim package"));
  };
  if (absl::StatusOr<UnitFile> service = LoadUnit(kDockershimService, unit_dirs); !service.ok())
    return explain(service.status());
  absl::StatusOr<UnitFile> socket = LoadUnit(kDockershimSocket, unit_dirs);
  if (!socket.ok()) return explain(socket.status());
  DockershimUnits units;
  units.socket_path = ListenPath(*socket, kDockershimSocket, &units.socket_problem);
  return units;
}

}  // namespace shim::migrate
