#include "tests/unit/fake_docker_client.h"

#include <filesystem>
#include <fstream>

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <functional>

#include "absl/strings/match.h"
#include "common/no_wait.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace testing_fakes {

namespace {

// The resource fields of a HostConfig, as Docker's inspect then reports them.
void ApplyResources(const nlohmann::json& host, dockerclient::ContainerResources& r) {
  r.cpu_period = host.value("CpuPeriod", r.cpu_period);
  r.cpu_quota = host.value("CpuQuota", r.cpu_quota);
  r.cpu_shares = host.value("CpuShares", r.cpu_shares);
  r.cpuset_cpus = host.value("CpusetCpus", r.cpuset_cpus);
  r.cpuset_mems = host.value("CpusetMems", r.cpuset_mems);
  r.memory = host.value("Memory", r.memory);
  r.memory_swap = host.value("MemorySwap", r.memory_swap);
  r.oom_score_adj = host.value("OomScoreAdj", r.oom_score_adj);
}

// One ustar header block (and the content's blocks) for `path`.
std::string TarEntry(const std::string& path, const std::string& content) {
  const bool dir = !path.empty() && path.back() == '/';
  std::string header(512, '\0');
  const auto put = [&](size_t offset, const std::string& text) { header.replace(offset, text.size(), text); };
  put(0, path.substr(0, 99));
  put(100, "0000755");
  put(108, "0000000");
  put(116, "0000000");
  put(124, absl::StrFormat("%011o", dir ? 0 : content.size()));
  put(136, "00000000000");
  header[156] = dir ? '5' : '0';
  put(257, std::string("ustar\0" "00", 8));
  put(148, std::string(8, ' '));
  unsigned sum = 0;
  for (const char c : header) sum += static_cast<unsigned char>(c);
  put(148, absl::StrFormat("%06o", sum));
  header[154] = '\0';
  if (dir) return header;
  std::string data = content;
  data.resize((content.size() + 511) / 512 * 512, '\0');
  return header + data;
}

}  // namespace

std::string FakeNormalize(const std::string& ref) {
  std::string name = ref, suffix;
  if (auto at = name.find('@'); at != std::string::npos) {
    suffix = name.substr(at);
    name = name.substr(0, at);
  } else {
    auto slash = name.rfind('/');
    auto colon = name.rfind(':');
    if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
      suffix = name.substr(colon);
      name = name.substr(0, colon);
    } else {
      suffix = ":latest";
    }
  }
  auto first = name.find('/');
  std::string head = first == std::string::npos ? "" : name.substr(0, first);
  bool has_domain = absl::StrContains(head, ".") || absl::StrContains(head, ":") || head == "localhost";
  if (!has_domain) name = absl::StrCat("docker.io/", first == std::string::npos ? "library/" : "", name);
  return name + suffix;
}

namespace {
std::string FakeId(int n) { return absl::StrFormat("sha256:%064x", n); }
}  // namespace

FakeDockerClient::FakeDockerClient() {
  version.version = "20.10.24";
  version.api_version = "1.41";
  info.server_version = "20.10.24";
  info.docker_root_dir = "/var/lib/docker";
  info.driver = "overlay2";
  info.cgroup_driver = "cgroupfs";
  info.cgroup_version = "2";
  info.default_runtime = "runc";
  info.runtimes = {"runc"};
}

std::string FakeDockerClient::AddImage(const std::vector<std::string>& tags, const std::string& user, int64_t size,
                                       const std::vector<std::string>& digests) {
  std::lock_guard lock(mu_);
  dockerclient::ImageInspect image;
  image.id = FakeId(next_id_++);
  image.repo_tags = tags;
  image.repo_digests = digests;
  image.size = size;
  image.config.user = user;
  image.created = "2026-01-01T00:00:00Z";
  image.raw = {{"Id", image.id}, {"RepoTags", tags}};
  // A tag belongs to one image: move it, as Docker does.
  for (auto& [id, other] : images_) {
    std::erase_if(other.repo_tags, [&](const std::string& t) {
      return std::find(tags.begin(), tags.end(), t) != tags.end();
    });
  }
  images_[image.id] = image;
  return image.id;
}

