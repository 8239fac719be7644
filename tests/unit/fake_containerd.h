#pragma once
// A containerd for unit tests: the plugin roots and snapshots it is given; counts calls
// and can be away.
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "containerdclient/containerd_client.h"

namespace testing_fakes {

class FakeContainerd : public containerdclient::ContainerdClient {
 public:
  struct State {
    std::map<std::pair<std::string, std::string>, absl::StatusOr<std::string>> roots;
    // (namespace, snapshotter, key) -> mounts
    std::map<std::tuple<std::string, std::string, std::string>, std::vector<containerdclient::Mount>> snapshots;
    absl::Status away;  // every call fails with it while set
    int calls = 0;
  };
  // `state` is the test's and outlives the fake.
  explicit FakeContainerd(State& state) : state_(state) {}

  absl::StatusOr<std::string> PluginRoot(const common::Context&, const std::string& type,
                                         const std::string& id) override {
    ++state_.calls;
    if (!state_.away.ok()) return state_.away;
    auto it = state_.roots.find({type, id});
    if (it == state_.roots.end()) return absl::NotFoundError("containerd has no plugin " + type + "." + id);
    return it->second;
  }
  absl::StatusOr<std::vector<containerdclient::Mount>> SnapshotMounts(const common::Context&, const std::string& ns,
                                                    const std::string& snapshotter, const std::string& key) override {
    ++state_.calls;
    if (!state_.away.ok()) return state_.away;
    auto it = state_.snapshots.find({ns, snapshotter, key});
    if (it == state_.snapshots.end()) return absl::NotFoundError("snapshot " + key + " does not exist");
    return it->second;
  }

 private:
  State& state_;
};

}  // namespace testing_fakes
