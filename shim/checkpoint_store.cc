#include "shim/checkpoint_store.h"

// On-disk format (one file per sandbox, named by the sandbox ID):
//   {"version":"dockershim/v1","data":{...},"checksum":"crc32:<8 lowercase hex>"}
// The checksum is zlib's crc32 over data.dump(): nlohmann's compact dump with
// object keys sorted, so it is the same whichever program re-serializes the data.
//
// cri-dockerd checkpoints ({"version":"v1","name":..,"namespace":..,
// "data":{"port_mappings":[..],"host_network":bool},"checksum":<uint>}) live in
// <cri-dockerd root>/sandbox/<id>, or in ours when both roots are one directory. Their
// checksum (FNV-32a over a go-spew dump of its Go structures) is not verified on
// import, the JSON shape is; EncodeCriDockerdCheckpoint computes it for the files the
// switch back to cri-dockerd writes. Such a file is imported
// read-only: its port mappings and host_network are used, network_plugin is "cni" and
// network_name is empty (until adoption finds the network in the CNI cache). It is
// left untouched, so switching back to cri-dockerd keeps working: in cri-dockerd's
// directory until RemovePodSandbox, in a shared one until this store writes that
// sandbox. An unusable file in cri-dockerd's directory is logged once and left there.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <iterator>
#include <set>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/no_wait.h"
#include "common/status.h"

namespace shim {
namespace {

using json = nlohmann::json;

constexpr char kVersion[] = "dockershim/v1";
constexpr char kCriDockerdVersion[] = "v1";
constexpr char kChecksumPrefix[] = "crc32:";
constexpr char kTmpSuffix[] = ".tmp";
constexpr char kCorruptSuffix[] = ".corrupt";
constexpr char kSandboxDir[] = "sandbox";
// Keeps "<id>.corrupt" within NAME_MAX; Docker IDs are 64 characters.
constexpr size_t kMaxIdLength = 200;
// A checkpoint is a few hundred bytes; anything this large is not one of ours.
constexpr off_t kMaxFileSize = 1 << 20;

bool EndsWith(const std::string& s, absl::string_view suffix) {
  return s.size() >= suffix.size() && absl::string_view(s).substr(s.size() - suffix.size()) == suffix;
}

absl::Status ValidateId(const std::string& id) {
  if (id.empty()) return absl::InvalidArgumentError("checkpoint: empty sandbox ID");
  if (id.size() > kMaxIdLength) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint: sandbox ID longer than ", kMaxIdLength, " characters"));
  }
  if (id.front() == '.' || id.find('/') != std::string::npos || id.find('\0') != std::string::npos ||
      EndsWith(id, kTmpSuffix) || EndsWith(id, kCorruptSuffix)) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint: invalid sandbox ID \"", id, "\""));
  }
  return absl::OkStatus();
}

absl::Status ErrnoStatus(int err, absl::string_view what, const std::string& path) {
  std::string message = absl::StrCat(what, " ", path, ": ", std::strerror(err));
  if (err == ENOENT) return absl::NotFoundError(message);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(message);
  return absl::InternalError(message);
}

// Canonical text of `data` (sorted keys, compact). Invalid UTF-8 is replaced
// rather than throwing; CRI strings are UTF-8 anyway.
std::string Canonical(const json& data) { return data.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string Checksum(const json& data) {
  std::string text = Canonical(data);
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size()));
  return absl::StrFormat("%s%08x", kChecksumPrefix, static_cast<uint32_t>(crc));
}

json ToJson(const SandboxCheckpoint& c) {
  json data = json::object();
  data["sandbox_id"] = c.sandbox_id;
  data["name"] = c.name;
  data["namespace"] = c.namespace_;
  data["uid"] = c.uid;
  data["host_network"] = c.host_network;
  json ports = json::array();
  for (const auto& pm : c.port_mappings) {
    ports.push_back({{"protocol", pm.protocol},
                     {"container_port", pm.container_port},
                     {"host_port", pm.host_port},
                     {"host_ip", pm.host_ip}});
  }
  data["port_mappings"] = std::move(ports);
  if (c.bandwidth.has_value()) {
    data["bandwidth"] = {{"ingress_bits_per_second", c.bandwidth->ingress_bits_per_second},
                         {"egress_bits_per_second", c.bandwidth->egress_bits_per_second}};
  }
  data["network_plugin"] = c.network_plugin;
  data["network_name"] = c.network_name;
  data["netns_path"] = c.netns_path;
  data["ip"] = c.ip;
  data["additional_ips"] = c.additional_ips;
  data["network_torn_down"] = c.network_torn_down;
  if (c.pending) data["pending"] = true;  // only when set, like pod_resources
  // Only when set: an older checkpoint re-encoded keeps its checksum.
  if (!c.pod_resources.is_null()) data["pod_resources"] = c.pod_resources;
  if (!c.adopted_from.empty()) data["adopted_from"] = c.adopted_from;
  return data;
}

