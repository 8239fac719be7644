#include "shim/stats/netdev.h"

#include <array>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status.h"
#include "common/strings.h"
#include "shim/stats/kernel_file.h"

namespace shim::stats {
namespace {

// After "<name>:" come 8 receive counters (bytes packets errs drop fifo frame compressed
// multicast) and 8 transmit ones (bytes packets errs drop fifo colls carrier compressed),
// as the kernel's dev_seq_printf_stats (net/core/net-procfs.c) prints them.
constexpr size_t kCounters = 16;
constexpr size_t kRxBytes = 0, kRxErrors = 2, kTxBytes = 8, kTxErrors = 10;

// The format is "%6s: %7llu ..."; 2.6-era kernels printed "%6s:%8lu", where
// a 9-digit byte count touches the colon ("eth0:123456789"), and a name longer than 6
// is never padded ("docker0:"). Names may hold '.' and '-' but never ':'
// (dev_valid_name), so the first colon ends the name.
absl::StatusOr<InterfaceCounters> ParseInterfaceLine(absl::string_view line) {
  size_t colon = line.find(':');
  if (colon == line.npos) return absl::InvalidArgumentError("no \"<interface>:\"");
  InterfaceCounters counters;
  counters.name = std::string(absl::StripAsciiWhitespace(line.substr(0, colon)));
  if (counters.name.empty()) return absl::InvalidArgumentError("no interface name");
  std::vector<absl::string_view> fields =
      absl::StrSplit(line.substr(colon + 1), absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (fields.size() != kCounters)
    return absl::InvalidArgumentError(absl::StrCat(fields.size(), " counters instead of ", kCounters));
  std::array<uint64_t, kCounters> values;
  for (size_t i = 0; i < kCounters; ++i) {
    if (!absl::SimpleAtoi(fields[i], &values[i]))
      return absl::InvalidArgumentError(absl::StrCat("counter ", i + 1, " \"", fields[i], "\" is not a number"));
  }
  counters.rx_bytes = values[kRxBytes];
  counters.rx_errors = values[kRxErrors];
  counters.tx_bytes = values[kTxBytes];
  counters.tx_errors = values[kTxErrors];
  return counters;
}

}  // namespace

absl::StatusOr<std::vector<InterfaceCounters>> ParseNetDev(std::string_view text) {
  std::vector<absl::string_view> lines = absl::StrSplit(common::Av(text), '\n', absl::SkipEmpty());
  // "Inter-|   Receive ...|  Transmit" and " face |bytes    packets ...".
  if (lines.size() < 2 || !absl::StrContains(lines[0], '|') || !absl::StrContains(lines[1], '|'))
    return absl::InvalidArgumentError("not /proc/net/dev: no header lines");
  std::vector<InterfaceCounters> interfaces;
  for (size_t i = 2; i < lines.size(); ++i) {
    absl::StatusOr<InterfaceCounters> counters = ParseInterfaceLine(lines[i]);
    if (!counters.ok()) return common::Annotate(counters.status(), absl::StrCat("line ", i + 1));
    if (counters->name != "lo") interfaces.push_back(std::move(*counters));
  }
  return interfaces;
}

absl::StatusOr<std::vector<InterfaceCounters>> ReadNetDev(int pid, const std::string& proc_root) {
  const std::string path = absl::StrCat(proc_root, "/", pid, "/net/dev");
  ASSIGN_OR_RETURN(std::string text, ReadKernelFile(path));
  absl::StatusOr<std::vector<InterfaceCounters>> interfaces = ParseNetDev(text);
  if (!interfaces.ok()) return common::Annotate(interfaces.status(), path);
  return interfaces;
}

}  // namespace shim::stats
