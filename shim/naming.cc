#include "shim/naming.h"

// Compatibility notes (checked against Mirantis/cri-dockerd core/naming.go,
// core/helpers.go, core/sandbox_helpers.go):
//
// * Names are the six fields joined with '_'. cri-dockerd appends "_%08x" of a
//   random uint32 when Docker reports a name conflict for a container that no
//   longer exists; the parser tolerates (and ignores) that 7th part, whatever it
//   holds, like cri-dockerd does.
// * Pod names and namespaces are DNS labels/subdomains and cannot contain '_';
//   pod UIDs are UUIDs. Nothing in CRI forbids '_' in them though (crictl lets a
//   user pick any uid). A name built from fields that contain '_' does not
//   round-trip: it has more parts than expected and is rejected, or, when the
//   extra part happens to be numeric, it is split at the wrong place (e.g. uid
//   "a_1" with attempt 0 parses as uid "a", attempt 1). cri-dockerd behaves the
//   same way; neither shim escapes '_'. Callers that need the exact metadata
//   should keep it elsewhere (labels io.kubernetes.pod.* carry it verbatim).
// * Stricter than cri-dockerd: the sandbox parser requires part 1 to be "POD"
//   (cri-dockerd's parseSandboxName does not look at it, so a workload container
//   name parses as a sandbox there).
// * The attempt is parsed like Go's strconv.ParseUint(s, 10, 32): decimal
//   digits only (leading zeros allowed, no sign, no spaces), at most 2^32-1.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace shim {
namespace {

constexpr char kKubePrefix[] = "k8s";
constexpr char kNameDelimiter = '_';
// Set by cri-dockerd on sandboxes ("POD") for cadvisor/summary; not a CRI label.

bool ParseAttempt(const std::string& text, uint32_t* out) {
  if (text.empty() || text.size() > 20) return false;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<uint64_t>(c - '0');
    if (value > UINT32_MAX) return false;
  }
  *out = static_cast<uint32_t>(value);
  return true;
}

bool IsInternalLabel(const std::string& key) {
  return key == kContainerTypeLabel || key == kSandboxIdLabel || key == kContainerLogPathLabel;
}

}  // namespace

std::string MakeSandboxName(const runtime::v1::PodSandboxMetadata& metadata) {
  return absl::StrCat(kKubePrefix, "_", kSandboxContainerName, "_", metadata.name(), "_", metadata.namespace_(), "_",
                      metadata.uid(), "_", metadata.attempt());
}

absl::StatusOr<runtime::v1::PodSandboxMetadata> ParseSandboxName(const std::string& name) {
  absl::string_view trimmed = name;
  if (!trimmed.empty() && trimmed.front() == '/') trimmed.remove_prefix(1);
  std::vector<std::string> parts = absl::StrSplit(trimmed, kNameDelimiter);
  if (parts.size() != 6 && parts.size() != 7) {
    return absl::InvalidArgumentError(absl::StrCat("not a sandbox name (want k8s_POD_<name>_<namespace>_<uid>_<attempt>, got ",
                                                   parts.size(), " '_'-separated parts): \"", name, "\""));
  }
  if (parts[0] != kKubePrefix) {
    return absl::InvalidArgumentError(absl::StrCat("container is not managed by kubernetes: \"", name, "\""));
  }
  if (parts[1] != kSandboxContainerName) {
    return absl::InvalidArgumentError(absl::StrCat("not a sandbox name (container name part is \"", parts[1],
                                                   "\", want \"POD\"): \"", name, "\""));
  }
  uint32_t attempt = 0;
  if (!ParseAttempt(parts[5], &attempt)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad attempt \"", parts[5], "\" in sandbox name (want a uint32): \"", name, "\""));
  }
  runtime::v1::PodSandboxMetadata metadata;
  metadata.set_name(parts[2]);
  metadata.set_namespace_(parts[3]);
  metadata.set_uid(parts[4]);
  metadata.set_attempt(attempt);
  return metadata;
}

std::map<std::string, std::string> MakeLabels(const google::protobuf::Map<std::string, std::string>& labels,
                                              const google::protobuf::Map<std::string, std::string>& annotations,
                                              const std::map<std::string, std::string>& internal) {
  std::map<std::string, std::string> merged;
  for (const auto& [key, value] : labels) merged[key] = value;
  // Like cri-dockerd, an annotation "x" overwrites a user label "annotation.x".
  for (const auto& [key, value] : annotations) merged[absl::StrCat(kAnnotationPrefix, key)] = value;
  // The shim's own labels always win over anything the user supplied.
  for (const auto& [key, value] : internal) merged[key] = value;
  return merged;
}

void SplitLabels(const std::map<std::string, std::string>& docker_labels,
                 google::protobuf::Map<std::string, std::string>* labels,
                 google::protobuf::Map<std::string, std::string>* annotations) {
  if (labels != nullptr) labels->clear();
  if (annotations != nullptr) annotations->clear();
  auto type = docker_labels.find(kContainerTypeLabel);
  const bool is_sandbox = type != docker_labels.end() && type->second == kContainerTypeSandbox;
  const absl::string_view prefix = kAnnotationPrefix;
  for (const auto& [key, value] : docker_labels) {
    if (IsInternalLabel(key)) continue;
    // cri-dockerd labels sandboxes io.kubernetes.container.name=POD; it is not
    // part of the pod's CRI labels.
    if (is_sandbox && key == kContainerNameLabel) continue;
    if (absl::string_view(key).substr(0, prefix.size()) == prefix) {
      if (annotations != nullptr) (*annotations)[key.substr(prefix.size())] = value;
      continue;
    }
    if (labels != nullptr) (*labels)[key] = value;
  }
}

}  // namespace shim
