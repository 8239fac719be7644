#include "shim/sandbox_config.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/status.h"
#include "shim/security_opts.h"

namespace shim {
namespace {

using runtime::v1::LinuxSandboxSecurityContext;
using runtime::v1::NamespaceMode;
using runtime::v1::PodSandboxConfig;

constexpr absl::string_view kIngressBandwidth = "kubernetes.io/ingress-bandwidth";
constexpr absl::string_view kEgressBandwidth = "kubernetes.io/egress-bandwidth";
// The kubelet's sanity limits for pod bandwidth, in bits per second.
constexpr int64_t kMinBandwidth = 1000;                // 1k
constexpr int64_t kMaxBandwidth = 1000000000000000LL;  // 1P

absl::Status Invalid(absl::string_view msg) { return absl::InvalidArgumentError(msg); }

std::string Quote(absl::string_view s) { return absl::StrCat("\"", s, "\""); }

// ---------------------------------------------------------------------------
// cgroup parents

// Characters systemd accepts in a unit name (before the ".slice" suffix).
bool IsSystemdUnitChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ':' ||
         c == '_' || c == '.' || c == '-' || c == '\\';
}

// "a-b-c.slice" -> {"a.slice", "a-b.slice", "a-b-c.slice"}; "-.slice" (the root
// slice) -> {}.
absl::StatusOr<std::vector<std::string>> ExpandSlice(const std::string& slice, const std::string& original) {
  absl::string_view name(slice);
  if (!absl::ConsumeSuffix(&name, ".slice")) {
    return Invalid(absl::StrCat("cgroup parent ", Quote(original), ": ", Quote(slice), " is not a systemd slice name"));
  }
  if (name == "-") return std::vector<std::string>{};
  if (name.empty()) {
    return Invalid(absl::StrCat("cgroup parent ", Quote(original), ": ", Quote(slice),
                                " has an empty slice name"));
  }
  for (char c : name) {
    if (!IsSystemdUnitChar(c)) {
      return Invalid(absl::StrCat("cgroup parent ", Quote(original), ": slice name ", Quote(slice),
                                  " contains a character systemd does not allow in unit names"));
    }
  }
  std::vector<std::string> chain;
  std::string prefix;
  for (absl::string_view part : absl::StrSplit(name, '-')) {
    if (part.empty()) {
      return Invalid(absl::StrCat("cgroup parent ", Quote(original), ": slice name ", Quote(slice),
                                  " has an empty component (a leading, trailing or doubled '-')"));
    }
    if (!prefix.empty()) prefix += "-";
    absl::StrAppend(&prefix, part);
    chain.push_back(absl::StrCat(prefix, ".slice"));
  }
  return chain;
}

// ---------------------------------------------------------------------------
// Namespaces and sysctls

absl::Status CheckNamespaceModes(const runtime::v1::NamespaceOption& ns) {
  auto bad = [](absl::string_view option, NamespaceMode mode, absl::string_view allowed) {
    return Invalid(absl::StrCat("linux.security_context.namespace_options.", option, ": mode ",
                                runtime::v1::NamespaceMode_Name(mode).empty()
                                    ? absl::StrCat(static_cast<int>(mode))
                                    : runtime::v1::NamespaceMode_Name(mode),
                                " is not supported for a pod sandbox (want ", allowed, ")"));
  };
  if (ns.network() != runtime::v1::POD && ns.network() != runtime::v1::NODE) {
    return bad("network", ns.network(), "POD or NODE");
  }
  // The kubelet sends CONTAINER for pods that do not share a process namespace:
  // the sandbox then has a private PID namespace of its own, as with POD.
  if (ns.pid() != runtime::v1::POD && ns.pid() != runtime::v1::CONTAINER && ns.pid() != runtime::v1::NODE) {
    return bad("pid", ns.pid(), "POD, CONTAINER or NODE");
  }
  if (ns.ipc() != runtime::v1::POD && ns.ipc() != runtime::v1::NODE) {
    return bad("ipc", ns.ipc(), "POD or NODE");
  }
  return CheckUserNamespace(ns);
}

bool SysctlHasPrefix(absl::string_view name, absl::string_view dotted_prefix) {
  if (absl::StartsWith(name, dotted_prefix)) return true;
  // Sysctl names may also use '/' as the separator.
  std::string slashed(dotted_prefix);
  for (char& c : slashed) {
    if (c == '.') c = '/';
  }
  return absl::StartsWith(name, slashed);
}

bool IsIpcSysctl(absl::string_view name) {
  static constexpr absl::string_view kIpc[] = {"kernel.msgmax", "kernel.msgmnb", "kernel.msgmni",
                                               "kernel.sem",    "kernel.shmall", "kernel.shmmax",
                                               "kernel.shmmni", "kernel.shm_rmid_forced"};
  for (absl::string_view s : kIpc) {
    if (name == s) return true;
    std::string slashed(s);
    for (char& c : slashed) {
      if (c == '.') c = '/';
    }
    if (name == slashed) return true;
  }
  return SysctlHasPrefix(name, "fs.mqueue.");
}

absl::StatusOr<nlohmann::json> MakeSysctls(const runtime::v1::LinuxPodSandboxConfig& linux, bool host_network,
                                           bool host_ipc) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : linux.sysctls()) {
    if (name.empty()) return Invalid("linux.sysctls: empty sysctl name");
    if (host_network && SysctlHasPrefix(name, "net.")) {
      return Invalid(absl::StrCat("linux.sysctls: ", name,
                                  " cannot be set on a host-network pod: it would change the node's network "
                                  "settings"));
    }
    if (host_ipc && IsIpcSysctl(name)) {
      return Invalid(absl::StrCat("linux.sysctls: ", name,
                                  " cannot be set on a pod in the host IPC namespace: it would change the node's "
                                  "IPC settings"));
    }
    out[name] = value;
  }
  return out;
}