// Field readers: a missing key keeps the default (fields added later in v1 stay
// readable by older code and vice versa); a key of the wrong type is an error.
absl::Status GetString(const json& obj, const char* key, std::string* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_string()) return absl::InvalidArgumentError(absl::StrCat("field \"", key, "\" is not a string"));
  *out = it->get<std::string>();
  return absl::OkStatus();
}

absl::Status GetBool(const json& obj, const char* key, bool* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_boolean()) return absl::InvalidArgumentError(absl::StrCat("field \"", key, "\" is not a boolean"));
  *out = it->get<bool>();
  return absl::OkStatus();
}

template <typename Int>
absl::Status GetInt(const json& obj, const char* key, Int min, Int max, Int* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_number_integer()) return absl::InvalidArgumentError(absl::StrCat("field \"", key, "\" is not an integer"));
  bool in_range;
  if (it->is_number_unsigned()) {
    uint64_t v = it->get<uint64_t>();
    in_range = v <= static_cast<uint64_t>(max);
  } else {
    int64_t v = it->get<int64_t>();
    in_range = v >= static_cast<int64_t>(min) && v <= static_cast<int64_t>(max);
  }
  if (!in_range) return absl::InvalidArgumentError(absl::StrCat("field \"", key, "\" is out of range"));
  *out = it->get<Int>();
  return absl::OkStatus();
}

absl::Status GetPortMappings(const json& obj, std::vector<network::PortMapping>* out) {
  auto it = obj.find("port_mappings");
  if (it == obj.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_array()) return absl::InvalidArgumentError("field \"port_mappings\" is not an array");
  for (const json& item : *it) {
    if (!item.is_object()) return absl::InvalidArgumentError("a port mapping is not an object");
    network::PortMapping pm;
    RETURN_IF_ERROR(GetString(item, "protocol", &pm.protocol));
    if (pm.protocol.empty()) pm.protocol = "tcp";
    // Only the C++ type's range is enforced: whatever Write stored must read back.
    RETURN_IF_ERROR(GetInt<int>(item, "container_port", INT_MIN, INT_MAX, &pm.container_port));
    RETURN_IF_ERROR(GetInt<int>(item, "host_port", INT_MIN, INT_MAX, &pm.host_port));
    RETURN_IF_ERROR(GetString(item, "host_ip", &pm.host_ip));
    out->push_back(std::move(pm));
  }
  return absl::OkStatus();
}

absl::StatusOr<SandboxCheckpoint> FromJson(const json& data) {
  SandboxCheckpoint c;
  RETURN_IF_ERROR(GetString(data, "sandbox_id", &c.sandbox_id));
  RETURN_IF_ERROR(GetString(data, "name", &c.name));
  RETURN_IF_ERROR(GetString(data, "namespace", &c.namespace_));
  RETURN_IF_ERROR(GetString(data, "uid", &c.uid));
  RETURN_IF_ERROR(GetBool(data, "host_network", &c.host_network));
  RETURN_IF_ERROR(GetPortMappings(data, &c.port_mappings));
  if (auto it = data.find("bandwidth"); it != data.end() && !it->is_null()) {
    if (!it->is_object()) return absl::InvalidArgumentError("field \"bandwidth\" is not an object");
    network::Bandwidth bw;
    RETURN_IF_ERROR(GetInt<int64_t>(*it, "ingress_bits_per_second", INT64_MIN, INT64_MAX, &bw.ingress_bits_per_second));
    RETURN_IF_ERROR(GetInt<int64_t>(*it, "egress_bits_per_second", INT64_MIN, INT64_MAX, &bw.egress_bits_per_second));
    c.bandwidth = bw;
  }
  RETURN_IF_ERROR(GetString(data, "network_plugin", &c.network_plugin));
  RETURN_IF_ERROR(GetString(data, "network_name", &c.network_name));
  RETURN_IF_ERROR(GetString(data, "netns_path", &c.netns_path));
  RETURN_IF_ERROR(GetString(data, "ip", &c.ip));
  if (auto it = data.find("additional_ips"); it != data.end() && !it->is_null()) {
    if (!it->is_array()) return absl::InvalidArgumentError("field \"additional_ips\" is not an array");
    for (const json& ip : *it) {
      if (!ip.is_string()) return absl::InvalidArgumentError("an entry of \"additional_ips\" is not a string");
      c.additional_ips.push_back(ip.get<std::string>());
    }
  }
  RETURN_IF_ERROR(GetBool(data, "network_torn_down", &c.network_torn_down));
  RETURN_IF_ERROR(GetBool(data, "pending", &c.pending));
  if (auto it = data.find("pod_resources"); it != data.end() && !it->is_null()) {
    if (!it->is_object()) return absl::InvalidArgumentError("field \"pod_resources\" is not an object");
    c.pod_resources = *it;
  }
  RETURN_IF_ERROR(GetString(data, "adopted_from", &c.adopted_from));
  return c;
}

