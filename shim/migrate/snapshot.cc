#include "shim/migrate/snapshot.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace shim::migrate {

using nlohmann::json;

namespace {

constexpr char kRunning[] = "CONTAINER_RUNNING";

std::string Short(const std::string& id) { return id.substr(0, 12); }

std::string PodName(const PodRecord& pod) { return absl::StrCat(pod.namespace_, "/", pod.name); }

}  // namespace

json ToJson(const Snapshot& snapshot) {
  json pods = json::array(), containers = json::array();
  for (const PodRecord& p : snapshot.pods) {
    pods.push_back({{"id", p.id},
                    {"name", p.name},
                    {"namespace", p.namespace_},
                    {"ready", p.ready},
                    {"host_network", p.host_network},
                    {"ips", p.ips}});
  }
  for (const ContainerRecord& c : snapshot.containers)
    containers.push_back({{"id", c.id}, {"pod_id", c.pod_id}, {"name", c.name}, {"state", c.state}});
  return {{"runtime", snapshot.runtime}, {"pods", pods}, {"containers", containers}};
}

absl::StatusOr<Snapshot> SnapshotFromJson(const json& j) {
  try {
    Snapshot s;
    s.runtime = j.at("runtime").get<std::string>();
    for (const json& p : j.at("pods")) {
      s.pods.push_back({p.at("id").get<std::string>(), p.at("name").get<std::string>(),
                        p.at("namespace").get<std::string>(), p.at("ready").get<bool>(),
                        p.at("host_network").get<bool>(), p.at("ips").get<std::vector<std::string>>()});
    }
    for (const json& c : j.at("containers")) {
      s.containers.push_back({c.at("id").get<std::string>(), c.at("pod_id").get<std::string>(),
                              c.at("name").get<std::string>(), c.at("state").get<std::string>()});
    }
    return s;
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("not a snapshot: ", e.what()));
  }
}

bool CheckResult::ok() const {
  return std::all_of(pods.begin(), pods.end(), [](const PodCheck& p) { return p.problems.empty(); });
}

CheckResult Compare(const Snapshot& before, const Snapshot& after) {
  std::map<std::string, const PodRecord*> pods_after;
  for (const PodRecord& p : after.pods) pods_after[p.id] = &p;
  std::map<std::string, const ContainerRecord*> containers_after;
  for (const ContainerRecord& c : after.containers) containers_after[c.id] = &c;

  CheckResult result;
  for (const PodRecord& pod : before.pods) {
    PodCheck check;
    check.before = pod;
    const auto found = pods_after.find(pod.id);
    check.listed = found != pods_after.end();
    if (!check.listed) {
      check.problems.push_back(absl::StrCat("pod ", PodName(pod), " (", Short(pod.id), ") is not listed"));
    } else {
      const PodRecord& now = *found->second;
      check.ip_after = now.ips.empty() ? "" : now.ips.front();
      if (pod.ready && !now.ready)
        check.problems.push_back(absl::StrCat("pod ", PodName(pod), " was ready and is not"));
      // Host-network pods have the node's addresses, which no runtime reports as theirs.
      if (!pod.host_network && !pod.ips.empty() && check.ip_after != pod.ips.front()) {
        check.problems.push_back(absl::StrCat("pod ", PodName(pod), ": IP ", pod.ips.front(), " is now ",
                                              check.ip_after.empty() ? "not reported" : check.ip_after));
      }
    }
    for (const ContainerRecord& c : before.containers) {
      if (c.pod_id != pod.id || c.state != kRunning) continue;
      ++check.containers;
      const auto now = containers_after.find(c.id);
      if (now == containers_after.end()) {
        check.problems.push_back(absl::StrCat("container ", c.name, " (", Short(c.id), ") of pod ", PodName(pod),
                                              " is not listed"));
        continue;
      }
      ++check.kept;
      // The switch stops no container: one that ended meanwhile ended by itself.
      if (now->second->state != kRunning) {
        check.notes.push_back(absl::StrCat("container ", c.name, " (", Short(c.id), ") of pod ", PodName(pod),
                                           " is listed, ", now->second->state, " (it ended by itself)"));
      }
    }
    result.pods.push_back(std::move(check));
  }
  std::map<std::string, bool> known;
  for (const PodRecord& p : before.pods) known[p.id] = true;
  for (const PodRecord& p : after.pods)
    if (!known.count(p.id)) result.new_pods.push_back(absl::StrCat(PodName(p), " (", Short(p.id), ")"));
  return result;
}

std::string FormatCheck(const CheckResult& result) {
  std::vector<std::vector<std::string>> rows = {{"POD", "ID", "IP BEFORE", "IP AFTER", "CONTAINERS", "CHECK"}};
  for (const PodCheck& p : result.pods) {
    const std::string before_ip =
        p.before.host_network ? "host network" : (p.before.ips.empty() ? "-" : p.before.ips.front());
    const std::string after_ip = !p.listed ? "-" : p.before.host_network ? "host network"
                                               : p.ip_after.empty()      ? "none"
                                                                         : p.ip_after;
    rows.push_back({PodName(p.before), Short(p.before.id), before_ip, after_ip,
                    absl::StrCat(p.kept, " of ", p.containers), p.problems.empty() ? "ok" : "DIFFERS"});
  }
  std::vector<size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i)
      absl::StrAppend(&line, i + 1 < row.size() ? absl::StrFormat("%-*s  ", widths[i], row[i]) : row[i]);
    absl::StrAppend(&out, line, "\n");
  }
  if (result.pods.empty()) absl::StrAppend(&out, "(no pods before the switch)\n");
  for (const PodCheck& p : result.pods) {
    for (const std::string& problem : p.problems) absl::StrAppend(&out, "  differs: ", problem, "\n");
    for (const std::string& note : p.notes) absl::StrAppend(&out, "  note: ", note, "\n");
  }
  if (!result.new_pods.empty())
    absl::StrAppend(&out, "  new since: ", absl::StrJoin(result.new_pods, ", "), "\n");
  return out;
}

}  // namespace shim::migrate