void FakeDockerClient::SetImageLabels(const std::string& image_id, dockerclient::Labels labels) {
  std::lock_guard lock(mu_);
  images_.at(image_id).config.labels = std::move(labels);
}

void FakeDockerClient::SetImageFiles(const std::string& image_id, std::map<std::string, std::string> files) {
  std::lock_guard lock(mu_);
  image_files_[image_id] = std::move(files);
}

void FakeDockerClient::AddPullableImage(const std::string& reference, const std::string& user) {
  std::lock_guard lock(mu_);
  pullable_[FakeNormalize(reference)] = user;
}

void FakeDockerClient::FailOperation(const std::string& op, absl::Status status) {
  std::lock_guard lock(mu_);
  failures_[op] = std::move(status);
}

void FakeDockerClient::ClearFailures() {
  std::lock_guard lock(mu_);
  failures_.clear();
}

void FakeDockerClient::ExitOnStart(bool exit, const std::string& error) {
  std::lock_guard lock(mu_);
  exit_on_start_ = exit;
  exit_on_start_error_ = error;
}

void FakeDockerClient::OnExec(
    std::function<ExecScript(const std::string& container_id, const std::vector<std::string>& cmd)> fn) {
  std::lock_guard lock(mu_);
  on_exec_ = std::move(fn);
}

void FakeDockerClient::OnStream(std::function<void(StreamPeer)> fn) {
  std::lock_guard lock(mu_);
  on_stream_ = std::move(fn);
}

void FakeDockerClient::FinishExec(const std::string& exec_id, int exit_code) {
  std::lock_guard lock(mu_);
  execs_.at(exec_id).exit_code = exit_code;
}

std::vector<FakeDockerClient::ResizeCall> FakeDockerClient::Resizes() const {
  std::lock_guard lock(mu_);
  return resizes_;
}

std::vector<FakeDockerClient::StopCall> FakeDockerClient::Stops() const {
  std::lock_guard lock(mu_);
  return stops_;
}

std::vector<std::string> FakeDockerClient::Calls() const {
  std::lock_guard lock(mu_);
  return calls_;
}

int FakeDockerClient::CallCount(const std::string& op) const {
  std::lock_guard lock(mu_);
  return static_cast<int>(std::count(calls_.begin(), calls_.end(), op));
}

std::string FakeDockerClient::LastRegistryAuth() const {
  std::lock_guard lock(mu_);
  return last_registry_auth_;
}

std::map<std::string, FakeDockerClient::FakeContainer> FakeDockerClient::Containers() const {
  std::lock_guard lock(mu_);
  return containers_;
}

bool FakeDockerClient::HasImage(const std::string& ref) const {
  std::lock_guard lock(mu_);
  return !FindImageId(ref).empty();
}

absl::Status FakeDockerClient::Record(const std::string& op) {
  // As the real transport: no request from a thread that must not wait; not counted.
  if (!common::MayWait()) return common::WouldWait(op);
  calls_.push_back(op);
  auto it = failures_.find(op);
  return it == failures_.end() ? absl::OkStatus() : it->second;
}

std::string FakeDockerClient::FindImageId(const std::string& ref) const {
  for (const auto& [id, image] : images_) {
    if (id == ref || id == "sha256:" + ref) return id;
    if (ref.size() >= 4 && absl::StartsWith(id.substr(7), ref)) return id;
    for (const auto& tag : image.repo_tags)
      if (FakeNormalize(tag) == FakeNormalize(ref)) return id;
    for (const auto& digest : image.repo_digests)
      if (FakeNormalize(digest) == FakeNormalize(ref)) return id;
  }
  return "";
}

std::string FakeDockerClient::FindContainerId(const std::string& id_or_name) const {
  for (const auto& [id, c] : containers_) {
    if (id == id_or_name || c.inspect.name == "/" + id_or_name || c.inspect.name == id_or_name) return id;
    if (id_or_name.size() >= 4 && absl::StartsWith(id, id_or_name)) return id;
  }
  return "";
}

absl::StatusOr<std::string> FakeDockerClient::Ping(const common::Context& ctx) {
  if (on_ping) on_ping(ctx);
  std::lock_guard lock(mu_);
  if (auto s = Record("Ping"); !s.ok()) return s;
  return version.api_version;
}