absl::StatusOr<json> ParseJson(const std::string& text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return absl::InvalidArgumentError("checkpoint is not valid JSON (truncated or garbled)");
  if (!doc.is_object()) return absl::InvalidArgumentError("checkpoint is not a JSON object");
  return doc;
}

// cri-dockerd's PodSandboxCheckpoint: version "v1" and a numeric checksum.
bool LooksLikeCriDockerd(const json& doc) {
  auto version = doc.find("version");
  auto checksum = doc.find("checksum");
  return version != doc.end() && version->is_string() && version->get<std::string>() == kCriDockerdVersion &&
         checksum != doc.end() && checksum->is_number_integer();
}

bool IsCriDockerdShaped(const std::string& text) {
  absl::StatusOr<json> doc = ParseJson(text);
  return doc.ok() && LooksLikeCriDockerd(*doc);
}

absl::StatusOr<SandboxCheckpoint> ImportCriDockerd(const json& doc, const std::string& sandbox_id) {
  SandboxCheckpoint c;
  c.sandbox_id = sandbox_id;
  auto status = [](const absl::Status& s) {
    return absl::InvalidArgumentError(absl::StrCat("cri-dockerd checkpoint: ", s.message()));
  };
  if (auto s = GetString(doc, "name", &c.name); !s.ok()) return status(s);
  if (auto s = GetString(doc, "namespace", &c.namespace_); !s.ok()) return status(s);
  if (auto it = doc.find("data"); it != doc.end() && !it->is_null()) {
    if (!it->is_object()) return absl::InvalidArgumentError("cri-dockerd checkpoint: field \"data\" is not an object");
    if (auto s = GetBool(*it, "host_network", &c.host_network); !s.ok()) return status(s);
    if (auto s = GetPortMappings(*it, &c.port_mappings); !s.ok()) return status(s);
  }
  c.network_plugin = "cni";
  c.network_name.clear();  // tear down with whatever CNI config is current
  c.adopted_from = kAdoptedFromCriDockerd;
  return c;
}

struct Decoded {
  SandboxCheckpoint checkpoint;
  bool from_cri_dockerd = false;
};

// Decodes a file's text for `sandbox_id`: our format (the recorded ID must match
// the file name) or cri-dockerd's.
absl::StatusOr<Decoded> DecodeFile(const std::string& text, const std::string& sandbox_id) {
  ASSIGN_OR_RETURN(json doc, ParseJson(text));
  if (LooksLikeCriDockerd(doc)) {
    ASSIGN_OR_RETURN(SandboxCheckpoint c, ImportCriDockerd(doc, sandbox_id));
    return Decoded{std::move(c), true};
  }
  ASSIGN_OR_RETURN(SandboxCheckpoint c, DecodeCheckpoint(text));
  if (c.sandbox_id != sandbox_id) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint records sandbox_id \"", c.sandbox_id, "\" but is stored as \"", sandbox_id, "\""));
  }
  return Decoded{std::move(c), false};
}

// Writes `content` to `path` from scratch with mode 0600.
absl::Status WriteWholeFile(const std::string& path, const std::string& content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return ErrnoStatus(errno, "create", path);
  absl::Status status;
  // The file may have survived a crash with other permissions; open() keeps them.
  if (::fchmod(fd, 0600) != 0) status = ErrnoStatus(errno, "chmod", path);
  size_t done = 0;
  while (status.ok() && done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      status = ErrnoStatus(errno, "write", path);
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (status.ok() && ::fsync(fd) != 0) status = ErrnoStatus(errno, "fsync", path);
  if (::close(fd) != 0 && status.ok()) status = ErrnoStatus(errno, "close", path);
  return status;
}

absl::Status SyncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "open directory", dir);
  absl::Status status;
  if (::fsync(fd) != 0) status = ErrnoStatus(errno, "fsync directory", dir);
  ::close(fd);
  return status;
}

