#include "shim/network/cni_network.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <optional>
#include <system_error>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "common/log.h"
#include "common/status.h"
#include "observability/hooks.h"

namespace network {

using nlohmann::json;

struct CniNetwork::Attachment {
  std::string container_id;
  std::string netns;
  std::string ifname = "eth0";
  std::vector<std::pair<std::string, std::string>> cni_args;
  json capability_args = json::object();
};

struct CniNetwork::Cached {
  CniNetworkConfig config;
  Attachment attachment;
  json result;
};

namespace {

constexpr char kCacheKind[] = "cniCacheV1";
// Marks the cache files this shim wrote (CniOptions::owner), so that only those are ever
// released as orphans (another runtime on the node may share the cache dir). libcni ignores it.
constexpr char kCreatedByKey[] = "createdBy";
// Undoing a failed ADD must not be cut short by the caller's deadline, which may be
// what made the ADD fail.
constexpr absl::Duration kRollbackTimeout = absl::Seconds(30);
// A DEL, once started, runs to its end: one killed halfway leaves the pod half attached,
// and a caller with a short deadline (kubeadm reset gives each StopPodSandbox 2 s) would
// cut every retry short the same way on a slow or loaded node, so that the pod's network
// were never torn down. Bounded by this or the caller's deadline, whichever is later.
constexpr absl::Duration kTeardownTimeout = absl::Seconds(30);

std::string ErrnoText(int err) { return std::generic_category().message(err); }

// Changes whenever a config file is added, removed, renamed or rewritten; costs one
// readdir and a stat per config file.
std::string ConfDirSignature(const std::string& dir) {
  namespace fs = std::filesystem;
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return "missing";
  std::vector<std::string> entries;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!IsNetworkConfigFileName(name)) continue;
    struct stat fst;
    if (::stat(it->path().c_str(), &fst) != 0) continue;
    entries.push_back(
        absl::StrCat(name, ":", fst.st_ino, ":", fst.st_size, ":", fst.st_mtim.tv_sec, ".", fst.st_mtim.tv_nsec));
  }
  std::sort(entries.begin(), entries.end());
  std::string sig = absl::StrCat(st.st_ino, ":", st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec);
  for (const std::string& e : entries) absl::StrAppend(&sig, "|", e);
  return sig;
}

// Strings from outside (CRI requests) might not be UTF-8; dump() would throw on them.
std::string Dump(const json& doc) { return doc.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string NetworkLabel(const CniNetworkConfig& config) { return absl::StrCat("CNI network ", config.name); }

}  // namespace

CniNetwork::CniNetwork(CniOptions options, std::unique_ptr<PluginExecutor> executor)
    : options_(std::move(options)),
      executor_(executor ? std::move(executor) : std::make_unique<ProcessPluginExecutor>(options_.bin_dirs)),
      config_(absl::UnavailableError("CNI config not loaded yet")) {}

std::string CniNetwork::CacheFile(const std::string& network_name, const std::string& container_id) const {
  return absl::StrCat(options_.cache_dir, "/results/", network_name, "-", container_id, "-eth0");
}

void CniNetwork::SetPodCidr(const std::string& cidr) {
  std::lock_guard lock(mu_);
  if (cidr != pod_cidr_) {
    LOG_INFO << "pod CIDR for CNI ipRanges: " << cidr;
  }
  pod_cidr_ = cidr;
}

absl::StatusOr<std::shared_ptr<const CniNetworkConfig>> CniNetwork::CurrentConfig() {
  std::lock_guard lock(mu_);
  const absl::Time now = absl::Now();
  if (scanned_ && now - last_scan_ < options_.rescan_interval) return config_;
  last_scan_ = now;
  std::string signature = ConfDirSignature(options_.conf_dir);
  if (scanned_ && signature == conf_dir_signature_) return config_;
  scanned_ = true;
  conf_dir_signature_ = std::move(signature);

  absl::StatusOr<CniNetworkConfig> loaded = LoadDefaultNetworkConfig(options_.conf_dir);
  if (!loaded.ok()) {
    LOG_WARN << "CNI network not ready: " << loaded.status().message();
    config_ = absl::FailedPreconditionError(loaded.status().message());
    return config_;
  }
  LOG_INFO << "using CNI network " << loaded->name << " (cniVersion " << loaded->cni_version << ", "
           << loaded->plugins().size() << " plugins) from " << loaded->file;
  config_ = std::make_shared<const CniNetworkConfig>(std::move(*loaded));
  return config_;
}

absl::Status CniNetwork::Ready() { return CurrentConfig().status(); }

