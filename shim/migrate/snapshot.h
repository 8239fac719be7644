#pragma once
// What a CRI runtime serves (its pods, their IPs, its containers), taken before a switch
// and again after it, and the comparison of the two that says whether the switch kept
// everything: every pod listed, in the same state, with the same IP, and every running
// container still there.
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace shim::migrate {

struct PodRecord {
  std::string id;
  std::string name, namespace_;
  bool ready = false;
  bool host_network = false;
  std::vector<std::string> ips;  // the primary first
};

struct ContainerRecord {
  std::string id;
  std::string pod_id;
  std::string name;
  std::string state;  // CONTAINER_RUNNING, CONTAINER_EXITED, ...
};

struct Snapshot {
  std::string runtime;  // who answered: "cri-dockerd" or "dockershim"
  std::vector<PodRecord> pods;
  std::vector<ContainerRecord> containers;
};

nlohmann::json ToJson(const Snapshot& snapshot);
absl::StatusOr<Snapshot> SnapshotFromJson(const nlohmann::json& j);

struct PodCheck {
  PodRecord before;
  bool listed = false;  // after the switch
  std::string ip_after;  // the primary IP after the switch
  int containers = 0;    // running before
  int kept = 0;          // of those, still listed after
  std::vector<std::string> problems;  // what differs; none: this pod came through
  std::vector<std::string> notes;     // what changed but is not the switch's doing
};

struct CheckResult {
  std::vector<PodCheck> pods;
  std::vector<std::string> new_pods;  // listed after, not before (the kubelet made them since)
  bool ok() const;
};

// Compares what was served before the switch with what is served after it.
CheckResult Compare(const Snapshot& before, const Snapshot& after);

// The result as a table, one pod a line, then the problems and notes.
std::string FormatCheck(const CheckResult& result);

}  // namespace shim::migrate
