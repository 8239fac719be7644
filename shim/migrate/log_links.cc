#include "shim/migrate/log_links.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "shim/naming.h"

namespace shim::migrate {

namespace fs = std::filesystem;

absl::StatusOr<std::vector<ContainerLog>> RunningContainerLogs(dockerclient::DockerClient& docker,
                                                               const common::Context& ctx) {
  dockerclient::ListContainersOptions list;
  list.all = false;  // running ones
  list.label_filter[kContainerTypeLabel] = kContainerTypeContainer;
  ASSIGN_OR_RETURN(std::vector<dockerclient::ContainerSummary> containers, docker.ListContainers(ctx, list));
  std::vector<ContainerLog> logs;
  for (const dockerclient::ContainerSummary& summary : containers) {
    const std::string cri_path = LabelValue(summary.labels, kContainerLogPathLabel);
    if (cri_path.empty()) continue;
    absl::StatusOr<dockerclient::ContainerInspect> c = docker.InspectContainer(ctx, summary.id);
    if (absl::IsNotFound(c.status())) continue;  // removed meanwhile
    if (!c.ok()) return c.status();
    const std::string name = c->name.empty() ? "" : c->name.substr(1);
    logs.push_back({c->id, name, cri_path, c->log_driver, c->log_driver == "json-file" ? c->log_path : ""});
  }
  return logs;
}

LinkPlan PlanLink(const ContainerLog& container) {
  LinkPlan plan{container, LinkState::kToLink, ""};
  std::error_code ec;
  if (container.log_driver != "json-file") {
    plan.state = LinkState::kNotLinkable;
    plan.why = absl::StrCat("log driver ", container.log_driver.empty() ? "unknown" : container.log_driver,
                            ", not json-file: Docker keeps no file to link to");
  } else if (container.docker_log.empty() || !fs::is_regular_file(container.docker_log, ec)) {
    plan.state = LinkState::kNotLinkable;
    plan.why = container.docker_log.empty() ? "Docker reports no log file"
                                            : absl::StrCat("Docker's log ", container.docker_log, " is missing");
  } else if (fs::is_symlink(fs::symlink_status(container.cri_path, ec)) &&
             fs::read_symlink(container.cri_path, ec) == container.docker_log) {
    plan.state = LinkState::kLinked;
  }
  return plan;
}

absl::Status Relink(const std::string& path, const std::string& target) {
  const std::string temp = path + ".dockershim-migrate";
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  ::unlink(temp.c_str());  // left by an interrupted run
  if (::symlink(target.c_str(), temp.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot make a link at ", temp, ": ", std::strerror(errno)));
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    return absl::InternalError(absl::StrCat("cannot rename ", temp, " to ", path, ": ", std::strerror(err)));
  }
  return absl::OkStatus();
}

}  // namespace shim::migrate