absl::StatusOr<std::string> CniNetwork::Run(const common::Context& ctx, const CniNetworkConfig& config, size_t index,
                                            const std::string& command, const Attachment& attachment,
                                            const json& prev_result) {
  PluginRequest req{command, attachment.container_id, attachment.netns, attachment.ifname,
                    JoinCniArgs(attachment.cni_args)};
  const std::string stdin_config = Dump(BuildPluginConfig(config, index, prev_result, attachment.capability_args));
  const std::string plugin = config.PluginType(index);
  observability::CniCall observed(command, plugin, config.name, stdin_config);
  const std::string phase = options_.phase_sink ? absl::StrCat("cni ", command, " ", plugin) : std::string();
  common::ScopedPhase timed(options_.phase_sink, phase);
  return observed.Done(executor_->Exec(ctx, plugin, req, stdin_config));
}

absl::Status CniNetwork::DelAll(const common::Context& ctx, const CniNetworkConfig& config,
                                const Attachment& attachment, const json& prev_result, bool best_effort) {
  // DEL gets the ADD result only from cniVersion 0.4.0 on, as libcni does.
  const json& prev = CniVersionAtLeast(config.cni_version, "0.4.0") ? prev_result : json();
  for (size_t i = config.plugins().size(); i-- > 0;) {
    absl::StatusOr<std::string> out = Run(ctx, config, i, "DEL", attachment, prev);
    if (out.ok()) continue;
    if (!best_effort) return common::Annotate(out.status(), NetworkLabel(config));
    LOG_WARN << "undoing CNI ADD for " << attachment.container_id << ": " << out.status().message();
  }
  return absl::OkStatus();
}

absl::StatusOr<PodNetworkStatus> CniNetwork::SetUp(const common::Context& ctx, const PodNetworkRequest& req) {
  if (!IsValidCniIdentifier(req.sandbox_id))
    return absl::InvalidArgumentError(absl::StrCat("invalid sandbox ID \"", req.sandbox_id, "\" for CNI"));
  if (req.netns_path.empty()) return absl::InvalidArgumentError("CNI ADD needs the pod's network namespace path");
  ASSIGN_OR_RETURN(std::shared_ptr<const CniNetworkConfig> config, CurrentConfig());

  Attachment attachment;
  attachment.container_id = req.sandbox_id;
  attachment.netns = req.netns_path;
  attachment.cni_args = CniArgs(req);
  {
    std::lock_guard lock(mu_);
    attachment.capability_args = CapabilityArgs(req, pod_cidr_);
  }

  json result;  // the chain's result so far; each plugin gets it as prevResult
  auto fail = [&](const absl::Status& status) {
    common::Context rollback = common::Context::WithTimeout(kRollbackTimeout);
    (void)DelAll(rollback, *config, attachment, result, /*best_effort=*/true);
    return common::Annotate(status, NetworkLabel(*config));
  };
  for (size_t i = 0; i < config->plugins().size(); ++i) {
    absl::StatusOr<std::string> out = Run(ctx, *config, i, "ADD", attachment, result);
    if (!out.ok()) return fail(out.status());
    json parsed = json::parse(*out, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_object())
      return fail(absl::InternalError(
          absl::StrCat("CNI plugin ", config->PluginType(i), " (ADD) printed no JSON result: ", out->substr(0, 200))));
    result = std::move(parsed);
  }

  absl::StatusOr<PodIps> ips = ParseResultIps(result, attachment.ifname);
  if (!ips.ok()) return fail(ips.status());
  if (ips->primary.empty()) return fail(absl::InternalError("the CNI result has no IP address for the pod"));

  json cache = {{"kind", kCacheKind},
                {"containerId", attachment.container_id},
                // Go's []byte, as libcni writes it.
                {"config", absl::Base64Escape(Dump(config->list))},
                {"ifName", attachment.ifname},
                {"networkName", config->name},
                {"netns", attachment.netns},
                {"cniArgs", attachment.cni_args},
                {"capabilityArgs", attachment.capability_args},
                {"result", result},
                {kCreatedByKey, options_.owner}};
  common::ScopedPhase cache_write(options_.phase_sink, "cni: cache file write");
  if (absl::Status s = common::WriteFileAtomically(CacheFile(config->name, req.sandbox_id), Dump(cache)); !s.ok())
    return fail(s);
  cache_write.Stop();

  PodNetworkStatus status;
  status.ip = ips->primary;
  status.additional_ips = std::move(ips->additional);
  status.network_name = config->name;
  status.interface = attachment.ifname;
  return status;
}

