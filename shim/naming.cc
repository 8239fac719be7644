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
//   and the container parser refuses "POD" and an empty container name
//   (cri-dockerd's parsers do not look at part 1, so each accepts the other's
//   names).
// * The attempt is parsed like Go's strconv.ParseUint(s, 10, 32): decimal
//   digits only (leading zeros allowed, no sign, no spaces), at most 2^32-1.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status.h"

namespace shim {
namespace {

constexpr char kKubePrefix[] = "k8s";
constexpr char kNameDelimiter = '_';

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

// The fields of a name both kinds share: k8s_<container>_<pod>_<namespace>_<uid>_<attempt>[_<random>].
// The attempt is the container's for workload containers and the pod's for sandboxes.
struct NameParts {
  std::string container;
  runtime::v1::PodSandboxMetadata pod;  // without attempt
  uint32_t attempt = 0;
};

absl::StatusOr<NameParts> SplitName(const std::string& name, absl::string_view kind, absl::string_view format) {
  absl::string_view trimmed = name;
  if (!trimmed.empty() && trimmed.front() == '/') trimmed.remove_prefix(1);
  std::vector<std::string> parts = absl::StrSplit(trimmed, kNameDelimiter);
  if (parts.size() != 6 && parts.size() != 7) {
    return absl::InvalidArgumentError(absl::StrCat("not a ", kind, " name (want ", format, ", got ", parts.size(),
                                                   " '_'-separated parts): \"", name, "\""));
  }
  if (parts[0] != kKubePrefix) {
    return absl::InvalidArgumentError(absl::StrCat("container is not managed by kubernetes: \"", name, "\""));
  }
  NameParts out;
  if (!ParseAttempt(parts[5], &out.attempt)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad attempt \"", parts[5], "\" in ", kind, " name (want a uint32): \"", name, "\""));
  }
  out.container = std::move(parts[1]);
  out.pod.set_name(std::move(parts[2]));
  out.pod.set_namespace_(std::move(parts[3]));
  out.pod.set_uid(std::move(parts[4]));
  return out;
}

bool IsInternalLabel(const std::string& key) {
  return key == kContainerTypeLabel || key == kSandboxIdLabel || key == kContainerLogPathLabel ||
         key == kImageVolumesLabel || key == kCgroupFilesLabel;
}

}  // namespace

std::string MakeSandboxName(const runtime::v1::PodSandboxMetadata& metadata) {
  return absl::StrCat(kKubePrefix, "_", kSandboxContainerName, "_", metadata.name(), "_", metadata.namespace_(), "_",
                      metadata.uid(), "_", metadata.attempt());
}

std::string MakeContainerName(const runtime::v1::PodSandboxMetadata& sandbox,
                              const runtime::v1::ContainerMetadata& container) {
  return absl::StrCat(kKubePrefix, "_", container.name(), "_", sandbox.name(), "_", sandbox.namespace_(), "_",
                      sandbox.uid(), "_", container.attempt());
}

absl::StatusOr<runtime::v1::PodSandboxMetadata> ParseSandboxName(const std::string& name) {
  ASSIGN_OR_RETURN(NameParts parts, SplitName(name, "sandbox", "k8s_POD_<name>_<namespace>_<uid>_<attempt>"));
  if (parts.container != kSandboxContainerName) {
    return absl::InvalidArgumentError(absl::StrCat("not a sandbox name (container name part is \"", parts.container,
                                                   "\", want \"POD\"): \"", name, "\""));
  }
  runtime::v1::PodSandboxMetadata metadata = std::move(parts.pod);
  metadata.set_attempt(parts.attempt);
  return metadata;
}

runtime::v1::PodSandboxMetadata SandboxMetadataOf(const std::string& name,
                                                  const std::map<std::string, std::string>& labels) {
  if (auto parsed = ParseSandboxName(name); parsed.ok()) return *parsed;
  runtime::v1::PodSandboxMetadata md;
  md.set_name(LabelValue(labels, kPodNameLabel));
  md.set_namespace_(LabelValue(labels, kPodNamespaceLabel));
  md.set_uid(LabelValue(labels, kPodUidLabel));
  return md;
}

absl::StatusOr<ParsedContainerName> ParseContainerName(const std::string& name) {
  ASSIGN_OR_RETURN(NameParts parts,
                   SplitName(name, "container", "k8s_<container>_<pod>_<namespace>_<uid>_<attempt>"));
  if (parts.container == kSandboxContainerName) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a container name (container name part \"POD\" marks a pod sandbox): \"", name, "\""));
  }
  if (parts.container.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a container name (empty container name part): \"", name, "\""));
  }
  ParsedContainerName parsed;
  parsed.sandbox = std::move(parts.pod);
  parsed.container.set_name(parts.container);
  parsed.container.set_attempt(parts.attempt);
  return parsed;
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

namespace {

absl::Status CheckNamePart(const std::string& value, absl::string_view field) {
  constexpr std::size_t kMaxNamePart = 253;
  const bool valid = value.size() <= kMaxNamePart && std::all_of(value.begin(), value.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-';
  });
  if (valid) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      field, " \"", absl::CHexEscape(absl::string_view(value).substr(0, 64)), value.size() > 64 ? "...\"" : "\"",
      " cannot be part of a Docker container name: use at most ", kMaxNamePart, " letters, digits, '.' and '-'"));
}

}  // namespace

absl::Status CheckNameParts(const runtime::v1::PodSandboxMetadata& pod,
                            const runtime::v1::ContainerMetadata* container) {
  RETURN_IF_ERROR(CheckNamePart(pod.name(), "pod name"));
  RETURN_IF_ERROR(CheckNamePart(pod.namespace_(), "pod namespace"));
  RETURN_IF_ERROR(CheckNamePart(pod.uid(), "pod uid"));
  if (container) RETURN_IF_ERROR(CheckNamePart(container->name(), "container name"));
  return absl::OkStatus();
}

absl::Status CheckLabelsSize(const google::protobuf::Map<std::string, std::string>& labels,
                             const google::protobuf::Map<std::string, std::string>& annotations) {
  std::size_t bytes = 0;
  for (const auto& [key, value] : labels) bytes += key.size() + value.size();
  for (const auto& [key, value] : annotations) bytes += key.size() + value.size();
  if (bytes <= kMaxLabelBytes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(labels.size(), " labels and ", annotations.size(),
                                                 " annotations take ", bytes, " bytes, more than the ", kMaxLabelBytes,
                                                 " that dockershim stores with a container"));
}

bool FitsDockerLabelFilter(const google::protobuf::Map<std::string, std::string>& selector) {
  constexpr std::size_t kMaxBytes = 64 << 10;
  std::size_t bytes = 0;
  for (const auto& [key, value] : selector) bytes += key.size() + value.size();
  return bytes <= kMaxBytes;
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

std::string LabelValue(const std::map<std::string, std::string>& docker_labels, const char* key) {
  auto it = docker_labels.find(key);
  return it == docker_labels.end() ? std::string() : it->second;
}

bool MatchesLabelSelector(const google::protobuf::Map<std::string, std::string>& selector,
                          const std::map<std::string, std::string>& docker_labels) {
  for (const auto& [k, v] : selector) {
    auto it = docker_labels.find(k);
    if (it == docker_labels.end() || it->second != v) return false;
  }
  return true;
}

}  // namespace shim
