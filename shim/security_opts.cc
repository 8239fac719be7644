#include "shim/security_opts.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/strings/string_view.h"
#include "common/status.h"

namespace shim {
namespace {

using runtime::v1::SecurityProfile;

constexpr std::size_t kMaxSeccompProfileBytes = 1 << 20;  // Docker's default profile is ~20 KiB

absl::Status Invalid(absl::string_view msg) { return absl::InvalidArgumentError(msg); }

std::string Quote(absl::string_view s) { return absl::StrCat("\"", s, "\""); }

absl::StatusOr<std::string> ReadSeccompProfile(const std::string& ref, const std::string& root,
                                               absl::string_view field) {
  if (ref.empty()) {
    return Invalid(absl::StrCat(field, ": a Localhost seccomp profile needs a profile path"));
  }
  std::string path = ref;
  if (ref[0] != '/') {
    if (root.empty()) {
      return Invalid(absl::StrCat(field, ": seccomp profile path ", Quote(ref),
                                  " is relative and no seccomp profile root is configured"));
    }
    path = absl::StrCat(absl::StripSuffix(root, "/"), "/", ref);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Invalid(absl::StrCat(field, ": cannot read seccomp profile ", Quote(path),
                                " (missing or not readable by the shim)"));
  }
  std::string content;
  char buf[8192];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    content.append(buf, static_cast<std::size_t>(in.gcount()));
    if (content.size() > kMaxSeccompProfileBytes) {
      return Invalid(absl::StrCat(field, ": seccomp profile ", Quote(path), " is larger than ",
                                  kMaxSeccompProfileBytes, " bytes"));
    }
  }
  if (in.bad()) {
    return Invalid(absl::StrCat(field, ": error reading seccomp profile ", Quote(path)));
  }
  // Docker takes the profile's JSON text; catch a bad file here with its path
  // instead of letting dockerd fail with a message that does not name it.
  nlohmann::json parsed = nlohmann::json::parse(content, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return Invalid(absl::StrCat(field, ": seccomp profile ", Quote(path), " is not a JSON object"));
  }
  return content;
}

// Both security contexts carry the same seccomp fields; only their types differ.
template <typename SecurityContext>
absl::Status AppendSeccompOptImpl(const SecurityContext& sc, const std::string& profile_root,
                                  std::vector<std::string>& opts) {
  if (sc.has_seccomp()) {
    const SecurityProfile& p = sc.seccomp();
    switch (p.profile_type()) {
      case SecurityProfile::RuntimeDefault:
        return absl::OkStatus();  // no option: Docker applies its default profile
      case SecurityProfile::Unconfined:
        opts.push_back("seccomp=unconfined");
        return absl::OkStatus();
      case SecurityProfile::Localhost: {
        ASSIGN_OR_RETURN(std::string content, ReadSeccompProfile(p.localhost_ref(), profile_root,
                                                                 "linux.security_context.seccomp.localhost_ref"));
        opts.push_back(absl::StrCat("seccomp=", content));
        return absl::OkStatus();
      }
      default:
        return Invalid(absl::StrCat("linux.security_context.seccomp: unknown profile type ",
                                    static_cast<int>(p.profile_type())));
    }
  }
  // The deprecated string form, sent by older kubelets.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  const std::string& path = sc.seccomp_profile_path();
#pragma GCC diagnostic pop
  if (path == "runtime/default" || path == "docker/default") return absl::OkStatus();
  // No profile at all means unconfined in Kubernetes (the kubelet sends
  // RuntimeDefault when it wants one); Docker would apply its default instead.
  if (path.empty() || path == "unconfined") {
    opts.push_back("seccomp=unconfined");
    return absl::OkStatus();
  }
  absl::string_view local(path);
  if (absl::ConsumePrefix(&local, "localhost/")) {
    ASSIGN_OR_RETURN(std::string content, ReadSeccompProfile(std::string(local), profile_root,
                                                             "linux.security_context.seccomp_profile_path"));
    opts.push_back(absl::StrCat("seccomp=", content));
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat("linux.security_context.seccomp_profile_path: unsupported value ", Quote(path),
                              " (want runtime/default, docker/default, unconfined or localhost/<path>)"));
}

absl::Status AppendAppArmorProfile(const SecurityProfile& p, std::vector<std::string>& opts) {
  switch (p.profile_type()) {
    case SecurityProfile::RuntimeDefault:
      return absl::OkStatus();  // Docker's docker-default profile
    case SecurityProfile::Unconfined:
      opts.push_back("apparmor=unconfined");
      return absl::OkStatus();
    case SecurityProfile::Localhost: {
      absl::string_view name(p.localhost_ref());
      absl::ConsumePrefix(&name, "localhost/");  // tolerate the old annotation form
      if (name.empty()) {
        return Invalid("linux.security_context.apparmor: a Localhost AppArmor profile needs a profile name");
      }
      opts.push_back(absl::StrCat("apparmor=", name));
      return absl::OkStatus();
    }
    default:
      return Invalid(absl::StrCat("linux.security_context.apparmor: unknown profile type ",
                                  static_cast<int>(p.profile_type())));
  }
}

}  // namespace