// Reads a regular file (not following symlinks). NOT_FOUND when absent;
// FAILED_PRECONDITION when the entry cannot be a checkpoint (symlink, not a
// regular file, too large); other codes for I/O errors.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ELOOP) return absl::FailedPreconditionError(absl::StrCat(path, " is a symbolic link"));
    return ErrnoStatus(errno, "open", path);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoStatus(err, "stat", path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::FailedPreconditionError(absl::StrCat(path, " is not a regular file"));
  }
  if (st.st_size > kMaxFileSize) {
    ::close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is too large for a checkpoint (", st.st_size, " bytes)"));
  }
  std::string content;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return ErrnoStatus(err, "read", path);
    }
    if (n == 0) break;
    content.append(buf, static_cast<size_t>(n));
    if (content.size() > static_cast<size_t>(kMaxFileSize)) {
      ::close(fd);
      return absl::FailedPreconditionError(absl::StrCat(path, " is too large for a checkpoint"));
    }
  }
  ::close(fd);
  return content;
}

absl::Status MakeDirectory(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) == 0) return absl::OkStatus();
  int err = errno;
  if (err == EEXIST) {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(path, " exists and is not a directory"));
  }
  if (err == ENOENT) {
    // Create missing parents (mkdir -p), then retry.
    auto slash = path.find_last_of('/');
    if (slash == std::string::npos || slash == 0) return ErrnoStatus(err, "mkdir", path);
    RETURN_IF_ERROR(MakeDirectory(path.substr(0, slash)));
    if (::mkdir(path.c_str(), 0700) == 0 || errno == EEXIST) return absl::OkStatus();
    err = errno;
  }
  return ErrnoStatus(err, "mkdir", path);
}

// "/a/b/" and "/a//b" are "/a/b".
std::string Normalized(const std::string& path) {
  std::string normal = std::filesystem::path(path).lexically_normal().string();
  while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  return normal;
}

bool SameDirectory(const std::string& a, const std::string& b) {
  if (Normalized(a) == Normalized(b)) return true;
  struct stat sa, sb;
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void LogImported(const std::string& sandbox_id, const Decoded& decoded, const std::string& path) {
  const SandboxCheckpoint& c = decoded.checkpoint;
  if (!decoded.from_cri_dockerd) {
    LOG_INFO << "checkpoint for sandbox " << sandbox_id << " (" << c.namespace_ << "/" << c.name << ") read from "
             << path << ", left as it is";
    return;
  }
  LOG_INFO << "checkpoint for sandbox " << sandbox_id << " (" << c.namespace_ << "/" << c.name
           << ") imported from cri-dockerd's " << path << ", left as it is: host_network="
           << (c.host_network ? "true" : "false") << ", port_mappings=" << c.port_mappings.size();
}

}  // namespace

std::string EncodeCheckpoint(const SandboxCheckpoint& checkpoint) {
  json data = ToJson(checkpoint);
  json doc = json::object();
  doc["version"] = kVersion;
  doc["checksum"] = Checksum(data);
  doc["data"] = std::move(data);
  return Canonical(doc) + "\n";
}

absl::StatusOr<SandboxCheckpoint> DecodeCheckpoint(const std::string& text) {
  ASSIGN_OR_RETURN(json doc, ParseJson(text));
  auto version = doc.find("version");
  if (version == doc.end() || !version->is_string()) {
    return absl::InvalidArgumentError("checkpoint has no \"version\" string");
  }
  if (version->get<std::string>() != kVersion) {
    std::string hint = LooksLikeCriDockerd(doc) ? " (a cri-dockerd checkpoint)" : "";
    return absl::InvalidArgumentError(absl::StrCat("unsupported checkpoint version \"", version->get<std::string>(),
                                                   "\"", hint, ", want \"", kVersion, "\""));
  }
  auto data = doc.find("data");
  if (data == doc.end() || !data->is_object()) return absl::InvalidArgumentError("checkpoint has no \"data\" object");
  auto checksum = doc.find("checksum");
  if (checksum == doc.end() || !checksum->is_string()) {
    return absl::InvalidArgumentError("checkpoint has no \"checksum\" string");
  }
  std::string want = Checksum(*data);
  if (checksum->get<std::string>() != want) {
    return absl::DataLossError(
        absl::StrCat("checkpoint checksum mismatch: file says ", checksum->get<std::string>(), ", data hashes to ", want));
  }
  auto decoded = FromJson(*data);
  if (!decoded.ok()) return absl::InvalidArgumentError(absl::StrCat("checkpoint data: ", decoded.status().message()));
  if (decoded->sandbox_id.empty()) return absl::InvalidArgumentError("checkpoint data has no sandbox_id");
  return decoded;
}