// ---------------------------------------------------------------------------
// Quantities

// Parses a Kubernetes resource quantity and returns its value rounded up to an
// integer (like Quantity.Value()). Values far beyond int64 are reported as
// out of range.
absl::StatusOr<int64_t> ParseQuantityValue(absl::string_view s, absl::string_view what) {
  auto bad = [&](absl::string_view why) {
    return Invalid(absl::StrCat(what, ": ", Quote(s), " is not a valid quantity (", why,
                                "; e.g. 10M, 1.5G, 100Ki)"));
  };
  absl::string_view rest = s;
  bool negative = false;
  if (!rest.empty() && (rest[0] == '+' || rest[0] == '-')) {
    negative = rest[0] == '-';
    rest.remove_prefix(1);
  }
  std::string int_digits, frac_digits;
  std::size_t i = 0;
  while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') int_digits.push_back(rest[i++]);
  if (i < rest.size() && rest[i] == '.') {
    ++i;
    while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') frac_digits.push_back(rest[i++]);
  }
  if (int_digits.empty() && frac_digits.empty()) return bad("no number");
  absl::string_view suffix = rest.substr(i);

  int binary_exp = 0;   // power of 2
  int64_t dec_exp = 0;  // power of 10
  if (suffix.empty()) {
  } else if (suffix == "Ki") {
    binary_exp = 10;
  } else if (suffix == "Mi") {
    binary_exp = 20;
  } else if (suffix == "Gi") {
    binary_exp = 30;
  } else if (suffix == "Ti") {
    binary_exp = 40;
  } else if (suffix == "Pi") {
    binary_exp = 50;
  } else if (suffix == "Ei") {
    binary_exp = 60;
  } else if (suffix == "n") {
    dec_exp = -9;
  } else if (suffix == "u") {
    dec_exp = -6;
  } else if (suffix == "m") {
    dec_exp = -3;
  } else if (suffix == "k") {
    dec_exp = 3;
  } else if (suffix == "M") {
    dec_exp = 6;
  } else if (suffix == "G") {
    dec_exp = 9;
  } else if (suffix == "T") {
    dec_exp = 12;
  } else if (suffix == "P") {
    dec_exp = 15;
  } else if (suffix == "E") {
    dec_exp = 18;
  } else if (suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    absl::string_view e = suffix.substr(1);
    bool e_negative = false;
    if (e[0] == '+' || e[0] == '-') {
      e_negative = e[0] == '-';
      e.remove_prefix(1);
    }
    if (e.empty() || e.size() > 6) return bad("bad exponent");
    for (char c : e) {
      if (c < '0' || c > '9') return bad("bad exponent");
      dec_exp = dec_exp * 10 + (c - '0');
    }
    if (e_negative) dec_exp = -dec_exp;
  } else {
    return bad(absl::StrCat("unknown suffix ", Quote(suffix)));
  }

  // value = digits * 10^(dec_exp - len(frac)) * 2^binary_exp
  std::string digits = int_digits + frac_digits;
  dec_exp -= static_cast<int64_t>(frac_digits.size());
  while (!digits.empty() && digits.back() == '0' && dec_exp < 0) {  // 1.50 == 1.5
    digits.pop_back();
    ++dec_exp;
  }
  std::size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return int64_t{0};
  digits = digits.substr(first);
  const absl::Status out_of_range = Invalid(absl::StrCat(what, ": ", Quote(s), " is out of range"));
  // Keep 19 significant digits (< 2^64); a non-zero dropped tail only matters for
  // rounding up (digits beyond that in the integer part mean >= 10^19: out of range).
  bool inexact = false;
  if (digits.size() > 19) {
    inexact = digits.find_first_not_of('0', 19) != std::string::npos;
    dec_exp += static_cast<int64_t>(digits.size() - 19);
    digits.resize(19);
  }
  unsigned __int128 value = 0;
  for (char c : digits) value = value * 10 + static_cast<unsigned>(c - '0');
  value <<= binary_exp;  // < 10^19 * 2^60 < 2^124
  const unsigned __int128 kCap = static_cast<unsigned __int128>(1) << 100;  // far beyond int64
  while (dec_exp > 0) {
    value *= 10;
    --dec_exp;
    if (value > kCap) return out_of_range;
  }
  if (dec_exp < -38) {
    value = 1;  // value < 2^124 < 10^38: a positive number below one rounds up to 1
  } else if (dec_exp < 0) {
    unsigned __int128 div = 1;
    for (int64_t k = 0; k < -dec_exp; ++k) div *= 10;  // <= 10^38 < 2^127
    const bool has_fraction = value % div != 0 || inexact;
    value = value / div + (has_fraction ? 1 : 0);  // round up, like Quantity.Value()
  }
  if (value > static_cast<unsigned __int128>(INT64_MAX)) return out_of_range;
  int64_t v = static_cast<int64_t>(value);
  return negative ? -v : v;
}

