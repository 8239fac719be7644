#include "observability/hooks.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/strings.h"
#include "observability/families.h"
#include "observability/redact.h"
#include "observability/trace.h"

namespace observability {

namespace {

using Clock = std::chrono::steady_clock;
using common::Av;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

bool IsOneOf(absl::string_view s, std::initializer_list<absl::string_view> set) {
  for (absl::string_view x : set)
    if (s == x) return true;
  return false;
}

std::string Body(std::string_view body) { return Abbreviate(RedactSecrets(body), kTraceBodyLimit); }

}  // namespace

std::string DockerEndpoint(std::string_view target) {
  absl::string_view path = Av(target.substr(0, target.find('?')));
  std::vector<absl::string_view> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
  // "/v1.41/..."
  if (!parts.empty() && parts[0].size() > 1 && parts[0][0] == 'v' && absl::ascii_isdigit(parts[0][1]))
    parts.erase(parts.begin());
  if (parts.size() >= 2) {
    const absl::string_view kind = parts[0];
    if (kind == "images" || kind == "distribution") {
      // Names keep their slashes and colons: all between the kind and a final action is the name.
      if (parts.size() == 2 && IsOneOf(parts[1], {"json", "create", "load", "search", "prune", "get"})) {
        return absl::StrCat("/", kind, "/", parts[1]);
      }
      const absl::string_view last = parts.back();
      if (parts.size() >= 3 && IsOneOf(last, {"json", "history", "push", "tag", "get"})) {
        return absl::StrCat("/", kind, "/{name}/", last);
      }
      return absl::StrCat("/", kind, "/{name}");
    }
    if (IsOneOf(kind, {"containers", "exec", "networks", "volumes", "plugins"}) &&
        !IsOneOf(parts[1], {"json", "create", "prune"})) {
      parts[1] = "{id}";
    }
  }
  return absl::StrCat("/", absl::StrJoin(parts, "/"));
}

DockerCall::DockerCall(std::string_view method, std::string_view target, std::string_view body, Headers headers)
    : method_(method), target_(target), body_(body), start_(Clock::now()) {
  for (const auto& [name, value] : headers)
    if (absl::EqualsIgnoreCase(name, "X-Registry-Auth")) registry_auth_ = true;
}

DockerCall::~DockerCall() {
  if (!done_) Record(0, {}, absl::UnavailableError("no answer: the connection to dockerd failed"));
}

void DockerCall::Record(int status, std::string_view body, const absl::Status& error) {
  done_ = true;
  const Clock::duration elapsed = Clock::now() - start_;
  const std::string status_label = error.ok() ? absl::StrCat(status) : "error";
  Metrics().docker_duration.With({method_, DockerEndpoint(target_), status_label}).Observe(Seconds(elapsed));
  CallTrace* trace = CallTrace::Current();
  if (trace == nullptr) return;
  TracedCall call;
  call.what = absl::StrCat("docker ", Av(method_), " ", Abbreviate(DecodeTarget(target_), kTraceBodyLimit));
  if (registry_auth_) absl::StrAppend(&call.what, " (X-Registry-Auth: <redacted>)");
  call.outcome = error.ok() ? status_label : absl::StrCat("failed: ", error.message());
  call.duration = absl::FromChrono(elapsed);
  call.request = Body(body_);
  call.response = Body(body);
  trace->Add(std::move(call));
}

CniCall::CniCall(std::string_view operation, std::string_view plugin, std::string_view network,
                 std::string_view config)
    : operation_(operation), plugin_(plugin), network_(network), config_(config), start_(Clock::now()) {}

void CniCall::Record(const absl::Status& status, std::string_view output) {
  const Clock::duration elapsed = Clock::now() - start_;
  Metrics().cni_duration.With({operation_, plugin_, network_}).Observe(Seconds(elapsed));
  if (!status.ok()) Metrics().cni_errors.With({operation_, plugin_, network_}).Inc();
  CallTrace* trace = CallTrace::Current();
  if (trace == nullptr) return;
  TracedCall call;
  call.what = absl::StrCat("cni ", Av(operation_), " ", Av(plugin_), " (network ", Av(network_), ")");
  call.outcome = status.ok() ? "ok" : absl::StrCat("failed: ", status.message());
  call.duration = absl::FromChrono(elapsed);
  call.request = Body(config_);
  call.response = Body(output);
  trace->Add(std::move(call));
}

void StreamingSessionStarted(std::string_view kind) {
  Metrics().streaming_total.With({kind}).Inc();
  Metrics().streaming_active.With({kind}).Add(1);
}

void StreamingSessionEnded(std::string_view kind) { Metrics().streaming_active.With({kind}).Add(-1); }

void LogCopied(uint64_t bytes, absl::Time newest) {
  Metrics().log_bytes.With({}).Inc(bytes);
  Metrics().log_lag.With({}).Observe(absl::ToDoubleSeconds(absl::Now() - newest));
}

}  // namespace observability
