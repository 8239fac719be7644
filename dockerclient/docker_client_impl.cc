#include "dockerclient/docker_client_impl.h"

#include <sys/un.h>

#include <algorithm>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/log.h"
#include "common/status.h"
#include "common/strings.h"
#include "dockerclient/api_version.h"
#include "dockerclient/errors.h"
#include "dockerclient/escape.h"
#include "dockerclient/stdcopy.h"

namespace dockerclient {
namespace {

using nlohmann::json;

using common::Av;

// Docker answers the stop request only after its own timeout and the SIGKILL that
// follows, so the request must outlive the stop timeout by this much.
constexpr absl::Duration kStopMargin = absl::Seconds(30);
// How long a stop waits for Docker's container list to show the exit.
constexpr int kListCatchUpAttempts = 100;
constexpr absl::Duration kListCatchUpInterval = absl::Milliseconds(5);
// dockerd starts an export's stream only once it has mounted the container's layers.
constexpr absl::Duration kExportIdleTimeout = absl::Minutes(2);

// Docker's IDs and names are [a-zA-Z0-9][a-zA-Z0-9_.-]*: anything else (a path such as
// "../../x", which Docker would answer with a redirect) names nothing it has.
absl::Status CheckObjectId(std::string_view id, std::string_view kind) {
  const bool valid = !id.empty() && id.size() <= 256 && absl::ascii_isalnum(static_cast<unsigned char>(id[0])) &&
                     std::all_of(id.begin(), id.end(), [](char ch) {
                       const auto c = static_cast<unsigned char>(ch);
                       return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '-';
                     });
  if (valid) return absl::OkStatus();
  // Escaped and cut: the id came from a client and goes into messages and logs.
  return absl::NotFoundError(
      absl::StrCat("no such ", Av(kind), ": \"", absl::CHexEscape(Av(id.substr(0, 80))), id.size() > 80 ? "...\"" : "\""));
}

// Docker routes image names with their '/', ':' and '@' literally
// (/images/registry:5000/foo/bar@sha256:.../json).
std::string ImagePath(std::string_view ref) { return Escape(ref, "/:@"); }

// Never throws: invalid UTF-8 in labels or names is replaced rather than rejected.
std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

absl::StatusOr<json> ParseBody(const HttpResponse& response, std::string_view operation) {
  json parsed = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return absl::InternalError(absl::StrCat(Av(operation), ": dockerd sent malformed JSON"));
  }
  return parsed;
}

absl::StatusOr<json> ParseList(const HttpResponse& response, std::string_view operation) {
  ASSIGN_OR_RETURN(json list, ParseBody(response, operation));
  if (list.is_null()) return json::array();
  if (!list.is_array()) return absl::InternalError(absl::StrCat(Av(operation), ": dockerd did not send a list"));
  return list;
}

// Docker's message in a progress line that reports failure, or "" for a normal line.
std::string PullLineError(const json& line) {
  const auto detail = line.find("errorDetail");
  if (detail != line.end() && detail->is_object()) {
    const auto message = detail->find("message");
    if (message != detail->end() && message->is_string() && !message->get<std::string>().empty()) {
      return message->get<std::string>();
    }
  }
  const auto error = line.find("error");
  if (error != line.end() && error->is_string()) return error->get<std::string>();
  return "";
}

}  // namespace

absl::StatusOr<std::string> NegotiateApiVersion(std::string_view server) {
  const auto version = ParseApiVersion(server);
  if (!version) {
    return absl::FailedPreconditionError(
        absl::StrCat("Docker reported an unreadable Engine API version \"", Av(server), "\""));
  }
  if (*version < *ParseApiVersion(kMinApiVersion)) {
    return absl::FailedPreconditionError(absl::StrCat("Docker Engine API ", Av(server),
                                                      " is too old: dockershim needs API ", Av(kMinApiVersion),
                                                      " or later (Docker 20.10 or later)"));
  }
  if (*version > *ParseApiVersion(kMaxApiVersion)) return std::string(kMaxApiVersion);
  return absl::StrCat(version->first, ".", version->second);
}