absl::StatusOr<int64_t> ParseBandwidth(const std::string& annotation, const std::string& value) {
  ASSIGN_OR_RETURN(int64_t bits, ParseQuantityValue(value, annotation));
  if (bits < kMinBandwidth || bits > kMaxBandwidth) {
    return Invalid(absl::StrCat(annotation, ": ", Quote(value), " (", bits,
                                " bit/s) is outside the supported range 1k..1P bit/s"));
  }
  return bits;
}

std::string PortKey(const network::PortMapping& pm) {
  return absl::StrCat(pm.container_port, "/", pm.protocol);
}

}  // namespace

// ---------------------------------------------------------------------------

bool IsHostNetwork(const PodSandboxConfig& config) {
  return config.linux().security_context().namespace_options().network() == runtime::v1::NODE;
}

absl::StatusOr<std::string> ConvertCgroupParent(const std::string& parent, const std::string& cgroup_driver) {
  bool systemd;
  if (cgroup_driver == "systemd") {
    systemd = true;
  } else if (cgroup_driver == "cgroupfs" || cgroup_driver.empty()) {
    systemd = false;
  } else {
    return Invalid(absl::StrCat("unknown Docker cgroup driver ", Quote(cgroup_driver),
                                " (want systemd or cgroupfs)"));
  }
  std::string p = parent;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  if (p.empty() || p == "/") return std::string();
  for (char c : p) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return Invalid(absl::StrCat("cgroup parent ", Quote(parent), " contains a control character"));
    }
  }
  const bool absolute = p[0] == '/';
  const absl::string_view relative = absolute ? absl::string_view(p).substr(1) : absl::string_view(p);
  std::vector<std::string> parts = absl::StrSplit(relative, '/');
  for (const std::string& part : parts) {
    if (part.empty()) {
      return Invalid(absl::StrCat("cgroup parent ", Quote(parent), " has an empty path component"));
    }
    if (part == "." || part == "..") {
      return Invalid(absl::StrCat("cgroup parent ", Quote(parent), " must not contain '.' or '..' components"));
    }
  }
  const std::string& leaf = parts.back();
  const bool leaf_is_slice = absl::EndsWith(leaf, ".slice");
  if (!absolute && (parts.size() != 1 || !leaf_is_slice)) {
    return Invalid(absl::StrCat("cgroup parent ", Quote(parent),
                                " is relative: give an absolute cgroupfs path (e.g. /kubepods/burstable/pod<uid>) "
                                "or a systemd slice name (e.g. kubepods-burstable-pod<uid>.slice)"));
  }

  if (!systemd) {
    if (absolute) return p;  // any path is a valid cgroupfs directory
    ASSIGN_OR_RETURN(std::vector<std::string> chain, ExpandSlice(leaf, parent));
    if (chain.empty()) return std::string();  // "-.slice": the root
    return absl::StrCat("/", absl::StrJoin(chain, "/"));
  }

  if (leaf_is_slice) {
    ASSIGN_OR_RETURN(std::vector<std::string> chain, ExpandSlice(leaf, parent));
    if (chain.empty() && parts.size() == 1) return std::string();  // "-.slice": the root
    if (absolute && parts != chain) {
      return Invalid(absl::StrCat("cgroup parent ", Quote(parent),
                                  " is not a systemd slice hierarchy: Docker's systemd cgroup driver would place ",
                                  leaf, " at /", absl::StrJoin(chain, "/")));
    }
    return leaf;
  }
  // A cgroupfs-style path under the systemd driver: /kubepods/burstable/pod12 ->
  // kubepods-burstable-pod12.slice, escaping '-' inside components like the kubelet.
  std::vector<std::string> escaped;
  for (const std::string& part : parts) {
    if (absl::EndsWith(part, ".slice")) {
      return Invalid(absl::StrCat("cgroup parent ", Quote(parent),
                                  " mixes systemd slice names and plain cgroup directories"));
    }
    std::string e = part;
    for (char& c : e) {
      if (c == '-') c = '_';
      if (!IsSystemdUnitChar(c)) {
        return Invalid(absl::StrCat("cgroup parent ", Quote(parent), ": component ", Quote(part),
                                    " contains a character systemd does not allow in slice names"));
      }
    }
    escaped.push_back(std::move(e));
  }
  std::string slice = absl::StrCat(absl::StrJoin(escaped, "-"), ".slice");
  if (slice.size() > 255) {
    return Invalid(absl::StrCat("cgroup parent ", Quote(parent), " is too long for a systemd slice name"));
  }
  return slice;
}

