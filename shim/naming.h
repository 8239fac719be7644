#pragma once
// Docker container names and labels, compatible with cri-dockerd so a node can
// switch between the two and keep its pods:
//   sandbox:   k8s_POD_<pod>_<namespace>_<uid>_<attempt>
//   container: k8s_<container>_<pod>_<namespace>_<uid>_<attempt>
// Docker may hold a 7th "_<random>" part that cri-dockerd adds on name conflicts.
#include <cstddef>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "api/cri.h"

namespace shim {

inline constexpr char kContainerTypeLabel[] = "io.kubernetes.docker.type";
inline constexpr char kContainerTypeSandbox[] = "podsandbox";
inline constexpr char kContainerTypeContainer[] = "container";
inline constexpr char kSandboxIdLabel[] = "io.kubernetes.sandbox.id";
inline constexpr char kContainerLogPathLabel[] = "io.kubernetes.container.logpath";
// The image IDs, comma-separated, whose unpacked trees a container binds as image volumes (imagevolumes/).
inline constexpr char kImageVolumesLabel[] = "io.dockershim.image-volumes";
// The cgroup v2 files (JSON) the shim writes into a container's cgroup at start (container_config.h).
inline constexpr char kCgroupFilesLabel[] = "io.dockershim.cgroup-files";
inline constexpr char kAnnotationPrefix[] = "annotation.";
// cri-dockerd marks sandboxes io.kubernetes.container.name=POD (cAdvisor's pod stats rely on it).
inline constexpr char kContainerNameLabel[] = "io.kubernetes.container.name";
inline constexpr char kSandboxContainerName[] = "POD";
// Kubelet's own labels (set by kubelet in config labels; listed for lookups).
inline constexpr char kPodNameLabel[] = "io.kubernetes.pod.name";
inline constexpr char kPodNamespaceLabel[] = "io.kubernetes.pod.namespace";
inline constexpr char kPodUidLabel[] = "io.kubernetes.pod.uid";

std::string MakeSandboxName(const runtime::v1::PodSandboxMetadata& metadata);
// Accepts names with or without Docker's leading '/'. INVALID_ARGUMENT when the
// name is not one of ours (e.g. a container not created by a CRI shim).
absl::StatusOr<runtime::v1::PodSandboxMetadata> ParseSandboxName(const std::string& name);
// A sandbox's metadata from its name, or from the kubelet's labels when the name is not ours.
runtime::v1::PodSandboxMetadata SandboxMetadataOf(const std::string& name,
                                                  const std::map<std::string, std::string>& labels);

// The container's attempt goes into the name; the pod's attempt does not.
std::string MakeContainerName(const runtime::v1::PodSandboxMetadata& sandbox,
                              const runtime::v1::ContainerMetadata& container);
struct ParsedContainerName {
  runtime::v1::PodSandboxMetadata sandbox;  // name, namespace, uid; attempt is not in the name (0)
  runtime::v1::ContainerMetadata container;
};
// Like ParseSandboxName; also INVALID_ARGUMENT for a sandbox's name ("POD").
absl::StatusOr<ParsedContainerName> ParseContainerName(const std::string& name);

// Docker labels for a sandbox or container: the user's labels, annotations as
// "annotation.<key>", and the internal labels in `internal`.
std::map<std::string, std::string> MakeLabels(const google::protobuf::Map<std::string, std::string>& labels,
                                              const google::protobuf::Map<std::string, std::string>& annotations,
                                              const std::map<std::string, std::string>& internal);
// The metadata that makes a Docker name must be what Docker takes in one, letters,
// digits, '.' and '-' ('_' separates the parts), at most 253 bytes each (Kubernetes'
// longest names), else INVALID_ARGUMENT naming the field. `container` may be null.
absl::Status CheckNameParts(const runtime::v1::PodSandboxMetadata& pod,
                            const runtime::v1::ContainerMetadata* container);

// Labels and annotations are kept by Docker with the container and come back in every
// list and inspect: INVALID_ARGUMENT when together they exceed kMaxLabelBytes. The
// API server allows 256 KiB of annotations and short labels; 1 MiB leaves room for
// static pods, which skip that check, and keeps one pod from bloating every list.
inline constexpr std::size_t kMaxLabelBytes = 1 << 20;
absl::Status CheckLabelsSize(const google::protobuf::Map<std::string, std::string>& labels,
                             const google::protobuf::Map<std::string, std::string>& annotations);

// The reverse: user labels and annotations, with internal labels dropped.
void SplitLabels(const std::map<std::string, std::string>& docker_labels,
                 google::protobuf::Map<std::string, std::string>* labels,
                 google::protobuf::Map<std::string, std::string>* annotations);

// The value of `key` in Docker labels, "" when absent.
std::string LabelValue(const std::map<std::string, std::string>& docker_labels, const char* key);

// Docker gets a label selector in the query of its list request, and its HTTP server
// drops a request whose headers pass 1 MiB: a selector larger than 64 KiB is not sent
// and is matched here only (MatchesLabelSelector), which every list does anyway.
bool FitsDockerLabelFilter(const google::protobuf::Map<std::string, std::string>& selector);

// Whether every key=value of a CRI label selector is among `docker_labels`.
bool MatchesLabelSelector(const google::protobuf::Map<std::string, std::string>& selector,
                          const std::map<std::string, std::string>& docker_labels);

}  // namespace shim