std::optional<CniNetwork::Cached> CniNetwork::ReadCache(const std::string& network_name,
                                                        const std::string& container_id) const {
  const std::string path = CacheFile(network_name, container_id);
  std::optional<std::string> text = common::ReadWholeFile(path);
  if (!text) return std::nullopt;
  auto broken = [&path](absl::string_view why) -> std::optional<Cached> {
    LOG_WARN << "ignoring CNI cache file " << path << ": " << why;
    return std::nullopt;
  };
  json doc = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || doc["kind"] != kCacheKind) return broken("not a cniCacheV1 record");
  std::string config_text;
  if (!doc["config"].is_string() || !absl::Base64Unescape(doc["config"].get<std::string>(), &config_text))
    return broken("no base64 \"config\"");
  absl::StatusOr<CniNetworkConfig> config = ParseNetworkConfig(config_text, /*single_plugin=*/false);
  if (!config.ok()) return broken(config.status().message());

  Cached cached{std::move(*config), {}, doc["result"]};
  cached.attachment.container_id = container_id;
  if (doc["ifName"].is_string()) cached.attachment.ifname = doc["ifName"].get<std::string>();
  if (doc["capabilityArgs"].is_object()) cached.attachment.capability_args = doc["capabilityArgs"];
  if (doc["cniArgs"].is_array()) {
    for (const json& kv : doc["cniArgs"])
      if (kv.is_array() && kv.size() == 2 && kv[0].is_string() && kv[1].is_string())
        cached.attachment.cni_args.emplace_back(kv[0].get<std::string>(), kv[1].get<std::string>());
  }
  return cached;
}

absl::Status CniNetwork::TearDown(const common::Context& ctx, const PodNetworkRequest& req,
                                  const std::string& network_name) {
  if (!IsValidCniIdentifier(req.sandbox_id))
    return absl::InvalidArgumentError(absl::StrCat("invalid sandbox ID \"", req.sandbox_id, "\" for CNI"));
  if (!network_name.empty() && !IsValidCniIdentifier(network_name))
    return absl::InvalidArgumentError(absl::StrCat("invalid CNI network name \"", network_name, "\""));

  std::string name = network_name;
  std::shared_ptr<const CniNetworkConfig> current;
  if (name.empty()) {
    if (auto c = CurrentConfig(); c.ok()) {
      current = *c;
      name = current->name;
    }
  }
  std::optional<Cached> cached = name.empty() ? std::nullopt : ReadCache(name, req.sandbox_id);
  Attachment attachment;
  json prev_result;
  const CniNetworkConfig* config;
  if (cached) {
    config = &cached->config;
    attachment = cached->attachment;
    prev_result = cached->result;
  } else {
    if (!current) {
      absl::StatusOr<std::shared_ptr<const CniNetworkConfig>> c = CurrentConfig();
      if (!c.ok()) {
        // Nothing says how this pod was attached; failing would only block its removal.
        LOG_WARN << "cannot run CNI DEL for sandbox " << req.sandbox_id << " (network \"" << network_name
                 << "\"): nothing cached in " << options_.cache_dir << " and " << c.status().message();
        return absl::OkStatus();
      }
      current = *c;
    }
    if (!network_name.empty() && network_name != current->name) {
      LOG_WARN << "no CNI cache for sandbox " << req.sandbox_id << " on network " << network_name
               << "; running DEL with the current network " << current->name;
    }
    config = current.get();
    attachment.container_id = req.sandbox_id;
    attachment.cni_args = CniArgs(req);
    std::lock_guard lock(mu_);
    attachment.capability_args = CapabilityArgs(req, pod_cidr_);
  }
  // The live path from the caller, not the cached one (see TearDown's comment).
  attachment.netns = req.netns_path;

  common::Context del = common::Context::WithTimeout(kTeardownTimeout);
  del.deadline = std::max(del.deadline, ctx.deadline);
  RETURN_IF_ERROR(DelAll(del, *config, attachment, prev_result, /*best_effort=*/false));
  for (const std::string& n : {name, config->name}) {
    if (n.empty()) continue;
    const std::string path = CacheFile(n, req.sandbox_id);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      LOG_WARN << "cannot remove CNI cache file " << path << ": " << ErrnoText(errno);
    }
  }
  return absl::OkStatus();
}

std::vector<RecordedAttachment> CniNetwork::RecordedAttachments() const {
  std::vector<RecordedAttachment> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(options_.cache_dir + "/results", ec)) {
    std::optional<std::string> text = common::ReadWholeFile(entry.path().string());
    if (!text) continue;
    json doc = json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object() || doc["kind"] != kCacheKind || doc[kCreatedByKey] != options_.owner) continue;
    if (!doc["networkName"].is_string() || !doc["containerId"].is_string()) continue;
    RecordedAttachment a{doc["networkName"].get<std::string>(), doc["containerId"].get<std::string>()};
    // Only a file at the name TearDown would remove.
    if (entry.path().string() == CacheFile(a.network_name, a.sandbox_id)) found.push_back(std::move(a));
  }
  return found;
}