absl::StatusOr<std::vector<network::PortMapping>> ToPortMappings(
    const google::protobuf::RepeatedPtrField<runtime::v1::PortMapping>& mappings) {
  std::vector<network::PortMapping> out;
  out.reserve(mappings.size());
  for (int i = 0; i < mappings.size(); ++i) {
    const runtime::v1::PortMapping& m = mappings[i];
    network::PortMapping pm;
    switch (m.protocol()) {
      case runtime::v1::TCP:
        pm.protocol = "tcp";
        break;
      case runtime::v1::UDP:
        pm.protocol = "udp";
        break;
      case runtime::v1::SCTP:
        pm.protocol = "sctp";
        break;
      default:
        return Invalid(absl::StrCat("port_mappings[", i, "].protocol: unknown protocol ",
                                    static_cast<int>(m.protocol())));
    }
    if (m.container_port() < 1 || m.container_port() > 65535) {
      return Invalid(absl::StrCat("port_mappings[", i, "].container_port: ", m.container_port(),
                                  " is not a valid port (1..65535)"));
    }
    if (m.host_port() < 0 || m.host_port() > 65535) {
      return Invalid(absl::StrCat("port_mappings[", i, "].host_port: ", m.host_port(),
                                  " is not a valid port (0..65535; 0 means none)"));
    }
    pm.container_port = m.container_port();
    pm.host_port = m.host_port();
    pm.host_ip = m.host_ip();
    out.push_back(std::move(pm));
  }
  return out;
}