std::pair<std::string, std::string> SplitPullReference(std::string_view reference) {
  const size_t at = reference.find('@');
  std::string_view name = reference.substr(0, at);
  const size_t slash = name.rfind('/');
  const size_t colon = name.rfind(':');
  std::string_view tag = "latest";
  // A ':' before the last '/' is a registry port, not a tag.
  if (colon != name.npos && (slash == name.npos || colon > slash)) {
    tag = name.substr(colon + 1);
    name = name.substr(0, colon);
  }
  if (at != reference.npos) tag = reference.substr(at + 1);
  return {std::string(name), std::string(tag)};
}

absl::StatusOr<std::unique_ptr<DockerClientImpl>> DockerClientImpl::Create(std::string_view endpoint) {
  std::string_view path;
  if (absl::StartsWith(Av(endpoint), "unix://")) {
    path = endpoint.substr(std::string_view("unix://").size());
  } else if (!absl::StrContains(Av(endpoint), "://")) {
    path = endpoint;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported Docker endpoint \"", Av(endpoint),
                     "\": only unix sockets (unix:///var/run/docker.sock) are supported"));
  }
  if (path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("Docker endpoint \"", Av(endpoint), "\" names no socket path"));
  }
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("Docker socket path \"", Av(path), "\" is too long"));
  }
  auto transport = std::make_unique<HttpTransport>(std::string(path), absl::StrCat("unix://", Av(path)));
  return std::unique_ptr<DockerClientImpl>(new DockerClientImpl(std::move(transport)));
}

DockerClientImpl::DockerClientImpl(std::unique_ptr<HttpTransport> transport) : transport_(std::move(transport)) {}

absl::StatusOr<std::string> DockerClientImpl::PingAndNegotiate(const common::Context& ctx, std::string_view operation) {
  auto response = transport_->Request(ctx, "GET", "/_ping");
  if (!response.ok()) return common::Annotate(response.status(), operation);
  if (response->status != 200) return HttpError(response->status, response->body, operation);
  const auto header = response->headers.find("api-version");
  const std::string server = header == response->headers.end() ? "" : header->second;
  auto version = NegotiateApiVersion(server);
  if (!version.ok()) return common::Annotate(version.status(), operation);
  std::lock_guard<std::mutex> lock(mu_);
  // Concurrent first calls may each ping; the first answer wins and is kept.
  if (api_version_.empty()) {
    api_version_ = *version;
    LOG_INFO << "Docker at " << transport_->endpoint() << " speaks Engine API " << server << "; using " << api_version_;
  }
  return api_version_;
}

absl::StatusOr<std::string> DockerClientImpl::ApiVersion(const common::Context& ctx, std::string_view operation) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!api_version_.empty()) return api_version_;
  }
  return PingAndNegotiate(ctx, operation);
}

absl::StatusOr<std::string> DockerClientImpl::ApiPrefix(const common::Context& ctx, std::string_view operation) {
  ASSIGN_OR_RETURN(const std::string version, ApiVersion(ctx, operation));
  return absl::StrCat("/v", version);
}

absl::StatusOr<HttpResponse> DockerClientImpl::Call(const common::Context& ctx, std::string_view operation,
                                                    std::string_view method, std::string_view path,
                                                    std::string_view body) {
  ASSIGN_OR_RETURN(const std::string prefix, ApiPrefix(ctx, operation));
  auto response = transport_->Request(ctx, method, absl::StrCat(prefix, Av(path)), body);
  if (!response.ok()) return common::Annotate(response.status(), operation);
  return response;
}

absl::StatusOr<json> DockerClientImpl::GetJson(const common::Context& ctx, std::string_view operation,
                                               std::string_view path) {
  ASSIGN_OR_RETURN(HttpResponse response, Call(ctx, operation, "GET", path));
  if (response.status != 200) return HttpError(response.status, response.body, operation);
  return ParseBody(response, operation);
}

absl::StatusOr<HijackedConnection> DockerClientImpl::Hijack(const common::Context& ctx, std::string_view operation,
                                                            std::string_view path, std::string_view body) {
  ASSIGN_OR_RETURN(const std::string prefix, ApiPrefix(ctx, operation));
  auto answer = transport_->Hijack(ctx, "POST", absl::StrCat(prefix, Av(path)), body);
  if (!answer.ok()) return common::Annotate(answer.status(), operation);
  // 404: no such exec or container; 409: the container is not running (or is paused).
  if (!answer->fd) return HttpError(answer->response.status, answer->response.body, operation);
  return HijackedConnection{std::move(answer->fd), std::move(answer->buffered)};
}

