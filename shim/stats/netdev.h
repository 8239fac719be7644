#pragma once
// Network counters of a pod, from its infra (pause) process's view of /proc/net/dev:
// /proc/<pid>/net/dev lists the interfaces of that process's network namespace, so no
// setns and no fork are needed.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace shim::stats {

struct InterfaceCounters {
  std::string name;
  uint64_t rx_bytes = 0, rx_errors = 0, tx_bytes = 0, tx_errors = 0;
  bool operator==(const InterfaceCounters&) const = default;
};

// Parses /proc/net/dev text (two header lines, then "name: 16 counters"). The loopback
// interface is left out, as the kubelet's summary leaves it out. INVALID_ARGUMENT on
// a line that does not parse.
absl::StatusOr<std::vector<InterfaceCounters>> ParseNetDev(std::string_view text);
// Reads and parses `<proc_root>/<pid>/net/dev`; NOT_FOUND when the process is gone.
absl::StatusOr<std::vector<InterfaceCounters>> ReadNetDev(int pid, const std::string& proc_root = "/proc");

}  // namespace shim::stats