absl::StatusOr<std::optional<network::Bandwidth>> BandwidthFromAnnotations(
    const google::protobuf::Map<std::string, std::string>& annotations) {
  auto ingress = annotations.find(std::string(kIngressBandwidth));
  auto egress = annotations.find(std::string(kEgressBandwidth));
  if (ingress == annotations.end() && egress == annotations.end()) return std::optional<network::Bandwidth>();
  network::Bandwidth bw;
  if (ingress != annotations.end()) {
    ASSIGN_OR_RETURN(bw.ingress_bits_per_second, ParseBandwidth(ingress->first, ingress->second));
  }
  if (egress != annotations.end()) {
    ASSIGN_OR_RETURN(bw.egress_bits_per_second, ParseBandwidth(egress->first, egress->second));
  }
  return std::optional<network::Bandwidth>(bw);
}

std::string MakeResolvConf(const runtime::v1::DNSConfig& dns) {
  std::string out;
  for (const std::string& server : dns.servers()) absl::StrAppend(&out, "nameserver ", server, "\n");
  if (!dns.searches().empty()) absl::StrAppend(&out, "search ", absl::StrJoin(dns.searches(), " "), "\n");
  if (!dns.options().empty()) absl::StrAppend(&out, "options ", absl::StrJoin(dns.options(), " "), "\n");
  return out;
}

