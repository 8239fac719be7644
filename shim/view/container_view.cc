#include "shim/view/container_view.h"

#include <algorithm>
#include <set>

#include "absl/strings/match.h"
#include "common/log.h"
#include "shim/container_convert.h"
#include "shim/naming.h"

namespace shim::view {

namespace {

constexpr absl::Duration kDockerTimeout = absl::Seconds(30);

// How far a container got: created, started (running, paused, restarting), ended.
int Stage(const std::string& state) {
  if (state == "created") return 0;
  if (state == "exited" || state == "dead" || state == "removing") return 2;
  return 1;
}

bool Active(const std::string& state) { return state == "running" || state == "paused" || state == "restarting"; }

dockerclient::DockerEvent EventOf(const dockerclient::ContainerSummary& c, const char* action, int64_t time_nano) {
  dockerclient::DockerEvent e;
  e.type = "container";
  e.action = action;
  e.id = c.id;
  e.attributes = c.labels;
  // As Docker puts them in an event's attributes.
  const std::string& name = c.names.empty() ? std::string() : c.names.front();
  e.attributes["name"] = absl::StartsWith(name, "/") ? name.substr(1) : name;
  e.attributes["image"] = c.image;
  e.time_nano = time_nano;
  return e;
}

bool Matches(const dockerclient::ContainerSummary& c, const dockerclient::ListContainersOptions& o) {
  if (!o.all && !Active(c.state)) return false;
  // Docker's id filter is a prefix (20.10 to 28.5; the integration suite checks it).
  if (o.id && !absl::StartsWith(c.id, *o.id)) return false;
  if (o.status && c.state != *o.status) return false;
  for (const std::string& key : o.label_keys) {
    if (!c.labels.contains(key)) return false;
  }
  for (const auto& [key, value] : o.label_filter) {
    auto it = c.labels.find(key);
    if (it == c.labels.end() || it->second != value) return false;
  }
  return true;
}

// What the view keeps of an inspect: all but the raw JSON, which would multiply the
// view's memory and the cost of every status call's copy (the kubelet asks each running
// container's status every 10 s). PodSandboxStatus reads Docker for its verbose info.
dockerclient::ContainerInspect Kept(const dockerclient::ContainerInspect& c) {
  dockerclient::ContainerInspect kept = c;
  kept.raw = nlohmann::json();
  return kept;
}

}  // namespace

dockerclient::ContainerSummary SummaryOf(const dockerclient::ContainerInspect& c) {
  dockerclient::ContainerSummary s;
  s.id = c.id;
  s.names = {c.name};
  s.image = c.config_image;
  s.image_id = c.image;
  s.created = DockerTimeToNanos(c.created) / 1000000000;  // the list has whole seconds
  s.state = c.state.status;
  s.labels = c.labels;
  return s;
}

std::vector<dockerclient::DockerEvent> EventsBetween(const std::optional<dockerclient::ContainerSummary>& before,
                                                     const std::optional<dockerclient::ContainerSummary>& after,
                                                     int64_t time_nano) {
  std::vector<dockerclient::DockerEvent> out;
  if (!before && !after) return out;
  const dockerclient::ContainerSummary& c = after ? *after : *before;
  int from = before ? Stage(before->state) : -1;
  const int to = after ? Stage(after->state) : 3;
  if (from > to && to == 1) {
    out.push_back(EventOf(c, "start", time_nano));  // started again after it ended
    return out;
  }
  // Gone while only created: nothing ran, so nothing died.
  if (to == 3 && from == 0) from = 2;
  static constexpr const char* kActions[] = {"create", "start", "die", "destroy"};
  for (int stage = from + 1; stage <= to; ++stage) out.push_back(EventOf(c, kActions[stage], time_nano));
  return out;
}

ContainerView::ContainerView(dockerclient::DockerClient& docker) : docker_(docker) {}

bool ContainerView::Live() const {
  std::lock_guard lock(mu_);
  return live_;
}

std::optional<uint64_t> ContainerView::Version() const {
  std::lock_guard lock(mu_);
  if (!live_) return std::nullopt;
  return version_;
}

std::optional<std::vector<dockerclient::ContainerSummary>> ContainerView::List(
    const dockerclient::ListContainersOptions& options) const {
  const bool cri_only = options.label_filter.contains(kContainerTypeLabel) ||
                        std::find(options.label_keys.begin(), options.label_keys.end(), kContainerTypeLabel) !=
                            options.label_keys.end();
  if (!cri_only) return std::nullopt;
  std::lock_guard lock(mu_);
  if (!live_) return std::nullopt;
  std::vector<dockerclient::ContainerSummary> out;
  for (const auto& [id, c] : containers_) {
    if (Matches(c.summary, options)) out.push_back(c.summary);
  }
  return out;
}

absl::StatusOr<dockerclient::ContainerInspect> ContainerView::InspectForStatus(const common::Context& ctx,
                                                                               const std::string& id) {
  if (std::optional<dockerclient::ContainerInspect> held = HeldInspect(id)) return *std::move(held);
  return Read(ctx, id);
}

std::optional<dockerclient::ContainerInspect> ContainerView::HeldInspect(const std::string& id) const {
  std::lock_guard lock(mu_);
  if (!live_) return std::nullopt;
  auto it = containers_.find(id);
  if (it == containers_.end()) return std::nullopt;
  return it->second.inspect;
}

absl::StatusOr<dockerclient::ContainerInspect> ContainerView::Read(const common::Context& ctx, const std::string& id) {
  const ReadStart began = BeginRead();
  absl::StatusOr<dockerclient::ContainerInspect> c = docker_.InspectContainer(ctx, id);
  std::lock_guard lock(mu_);
  if (c.ok()) {
    auto it = containers_.find(c->id);
    if (live_ && it != containers_.end() && !it->second.inspect && !removed_.contains(c->id) &&
        it->second.summary.state == c->state.status)
      it->second.inspect = Kept(*c);
  } else if (absl::IsNotFound(c.status())) {
    // Removed behind the shim's back, and its destroy event not read yet: a status call
    // that finds it gone takes it off the lists.
    Bury(id);
  }
  EndRead(began);
  return c;
}

void ContainerView::Refresh(const common::Context& ctx, const std::string& id) {
  if (!Live()) return;
  Reread(ctx, id).IgnoreError();
}

absl::StatusOr<dockerclient::ContainerInspect> ContainerView::Reread(const common::Context& ctx,
                                                                     const std::string& id) {
  const ReadStart began = BeginRead();
  absl::StatusOr<dockerclient::ContainerInspect> c = docker_.InspectContainer(ctx, id);
  std::lock_guard lock(mu_);
  if (c.ok()) {
    // What was read before its removal was applied (meanwhile) stays removed.
    if (c->labels.contains(kContainerTypeLabel) && !removed_.contains(c->id)) {
      // Not stored over what a read that began later stored, nor brought back when a
      // list that began later did not show it (removed behind the shim's back meanwhile).
      auto it = containers_.find(c->id);
      if (it == containers_.end() && began.order > list_order_) {
        containers_.emplace(c->id, Held{SummaryOf(*c), Kept(*c), began.order});
        ++version_;
      } else if (it != containers_.end() && it->second.read_order < began.order) {
        it->second = Held{SummaryOf(*c), Kept(*c), began.order};
        ++version_;
      }
    } else if (containers_.erase(c->id) > 0) {
      ++version_;
    }
  } else if (absl::IsNotFound(c.status())) {
    Bury(id);
  } else {
    // The entry stays as it was; the container's next event or the next reconcile corrects it.
    LOG_DEBUG << "container view: cannot read container " << id << ": " << c.status().message();
  }
  EndRead(began);
  return c;
}

ContainerView::ReadStart ContainerView::BeginRead() {
  std::lock_guard lock(mu_);
  reads_.insert(removals_);
  return {removals_, ++reads_begun_};
}

void ContainerView::EndRead(const ReadStart& began) {
  reads_.erase(reads_.find(began.removals));
  // A removal no read under way began before cannot be undone by a read any more.
  const uint64_t oldest = reads_.empty() ? removals_ : *reads_.begin();
  std::erase_if(removed_, [&](const auto& entry) { return entry.second <= oldest; });
}

void ContainerView::Forget(const std::string& id) {
  std::lock_guard lock(mu_);
  Bury(id);
}

void ContainerView::Bury(const std::string& id) {
  if (id.empty()) return;  // would be everyone's prefix
  ++removals_;
  ++version_;
  const bool reading = !reads_.empty();
  // Every ID it prefixes is gone too: Docker looks a prefix up among all IDs. `id`
  // itself is remembered even when not held: a read under way may still bring it.
  if (reading) removed_[id] = removals_;
  auto first = containers_.lower_bound(id), last = first;
  for (; last != containers_.end() && absl::StartsWith(last->first, id); ++last) {
    if (reading) removed_[last->first] = removals_;
  }
  containers_.erase(first, last);
  // A name may have moved to another container (rename): what holds it is dropped
  // (its rename event reads it again) but not remembered as removed.
  std::erase_if(containers_, [&](const auto& entry) {
    const auto& names = entry.second.summary.names;
    return std::find(names.begin(), names.end(), "/" + id) != names.end();
  });
}

void ContainerView::OnEvent(const dockerclient::DockerEvent& event) {
  if (event.action == "destroy") return Forget(event.id);
  // The actions that change what a list or a status shows ("update": the resources);
  // exec_*, attach, resize, kill (a die follows), health_status ... do not.
  static const std::set<std::string> kChanging = {"create", "start", "die", "pause", "unpause", "rename", "update"};
  if (!kChanging.contains(event.action)) return;
  Reread(common::Context::WithTimeout(kDockerTimeout), event.id).IgnoreError();
}

absl::StatusOr<std::vector<dockerclient::DockerEvent>> ContainerView::Reconcile() {
  dockerclient::ListContainersOptions options;
  options.all = true;
  options.label_keys = {kContainerTypeLabel};
  const ReadStart began = BeginRead();
  absl::StatusOr<std::vector<dockerclient::ContainerSummary>> listed =
      docker_.ListContainers(common::Context::WithTimeout(kDockerTimeout), options);
  // Stamped after the list: what it shows happened before.
  const int64_t now = absl::ToUnixNanos(absl::Now());
  std::lock_guard lock(mu_);
  if (!listed.ok()) {
    live_ = false;
    EndRead(began);
    return listed.status();
  }
  std::map<std::string, Held> fresh;
  for (dockerclient::ContainerSummary& c : *listed) {
    // Listed before its removal, which was applied meanwhile.
    if (removed_.contains(c.id)) continue;
    Held held{std::move(c), std::nullopt, began.order};
    // An inspect stays good while the container is in the state it was read in.
    auto old = containers_.find(held.summary.id);
    if (old != containers_.end() && old->second.summary.state == held.summary.state)
      held.inspect = old->second.inspect;
    fresh.emplace(held.summary.id, std::move(held));
  }
  // What a read that began after the list stored is newer than the list (a container
  // created meanwhile, say).
  for (const auto& [id, c] : containers_)
    if (c.read_order > began.order) fresh.insert_or_assign(id, c);
  EndRead(began);

  std::vector<dockerclient::DockerEvent> missed;
  if (primed_) {
    auto Find = [](const auto& map, const std::string& id) -> std::optional<dockerclient::ContainerSummary> {
      auto it = map.find(id);
      if (it == map.end()) return std::nullopt;
      return it->second.summary;
    };
    std::set<std::string> ids;
    for (const auto& [id, c] : containers_) ids.insert(id);
    for (const auto& [id, c] : fresh) ids.insert(id);
    for (const std::string& id : ids) {
      for (auto& e : EventsBetween(Find(containers_, id), Find(fresh, id), now)) missed.push_back(std::move(e));
    }
  }
  containers_ = std::move(fresh);
  ++version_;
  list_order_ = began.order;
  live_ = primed_ = true;
  return missed;
}

void ContainerView::OnStreamDown() {
  std::lock_guard lock(mu_);
  live_ = false;
}

}  // namespace shim::view
