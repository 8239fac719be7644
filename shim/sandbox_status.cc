// PodSandboxStatus and ListPodSandbox. Status costs one inspect; the pod IP comes
// from the checkpoint (memory after first read). Only a pod another runtime networked
// costs more, once: its IPs are adopted (sandbox_adoption.cc).
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "common/status.h"
#include "shim/container_convert.h"
#include "shim/image_convert.h"
#include "shim/cri_service.h"
#include "shim/naming.h"
#include "shim/view/container_view.h"

namespace shim {

CriService::ImageFacts CriService::FactsOfImage(const common::Context& ctx, const std::string& image_id) {
  const absl::Time now = absl::Now();
  {
    std::lock_guard lock(mu_);
    if (auto it = image_facts_.find(image_id);
        it != image_facts_.end() && now - it->second.fetched_at < kImageFactsRefresh) {
      return it->second;
    }
  }
  auto image = docker_.InspectImage(ctx, image_id);
  if (!image.ok()) {
    // Gone (or Docker busy): nothing to hide; statuses fall back to the image ID.
    ImageFacts none;
    none.answered = absl::IsNotFound(image.status());
    return none;
  }
  const std::vector<std::string> tags = RealReferences(image->repo_tags);
  ImageFacts facts{image->config.labels, ToImageRef(*image), tags.empty() ? std::string() : tags.front(), now, true};
  std::lock_guard lock(mu_);
  image_facts_[image_id] = facts;
  return facts;
}

dockerclient::Labels CriService::WithoutLabelsOf(const ImageFacts& image, const dockerclient::Labels& labels) {
  dockerclient::Labels own;
  for (const auto& [k, v] : labels) {
    auto it = image.labels.find(k);
    if (it == image.labels.end() || it->second != v) own.emplace(k, v);
  }
  return own;
}

absl::StatusOr<v1::PodSandboxStatusResponse> CriService::PodSandboxStatus(const common::Context& ctx,
                                                                          const v1::PodSandboxStatusRequest& req) {
  if (req.pod_sandbox_id().empty())
    return absl::InvalidArgumentError("PodSandboxStatus: pod_sandbox_id is required");
  // The verbose info carries Docker's HostConfig, which the container view does not keep.
  ASSIGN_OR_RETURN(dockerclient::ContainerInspect sandbox,
                   InspectSandbox(ctx, req.pod_sandbox_id(), req.verbose() ? Reading::kDocker : Reading::kForStatus));
  absl::StatusOr<SandboxCheckpoint> checkpoint = checkpoints_.Read(sandbox.id);
  if (WantsAdoption(sandbox, checkpoint)) checkpoint = AdoptPodNetwork(ctx, sandbox, std::move(checkpoint));

  v1::PodSandboxStatusResponse resp;
  v1::PodSandboxStatus& status = *resp.mutable_status();
  status.set_id(sandbox.id);
  *status.mutable_metadata() = SandboxMetadataOf(sandbox.name, sandbox.labels);
  status.set_state(sandbox.state.running ? v1::SANDBOX_READY : v1::SANDBOX_NOTREADY);
  status.set_created_at(DockerTimeToNanos(sandbox.created));
  SplitLabels(WithoutLabelsOf(FactsOfImage(ctx, sandbox.image), sandbox.labels), status.mutable_labels(),
              status.mutable_annotations());

  const bool host_network = sandbox.network_mode == "host";
  if (!host_network && sandbox.state.running) {
    if (checkpoint.ok() && !checkpoint->ip.empty()) {
      status.mutable_network()->set_ip(checkpoint->ip);
      for (const auto& ip : checkpoint->additional_ips) status.mutable_network()->add_additional_ips()->set_ip(ip);
    } else if (network_.Name() == "docker" && !sandbox.ip_address.empty()) {
      status.mutable_network()->set_ip(sandbox.ip_address);
    }
  }
  auto* ns = status.mutable_linux()->mutable_namespaces()->mutable_options();
  ns->set_network(host_network ? v1::NODE : v1::POD);
  ns->set_pid(sandbox.pid_mode == "host" ? v1::NODE : v1::POD);
  ns->set_ipc(sandbox.ipc_mode == "host" ? v1::NODE : v1::POD);

  const std::string& runtime = sandbox.runtime;
  if (!runtime.empty()) {
    auto info = CachedInfo(ctx);
    if (info.ok() && runtime != (*info)->default_runtime) status.set_runtime_handler(runtime);
  }

  if (req.verbose()) {
    nlohmann::json info = {{"pid", sandbox.state.pid},
                           {"image", sandbox.config_image},
                           {"dockerRuntime", runtime},
                           {"networkMode", sandbox.network_mode},
                           {"netnsPath", checkpoint.ok() ? checkpoint->netns_path : ""},
                           {"networkPlugin", checkpoint.ok() ? checkpoint->network_plugin : ""},
                           {"cniNetwork", checkpoint.ok() ? checkpoint->network_name : ""},
                           {"hostConfig", sandbox.raw.value("HostConfig", nlohmann::json::object())}};
    // What the last UpdatePodSandboxResources recorded (sandbox_resources.cc).
    if (checkpoint.ok() && !checkpoint->pod_resources.is_null()) info["podResources"] = checkpoint->pod_resources;
    (*resp.mutable_info())["info"] = info.dump();
  }
  return resp;
}

absl::StatusOr<std::shared_ptr<const CriService::ListedSandboxes>> CriService::ListSandboxes(
    const common::Context& ctx, const dockerclient::ListContainersOptions& narrowed) {
  auto make = [&](const dockerclient::ListContainersOptions& options) -> absl::StatusOr<view::Made<ListedSandboxes>> {
    ASSIGN_OR_RETURN(std::vector<dockerclient::ContainerSummary> containers, docker_.ListContainers(ctx, options));
    view::Made<ListedSandboxes> made;
    ListedSandboxes& listed = made.value;
    for (const dockerclient::ContainerSummary& c : containers) {
      listed.ids.insert(c.id);
      const std::string name = c.names.empty() ? "" : c.names.front();
      v1::PodSandbox sandbox;
      *sandbox.mutable_metadata() = SandboxMetadataOf(name, c.labels);
      if (sandbox.metadata().name().empty()) {
        LOG_DEBUG << "skipping container " << c.id << ": labelled as a sandbox but not named like one";
        continue;
      }
      sandbox.set_id(c.id);
      sandbox.set_state(c.state == "running" ? v1::SANDBOX_READY : v1::SANDBOX_NOTREADY);
      sandbox.set_created_at(c.created * 1000000000LL);
      const ImageFacts image = FactsOfImage(ctx, c.image_id);
      made.complete = made.complete && image.answered;
      dockerclient::Labels own = WithoutLabelsOf(image, c.labels);
      SplitLabels(own, sandbox.mutable_labels(), sandbox.mutable_annotations());
      *listed.all.add_items() = std::move(sandbox);
      listed.names.emplace_back(absl::StripPrefix(name, "/"));
      listed.own_labels.push_back(std::move(own));
    }
    return made;
  };
  return listed_sandboxes_.Get(
      ViewVersion(), absl::Now(), kImageFactsRefresh, [&] { return make(CriListOptions(kContainerTypeSandbox)); },
      [&] { return make(narrowed); });
}

absl::StatusOr<v1::ListPodSandboxResponse> CriService::ListPodSandbox(const common::Context& ctx,
                                                                      const v1::ListPodSandboxRequest& req) {
  ASSIGN_OR_RETURN(ListAnswer<v1::ListPodSandboxResponse> answer, SharedListPodSandbox(ctx, req));
  return *answer.message;
}

absl::StatusOr<ListAnswer<v1::ListPodSandboxResponse>> CriService::SharedListPodSandbox(
    const common::Context& ctx, const v1::ListPodSandboxRequest& req) {
  const v1::PodSandboxFilter& filter = req.filter();
  ASSIGN_OR_RETURN(std::shared_ptr<const ListedSandboxes> listed,
                   ListSandboxes(ctx, CriListOptions(kContainerTypeSandbox, filter.id(), filter.label_selector())));
  std::multiset<std::string> in_flight;
  {
    std::lock_guard lock(mu_);
    in_flight = sandboxes_in_flight_;
  }

  // The kubelet's relist (every second) filters nothing: its items are not looked at.
  const bool filters =
      !filter.id().empty() || filter.has_state() || !filter.label_selector().empty() || !in_flight.empty();
  std::vector<int> kept;
  for (int i = 0; i < listed->all.items_size(); ++i) {
    if (!filters) {
      kept.push_back(i);
      continue;
    }
    const v1::PodSandbox& s = listed->all.items(i);
    // Docker's id filter is a prefix, and crictl passes prefixes.
    if (!absl::StartsWith(s.id(), filter.id())) continue;
    // Not listed until RunPodSandbox returns (sandboxes_in_flight_ in cri_service.h).
    if (in_flight.count(listed->names[i]) > 0) continue;
    if (filter.has_state() && filter.state().state() != s.state()) continue;
    // Docker's filter also matched image labels; the selector applies to the pod's own.
    if (!MatchesLabelSelector(filter.label_selector(), listed->own_labels[i])) continue;
    kept.push_back(i);
  }
  std::vector<v1::PodSandbox> checkpoint_only;
  if (filter.label_selector().empty() && (!filter.has_state() || filter.state().state() == v1::SANDBOX_NOTREADY))
    checkpoint_only = CheckpointOnlySandboxes(filter.id(), *listed);
  if (std::cmp_equal(kept.size(), listed->all.items_size()) && checkpoint_only.empty())
    return ListAnswer<v1::ListPodSandboxResponse>{{listed, &listed->all}, listed->wire};
  auto resp = std::make_shared<v1::ListPodSandboxResponse>();
  for (int i : kept) *resp->add_items() = listed->all.items(i);
  for (v1::PodSandbox& s : checkpoint_only) *resp->add_items() = std::move(s);
  return ListAnswer<v1::ListPodSandboxResponse>{std::move(resp), nullptr};
}

std::vector<v1::PodSandbox> CriService::CheckpointOnlySandboxes(const std::string& id_prefix,
                                                                const ListedSandboxes& listed) {
  // A pod whose infra container is gone (removed by hand, lost with Docker's state)
  // still holds its network until StopPodSandbox; listing it NOTREADY, as
  // cri-dockerd does, lets the kubelet find it and clean up. Its checkpoint may be ours
  // or cri-dockerd's.
  const CheckpointStore::IdList all = checkpoints_.Ids();
  std::vector<std::string> missing;
  {
    ListedSandboxes::MissingCheckpoints& memo = *listed.missing_checkpoints;
    std::lock_guard lock(memo.mu);
    if (memo.of != all) {
      memo.ids.clear();
      for (const std::string& id : *all)
        if (!listed.ids.contains(id)) memo.ids.push_back(id);
      memo.of = all;
    }
    missing = memo.ids;
  }
  std::vector<v1::PodSandbox> out;
  for (const std::string& id : missing) {
    if (!absl::StartsWith(id, id_prefix)) continue;
    absl::StatusOr<SandboxCheckpoint> checkpoint = checkpoints_.Read(id);
    if (!checkpoint.ok()) continue;
    v1::PodSandbox& sandbox = out.emplace_back();
    sandbox.set_id(id);
    sandbox.mutable_metadata()->set_name(checkpoint->name);
    sandbox.mutable_metadata()->set_namespace_(checkpoint->namespace_);
    sandbox.mutable_metadata()->set_uid(checkpoint->uid);
    sandbox.set_state(v1::SANDBOX_NOTREADY);
  }
  return out;
}

}  // namespace shim