std::vector<std::string> CniNetwork::RemoveInterruptedWrites() {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(options_.cache_dir + "/results", ec)) {
    const std::string name = entry.path().filename().string();
    const size_t at = name.rfind(".tmp.");
    // Only ours: mkostemp's six characters after the marker.
    if (at == std::string::npos || name.size() != at + 5 + 6) continue;
    if (std::filesystem::remove(entry.path(), ec)) removed.push_back(entry.path().string());
  }
  return removed;
}

namespace {

// A libcni cache record of `sandbox_id` read from the file `name`; INVALID_ARGUMENT says why it is unusable.
absl::StatusOr<CachedAttachment> DecodeCachedAttachment(const std::string& text, const std::string& sandbox_id,
                                                        const std::string& name) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return absl::InvalidArgumentError("not JSON");
  if (!doc.is_object() || doc.value("kind", json()) != kCacheKind)
    return absl::InvalidArgumentError("not a cniCacheV1 record");
  const json container = doc.value("containerId", json());
  const json network_name = doc.value("networkName", json());
  const json ifname = doc.value("ifName", json());
  if (!network_name.is_string() || !ifname.is_string() || container != sandbox_id)
    return absl::InvalidArgumentError("no networkName, ifName or containerId of this sandbox");
  CachedAttachment out;
  out.network.network_name = network_name.get<std::string>();
  out.network.interface = ifname.get<std::string>();
  if (name != absl::StrCat(out.network.network_name, "-", sandbox_id, "-", out.network.interface))
    return absl::InvalidArgumentError("its name is not <networkName>-<containerId>-<ifName>");
  const json result = doc.value("result", json());
  if (result.is_null()) return out;  // an ADD that returned nothing: no address
  absl::StatusOr<PodIps> ips = ParseResultIps(result, out.network.interface);
  if (!ips.ok()) return ips.status();
  out.network.ip = std::move(ips->primary);
  out.network.additional_ips = std::move(ips->additional);
  return out;
}

}  // namespace

absl::StatusOr<CachedAttachment> CniNetwork::CachedAttachmentOf(const std::string& sandbox_id) const {
  if (!IsValidCniIdentifier(sandbox_id))
    return absl::InvalidArgumentError(absl::StrCat("invalid sandbox ID \"", sandbox_id, "\" for CNI"));
  const std::string dir = options_.cache_dir + "/results";
  const std::string infix = absl::StrCat("-", sandbox_id, "-");
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.find(infix) != std::string::npos) names.push_back(std::move(name));
  }
  std::sort(names.begin(), names.end());
  absl::Status unusable;
  for (const std::string& name : names) {
    const std::string path = absl::StrCat(dir, "/", name);
    std::optional<std::string> text = common::ReadWholeFile(path);
    if (!text) continue;  // removed meanwhile
    absl::StatusOr<CachedAttachment> attachment = DecodeCachedAttachment(*text, sandbox_id, name);
    if (attachment.ok()) {
      attachment->file = path;
      return attachment;
    }
    if (unusable.ok()) unusable = absl::InvalidArgumentError(absl::StrCat(path, ": ", attachment.status().message()));
  }
  if (!unusable.ok()) return unusable;
  return absl::NotFoundError(absl::StrCat("no CNI result of sandbox ", sandbox_id, " is cached in ", dir));
}

absl::Status CniNetwork::Check(const common::Context& ctx, const PodNetworkRequest& req,
                               const std::string& network_name) {
  if (!IsValidCniIdentifier(req.sandbox_id) || !IsValidCniIdentifier(network_name))
    return absl::InvalidArgumentError("CNI CHECK needs a valid sandbox ID and network name");
  std::optional<Cached> cached = ReadCache(network_name, req.sandbox_id);
  if (!cached)
    return absl::NotFoundError(absl::StrCat("no CNI attachment of sandbox ", req.sandbox_id, " to network ",
                                            network_name, " is cached in ", options_.cache_dir));
  const CniNetworkConfig& config = cached->config;
  if (!CniVersionAtLeast(config.cni_version, "0.4.0"))
    return absl::FailedPreconditionError(
        absl::StrCat(NetworkLabel(config), " has cniVersion \"", config.cni_version, "\"; CHECK needs 0.4.0 or later"));
  if (config.disable_check) return absl::OkStatus();
  Attachment attachment = cached->attachment;
  attachment.netns = req.netns_path;
  for (size_t i = 0; i < config.plugins().size(); ++i) {
    absl::StatusOr<std::string> out = Run(ctx, config, i, "CHECK", attachment, cached->result);
    if (!out.ok()) return common::Annotate(out.status(), NetworkLabel(config));
  }
  return absl::OkStatus();
}

}  // namespace network