absl::StatusOr<dockerclient::VersionInfo> FakeDockerClient::Version(const common::Context&) {
  std::lock_guard lock(mu_);
  if (auto s = Record("Version"); !s.ok()) return s;
  return version;
}

absl::StatusOr<dockerclient::SystemInfo> FakeDockerClient::Info(const common::Context& ctx) {
  if (on_info) on_info(ctx);
  std::lock_guard lock(mu_);
  if (auto s = Record("Info"); !s.ok()) return s;
  return info;
}

absl::StatusOr<std::vector<dockerclient::ImageSummary>> FakeDockerClient::ListImages(
    const common::Context&, const std::string& reference_filter) {
  std::lock_guard lock(mu_);
  if (auto s = Record("ListImages"); !s.ok()) return s;
  std::vector<dockerclient::ImageSummary> out;
  for (const auto& [id, image] : images_) {
    if (!reference_filter.empty()) {
      // Docker matches a filter without tag against every tag of the repository.
      const std::string wanted = FakeNormalize(reference_filter);
      const auto slash = reference_filter.rfind('/');
      const auto colon = reference_filter.rfind(':');
      const bool has_tag = colon != std::string::npos && (slash == std::string::npos || colon > slash);
      const std::string wanted_repo = wanted.substr(0, wanted.rfind(':'));
      bool match = std::any_of(image.repo_tags.begin(), image.repo_tags.end(), [&](const std::string& tag) {
        const std::string normalized = FakeNormalize(tag);
        return has_tag ? normalized == wanted : normalized.substr(0, normalized.rfind(':')) == wanted_repo;
      });
      if (!match) continue;
    }
    dockerclient::ImageSummary s;
    s.id = id;
    s.repo_tags = image.repo_tags;
    s.repo_digests = image.repo_digests;
    s.size = image.size;
    out.push_back(std::move(s));
  }
  return out;
}

absl::StatusOr<dockerclient::ImageInspect> FakeDockerClient::InspectImage(const common::Context&,
                                                                          const std::string& ref) {
  std::lock_guard lock(mu_);
  if (auto s = Record("InspectImage"); !s.ok()) return s;
  std::string id = FindImageId(ref);
  if (id.empty()) return absl::NotFoundError(absl::StrCat("inspect image ", ref, ": No such image: ", ref));
  return images_.at(id);
}

absl::Status FakeDockerClient::PullImage(const common::Context&, const dockerclient::PullOptions& options) {
  std::string user;
  {
    std::lock_guard lock(mu_);
    last_registry_auth_ = options.registry_auth;
    if (auto s = Record("PullImage"); !s.ok()) return s;
    auto it = pullable_.find(FakeNormalize(options.reference));
    if (it == pullable_.end())
      return absl::NotFoundError(absl::StrCat("pull image ", options.reference, ": manifest unknown"));
    user = it->second;
  }
  if (options.on_progress) options.on_progress({{"status", "Pulling fs layer"}});
  AddImage({options.reference}, user);
  return absl::OkStatus();
}