namespace {

// cri-dockerd's checksum (its store/checksum.go): FNV-1a 32 over go-spew's "%#v" of the
// checkpoint's Data, a core.CheckpointData value, printed with spew's types and
// DisableMethods; its pointers print as "<*>" inside a slice, "(*T)" as fields.
uint32_t CriDockerdChecksum(const SandboxCheckpoint& c) {
  std::string dump = "(core.CheckpointData){PortMappings:([]*config.PortMapping)";
  if (c.port_mappings.empty()) {
    absl::StrAppend(&dump, "<nil>");  // omitted from the JSON, so nil once read back
  } else {
    absl::StrAppend(&dump, "[");
    for (size_t i = 0; i < c.port_mappings.size(); ++i) {
      const network::PortMapping& pm = c.port_mappings[i];
      absl::StrAppend(&dump, i == 0 ? "" : " ", "<*>{Protocol:(*config.Protocol)", pm.protocol,
                      " ContainerPort:(*int32)", pm.container_port, " HostPort:(*int32)", pm.host_port,
                      " HostIP:(string)", pm.host_ip, "}");
    }
    absl::StrAppend(&dump, "]");
  }
  absl::StrAppend(&dump, " HostNetwork:(bool)", c.host_network ? "true" : "false", "}");
  uint32_t hash = 2166136261u;
  for (unsigned char byte : dump) hash = (hash ^ byte) * 16777619u;
  return hash;
}

}  // namespace

std::string EncodeCriDockerdCheckpoint(const SandboxCheckpoint& c) {
  // Go's encoding/json order (the structs' fields) and its omitempty fields.
  using ordered = nlohmann::ordered_json;
  ordered data = ordered::object();
  if (!c.port_mappings.empty()) {
    ordered ports = ordered::array();
    for (const network::PortMapping& pm : c.port_mappings) {
      ordered port = {{"protocol", pm.protocol}, {"container_port", pm.container_port}, {"host_port", pm.host_port}};
      if (!pm.host_ip.empty()) port["host_ip"] = pm.host_ip;
      ports.push_back(std::move(port));
    }
    data["port_mappings"] = std::move(ports);
  }
  if (c.host_network) data["host_network"] = true;
  const ordered doc = {{"version", kCriDockerdVersion},
                       {"name", c.name},
                       {"namespace", c.namespace_},
                       {"data", std::move(data)},
                       {"checksum", CriDockerdChecksum(c)}};
  // Go escapes <, > and & in strings; they appear nowhere else in the text.
  std::string text;
  for (char ch : doc.dump(-1, ' ', false, json::error_handler_t::replace)) {
    if (ch == '<') text += "\\u003c";
    else if (ch == '>') text += "\\u003e";
    else if (ch == '&') text += "\\u0026";
    else text += ch;
  }
  return text;
}

absl::StatusOr<SandboxCheckpoint> DecodeCriDockerdCheckpoint(const std::string& text, const std::string& sandbox_id) {
  ASSIGN_OR_RETURN(json doc, ParseJson(text));
  if (!LooksLikeCriDockerd(doc)) {
    return absl::InvalidArgumentError("not a cri-dockerd checkpoint (version \"v1\" and a numeric checksum)");
  }
  return ImportCriDockerd(doc, sandbox_id);
}

std::string SandboxDirectoryOf(const std::string& root) {
  return absl::StrCat(root, root.empty() || root.back() == '/' ? "" : "/", kSandboxDir);
}

CheckpointStore::CheckpointStore(std::string root_directory, std::string cri_dockerd_root_directory)
    : dir_(SandboxDirectoryOf(root_directory)) {
  if (cri_dockerd_root_directory.empty()) return;
  cri_dockerd_dir_ = SandboxDirectoryOf(cri_dockerd_root_directory);
  if (Normalized(cri_dockerd_dir_) == Normalized(dir_)) {
    shared_with_cri_dockerd_ = true;
    cri_dockerd_dir_.clear();
  }
}

std::string CheckpointStore::PathOf(const std::string& sandbox_id) const { return absl::StrCat(dir_, "/", sandbox_id); }

std::string CheckpointStore::CriDockerdPathOf(const std::string& sandbox_id) const {
  return absl::StrCat(cri_dockerd_dir_, "/", sandbox_id);
}

absl::Status CheckpointStore::Init() {
  std::lock_guard<std::mutex> lock(mu_);
  RETURN_IF_ERROR(MakeDirectory(dir_));
  if (!cri_dockerd_dir_.empty() && SameDirectory(dir_, cri_dockerd_dir_)) {
    shared_with_cri_dockerd_ = true;
    cri_dockerd_dir_.clear();
  }
  // The setup documented before the two directories were told apart.
  if (shared_with_cri_dockerd_) {
    LOG_WARN << "--root-directory and --cri-dockerd-root-directory name one directory: checkpoints in " << dir_
             << " are shared with cri-dockerd, and pods adopted from cri-dockerd keep their IPs in memory only. "
             << "Separate directories are recommended (docs/migrating-from-cri-dockerd.md)";
  }
  // Temp files of writes interrupted by a crash; the rename never happened, so
  // the previous checkpoint (if any) is intact.
  if (DIR* d = ::opendir(dir_.c_str())) {
    while (struct dirent* entry = ::readdir(d)) {
      std::string name = entry->d_name;
      if (name.size() > std::strlen(kTmpSuffix) && EndsWith(name, kTmpSuffix) && name.front() != '.') {
        std::string path = PathOf(name);
        if (::unlink(path.c_str()) == 0) LOG_INFO << "checkpoint: removed stale temp file " << path;
      }
    }
    ::closedir(d);
  }
  return absl::OkStatus();
}