absl::StatusOr<nlohmann::json> MakeSandboxCreateBody(const PodSandboxConfig& config,
                                                     const SandboxCreateParams& params) {
  if (!config.has_metadata()) return Invalid("pod sandbox config: metadata is required");
  if (config.metadata().name().empty()) return Invalid("pod sandbox config: metadata.name is required");
  if (config.metadata().namespace_().empty()) {
    return Invalid("pod sandbox config: metadata.namespace is required");
  }
  if (config.metadata().uid().empty()) return Invalid("pod sandbox config: metadata.uid is required");
  if (params.image.empty()) return absl::InternalError("pod sandbox: no pod infra image configured");

  const runtime::v1::LinuxPodSandboxConfig& linux = config.linux();
  const LinuxSandboxSecurityContext& sc = linux.security_context();
  const runtime::v1::NamespaceOption& ns = sc.namespace_options();
  RETURN_IF_ERROR(CheckNamespaceModes(ns));
  const bool host_network = ns.network() == runtime::v1::NODE;
  const bool host_ipc = ns.ipc() == runtime::v1::NODE;

  nlohmann::json body = nlohmann::json::object();
  nlohmann::json host = nlohmann::json::object();
  body["Image"] = params.image;
  body["Labels"] = nlohmann::json::object();  // filled by the caller

  // Network.
  std::string network_mode;
  if (host_network) {
    network_mode = "host";
  } else {
    if (params.network_mode.empty()) {
      return absl::InternalError("pod sandbox: the network plugin did not name a Docker network mode");
    }
    network_mode = params.network_mode;
    // Docker refuses a hostname together with network mode host (or container:).
    if (!config.hostname().empty()) body["Hostname"] = config.hostname();
  }
  host["NetworkMode"] = network_mode;

  ASSIGN_OR_RETURN(std::vector<network::PortMapping> ports, ToPortMappings(config.port_mappings()));
  // Docker publishes ports only for its own networks; with "none" the CNI portmap
  // plugin does it, and a host-network pod listens on the node directly.
  const bool docker_publishes = network_mode != "none" && network_mode != "host" &&
                                !absl::StartsWith(network_mode, "container:");
  if (docker_publishes) {
    nlohmann::json exposed = nlohmann::json::object();
    nlohmann::json bindings = nlohmann::json::object();
    for (const network::PortMapping& pm : ports) {
      if (pm.host_port == 0) continue;
      const std::string key = PortKey(pm);
      exposed[key] = nlohmann::json::object();
      nlohmann::json binding = nlohmann::json::object();
      binding["HostIp"] = pm.host_ip;
      binding["HostPort"] = std::to_string(pm.host_port);
      bindings[key].push_back(std::move(binding));  // several host ports may map to one container port
    }
    if (!exposed.empty()) {
      body["ExposedPorts"] = std::move(exposed);
      host["PortBindings"] = std::move(bindings);
    }
  }

  // DNS.
  const runtime::v1::DNSConfig& dns = config.dns_config();
  if (!dns.servers().empty()) host["Dns"] = std::vector<std::string>(dns.servers().begin(), dns.servers().end());
  if (!dns.searches().empty()) {
    host["DnsSearch"] = std::vector<std::string>(dns.searches().begin(), dns.searches().end());
  }
  if (!dns.options().empty()) {
    host["DnsOptions"] = std::vector<std::string>(dns.options().begin(), dns.options().end());
  }

  // Namespaces.
  if (ns.pid() == runtime::v1::NODE) host["PidMode"] = "host";
  host["IpcMode"] = host_ipc ? "host" : "shareable";  // app containers join with container:<id>

  // cgroups, sysctls, OOM score, runtime.
  if (!linux.cgroup_parent().empty()) {
    absl::StatusOr<std::string> cgroup_parent = ConvertCgroupParent(linux.cgroup_parent(), params.cgroup_driver);
    if (!cgroup_parent.ok()) return common::Annotate(cgroup_parent.status(), "linux.cgroup_parent");
    if (!cgroup_parent->empty()) host["CgroupParent"] = *cgroup_parent;
  }
  ASSIGN_OR_RETURN(nlohmann::json sysctls, MakeSysctls(linux, host_network, host_ipc));
  if (!sysctls.empty()) host["Sysctls"] = std::move(sysctls);
  host["OomScoreAdj"] = params.oom_score_adj;
  if (!params.docker_runtime.empty()) host["Runtime"] = params.docker_runtime;

  // Security context.
  ASSIGN_OR_RETURN(std::string user, MakeDockerUser(sc.has_run_as_user() ? &sc.run_as_user() : nullptr, "",
                                                   sc.has_run_as_group() ? &sc.run_as_group() : nullptr));
  if (!user.empty()) body["User"] = user;
  if (sc.readonly_rootfs()) host["ReadonlyRootfs"] = true;
  const bool emulate_privileged = sc.privileged() && params.restricted_capabilities;
  if (sc.privileged() && !emulate_privileged) host["Privileged"] = true;
  ASSIGN_OR_RETURN(std::vector<std::string> groups, MakeGroupAdd(sc.supplemental_groups()));
  if (!groups.empty()) host["GroupAdd"] = std::move(groups);
  std::vector<std::string> security_opts;
  AppendSELinuxOpts(sc.selinux_options(), security_opts);
  if (emulate_privileged) {
    AddPrivilegedWithoutTheFlag(*params.restricted_capabilities, params.host_devices, host, security_opts);
  }
  // Docker runs privileged containers without seccomp and AppArmor confinement
  // whatever is asked, so profiles are not even looked at for them.
  if (!sc.privileged()) {
    RETURN_IF_ERROR(AppendAppArmorOpt(sc, security_opts));
    RETURN_IF_ERROR(AppendSeccompOpt(sc, params.seccomp_profile_root, security_opts));
  }
  if (!security_opts.empty()) host["SecurityOpt"] = security_opts;

  body["HostConfig"] = std::move(host);
  return body;
}

}  // namespace shim