absl::Status FakeDockerClient::RemoveImage(const common::Context&, const std::string& ref, bool force) {
  std::lock_guard lock(mu_);
  if (auto s = Record("RemoveImage"); !s.ok()) return s;
  std::string id = FindImageId(ref);
  if (id.empty()) return absl::NotFoundError(absl::StrCat("remove image ", ref, ": No such image: ", ref));
  auto& image = images_.at(id);
  bool by_id = absl::StartsWith(id, ref) || absl::StartsWith(id.substr(7), ref);
  if (!by_id) {
    std::erase_if(image.repo_tags, [&](const std::string& t) { return FakeNormalize(t) == FakeNormalize(ref); });
    if (!image.repo_tags.empty()) return absl::OkStatus();
  } else if (image.repo_tags.size() > 1 && !force) {
    return absl::FailedPreconditionError(
        absl::StrCat("remove image ", ref, ": conflict: image is referenced in multiple repositories"));
  }
  for (const auto& [cid, c] : containers_)
    if (c.inspect.image == id)
      return absl::FailedPreconditionError(absl::StrCat("remove image ", ref, ": image is being used by ", cid));
  images_.erase(id);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<dockerclient::ContainerSummary>> FakeDockerClient::ListContainers(
    const common::Context&, const dockerclient::ListContainersOptions& options) {
  absl::StatusOr<std::vector<dockerclient::ContainerSummary>> listed = ListNow(options);
  if (after_read) after_read("ListContainers", "");
  return listed;
}

absl::StatusOr<std::vector<dockerclient::ContainerSummary>> FakeDockerClient::ListNow(
    const dockerclient::ListContainersOptions& options) {
  std::lock_guard lock(mu_);
  if (auto s = Record("ListContainers"); !s.ok()) return s;
  std::vector<dockerclient::ContainerSummary> out;
  for (const auto& [id, c] : containers_) {
    const auto& in = c.inspect;
    if (!options.all && !in.state.running) continue;
    if (options.id && !absl::StartsWith(id, *options.id)) continue;
    if (options.status && in.state.status != *options.status) continue;
    if (!std::all_of(options.label_keys.begin(), options.label_keys.end(),
                     [&](const std::string& key) { return in.labels.contains(key); })) {
      continue;
    }
    bool labels_match = std::all_of(options.label_filter.begin(), options.label_filter.end(), [&](const auto& kv) {
      auto it = in.labels.find(kv.first);
      return it != in.labels.end() && it->second == kv.second;
    });
    if (!labels_match) continue;
    dockerclient::ContainerSummary s;
    s.id = id;
    s.names = {in.name};
    s.image = in.config_image;
    s.image_id = in.image;
    s.state = in.state.status;
    s.labels = in.labels;
    // Whole seconds of the inspect's time, as dockerd lists it.
    absl::Time created;
    s.created = absl::ParseTime(absl::RFC3339_full, in.created, &created, nullptr) ? absl::ToUnixSeconds(created) : 0;
    out.push_back(std::move(s));
  }
  return out;
}

void FakeDockerClient::EditContainer(const std::string& id,
                                     const std::function<void(dockerclient::ContainerInspect&)>& edit) {
  std::lock_guard lock(mu_);
  edit(containers_.at(FindContainerId(id)).inspect);
}

absl::StatusOr<dockerclient::ContainerInspect> FakeDockerClient::InspectContainer(const common::Context&,
                                                                                  const std::string& id) {
  absl::StatusOr<dockerclient::ContainerInspect> inspected = InspectNow(id);
  if (after_read) after_read("InspectContainer", id);
  return inspected;
}

absl::StatusOr<dockerclient::ContainerInspect> FakeDockerClient::InspectNow(const std::string& id) {
  std::lock_guard lock(mu_);
  if (auto s = Record("InspectContainer"); !s.ok()) return s;
  std::string found = FindContainerId(id);
  if (found.empty()) return absl::NotFoundError(absl::StrCat("inspect container ", id, ": No such container: ", id));
  return containers_.at(found).inspect;
}

absl::StatusOr<std::string> FakeDockerClient::CreateContainer(const common::Context&, const std::string& name,
                                                              const nlohmann::json& body) {
  std::lock_guard lock(mu_);
  if (auto s = Record("CreateContainer"); !s.ok()) return s;
  if (!FindContainerId(name).empty())
    return absl::AlreadyExistsError(absl::StrCat("create container ", name, ": name already in use"));
  std::string image_ref = body.value("Image", "");
  std::string image_id = FindImageId(image_ref);
  if (image_id.empty())
    return absl::NotFoundError(absl::StrCat("create container ", name, ": No such image: ", image_ref));
  FakeContainer c;
  char buf[65];
  std::snprintf(buf, sizeof(buf), "%064x", 0xc0000 + next_id_++);
  c.inspect.id = buf;
  c.inspect.name = "/" + name;
  c.inspect.created = "2026-01-01T00:00:00.000000001Z";
  c.inspect.image = image_id;
  c.inspect.config_image = image_ref;
  c.inspect.state.status = "created";
  c.inspect.state.started_at = c.inspect.state.finished_at = "0001-01-01T00:00:00Z";
  c.inspect.labels = images_.at(image_id).config.labels;
  if (body.contains("Labels") && body["Labels"].is_object())
    for (auto& [k, v] : body["Labels"].items()) c.inspect.labels[k] = v.get<std::string>();
  c.inspect.hostname = body.value("Hostname", "");
  c.inspect.tty = body.value("Tty", false);
  if (body.contains("HostConfig")) {
    c.inspect.network_mode = body["HostConfig"].value("NetworkMode", "");
    c.inspect.runtime = body["HostConfig"].value("Runtime", "");
    c.inspect.pid_mode = body["HostConfig"].value("PidMode", "");
    c.inspect.ipc_mode = body["HostConfig"].value("IpcMode", "");
    c.inspect.cgroup_parent = body["HostConfig"].value("CgroupParent", "");
    if (body["HostConfig"].contains("LogConfig"))
      c.inspect.log_driver = body["HostConfig"]["LogConfig"].value("Type", "");
    ApplyResources(body["HostConfig"], c.inspect.resources);
    c.inspect.raw["HostConfig"] = body["HostConfig"];  // as Docker's inspect echoes it
  }
  c.create_body = body;
  std::string id = c.inspect.id;
  containers_[id] = std::move(c);
  return id;
}

absl::Status FakeDockerClient::StartContainer(const common::Context&, const std::string& id) {
  std::lock_guard lock(mu_);
  if (auto s = Record("StartContainer"); !s.ok()) return s;
  std::string found = FindContainerId(id);
  if (found.empty()) return absl::NotFoundError(absl::StrCat("start container ", id, ": No such container"));
  auto& st = containers_.at(found).inspect.state;
  st.started_at = "2026-01-01T00:00:01.000000001Z";
  containers_.at(found).inspect.log_path = "/var/lib/docker/containers/" + found + "/" + found + "-json.log";
  if (exit_on_start_) {
    st.status = "exited";
    st.running = false;
    st.pid = 0;
    st.exit_code = 1;
    st.error = exit_on_start_error_;
    st.finished_at = "2026-01-01T00:00:01.500000001Z";
    return absl::OkStatus();
  }
  st.status = "running";
  st.running = true;
  st.pid = 4242;
  containers_.at(found).inspect.sandbox_key = "/var/run/docker/netns/fake" + found.substr(0, 12);
  return absl::OkStatus();
}

absl::Status FakeDockerClient::StopContainer(const common::Context&, const std::string& id,
                                             const dockerclient::StopOptions& options) {
  std::lock_guard lock(mu_);
  if (auto s = Record("StopContainer"); !s.ok()) return s;
  std::string found = FindContainerId(id);
  if (found.empty()) return absl::NotFoundError(absl::StrCat("stop container ", id, ": No such container"));
  stops_.push_back({found, options.timeout_seconds});
  auto& st = containers_.at(found).inspect.state;
  if (st.running) {
    st.status = "exited";
    st.running = false;
    st.pid = 0;
    st.finished_at = "2026-01-01T00:00:02.000000001Z";
  }
  return absl::OkStatus();
}

absl::Status FakeDockerClient::RemoveContainer(const common::Context&, const std::string& id, bool force) {
  std::lock_guard lock(mu_);
  if (auto s = Record("RemoveContainer"); !s.ok()) return s;
  std::string found = FindContainerId(id);
  if (found.empty()) return absl::NotFoundError(absl::StrCat("remove container ", id, ": No such container"));
  if (containers_.at(found).inspect.state.running && !force)
    return absl::FailedPreconditionError("remove container: container is running");
  containers_.erase(found);
  return absl::OkStatus();
}

absl::Status FakeDockerClient::UpdateContainer(const common::Context&, const std::string& id,
                                               const nlohmann::json& resources) {
  std::lock_guard lock(mu_);
  if (auto s = Record("UpdateContainer"); !s.ok()) return s;
  const std::string found = FindContainerId(id);
  if (found.empty()) return absl::NotFoundError(absl::StrCat("update container ", id, ": No such container"));
  FakeContainer& c = containers_.at(found);
  c.create_body["HostConfig"].update(resources);
  ApplyResources(resources, c.inspect.resources);
  return absl::OkStatus();
}

absl::Status FakeDockerClient::ExportContainer(const common::Context&, const std::string& id,
                                               const std::function<absl::Status(std::string_view)>& sink) {
  std::string archive;
  {
    std::lock_guard lock(mu_);
    if (auto s = Record("ExportContainer"); !s.ok()) return s;
    const std::string found = FindContainerId(id);
    if (found.empty()) return absl::NotFoundError(absl::StrCat("export container ", id, ": No such container: ", id));
    if (auto files = image_files_.find(containers_.at(found).inspect.image); files != image_files_.end()) {
      for (const auto& [path, content] : files->second) archive += TarEntry(path, content);
    }
  }
  archive.append(1024, '\0');
  // In pieces, as dockerd streams it.
  for (size_t at = 0; at < archive.size(); at += 700) {
    if (absl::Status s = sink(std::string_view(archive).substr(at, 700)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status FakeDockerClient::CreateCheckpoint(const common::Context& ctx, const std::string& id,
                                                const dockerclient::CheckpointOptions& options) {
  std::lock_guard lock(mu_);
  if (auto s = Record("CreateCheckpoint"); !s.ok()) return s;
  const std::string found = FindContainerId(id);
  if (found.empty()) return absl::NotFoundError(absl::StrCat("checkpoint container ", id, ": No such container"));
  if (!containers_.at(found).inspect.state.running)
    return absl::FailedPreconditionError(absl::StrCat("checkpoint container ", id, ": container is not running"));
  last_checkpoint = options;
  last_checkpoint_deadline = ctx.deadline;
  const std::string dir = options.checkpoint_dir + "/" + options.checkpoint_id;
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/inventory.img") << "criu inventory of " << found;
  std::ofstream(dir + "/pages-1.img") << std::string(3000, 'p');
  return absl::OkStatus();
}

absl::StatusOr<std::string> FakeDockerClient::CreateExec(const common::Context&, const std::string& container_id,
                                                         const dockerclient::ExecConfig& config) {
  std::lock_guard lock(mu_);
  if (auto s = Record("CreateExec"); !s.ok()) return s;
  const std::string found = FindContainerId(container_id);
  if (found.empty()) {
    return absl::NotFoundError(absl::StrCat("create exec in container ", container_id, ": No such container"));
  }
  if (!containers_.at(found).inspect.state.running) {
    return absl::FailedPreconditionError(
        absl::StrCat("create exec in container ", container_id, ": Container ", found, " is not running"));
  }
  const std::string id = absl::StrCat("exec", next_id_++);
  execs_[id] = FakeExec{found, config, std::nullopt, 5000 + next_id_};
  return id;
}

absl::Status FakeDockerClient::RunExec(const common::Context& ctx, const std::string& exec_id, bool,
                                       const dockerclient::ExecOutput& output) {
  ExecScript script;
  {
    std::lock_guard lock(mu_);
    if (auto s = Record("RunExec"); !s.ok()) return s;
    auto it = execs_.find(exec_id);
    if (it == execs_.end()) return absl::NotFoundError(absl::StrCat("run exec ", exec_id, ": No such exec instance"));
    if (on_exec_) script = on_exec_(it->second.container_id, it->second.config.cmd);
    if (!script.hang) it->second.exit_code = script.exit_code;
  }
  if (script.hang) {
    while (!ctx.Cancelled() && absl::Now() < ctx.deadline) absl::SleepFor(absl::Milliseconds(5));
    return absl::DeadlineExceededError(absl::StrCat("run exec ", exec_id, ": deadline exceeded"));
  }
  if (!script.stdout_data.empty() && output.on_stdout) output.on_stdout(script.stdout_data);
  if (!script.stderr_data.empty() && output.on_stderr) output.on_stderr(script.stderr_data);
  return absl::OkStatus();
}

absl::StatusOr<dockerclient::ExecInspect> FakeDockerClient::InspectExec(const common::Context&,
                                                                        const std::string& exec_id) {
  std::lock_guard lock(mu_);
  if (auto s = Record("InspectExec"); !s.ok()) return s;
  auto it = execs_.find(exec_id);
  if (it == execs_.end()) return absl::NotFoundError(absl::StrCat("inspect exec ", exec_id, ": No such exec instance"));
  dockerclient::ExecInspect inspect;
  inspect.exit_code = it->second.exit_code;
  inspect.running = !it->second.exit_code.has_value();
  inspect.pid = it->second.pid;
  return inspect;
}

absl::StatusOr<dockerclient::HijackedConnection> FakeDockerClient::HandOver(StreamPeer peer) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return absl::InternalError(absl::StrCat("socketpair: ", std::strerror(errno)));
  }
  dockerclient::HijackedConnection shim_end{common::UniqueFd(fds[0]), ""};
  peer.fd.Reset(fds[1]);
  std::function<void(StreamPeer)> on_stream;
  {
    std::lock_guard lock(mu_);
    on_stream = on_stream_;
  }
  if (on_stream) on_stream(std::move(peer));
  return shim_end;
}

absl::StatusOr<dockerclient::HijackedConnection> FakeDockerClient::StartExecAttached(const common::Context&,
                                                                                   const std::string& exec_id, bool) {
  StreamPeer peer;
  {
    std::lock_guard lock(mu_);
    if (auto s = Record("StartExecAttached"); !s.ok()) return s;
    auto it = execs_.find(exec_id);
    if (it == execs_.end()) {
      return absl::NotFoundError(absl::StrCat("start exec ", exec_id, ": No such exec instance: ", exec_id));
    }
    if (!containers_.at(it->second.container_id).inspect.state.running) {
      return absl::FailedPreconditionError(
          absl::StrCat("start exec ", exec_id, ": Container ", it->second.container_id, " is not running"));
    }
    peer.id = exec_id;
    peer.container_id = it->second.container_id;
    peer.config = it->second.config;
  }
  return HandOver(std::move(peer));
}

absl::Status FakeDockerClient::ResizeExec(const common::Context&, const std::string& exec_id,
                                          dockerclient::ConsoleSize size) {
  std::lock_guard lock(mu_);
  if (auto s = Record("ResizeExec"); !s.ok()) return s;
  auto it = execs_.find(exec_id);
  if (it == execs_.end()) {
    return absl::NotFoundError(absl::StrCat("resize exec ", exec_id, ": No such exec instance: ", exec_id));
  }
  if (size.height == 0 || size.width == 0) {
    return absl::InvalidArgumentError(absl::StrCat("resize exec ", exec_id, ": zero terminal dimension"));
  }
  if (it->second.exit_code) {
    return absl::FailedPreconditionError(absl::StrCat("resize exec ", exec_id, ": the process is not running"));
  }
  resizes_.push_back({exec_id, size});
  return absl::OkStatus();
}

absl::StatusOr<dockerclient::HijackedConnection> FakeDockerClient::AttachContainer(
    const common::Context&, const std::string& id, const dockerclient::AttachOptions& options) {
  StreamPeer peer;
  {
    std::lock_guard lock(mu_);
    if (auto s = Record("AttachContainer"); !s.ok()) return s;
    const std::string found = FindContainerId(id);
    if (found.empty()) return absl::NotFoundError(absl::StrCat("attach to container ", id, ": No such container: ", id));
    const dockerclient::ContainerInspect& container = containers_.at(found).inspect;
    if (!container.state.running) {
      return absl::FailedPreconditionError(
          absl::StrCat("attach to container ", id, ": Container ", found, " is not running"));
    }
    peer.id = peer.container_id = found;
    peer.config.tty = container.tty;
    peer.config.attach_stdin = options.stdin;
    peer.config.attach_stdout = options.stdout;
    peer.config.attach_stderr = options.stderr;
  }
  return HandOver(std::move(peer));
}

absl::Status FakeDockerClient::ResizeContainer(const common::Context&, const std::string& id,
                                               dockerclient::ConsoleSize size) {
  std::lock_guard lock(mu_);
  if (auto s = Record("ResizeContainer"); !s.ok()) return s;
  const std::string found = FindContainerId(id);
  if (found.empty()) return absl::NotFoundError(absl::StrCat("resize container ", id, ": No such container: ", id));
  if (size.height == 0 || size.width == 0) {
    return absl::InvalidArgumentError(absl::StrCat("resize container ", id, ": zero terminal dimension"));
  }
  if (!containers_.at(found).inspect.state.running) {
    return absl::FailedPreconditionError(
        absl::StrCat("resize container ", id, ": Container ", found, " is not running"));
  }
  resizes_.push_back({found, size});
  return absl::OkStatus();
}

}  // namespace testing_fakes
