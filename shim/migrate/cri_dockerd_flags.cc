#include "shim/migrate/cri_dockerd_flags.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace shim::migrate {

namespace {

enum class Kind {
  kKey,        // the same setting under the dockershim config key of the same name
  kEndpoint,   // --container-runtime-endpoint: the socket, served by dockershim.socket
  kRefused,    // no equivalent
};

struct Rule {
  const char* name;
  Kind kind;
  bool boolean;
  const char* detail;  // kRefused: why, and what to do instead
};

constexpr Rule kRules[] = {
    {"container-runtime-endpoint", Kind::kEndpoint, false, ""},
    {"docker-endpoint", Kind::kKey, false, ""},
    {"cri-dockerd-root-directory", Kind::kKey, false, ""},
    {"pod-infra-container-image", Kind::kKey, false, ""},
    {"image-pull-progress-deadline", Kind::kKey, false, ""},
    {"runtime-request-timeout", Kind::kKey, false, ""},
    {"streaming-bind-addr", Kind::kKey, false, ""},
    {"network-plugin", Kind::kKey, false, ""},
    {"cni-bin-dir", Kind::kKey, false, ""},
    {"cni-conf-dir", Kind::kKey, false, ""},
    {"cni-cache-dir", Kind::kKey, false, ""},
    {"runtime-cgroups", Kind::kKey, false, ""},
    {"log-level", Kind::kKey, false, ""},
    {"pod-cidr", Kind::kRefused, false,
     "only kubenet in standalone mode used it; with CNI the kubelet sends the pod CIDR (UpdateRuntimeConfig), "
     "which dockershim passes to the plugins"},
    {"ipv6-dual-stack", Kind::kRefused, true, "dual stack is whatever the CNI result holds (every IP is reported)"},
    {"network-plugin-mtu", Kind::kRefused, false, "set \"mtu\" in the CNI network config instead"},
    {"hairpin-mode", Kind::kRefused, false, "kubenet's; with CNI, the bridge plugin's \"hairpinMode\" in the conflist"},
    {"buildinfo", Kind::kRefused, true, "it prints and exits: cri-dockerd does not serve with it"},
    {"version", Kind::kRefused, true, "it prints and exits: cri-dockerd does not serve with it"},
    {"help", Kind::kRefused, true, "it prints and exits: cri-dockerd does not serve with it"},
};

const Rule* FindRule(absl::string_view name) {
  for (const Rule& rule : kRules)
    if (name == rule.name) return &rule;
  return nullptr;
}

// Go's duration syntax is absl's; "0s" is cri-dockerd's "no bound".
bool ZeroDuration(const std::string& value) {
  absl::Duration d;
  return absl::ParseDuration(value, &d) && d == absl::ZeroDuration();
}

void MapValue(const Rule& rule, const std::string& written, const std::string& value, CriDockerdFlags* out) {
  const std::string flag = absl::StrCat("--", rule.name);
  if (rule.kind == Kind::kRefused) {
    out->refused.push_back({written, rule.detail});
    return;
  }
  if (rule.kind == Kind::kEndpoint) {
    if (value != "fd://" && UnixSocketPath(value).empty()) {
      out->refused.push_back({written, "dockershim serves CRI on a unix socket only (unix:///path or fd://)"});
      return;
    }
    out->runtime_endpoint = value;
    return;
  }
  const std::string key = rule.name;
  if (key == "docker-endpoint") out->docker_endpoint = value;
  if (key == "cri-dockerd-root-directory") out->root_directory = value;
  if ((key == "runtime-request-timeout" || key == "image-pull-progress-deadline") && ZeroDuration(value)) {
    out->notes.push_back(absl::StrCat(flag, "=", value, " (no bound) has no equivalent: dockershim keeps its default ",
                                      key == "runtime-request-timeout" ? "2m" : "1m"));
    return;
  }
  if (key == "streaming-bind-addr" && value.empty()) {
    out->notes.push_back(absl::StrCat(flag, "= (every address): dockershim keeps 127.0.0.1:0, enough for the kubelet"));
    return;
  }
  // cri-dockerd without a plugin runs pods on Docker's bridge: dockershim's "docker".
  const std::string mapped = key == "network-plugin" && value.empty() ? "docker" : value;
  for (auto& [k, v] : out->config) {
    if (k == key) {  // given twice: pflag keeps the last
      v = mapped;
      return;
    }
  }
  out->config.emplace_back(key, mapped);
}

}  // namespace

bool IsCriDockerdFlag(const std::string& name) { return FindRule(name) != nullptr; }

std::string UnixSocketPath(const std::string& endpoint) {
  if (absl::StartsWith(endpoint, "unix://")) return endpoint.substr(7);
  if (absl::StartsWith(endpoint, "/")) return endpoint;
  return "";
}

CriDockerdFlags MapCriDockerdFlags(const std::vector<std::string>& args) {
  CriDockerdFlags out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      for (++i; i < args.size(); ++i)
        out.refused.push_back({args[i], "cri-dockerd takes no arguments besides flags (it would not start)"});
      break;
    }
    if (arg == "-h") {
      out.refused.push_back({arg, FindRule("help")->detail});
      continue;
    }
    if (!absl::StartsWith(arg, "--") || arg.size() == 2) {
      out.refused.push_back({arg, absl::StartsWith(arg, "-")
                                      ? "not a flag of cri-dockerd (its flags are --long-names)"
                                      : "cri-dockerd takes no arguments besides flags (it would not start)"});
      continue;
    }
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const Rule* rule = FindRule(name);
    if (rule == nullptr) {
      out.refused.push_back({arg, "not a cri-dockerd flag that dockershim knows"});
      continue;
    }
    std::string value;
    std::string written = arg;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (rule->boolean) {
      value = "true";
    } else if (i + 1 < args.size()) {
      value = args[++i];
      written = absl::StrCat(arg, " ", value);
    } else {
      out.refused.push_back({arg, "needs a value (cri-dockerd would not start)"});
      continue;
    }
    // A boolean set to false is as if absent.
    if (rule->boolean && (value == "false" || value == "0")) continue;
    MapValue(*rule, written, value, &out);
  }
  return out;
}

}  // namespace shim::migrate
