#include "shim/network/cni_config.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/log.h"

namespace network {
namespace {

using nlohmann::json;

// Records only the first syntax error, to say where a file is broken; nlohmann's
// DOM parser without exceptions just reports "discarded".
class ErrorLocator : public nlohmann::json_sax<json> {
 public:
  std::string error;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
    absl::string_view what = ex.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
    if (size_t end = what.find("] "); absl::StartsWith(what, "[json.exception") && end != what.npos)
      what.remove_prefix(end + 2);
    error = std::string(what);
    return false;
  }
};

absl::StatusOr<json> ParseJsonObject(absl::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    ErrorLocator locator;
    json::sax_parse(text, &locator);
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON: ", locator.error));
  }
  if (!doc.is_object()) return absl::InvalidArgumentError("not a JSON object");
  return doc;
}

std::string StringField(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

// Empty when the plugin object is usable.
std::string PluginProblem(const json& plugin) {
  if (!plugin.is_object()) return "not an object";
  std::string type = StringField(plugin, "type");
  if (type.empty()) return "missing \"type\"";
  // The type is looked up as a file name in the bin dirs; no paths.
  if (absl::StrContains(type, '/') || type == "." || type == "..")
    return absl::StrCat("type \"", type, "\" is not a plain file name");
  return "";
}

absl::StatusOr<std::string> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError("cannot be read");
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::array<int, 3> VersionTriple(absl::string_view version) {
  std::array<int, 3> triple{0, 1, 0};
  std::vector<absl::string_view> parts = absl::StrSplit(version, '.');
  if (parts.size() != 3) return triple;
  std::array<int, 3> parsed{};
  for (size_t i = 0; i < 3; ++i)
    if (!absl::SimpleAtoi(parts[i], &parsed[i])) return triple;
  return parsed;
}

// Returns 4 or 6, or 0 for something that is not an IP address.
int IpFamily(const std::string& ip) {
  unsigned char buf[16];
  if (inet_pton(AF_INET, ip.c_str(), buf) == 1) return 4;
  if (inet_pton(AF_INET6, ip.c_str(), buf) == 1) return 6;
  return 0;
}

}  // namespace

absl::StatusOr<CniNetworkConfig> ParseNetworkConfig(absl::string_view text, bool single_plugin) {
  auto doc = ParseJsonObject(text);
  if (!doc.ok()) return doc.status();
  CniNetworkConfig config;
  if (single_plugin) {
    if (std::string problem = PluginProblem(*doc); !problem.empty()) return absl::InvalidArgumentError(problem);
    config.list = json{{"name", StringField(*doc, "name")}, {"plugins", json::array({*doc})}};
    if (auto version = doc->find("cniVersion"); version != doc->end()) config.list["cniVersion"] = *version;
  } else {
    config.list = std::move(*doc);
  }
  const json& list = config.list;
  config.name = StringField(list, "name");
  if (config.name.empty()) return absl::InvalidArgumentError("missing \"name\"");
  if (!IsValidCniIdentifier(config.name))
    return absl::InvalidArgumentError(
        absl::StrCat("network name \"", config.name, "\" must be letters, digits, '_', '.' and '-'"));
  if (auto it = list.find("cniVersion"); it != list.end() && !it->is_string())
    return absl::InvalidArgumentError("\"cniVersion\" is not a string");
  config.cni_version = StringField(list, "cniVersion");
  auto plugins = list.find("plugins");
  if (plugins == list.end()) return absl::InvalidArgumentError("missing \"plugins\"");
  if (!plugins->is_array() || plugins->empty())
    return absl::InvalidArgumentError("\"plugins\" is not a non-empty list");
  for (size_t i = 0; i < plugins->size(); ++i)
    if (std::string problem = PluginProblem((*plugins)[i]); !problem.empty())
      return absl::InvalidArgumentError(absl::StrCat("plugins[", i, "]: ", problem));
  // libcni accepts a bool or the strings "true"/"false".
  if (auto it = list.find("disableCheck"); it != list.end())
    config.disable_check = it->is_boolean() ? it->get<bool>() : (it->is_string() && it->get<std::string>() == "true");
  return config;
}

bool IsValidCniIdentifier(absl::string_view id) {
  if (id.empty() || !absl::ascii_isalnum(id[0])) return false;
  return std::all_of(id.begin(), id.end(),
                     [](char c) { return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '-'; });
}