absl::StatusOr<std::string> MakeDockerUser(const runtime::v1::Int64Value* uid, const std::string& username,
                                           const runtime::v1::Int64Value* gid) {
  if (uid != nullptr && !username.empty()) {
    return Invalid("linux.security_context: set either run_as_user or run_as_username, not both");
  }
  std::string user;
  if (uid != nullptr) {
    if (uid->value() < 0) {
      return Invalid(absl::StrCat("linux.security_context.run_as_user: ", uid->value(), " is not a valid user ID"));
    }
    user = absl::StrCat(uid->value());
  } else if (!username.empty()) {
    // Docker would read "name:x" as user "name", group "x".
    if (absl::StrContains(username, ':')) {
      return Invalid(absl::StrCat("linux.security_context.run_as_username: ", Quote(username),
                                  " is not a valid user name (contains ':')"));
    }
    user = username;
  }
  if (gid != nullptr) {
    if (user.empty()) {
      return Invalid(
          "linux.security_context.run_as_group: may only be set together with a user (run_as_user or "
          "run_as_username)");
    }
    if (gid->value() < 0) {
      return Invalid(absl::StrCat("linux.security_context.run_as_group: ", gid->value(), " is not a valid group ID"));
    }
    absl::StrAppend(&user, ":", gid->value());
  }
  return user;
}

absl::StatusOr<std::vector<std::string>> MakeGroupAdd(const google::protobuf::RepeatedField<int64_t>& groups) {
  std::vector<std::string> out;
  out.reserve(groups.size());
  for (int64_t g : groups) {
    if (g < 0) {
      return Invalid(absl::StrCat("linux.security_context.supplemental_groups: ", g, " is not a valid group ID"));
    }
    out.push_back(std::to_string(g));
  }
  return out;
}

absl::Status AppendSeccompOpt(const runtime::v1::LinuxSandboxSecurityContext& sc, const std::string& profile_root,
                              std::vector<std::string>& opts) {
  return AppendSeccompOptImpl(sc, profile_root, opts);
}

absl::Status AppendSeccompOpt(const runtime::v1::LinuxContainerSecurityContext& sc, const std::string& profile_root,
                              std::vector<std::string>& opts) {
  return AppendSeccompOptImpl(sc, profile_root, opts);
}

absl::Status AppendAppArmorOpt(const runtime::v1::LinuxSandboxSecurityContext& sc, std::vector<std::string>& opts) {
  if (!sc.has_apparmor()) return absl::OkStatus();
  return AppendAppArmorProfile(sc.apparmor(), opts);
}

absl::Status AppendAppArmorOpt(const runtime::v1::LinuxContainerSecurityContext& sc, std::vector<std::string>& opts) {
  if (sc.has_apparmor()) return AppendAppArmorProfile(sc.apparmor(), opts);
  // The deprecated string form: "runtime/default", "unconfined" or "localhost/<name>".
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  const std::string& profile = sc.apparmor_profile();
#pragma GCC diagnostic pop
  if (profile.empty() || profile == "runtime/default") return absl::OkStatus();
  if (profile == "unconfined") {
    opts.push_back("apparmor=unconfined");
    return absl::OkStatus();
  }
  absl::string_view name(profile);
  if (absl::ConsumePrefix(&name, "localhost/") && !name.empty()) {
    opts.push_back(absl::StrCat("apparmor=", name));
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat("linux.security_context.apparmor_profile: unsupported value ", Quote(profile),
                              " (want runtime/default, unconfined or localhost/<profile>)"));
}

void AppendSELinuxOpts(const runtime::v1::SELinuxOption& se, std::vector<std::string>& opts) {
  if (!se.user().empty()) opts.push_back(absl::StrCat("label=user:", se.user()));
  if (!se.role().empty()) opts.push_back(absl::StrCat("label=role:", se.role()));
  if (!se.type().empty()) opts.push_back(absl::StrCat("label=type:", se.type()));
  if (!se.level().empty()) opts.push_back(absl::StrCat("label=level:", se.level()));
}

absl::Status CheckUserNamespace(const runtime::v1::NamespaceOption& ns) {
  if (!ns.has_userns_options()) return absl::OkStatus();
  const auto& u = ns.userns_options();
  if (u.mode() == runtime::v1::NODE) return absl::OkStatus();  // hostUsers: true
  // Kubelets send NODE for hostUsers true or unset (or no userns_options at all).
  if (u.mode() == runtime::v1::POD) {
    return Invalid(
        "linux.security_context.namespace_options.userns_options.mode: POD (hostUsers: false) is not supported: "
        "Docker Engine has no per-pod user namespaces, only the daemon-wide userns-remap");
  }
  const std::string name = runtime::v1::NamespaceMode_Name(u.mode());
  return Invalid(absl::StrCat("linux.security_context.namespace_options.userns_options.mode: mode ",
                              name.empty() ? absl::StrCat(static_cast<int>(u.mode())) : name,
                              " is not supported (want NODE)"));
}

}  // namespace shim
