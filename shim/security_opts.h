#pragma once
// Security settings shared by the pod infra container (sandbox_config.cc) and
// workload containers (container_config.cc): Docker's User, GroupAdd and
// SecurityOpt entries. Error messages name the CRI field under
// "linux.security_context.", which is the same path in both configs.
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/cri.h"

namespace shim {

// Docker's Config.User: "uid", "uid:gid", "name" or "name:gid"; empty leaves the
// image's user. `uid` and `gid` may be null (unset). INVALID_ARGUMENT for a group
// without a user (as the kubelet), both uid and name, negative IDs, a ':' in the name.
absl::StatusOr<std::string> MakeDockerUser(const runtime::v1::Int64Value* uid, const std::string& username,
                                           const runtime::v1::Int64Value* gid);

// HostConfig.GroupAdd entries (decimal GIDs); INVALID_ARGUMENT for a negative GID.
absl::StatusOr<std::vector<std::string>> MakeGroupAdd(const google::protobuf::RepeatedField<int64_t>& groups);

// Appends the "seccomp=..." option, if any: none for RuntimeDefault, "unconfined"
// when no profile is set (Kubernetes' meaning of unset). Reads Localhost profiles (relative
// refs under `profile_root`) so that Docker gets the profile's JSON text.
absl::Status AppendSeccompOpt(const runtime::v1::LinuxSandboxSecurityContext& sc, const std::string& profile_root,
                              std::vector<std::string>& opts);
absl::Status AppendSeccompOpt(const runtime::v1::LinuxContainerSecurityContext& sc, const std::string& profile_root,
                              std::vector<std::string>& opts);

// Appends the "apparmor=..." option, if any (RuntimeDefault: none, Docker applies
// docker-default). Containers also honour the deprecated apparmor_profile string.
absl::Status AppendAppArmorOpt(const runtime::v1::LinuxSandboxSecurityContext& sc, std::vector<std::string>& opts);
absl::Status AppendAppArmorOpt(const runtime::v1::LinuxContainerSecurityContext& sc, std::vector<std::string>& opts);

// Appends "label=user:...", "label=role:...", ... for the non-empty parts.
void AppendSELinuxOpts(const runtime::v1::SELinuxOption& se, std::vector<std::string>& opts);

// INVALID_ARGUMENT unless the user namespace is the node's: Docker Engine cannot
// give a pod its own user namespace.
absl::Status CheckUserNamespace(const runtime::v1::NamespaceOption& ns);

}  // namespace shim