std::mutex& CheckpointStore::LockOf(const std::string& sandbox_id) {
  return sandbox_locks_[std::hash<std::string>{}(sandbox_id) % sandbox_locks_.size()];
}

absl::Status CheckpointStore::Write(const SandboxCheckpoint& checkpoint) {
  RETURN_IF_ERROR(ValidateId(checkpoint.sandbox_id));
  std::string text = EncodeCheckpoint(checkpoint);
  std::string path = PathOf(checkpoint.sandbox_id);
  std::string tmp = absl::StrCat(path, kTmpSuffix);
  {
    std::lock_guard<std::mutex> sandbox(LockOf(checkpoint.sandbox_id));
    absl::Status status = WriteWholeFile(tmp, text);
    if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) status = ErrnoStatus(errno, "rename", tmp);
    if (!status.ok()) {
      ::unlink(tmp.c_str());
      return absl::Status(status.code(), absl::StrCat("write checkpoint: ", status.message()));
    }
    std::lock_guard<std::mutex> lock(mu_);
    cache_[checkpoint.sandbox_id] = Cached{checkpoint, false};
    unusable_cri_dockerd_.erase(path);  // replaced
  }
  // The rename is durable only once the directory entry is.
  if (absl::Status s = SyncDirectory(dir_); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("write checkpoint: ", s.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> CheckpointStore::Adopt(const SandboxCheckpoint& checkpoint) {
  RETURN_IF_ERROR(ValidateId(checkpoint.sandbox_id));
  {
    std::lock_guard<std::mutex> sandbox(LockOf(checkpoint.sandbox_id));
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = cache_.find(checkpoint.sandbox_id); it != cache_.end() && it->second.cri_dockerd_file_here) {
      it->second.checkpoint = checkpoint;
      return false;
    }
  }
  if (absl::Status written = Write(checkpoint); !written.ok()) {
    std::lock_guard<std::mutex> sandbox(LockOf(checkpoint.sandbox_id));
    std::lock_guard<std::mutex> lock(mu_);
    cache_[checkpoint.sandbox_id] = Cached{checkpoint, false};
    return written;
  }
  return true;
}

absl::StatusOr<SandboxCheckpoint> CheckpointStore::Read(const std::string& sandbox_id) {
  RETURN_IF_ERROR(ValidateId(sandbox_id));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = cache_.find(sandbox_id); it != cache_.end()) return it->second.checkpoint;
  }
  // The sandbox's lock may be held through a write's fsync.
  if (!common::MayWait()) return common::WouldWait(absl::StrCat("reading the checkpoint of sandbox ", sandbox_id));
  // The files are read under the sandbox's lock alone: other sandboxes' cache lookups go on.
  std::lock_guard<std::mutex> sandbox(LockOf(sandbox_id));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = cache_.find(sandbox_id); it != cache_.end()) return it->second.checkpoint;  // written meanwhile
  }
  absl::StatusOr<SandboxCheckpoint> ours = ReadOwn(sandbox_id);
  if (!absl::IsNotFound(ours.status()) || cri_dockerd_dir_.empty()) return ours;
  absl::StatusOr<std::optional<SandboxCheckpoint>> theirs = ReadCriDockerd(sandbox_id);
  if (!theirs.ok()) return theirs.status();
  if (theirs->has_value()) return std::move(**theirs);
  return ours;
}