absl::Status DockerClientImpl::Resize(const common::Context& ctx, std::string_view operation, std::string_view path,
                                      ConsoleSize size) {
  // dockerd would take a zero dimension and hand it to the terminal.
  if (size.height == 0 || size.width == 0) {
    return absl::InvalidArgumentError(absl::StrCat(Av(operation), ": terminal size ", size.width, "x", size.height,
                                                   " (columns x rows) has a zero dimension"));
  }
  ASSIGN_OR_RETURN(HttpResponse response,
                   Call(ctx, operation, "POST", absl::StrCat(Av(path), "?h=", size.height, "&w=", size.width)));
  if (response.status / 100 == 2) return absl::OkStatus();
  // An exec's process that is not running is a 500 from dockerd: not started within
  // its 10 s wait, or already ended (stopped, or deleted by containerd a moment later).
  const std::string message = DockerErrorMessage(response.body);
  if (response.status == 500 && (absl::StrContains(message, "exec session ready") ||
                                 absl::StrContains(message, "cannot resize a stopped container") ||
                                 absl::StrContains(message, "cannot resize a deleted process"))) {
    return absl::FailedPreconditionError(absl::StrCat(Av(operation), ": the process is not running: ", message));
  }
  return HttpError(response.status, response.body, operation);
}

absl::StatusOr<std::string> DockerClientImpl::Ping(const common::Context& ctx) {
  return PingAndNegotiate(ctx, "ping Docker");
}

absl::StatusOr<VersionInfo> DockerClientImpl::Version(const common::Context& ctx) {
  ASSIGN_OR_RETURN(json body, GetJson(ctx, "get Docker version", "/version"));
  return ParseVersion(body);
}

absl::StatusOr<SystemInfo> DockerClientImpl::Info(const common::Context& ctx) {
  ASSIGN_OR_RETURN(json body, GetJson(ctx, "get Docker info", "/info"));
  return ParseInfo(body);
}

absl::StatusOr<std::vector<ImageSummary>> DockerClientImpl::ListImages(const common::Context& ctx,
                                                                       const std::string& reference_filter) {
  constexpr std::string_view kOperation = "list images";
  std::string path = "/images/json";
  if (!reference_filter.empty()) {
    absl::StrAppend(&path, "?filters=", Escape(Dump(json{{"reference", json::array({reference_filter})}})));
  }
  ASSIGN_OR_RETURN(HttpResponse response, Call(ctx, kOperation, "GET", path));
  if (response.status != 200) return HttpError(response.status, response.body, kOperation);
  ASSIGN_OR_RETURN(json list, ParseList(response, kOperation));
  std::vector<ImageSummary> images;
  images.reserve(list.size());
  for (const json& item : list) images.push_back(ParseImageSummary(item));
  return images;
}

absl::StatusOr<ImageInspect> DockerClientImpl::InspectImage(const common::Context& ctx, const std::string& ref) {
  const std::string operation = absl::StrCat("inspect image ", ref);
  ASSIGN_OR_RETURN(const std::string version, ApiVersion(ctx, operation));
  // On the containerd image store, the manifests' sizes give what the image holds on
  // disk (ParseImageInspect); graph drivers ignore the parameter.
  const char* manifests = ApiAtLeast(version, 1, 48) ? "?manifests=1" : "";
  ASSIGN_OR_RETURN(json body, GetJson(ctx, operation, absl::StrCat("/images/", ImagePath(ref), "/json", manifests)));
  return ParseImageInspect(body);
}

