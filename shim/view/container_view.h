#pragma once
// The node's CRI containers and pod infra containers as Docker lists them, kept in
// memory so that the kubelet's relist (ListPodSandbox + ListContainers every second)
// costs dockerd nothing. Fed on the event hub's thread by Docker's events (each one
// re-reads its container by inspect), re-read at once after the shim's own lifecycle
// calls (ViewClient), and checked against Docker's full list whenever the events
// stream (re)opens and every minute. While the stream is down, or before the first
// list, the view answers nothing and callers ask Docker. A removed container never
// comes back: removals are remembered while a read that began before them (and may
// still show them) is under way. Each container's last inspect is kept too, so that
// status calls cost dockerd nothing either: every change that an inspect shows comes
// with an event (or is the shim's own call), which reads the container again.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dockerclient/docker_client.h"
#include "shim/events/follower.h"

namespace shim::view {

class ContainerView final : public events::Follower {
 public:
  // `docker` (not a ViewClient) must outlive the view.
  explicit ContainerView(dockerclient::DockerClient& docker);

  // What docker.ListContainers(options) would answer, in ID order; nullopt while the
  // view is not live, or when `options` may match containers it does not hold (it
  // holds only those with the io.kubernetes.docker.type label).
  std::optional<std::vector<dockerclient::ContainerSummary>> List(const dockerclient::ListContainersOptions& options) const;
  bool Live() const;
  // Moves on with every change to what List answers; nullopt while the view is not live.
  // What a List that begins after this call answers is at least as new as the version.
  std::optional<uint64_t> Version() const;
  // Container `id`'s inspect for a status call (ContainerStatus, PodSandboxStatus): as
  // last read while the view is live and holds one for that full ID, as a list shows it;
  // else read from Docker, and kept for the next call when the view holds the container
  // in that state with no inspect. A NOT_FOUND forgets it. Calls that act on a container
  // ask Docker instead: a held inspect may be a destroy event behind.
  absl::StatusOr<dockerclient::ContainerInspect> InspectForStatus(const common::Context& ctx, const std::string& id);

  // After a call that may have changed container `id` (an ID, unique prefix or name):
  // inspects it and updates or drops its entry. Skipped while not live (the next
  // reconcile lists it anyway).
  void Refresh(const common::Context& ctx, const std::string& id);
  // Docker removed container `id` (an ID or a prefix), or answered that it has
  // none by that ID, prefix or name: its entry goes at once, whether or not the view
  // is live, and no read that began before can put it back.
  void Forget(const std::string& id);

  // events::Follower (the hub's thread).
  void OnEvent(const dockerclient::DockerEvent& event) override;
  absl::StatusOr<std::vector<dockerclient::DockerEvent>> Reconcile() override;
  void OnStreamDown() override;

 private:
  // The inspect held for full ID `id` while live.
  std::optional<dockerclient::ContainerInspect> HeldInspect(const std::string& id) const;
  // Inspects `id` for a status call: what it read only fills an empty slot of an entry
  // still in the state it read, so an older answer never replaces a newer one.
  absl::StatusOr<dockerclient::ContainerInspect> Read(const common::Context& ctx, const std::string& id);
  // Inspects and stores `id`, unless a read that began later stored it first.
  absl::StatusOr<dockerclient::ContainerInspect> Reread(const common::Context& ctx, const std::string& id);
  // A read of Docker (inspect or list) begins (takes `mu_`). It ends, `mu_` held, once
  // its answer was stored.
  struct ReadStart {
    uint64_t removals;  // removals counted when it began
    uint64_t order;     // reads begun before it, this one included
  };
  ReadStart BeginRead();
  void EndRead(const ReadStart& began);
  // Forget with `mu_` held.
  void Bury(const std::string& id);

  dockerclient::DockerClient& docker_;
  // Reads of Docker run at once (no lock is held across one: an inspect of a starting
  // container waits for its start, and pod workers would queue behind it). A read that
  // began later wins over one that returns after it: every change is followed by a read
  // that begins after it (its event, or the shim's own call), and the last one begun
  // shows the newest state. Each entry keeps the order of the read that stored it.
  mutable std::mutex mu_;
  struct Held {
    dockerclient::ContainerSummary summary;
    // The last inspect; none when only Docker's list was read since the container's
    // state changed (a reconcile that found it changed), until a status call reads it.
    std::optional<dockerclient::ContainerInspect> inspect;
    uint64_t read_order = 0;  // ReadStart::order of the read it came from
  };
  std::map<std::string, Held> containers_;  // by ID; guarded by mu_
  bool live_ = false;    // guarded by mu_
  uint64_t version_ = 0;  // guarded by mu_
  bool primed_ = false;  // a list was applied once; guarded by mu_
  // Removals are numbered. An answer read from Docker may have been taken just before
  // a removal that the view applied while it was on its way: what it shows of a
  // removed ID is not stored. So each removed ID is kept, with its number, until every
  // read that began before it has ended (Docker never reuses an ID). All guarded by mu_.
  uint64_t removals_ = 0;
  uint64_t reads_begun_ = 0;
  uint64_t list_order_ = 0;  // ReadStart::order of the last list applied
  std::multiset<uint64_t> reads_;           // removals_ when each read under way began
  std::map<std::string, uint64_t> removed_;  // ID -> its removal's number
};

// The summary Docker's list would give for an inspected container (the status text
// aside, which nothing reads).
dockerclient::ContainerSummary SummaryOf(const dockerclient::ContainerInspect& c);

// The lifecycle events that lead from `before` to `after` of one container (either
// may be absent), as Docker names them ("create", "start", "die", "destroy"), stamped
// `time_nano`. Pure.
std::vector<dockerclient::DockerEvent> EventsBetween(const std::optional<dockerclient::ContainerSummary>& before,
                                                     const std::optional<dockerclient::ContainerSummary>& after,
                                                     int64_t time_nano);

}  // namespace shim::view