absl::StatusOr<SandboxCheckpoint> CheckpointStore::ReadOwn(const std::string& sandbox_id) {
  std::string path = PathOf(sandbox_id);
  RETURN_IF_ERROR(NotKnownUnusable(path));
  absl::StatusOr<std::string> text = ReadWholeFile(path);
  if (!text.ok()) {
    if (absl::IsNotFound(text.status())) {
      return absl::NotFoundError(absl::StrCat("no checkpoint for sandbox ", sandbox_id));
    }
    // Not a file we can use (symlink, directory, huge): set it aside like a
    // corrupt one. I/O errors are reported and the file left alone.
    if (!absl::IsFailedPrecondition(text.status())) return text.status();
  }
  absl::StatusOr<Decoded> decoded =
      text.ok() ? DecodeFile(*text, sandbox_id) : absl::StatusOr<Decoded>(text.status());
  if (!decoded.ok() && text.ok() && IsCriDockerdShaped(*text)) {
    // A shared directory: cri-dockerd's own file, which must stay where cri-dockerd looks.
    return IgnoreUnusable(sandbox_id, path, decoded.status());
  }
  if (!decoded.ok()) {
    std::string aside = absl::StrCat(path, kCorruptSuffix);
    if (::rename(path.c_str(), aside.c_str()) == 0) {
      // Its age (RemoveCorruptOlderThan) counts from now, not from its last write.
      ::utimensat(AT_FDCWD, aside.c_str(), nullptr, 0);
      LOG_WARN << "checkpoint for sandbox " << sandbox_id << " is unusable (" << decoded.status().message()
               << "); moved it to " << aside;
    } else {
      LOG_ERROR << "checkpoint for sandbox " << sandbox_id << " is unusable (" << decoded.status().message()
                << ") and could not be moved to " << aside << ": " << std::strerror(errno);
    }
    return absl::NotFoundError(
        absl::StrCat("no usable checkpoint for sandbox ", sandbox_id, ": ", decoded.status().message()));
  }
  if (decoded->from_cri_dockerd) LogImported(sandbox_id, *decoded, path);
  std::lock_guard<std::mutex> lock(mu_);
  cache_[sandbox_id] = Cached{decoded->checkpoint, decoded->from_cri_dockerd};
  return std::move(decoded->checkpoint);
}

absl::StatusOr<std::optional<SandboxCheckpoint>> CheckpointStore::ReadCriDockerd(const std::string& sandbox_id) {
  const std::string path = CriDockerdPathOf(sandbox_id);
  RETURN_IF_ERROR(NotKnownUnusable(path));
  absl::StatusOr<std::string> text = ReadWholeFile(path);
  if (absl::IsNotFound(text.status())) return std::nullopt;
  // I/O errors are reported, and the file read again next time.
  if (!text.ok() && !absl::IsFailedPrecondition(text.status())) return text.status();
  absl::StatusOr<Decoded> decoded =
      text.ok() ? DecodeFile(*text, sandbox_id) : absl::StatusOr<Decoded>(text.status());
  if (!decoded.ok()) return IgnoreUnusable(sandbox_id, path, decoded.status());
  LogImported(sandbox_id, *decoded, path);
  std::lock_guard<std::mutex> lock(mu_);
  cache_[sandbox_id] = Cached{decoded->checkpoint, false};
  return std::move(decoded->checkpoint);
}

absl::Status CheckpointStore::NotKnownUnusable(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  if (unusable_cri_dockerd_.count(path) == 0) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat("cri-dockerd's checkpoint ", path, " is unusable (logged before)"));
}

absl::Status CheckpointStore::IgnoreUnusable(const std::string& sandbox_id, const std::string& path,
                                             const absl::Status& why) {
  LOG_WARN << "cri-dockerd's checkpoint " << path << " of sandbox " << sandbox_id << " is unusable (" << why.message()
           << "); ignored, and left where it is";
  std::lock_guard<std::mutex> lock(mu_);
  unusable_cri_dockerd_.insert(path);
  return absl::NotFoundError(absl::StrCat("cri-dockerd's checkpoint ", path, " is unusable: ", why.message()));
}

absl::Status CheckpointStore::Remove(const std::string& sandbox_id) {
  RETURN_IF_ERROR(ValidateId(sandbox_id));
  bool removed_theirs = false;
  {
    std::lock_guard<std::mutex> sandbox(LockOf(sandbox_id));
    {
      std::lock_guard<std::mutex> lock(mu_);
      cache_.erase(sandbox_id);
      unusable_cri_dockerd_.erase(PathOf(sandbox_id));
      if (!cri_dockerd_dir_.empty()) unusable_cri_dockerd_.erase(CriDockerdPathOf(sandbox_id));
    }
    const std::string path = PathOf(sandbox_id);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoStatus(errno, "remove checkpoint", path);
    if (!cri_dockerd_dir_.empty()) {
      // The pod is gone: cri-dockerd would only list it NOTREADY after a switch back.
      const std::string theirs = CriDockerdPathOf(sandbox_id);
      if (::unlink(theirs.c_str()) == 0) {
        removed_theirs = true;
        LOG_INFO << "removed cri-dockerd's checkpoint " << theirs << " with its pod sandbox";
      } else if (errno != ENOENT) {
        return ErrnoStatus(errno, "remove cri-dockerd's checkpoint", theirs);
      }
    }
  }
  if (absl::Status s = SyncDirectory(dir_); !s.ok()) LOG_WARN << "checkpoint: " << s.message();
  if (removed_theirs) {
    if (absl::Status s = SyncDirectory(cri_dockerd_dir_); !s.ok()) LOG_WARN << "checkpoint: " << s.message();
  }
  return absl::OkStatus();
}