absl::Status DockerClientImpl::PullImage(const common::Context& ctx, const PullOptions& options) {
  const std::string operation = absl::StrCat("pull image ", options.reference);
  ASSIGN_OR_RETURN(const std::string prefix, ApiPrefix(ctx, operation));
  const auto [repo, tag] = SplitPullReference(options.reference);
  const std::string target = absl::StrCat(prefix, "/images/create?fromImage=", Escape(repo), "&tag=", Escape(tag));
  HttpHeaders headers;
  if (!options.registry_auth.empty()) headers.emplace_back("X-Registry-Auth", options.registry_auth);

  // The body is a stream of JSON objects, one per line; a failure is a line with "error".
  std::string failure;
  const auto on_line = [&](std::string_view line) {
    const absl::string_view trimmed = absl::StripAsciiWhitespace(Av(line));
    if (trimmed.empty()) return;
    const json message = json::parse(trimmed.begin(), trimmed.end(), nullptr, /*allow_exceptions=*/false);
    if (!message.is_object()) return;
    if (std::string error = PullLineError(message); !error.empty()) {
      if (failure.empty()) failure = std::move(error);
    } else if (options.on_progress) {
      options.on_progress(message);
    }
  };
  std::string pending;  // a line not yet complete
  auto response =
      transport_->Stream(ctx, "POST", target, {}, headers, options.progress_deadline, [&](std::string_view data) {
        pending.append(data);
        size_t start = 0;
        for (size_t nl; (nl = pending.find('\n', start)) != pending.npos; start = nl + 1) {
          on_line(std::string_view(pending).substr(start, nl - start));
        }
        pending.erase(0, start);
      });
  if (!response.ok()) return common::Annotate(response.status(), operation);
  on_line(pending);

  if (response->status / 100 != 2) {
    std::string message = DockerErrorMessage(response->body);
    if (message.empty()) message = absl::StrCat("HTTP ", response->status);
    return PullError(options.reference, message, response->status);
  }
  if (!failure.empty()) return PullError(options.reference, failure, 0);
  return absl::OkStatus();
}