bool IsNetworkConfigFileName(absl::string_view file_name) {
  return absl::EndsWith(file_name, ".conflist") || absl::EndsWith(file_name, ".conf") ||
         absl::EndsWith(file_name, ".json");
}

absl::StatusOr<CniNetworkConfig> LoadDefaultNetworkConfig(const std::string& conf_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> names;
  for (fs::directory_iterator it(conf_dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (IsNetworkConfigFileName(name) && it->is_regular_file(ec)) names.push_back(std::move(name));
  }
  if (names.empty()) return absl::NotFoundError(absl::StrCat("no CNI network config found in ", conf_dir));
  std::sort(names.begin(), names.end());

  std::vector<std::string> rejected;
  for (const std::string& name : names) {
    const fs::path path = fs::path(conf_dir) / name;
    absl::StatusOr<std::string> text = ReadFile(path);
    absl::StatusOr<CniNetworkConfig> config =
        text.ok() ? ParseNetworkConfig(*text, !absl::EndsWith(name, ".conflist")) : text.status();
    if (config.ok()) {
      config->file = path.string();
      return config;
    }
    LOG_WARN << "skipping CNI config " << path.string() << ": " << config.status().message();
    rejected.push_back(absl::StrCat(name, ": ", config.status().message()));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("no valid CNI network config in ", conf_dir, ": ", absl::StrJoin(rejected, "; ")));
}

bool CniVersionAtLeast(absl::string_view version, absl::string_view minimum) {
  return VersionTriple(version) >= VersionTriple(minimum);
}

std::vector<std::pair<std::string, std::string>> CniArgs(const PodNetworkRequest& req) {
  // IgnoreUnknown first, as kubelet does: plugins that parse in order must know it
  // before they meet the K8S_ keys they do not declare.
  return {{"IgnoreUnknown", "1"},
          {"K8S_POD_NAMESPACE", req.pod_namespace},
          {"K8S_POD_NAME", req.pod_name},
          {"K8S_POD_INFRA_CONTAINER_ID", req.sandbox_id},
          {"K8S_POD_UID", req.pod_uid}};
}

std::string JoinCniArgs(const std::vector<std::pair<std::string, std::string>>& args) {
  return absl::StrJoin(args, ";", absl::PairFormatter("="));
}

json CapabilityArgs(const PodNetworkRequest& req, const std::string& pod_cidr) {
  json args = json::object();
  json ports = json::array();
  for (const PortMapping& p : req.port_mappings) {
    if (p.host_port <= 0) continue;  // nothing for portmap to do
    json entry = {{"hostPort", p.host_port},
                  {"containerPort", p.container_port},
                  {"protocol", absl::AsciiStrToLower(p.protocol)}};
    if (!p.host_ip.empty()) entry["hostIP"] = p.host_ip;
    ports.push_back(std::move(entry));
  }
  args["portMappings"] = std::move(ports);

  if (req.bandwidth && (req.bandwidth->ingress_bits_per_second > 0 || req.bandwidth->egress_bits_per_second > 0)) {
    constexpr int64_t kBurstBits = INT32_MAX;
    json bw = json::object();
    if (req.bandwidth->ingress_bits_per_second > 0) {
      bw["ingressRate"] = req.bandwidth->ingress_bits_per_second;
      bw["ingressBurst"] = kBurstBits;
    }
    if (req.bandwidth->egress_bits_per_second > 0) {
      bw["egressRate"] = req.bandwidth->egress_bits_per_second;
      bw["egressBurst"] = kBurstBits;
    }
    args["bandwidth"] = std::move(bw);
  }

  // Kubelet passes a dual-stack node's CIDRs comma-separated; one range set per family.
  json ranges = json::array();
  for (absl::string_view cidr : absl::StrSplit(pod_cidr, ',', absl::SkipWhitespace()))
    ranges.push_back(json::array({json{{"subnet", std::string(absl::StripAsciiWhitespace(cidr))}}}));
  if (!ranges.empty()) args["ipRanges"] = std::move(ranges);
  return args;
}

json BuildPluginConfig(const CniNetworkConfig& config, size_t index, const json& prev_result,
                       const json& capability_args) {
  json conf = config.plugins().at(index);
  conf["name"] = config.name;
  conf["cniVersion"] = config.cni_version;
  if (!prev_result.is_null())
    conf["prevResult"] = prev_result;
  else
    conf.erase("prevResult");
  json runtime = json::object();
  if (auto caps = conf.find("capabilities"); caps != conf.end() && caps->is_object()) {
    for (const auto& [capability, enabled] : caps->items()) {
      if (!enabled.is_boolean() || !enabled.get<bool>()) continue;
      if (auto arg = capability_args.find(capability); arg != capability_args.end()) runtime[capability] = *arg;
    }
  }
  if (!runtime.empty()) conf["runtimeConfig"] = std::move(runtime);
  return conf;
}

absl::StatusOr<PodIps> ParseResultIps(const json& result, absl::string_view ifname) {
  if (!result.is_object()) return absl::InvalidArgumentError("CNI result is not a JSON object");
  std::vector<std::string> ips;
  auto add = [&ips](const json& cidr) -> absl::Status {
    if (!cidr.is_string()) return absl::InvalidArgumentError("CNI result has an address that is not a string");
    std::string text = cidr.get<std::string>();
    std::string ip = text.substr(0, text.find('/'));
    if (IpFamily(ip) == 0)
      return absl::InvalidArgumentError(absl::StrCat("CNI result has an invalid address \"", text, "\""));
    ips.push_back(std::move(ip));
    return absl::OkStatus();
  };

  if (auto list = result.find("ips"); list != result.end()) {
    if (!list->is_array()) return absl::InvalidArgumentError("CNI result \"ips\" is not a list");
    const json empty = json::array();
    auto ifaces = result.find("interfaces");
    const json& interfaces = ifaces != result.end() && ifaces->is_array() ? *ifaces : empty;
    for (const json& entry : *list) {
      if (!entry.is_object()) return absl::InvalidArgumentError("CNI result has an IP entry that is not an object");
      if (auto idx = entry.find("interface");
          idx != entry.end() && idx->is_number_unsigned() && idx->get<size_t>() < interfaces.size()) {
        const json& iface = interfaces[idx->get<size_t>()];
        if (iface.is_object() && StringField(iface, "sandbox").empty() && StringField(iface, "name") != ifname)
          continue;
      }
      auto address = entry.find("address");
      if (address == entry.end()) return absl::InvalidArgumentError("CNI result has an IP entry without \"address\"");
      if (absl::Status s = add(*address); !s.ok()) return s;
    }
  } else {
    for (const char* key : {"ip4", "ip6"}) {
      auto it = result.find(key);
      if (it == result.end() || it->is_null()) continue;
      if (!it->is_object() || !it->contains("ip"))
        return absl::InvalidArgumentError(absl::StrCat("CNI result \"", key, "\" has no \"ip\""));
      if (absl::Status s = add((*it)["ip"]); !s.ok()) return s;
    }
  }

  return OrderPodIps(std::move(ips));
}

PodIps OrderPodIps(std::vector<std::string> ips) {
  PodIps out;
  auto primary = std::find_if(ips.begin(), ips.end(), [](const std::string& ip) { return IpFamily(ip) == 4; });
  if (primary == ips.end()) primary = ips.begin();
  for (auto it = ips.begin(); it != ips.end(); ++it) {
    if (it == primary)
      out.primary = std::move(*it);
    else
      out.additional.push_back(std::move(*it));
  }
  return out;
}

absl::Status PluginFailure(absl::string_view plugin, absl::string_view command, absl::string_view how_it_exited,
                           absl::string_view stdout_text, absl::string_view stderr_text) {
  std::string prefix = absl::StrCat("CNI plugin ", plugin, " failed (", command, ")");
  json err = json::parse(stdout_text, nullptr, /*allow_exceptions=*/false);
  if (err.is_object() && err.contains("msg") && err["msg"].is_string()) {
    std::string message = absl::StrCat(prefix, ": ", err["msg"].get<std::string>());
    if (std::string details = StringField(err, "details"); !details.empty()) absl::StrAppend(&message, ": ", details);
    auto code = err.find("code");
    constexpr int kTryAgainLater = 11;
    if (code != err.end() && code->is_number_integer() && code->get<int>() == kTryAgainLater)
      return absl::UnavailableError(message);
    return absl::InternalError(message);
  }
  std::string message = absl::StrCat(prefix, ": ", how_it_exited);
  // A plugin that dies without the error JSON (a crash, a script) says why on
  // stderr, and a Go panic says it first, before the goroutine dump.
  constexpr size_t kMaxStderr = 2000;
  absl::string_view head = absl::StripAsciiWhitespace(stderr_text).substr(0, kMaxStderr);
  if (!head.empty()) absl::StrAppend(&message, ": ", head);
  return absl::InternalError(message);
}

}  // namespace network