CheckpointStore::IdList CheckpointStore::Candidates(const std::string& dir) {
  // A change to a directory moves its mtime, but by the file system's clock tick: a
  // change in the tick of the last read could leave it as it was. So a read is trusted
  // only if it began well after the mtime it saw.
  constexpr absl::Duration kMtimeTick = absl::Seconds(1);
  static const IdList kNone = std::make_shared<const std::vector<std::string>>();
  std::lock_guard<std::mutex> lock(mu_);
  auto unreadable = [&] {
    if (errno != ENOENT) LOG_WARN << "checkpoint: cannot list " << dir << ": " << std::strerror(errno);
    directory_reads_.erase(dir);
    return kNone;
  };
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return unreadable();
  const int64_t mtime_ns = absl::ToUnixNanos(absl::TimeFromTimespec(st.st_mtim));
  if (auto last = directory_reads_.find(dir);
      last != directory_reads_.end() && last->second.mtime_ns == mtime_ns && last->second.inode == st.st_ino &&
      last->second.began - absl::FromUnixNanos(mtime_ns) > kMtimeTick)
    return last->second.names;
  const absl::Time began = absl::Now();
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return unreadable();
  std::vector<std::string> names;
  while (struct dirent* entry = ::readdir(d)) {
    std::string name = entry->d_name;
    // Skips ".", "..", cri-dockerd's ".<random>" temp files, ours (*.tmp) and
    // files set aside (*.corrupt).
    if (!ValidateId(name).ok()) continue;
    if (entry->d_type != DT_REG && entry->d_type != DT_UNKNOWN && entry->d_type != DT_LNK) continue;
    names.push_back(std::move(name));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  auto read = std::make_shared<const std::vector<std::string>>(std::move(names));
  directory_reads_[dir] = DirectoryRead{mtime_ns, st.st_ino, began, read};
  return read;
}

CheckpointStore::IdList CheckpointStore::Ids() {
  IdList ours = Candidates(dir_);
  if (cri_dockerd_dir_.empty()) return ours;
  IdList theirs = Candidates(cri_dockerd_dir_);
  std::lock_guard<std::mutex> lock(mu_);
  if (merged_.of != std::pair{ours, theirs}) {
    std::vector<std::string> both;
    std::set_union(ours->begin(), ours->end(), theirs->begin(), theirs->end(), std::back_inserter(both));
    merged_ = {{ours, theirs}, std::make_shared<const std::vector<std::string>>(std::move(both))};
  }
  return merged_.ids;
}

std::vector<std::string> CheckpointStore::List() {
  // Only IDs that decode: a corrupt file of ours is set aside here, on first sight.
  std::vector<std::string> ids;
  const IdList all = Ids();  // held: a range-for would not keep the temporary alive
  for (const std::string& id : *all) {
    if (Read(id).ok()) ids.push_back(id);
  }
  return ids;
}

namespace {

// Unlinks the files of `dir` that `doomed` picks; returns their paths.
std::vector<std::string> RemoveFilesIf(const std::string& dir, const std::function<bool(const std::string& name,
                                                                                        const std::string& path)>& doomed) {
  std::vector<std::string> removed;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return removed;
  while (struct dirent* entry = ::readdir(d)) {
    const std::string name = entry->d_name;
    const std::string path = absl::StrCat(dir, "/", name);
    if (!doomed(name, path)) continue;
    if (::unlink(path.c_str()) == 0) {
      removed.push_back(path);
    } else {
      LOG_WARN << "checkpoint: cannot remove " << path << ": " << std::strerror(errno);
    }
  }
  ::closedir(d);
  return removed;
}

}  // namespace

std::vector<std::string> CheckpointStore::RemoveInterruptedWrites() {
  std::lock_guard<std::mutex> lock(mu_);
  return RemoveFilesIf(dir_, [](const std::string& name, const std::string&) { return EndsWith(name, kTmpSuffix); });
}

std::vector<std::string> CheckpointStore::RemoveCorruptOlderThan(absl::Duration age) {
  const absl::Time cutoff = absl::Now() - age;
  std::lock_guard<std::mutex> lock(mu_);
  return RemoveFilesIf(dir_, [cutoff](const std::string& name, const std::string& path) {
    struct stat st;
    return EndsWith(name, kCorruptSuffix) && ::lstat(path.c_str(), &st) == 0 && absl::TimeFromTimespec(st.st_mtim) < cutoff;
  });
}

}  // namespace shim