absl::Status DockerClientImpl::RemoveImage(const common::Context& ctx, const std::string& ref, bool force) {
  const std::string operation = absl::StrCat("remove image ", ref);
  ASSIGN_OR_RETURN(HttpResponse response,
                   Call(ctx, operation, "DELETE",
                        absl::StrCat("/images/", ImagePath(ref), "?force=", force ? "1" : "0", "&noprune=0")));
  if (response.status != 200) return HttpError(response.status, response.body, operation);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ContainerSummary>> DockerClientImpl::ListContainers(const common::Context& ctx,
                                                                               const ListContainersOptions& options) {
  constexpr std::string_view kOperation = "list containers";
  json filters = json::object();
  for (const auto& [key, value] : options.label_filter) filters["label"].push_back(absl::StrCat(key, "=", value));
  for (const std::string& key : options.label_keys) filters["label"].push_back(key);
  if (options.id) filters["id"].push_back(*options.id);
  if (options.status) filters["status"].push_back(*options.status);
  std::string path = absl::StrCat("/containers/json?all=", options.all ? "1" : "0");
  if (!filters.empty()) absl::StrAppend(&path, "&filters=", Escape(Dump(filters)));

  ASSIGN_OR_RETURN(HttpResponse response, Call(ctx, kOperation, "GET", path));
  if (response.status != 200) return HttpError(response.status, response.body, kOperation);
  ASSIGN_OR_RETURN(json list, ParseList(response, kOperation));
  std::vector<ContainerSummary> containers;
  containers.reserve(list.size());
  for (const json& item : list) containers.push_back(ParseContainerSummary(item));
  return containers;
}

absl::StatusOr<ContainerInspect> DockerClientImpl::InspectContainer(const common::Context& ctx, const std::string& id) {
  RETURN_IF_ERROR(CheckObjectId(id, "container"));
  ASSIGN_OR_RETURN(json body, GetJson(ctx, absl::StrCat("inspect container ", id),
                                      absl::StrCat("/containers/", Escape(id), "/json")));
  return ParseContainerInspect(body);
}

absl::StatusOr<std::string> DockerClientImpl::CreateContainer(const common::Context& ctx, const std::string& name,
                                                              const json& body) {
  const std::string operation = absl::StrCat("create container ", name);
  std::string path = "/containers/create";
  if (!name.empty()) absl::StrAppend(&path, "?name=", Escape(name));
  ASSIGN_OR_RETURN(HttpResponse response, Call(ctx, operation, "POST", path, Dump(body)));
  if (response.status != 201 && response.status != 200) {
    return HttpError(response.status, response.body, operation, ConflictMeans::kAlreadyExists);
  }
  ASSIGN_OR_RETURN(json created, ParseBody(response, operation));
  const auto id = created.find("Id");
  if (!created.is_object() || id == created.end() || !id->is_string() || id->get<std::string>().empty()) {
    return absl::InternalError(absl::StrCat(operation, ": dockerd answered without a container ID"));
  }
  if (const auto warnings = created.find("Warnings"); warnings != created.end() && warnings->is_array()) {
    for (const json& warning : *warnings) {
      if (warning.is_string()) {
        LOG_WARN << operation << ": " << warning.get<std::string>();
      }
    }
  }
  return id->get<std::string>();
}

absl::Status DockerClientImpl::StartContainer(const common::Context& ctx, const std::string& id) {
  RETURN_IF_ERROR(CheckObjectId(id, "container"));
  const std::string operation = absl::StrCat("start container ", id);
  ASSIGN_OR_RETURN(HttpResponse response,
                   Call(ctx, operation, "POST", absl::StrCat("/containers/", Escape(id), "/start")));
  // 304: already running.
  if (response.status != 204 && response.status != 304) {
    return HttpError(response.status, response.body, operation);
  }
  return absl::OkStatus();
}

absl::Status DockerClientImpl::StopContainer(const common::Context& ctx, const std::string& id,
                                             const StopOptions& options) {
  RETURN_IF_ERROR(CheckObjectId(id, "container"));
  const std::string operation = absl::StrCat("stop container ", id);
  const int64_t timeout = std::max<int64_t>(0, options.timeout_seconds);
  // A caller's shorter deadline would abandon a stop that Docker still carries out;
  // cancellation (the caller going away) still aborts the request.
  common::Context stop_ctx = ctx;
  stop_ctx.deadline = std::max(ctx.deadline, absl::Now() + absl::Seconds(timeout) + kStopMargin);
  ASSIGN_OR_RETURN(HttpResponse response,
                   Call(stop_ctx, operation, "POST", absl::StrCat("/containers/", Escape(id), "/stop?t=", timeout)));
  // 304: already stopped.
  if (response.status != 204 && response.status != 304) {
    return HttpError(response.status, response.body, operation);
  }
  if (response.status == 204) AwaitListedStopped(ctx, id);
  return absl::OkStatus();
}

void DockerClientImpl::AwaitListedStopped(const common::Context& ctx, const std::string& id) {
  // Docker (seen with 26.1) wakes the stop request before its container list catches up
  // with the exit, so a list right after the stop could still say "running".
  ListContainersOptions options;
  options.id = id;
  for (int attempt = 0; attempt < kListCatchUpAttempts; ++attempt) {
    absl::StatusOr<std::vector<ContainerSummary>> listed = ListContainers(ctx, options);
    if (!listed.ok() || listed->empty() || listed->front().state != "running") return;
    absl::SleepFor(kListCatchUpInterval);
  }
  LOG_WARN << "Docker still lists container " << id << " as running after it stopped";
}

absl::Status DockerClientImpl::RemoveContainer(const common::Context& ctx, const std::string& id, bool force) {
  RETURN_IF_ERROR(CheckObjectId(id, "container"));
  const std::string operation = absl::StrCat("remove container ", id);
  ASSIGN_OR_RETURN(
      HttpResponse response,
      Call(ctx, operation, "DELETE", absl::StrCat("/containers/", Escape(id), "?force=", force ? "1" : "0", "&v=1")));
  if (response.status != 204 && response.status != 200) {
    return HttpError(response.status, response.body, operation);
  }
  return absl::OkStatus();
}

absl::Status DockerClientImpl::CreateCheckpoint(const common::Context& ctx, const std::string& id,
                                                const CheckpointOptions& options) {
  RETURN_IF_ERROR(CheckObjectId(id, "container"));
  const std::string operation = absl::StrCat("checkpoint container ", id);
  const json body = {{"CheckpointID", options.checkpoint_id},
                     {"CheckpointDir", options.checkpoint_dir},
                     {"Exit", options.exit}};
  ASSIGN_OR_RETURN(HttpResponse response, Call(ctx, operation, "POST",
                                               absl::StrCat("/containers/", Escape(id), "/checkpoints"), Dump(body)));
  if (response.status != 201 && response.status != 200) return HttpError(response.status, response.body, operation);
  return absl::OkStatus();
}

absl::Status DockerClientImpl::UpdateContainer(const common::Context& ctx, const std::string& id,
                                               const json& resources) {
  RETURN_IF_ERROR(CheckObjectId(id, "container"));
  const std::string operation = absl::StrCat("update container ", id);
  ASSIGN_OR_RETURN(HttpResponse response, Call(ctx, operation, "POST",
                                               absl::StrCat("/containers/", Escape(id), "/update"), Dump(resources)));
  if (response.status != 200) return HttpError(response.status, response.body, operation);
  if (auto body = ParseBody(response, operation); body.ok() && body->is_object()) {
    if (const auto warnings = body->find("Warnings"); warnings != body->end() && warnings->is_array()) {
      for (const json& warning : *warnings) {
        if (warning.is_string()) LOG_WARN << operation << ": " << warning.get<std::string>();
      }
    }
  }
  return absl::OkStatus();
}

absl::Status DockerClientImpl::ExportContainer(const common::Context& ctx, const std::string& id,
                                               const std::function<absl::Status(std::string_view)>& sink) {
  RETURN_IF_ERROR(CheckObjectId(id, "container"));
  const std::string operation = absl::StrCat("export container ", id);
  ASSIGN_OR_RETURN(const std::string prefix, ApiPrefix(ctx, operation));
  // A failing sink cancels the request: reading on would only discard the rest.
  absl::Status sunk;
  common::Context export_ctx = ctx;
  export_ctx.is_cancelled = [&] { return !sunk.ok() || ctx.Cancelled(); };
  auto response = transport_->Stream(export_ctx, "GET", absl::StrCat(prefix, "/containers/", Escape(id), "/export"), {},
                                     {}, kExportIdleTimeout, [&](std::string_view data) {
                                       if (sunk.ok()) sunk = sink(data);
                                     });
  if (!sunk.ok()) return sunk;
  if (!response.ok()) return common::Annotate(response.status(), operation);
  if (response->status != 200) return HttpError(response->status, response->body, operation);
  return absl::OkStatus();
}

absl::StatusOr<std::string> DockerClientImpl::CreateExec(const common::Context& ctx, const std::string& container_id,
                                                         const ExecConfig& config) {
  RETURN_IF_ERROR(CheckObjectId(container_id, "container"));
  const std::string operation = absl::StrCat("create exec in container ", container_id);
  json body = {{"Cmd", config.cmd},
               {"AttachStdin", config.attach_stdin},
               {"AttachStdout", config.attach_stdout},
               {"AttachStderr", config.attach_stderr},
               {"Tty", config.tty}};
  ASSIGN_OR_RETURN(const std::string version, ApiVersion(ctx, operation));
  if (config.console_size && ApiAtLeast(version, 1, 42)) {
    body["ConsoleSize"] = {config.console_size->height, config.console_size->width};
  }
  ASSIGN_OR_RETURN(HttpResponse response,
                   Call(ctx, operation, "POST", absl::StrCat("/containers/", Escape(container_id), "/exec"), Dump(body)));
  // 409: the container is not running (or is paused).
  if (response.status != 201 && response.status != 200) return HttpError(response.status, response.body, operation);
  ASSIGN_OR_RETURN(json created, ParseBody(response, operation));
  const auto id = created.find("Id");
  if (!created.is_object() || id == created.end() || !id->is_string() || id->get<std::string>().empty()) {
    return absl::InternalError(absl::StrCat(operation, ": dockerd answered without an exec ID"));
  }
  return id->get<std::string>();
}

absl::Status DockerClientImpl::RunExec(const common::Context& ctx, const std::string& exec_id, bool tty,
                                       const ExecOutput& output) {
  RETURN_IF_ERROR(CheckObjectId(exec_id, "exec"));
  const std::string operation = absl::StrCat("run exec ", exec_id);
  ASSIGN_OR_RETURN(const std::string prefix, ApiPrefix(ctx, operation));
  // Without an Upgrade header dockerd answers "200 OK" and sends the raw stream until
  // the process ends, then closes the connection: a body read to EOF.
  StdDemuxer demux([&output](StdStream stream, std::string_view data) {
    const auto& sink = stream == StdStream::kStdout ? output.on_stdout : output.on_stderr;
    if (sink) sink(data);
  });
  bool malformed = false;
  auto response = transport_->Stream(
      ctx, "POST", absl::StrCat(prefix, "/exec/", Escape(exec_id), "/start"), Dump(json{{"Detach", false}, {"Tty", tty}}),
      {}, absl::InfiniteDuration(), [&](std::string_view data) {
        if (tty) {
          if (output.on_stdout) output.on_stdout(data);
        } else if (!malformed && !demux.Feed(data)) {
          malformed = true;
        }
      });
  if (!response.ok()) return common::Annotate(response.status(), operation);
  if (response->status / 100 != 2) return HttpError(response->status, response->body, operation);
  if (malformed) return absl::InternalError(absl::StrCat(operation, ": dockerd sent a malformed output stream"));
  return absl::OkStatus();
}

absl::StatusOr<ExecInspect> DockerClientImpl::InspectExec(const common::Context& ctx, const std::string& exec_id) {
  RETURN_IF_ERROR(CheckObjectId(exec_id, "exec"));
  ASSIGN_OR_RETURN(json body,
                   GetJson(ctx, absl::StrCat("inspect exec ", exec_id), absl::StrCat("/exec/", Escape(exec_id), "/json")));
  ExecInspect inspect;
  if (!body.is_object()) return inspect;
  if (const auto running = body.find("Running"); running != body.end() && running->is_boolean()) {
    inspect.running = running->get<bool>();
  }
  if (const auto code = body.find("ExitCode"); code != body.end() && code->is_number_integer()) {
    inspect.exit_code = code->get<int>();
  }
  if (const auto pid = body.find("Pid"); pid != body.end() && pid->is_number_integer()) inspect.pid = pid->get<int>();
  return inspect;
}

absl::StatusOr<HijackedConnection> DockerClientImpl::StartExecAttached(const common::Context& ctx,
                                                                       const std::string& exec_id, bool tty) {
  RETURN_IF_ERROR(CheckObjectId(exec_id, "exec"));
  // A start that fails only once the process is due to run (the exec has already run,
  // the command is not found) still gets "101 UPGRADED": dockerd writes its error into
  // the stream.
  return Hijack(ctx, absl::StrCat("start exec ", exec_id), absl::StrCat("/exec/", Escape(exec_id), "/start"),
                Dump(json{{"Detach", false}, {"Tty", tty}}));
}

absl::Status DockerClientImpl::ResizeExec(const common::Context& ctx, const std::string& exec_id, ConsoleSize size) {
  RETURN_IF_ERROR(CheckObjectId(exec_id, "exec"));
  return Resize(ctx, absl::StrCat("resize exec ", exec_id), absl::StrCat("/exec/", Escape(exec_id), "/resize"), size);
}

absl::StatusOr<HijackedConnection> DockerClientImpl::AttachContainer(const common::Context& ctx, const std::string& id,
                                                                     const AttachOptions& options) {
  RETURN_IF_ERROR(CheckObjectId(id, "container"));
  const std::string operation = absl::StrCat("attach to container ", id);
  const std::string path = absl::StrCat("/containers/", Escape(id));
  ASSIGN_OR_RETURN(json body, GetJson(ctx, operation, absl::StrCat(path, "/json")));
  const ContainerInspect container = ParseContainerInspect(body);
  if (!container.state.running) {
    // The wording of dockerd's own 409s for a stopped container.
    return absl::FailedPreconditionError(absl::StrCat(operation, ": Container ", container.id, " is not running"));
  }
  std::string attach = absl::StrCat(path, "/attach?stream=1");
  if (options.stdin) absl::StrAppend(&attach, "&stdin=1");
  if (options.stdout) absl::StrAppend(&attach, "&stdout=1");
  if (options.stderr) absl::StrAppend(&attach, "&stderr=1");
  return Hijack(ctx, operation, attach, {});
}

absl::Status DockerClientImpl::ResizeContainer(const common::Context& ctx, const std::string& id, ConsoleSize size) {
  RETURN_IF_ERROR(CheckObjectId(id, "container"));
  return Resize(ctx, absl::StrCat("resize container ", id), absl::StrCat("/containers/", Escape(id), "/resize"), size);
}

}  // namespace dockerclient
