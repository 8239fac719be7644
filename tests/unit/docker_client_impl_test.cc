#include "dockerclient/docker_client_impl.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "dockerclient/stdcopy.h"
#include "tests/unit/test_http_server.h"

namespace dockerclient {
namespace {

using nlohmann::json;
using testhttp::ReceivedRequest;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

std::string Message(const absl::Status& status) { return std::string(status.message()); }

// ---- Pure helpers ----

TEST(CreateTest, AcceptsUnixSocketsOnly) {
  EXPECT_TRUE(DockerClientImpl::Create("unix:///var/run/docker.sock").ok());
  EXPECT_TRUE(DockerClientImpl::Create("/var/run/docker.sock").ok());
  for (const char* endpoint :
       {"tcp://127.0.0.1:2375", "http://localhost", "npipe:////./pipe/docker_engine", "", "unix://"}) {
    EXPECT_EQ(DockerClientImpl::Create(endpoint).status().code(), absl::StatusCode::kInvalidArgument) << endpoint;
  }
  EXPECT_EQ(DockerClientImpl::Create("/" + std::string(200, 'x')).status().code(), absl::StatusCode::kInvalidArgument);
}

struct SplitCase {
  const char* reference;
  const char* repo;
  const char* tag;
};

class SplitPullReferenceTest : public ::testing::TestWithParam<SplitCase> {};

TEST_P(SplitPullReferenceTest, Splits) {
  const auto [repo, tag] = SplitPullReference(GetParam().reference);
  EXPECT_EQ(repo, GetParam().repo);
  EXPECT_EQ(tag, GetParam().tag);
}

INSTANTIATE_TEST_SUITE_P(
    Table, SplitPullReferenceTest,
    ::testing::Values(SplitCase{"busybox", "busybox", "latest"}, SplitCase{"busybox:1.36", "busybox", "1.36"},
                      SplitCase{"docker.io/library/busybox:latest", "docker.io/library/busybox", "latest"},
                      SplitCase{"registry:5000/foo/bar", "registry:5000/foo/bar", "latest"},
                      SplitCase{"registry:5000/foo/bar:v2", "registry:5000/foo/bar", "v2"},
                      SplitCase{"registry.k8s.io/pause@sha256:abcd", "registry.k8s.io/pause", "sha256:abcd"},
                      SplitCase{"127.0.0.1:5000/pause:3.9@sha256:abcd", "127.0.0.1:5000/pause", "sha256:abcd"}));

// ---- DockerClientImpl against a scripted dockerd ----

std::string UrlDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

struct Reply {
  std::string data;
  bool hang = false;   // after `data`, send nothing more until the client goes away
  bool close = false;  // close the connection after `data` (a body that ends at EOF)
  std::function<void(int fd)> then = nullptr;  // serves the connection after `data` (a hijack), then closes it
};

class FakeDockerd {
 public:
  using Route = std::function<Reply(const ReceivedRequest&)>;

  FakeDockerd() : server_([this](int fd, int) { Serve(fd); }) {}

  // Routes on "METHOD /path" (no query).
  void On(const std::string& key, Route route) {
    std::lock_guard<std::mutex> lock(mu_);
    routes_[key] = std::move(route);
  }
  void SetApiVersion(const std::string& v) {
    std::lock_guard<std::mutex> lock(mu_);
    api_version_ = v;
  }
  std::vector<ReceivedRequest> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  int Count(const std::string& key) {
    int n = 0;
    for (const auto& r : requests()) n += absl::StrCat(r.method, " ", r.target.substr(0, r.target.find('?'))) == key;
    return n;
  }
  std::unique_ptr<DockerClientImpl> Client() { return *DockerClientImpl::Create(server_.endpoint()); }

 private:
  void Serve(int fd) {
    std::string buffer;
    while (auto req = testhttp::ReadRequest(fd, buffer)) {
      Reply reply;
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(*req);
        const std::string key = absl::StrCat(req->method, " ", req->target.substr(0, req->target.find('?')));
        if (key == "GET /_ping") {
          reply.data =
              absl::StrCat("HTTP/1.1 200 OK\r\nApi-Version: ", api_version_, "\r\nContent-Length: 2\r\n\r\nOK");
        } else if (auto it = routes_.find(key); it != routes_.end()) {
          reply = it->second(*req);
        } else {
          reply.data = testhttp::Response(404, R"({"message":"page not found"})");
        }
      }
      if (!testhttp::WriteAll(fd, reply.data) || reply.close) return;
      if (reply.then) return reply.then(fd);
      if (reply.hang) {
        char byte;
        while (::read(fd, &byte, 1) > 0) {
        }
        return;
      }
    }
  }

  std::mutex mu_;
  std::map<std::string, Route> routes_;
  std::string api_version_ = "1.41";
  std::vector<ReceivedRequest> requests_;
  testhttp::UnixHttpServer server_;  // last: stops before the state above goes away
};

Reply Json(int status, const std::string& body) { return {testhttp::Response(status, body)}; }

Reply Chunked(int status, const std::vector<std::string>& chunks, bool finish = true) {
  std::string out = absl::StrCat("HTTP/1.1 ", status, " X\r\nTransfer-Encoding: chunked\r\n\r\n");
  for (const auto& c : chunks) absl::StrAppend(&out, absl::Hex(c.size()), "\r\n", c, "\r\n");
  if (finish) out += "0\r\n\r\n";
  return {out, !finish};
}

common::Context Ctx() { return common::Context::WithTimeout(absl::Seconds(10)); }

TEST(DockerClientImplTest, NegotiatesOnceAndPrefixesEveryPath) {
  FakeDockerd dockerd;
  dockerd.SetApiVersion("1.56");
  dockerd.On("GET /v1.55/info", [](auto&) { return Json(200, R"({"ServerVersion":"30.0.0","CgroupVersion":"2"})"); });
  dockerd.On("GET /v1.55/version", [](auto&) { return Json(200, R"({"ApiVersion":"1.56"})"); });
  auto client = dockerd.Client();
  auto info = client->Info(Ctx());
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->server_version, "30.0.0");
  auto version = client->Version(Ctx());
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ(version->api_version, "1.56");
  EXPECT_EQ(dockerd.Count("GET /_ping"), 1);
  auto ping = client->Ping(Ctx());
  ASSERT_TRUE(ping.ok()) << ping.status();
  EXPECT_EQ(*ping, "1.55");
}

TEST(DockerClientImplTest, TooOldDaemonIsRefusedUntilItIsUpgraded) {
  FakeDockerd dockerd;
  dockerd.SetApiVersion("1.40");
  dockerd.On("GET /v1.41/info", [](auto&) { return Json(200, "{}"); });
  auto client = dockerd.Client();
  const absl::Status old = client->Info(Ctx()).status();
  EXPECT_EQ(old.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(old), StartsWith("get Docker info: "));
  EXPECT_THAT(Message(old), HasSubstr("1.41"));
  dockerd.SetApiVersion("1.41");
  EXPECT_TRUE(client->Info(Ctx()).ok());
}

TEST(DockerClientImplTest, UnreachableDaemonIsUnavailableNamingTheSocket) {
  auto client = *DockerClientImpl::Create("unix:///tmp/dockershim-nowhere/docker.sock");
  const absl::Status status = client->InspectContainer(Ctx(), "abc").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Message(status), StartsWith("inspect container abc: "));
  EXPECT_THAT(Message(status), HasSubstr("unix:///tmp/dockershim-nowhere/docker.sock"));
}

TEST(DockerClientImplTest, ImageRefsKeepSlashesColonsAndAts) {
  FakeDockerd dockerd;
  const std::string path = "/v1.41/images/registry:5000/foo/bar@sha256:abcd/json";
  dockerd.On("GET " + path, [](auto&) { return Json(200, R"({"Id":"sha256:1"})"); });
  auto image = dockerd.Client()->InspectImage(Ctx(), "registry:5000/foo/bar@sha256:abcd");
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->id, "sha256:1");
}

TEST(DockerClientImplTest, MissingImageIsNotFoundNamingIt) {
  FakeDockerd dockerd;
  const absl::Status status = dockerd.Client()->InspectImage(Ctx(), "nosuch:1").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "inspect image nosuch:1: page not found");
}

TEST(DockerClientImplTest, ListImagesFiltersByReference) {
  FakeDockerd dockerd;
  dockerd.On("GET /v1.41/images/json", [](auto&) { return Json(200, R"([{"Id":"sha256:1"},{"Id":"sha256:2"}])"); });
  auto client = dockerd.Client();
  auto images = client->ListImages(Ctx(), "busybox:latest");
  ASSERT_TRUE(images.ok()) << images.status();
  ASSERT_EQ(images->size(), 2u);
  ASSERT_TRUE(client->ListImages(Ctx(), "").ok());
  const auto requests = dockerd.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(UrlDecode(requests[1].target), R"(/v1.41/images/json?filters={"reference":["busybox:latest"]})");
  EXPECT_EQ(requests[2].target, "/v1.41/images/json");
}

TEST(DockerClientImplTest, ListContainersEncodesFilters) {
  FakeDockerd dockerd;
  dockerd.On("GET /v1.41/containers/json", [](auto&) { return Json(200, R"([{"Id":"c1","Names":["/a"]}])"); });
  ListContainersOptions options;
  options.label_filter = {{"io.kubernetes.docker.type", "podsandbox"}, {"app", "a b&c"}};
  options.id = "abc";
  options.status = "running";
  auto containers = dockerd.Client()->ListContainers(Ctx(), options);
  ASSERT_TRUE(containers.ok()) << containers.status();
  ASSERT_EQ(containers->size(), 1u);
  EXPECT_THAT((*containers)[0].names, ElementsAre("/a"));
  const std::string target = dockerd.requests().back().target;
  EXPECT_THAT(target, Not(HasSubstr(" ")));
  const std::string decoded = UrlDecode(target);
  const std::string prefix = "/v1.41/containers/json?all=1&filters=";
  ASSERT_THAT(decoded, StartsWith(prefix));
  EXPECT_EQ(json::parse(decoded.substr(prefix.size())),
            json::parse(R"({"label":["app=a b&c","io.kubernetes.docker.type=podsandbox"],
                            "id":["abc"],"status":["running"]})"));
}

TEST(DockerClientImplTest, CreateConflictIsAlreadyExists) {
  FakeDockerd dockerd;
  dockerd.On("POST /v1.41/containers/create", [](const ReceivedRequest& req) {
    if (req.target.find("name=taken") != std::string::npos) {
      return Json(409, R"({"message":"Conflict. The container name \"/taken\" is already in use"})");
    }
    return Json(201, R"({"Id":"new123","Warnings":[]})");
  });
  auto client = dockerd.Client();
  auto id = client->CreateContainer(Ctx(), "fresh", {{"Image", "busybox"}});
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, "new123");
  EXPECT_EQ(json::parse(dockerd.requests().back().body), json({{"Image", "busybox"}}));
  const absl::Status taken = client->CreateContainer(Ctx(), "taken", {{"Image", "busybox"}}).status();
  EXPECT_EQ(taken.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(Message(taken), StartsWith("create container taken: Conflict."));
}

TEST(DockerClientImplTest, StartAndStopTreatNotModifiedAsDone) {
  FakeDockerd dockerd;
  dockerd.On("POST /v1.41/containers/c1/start", [](auto&) { return Json(304, ""); });
  dockerd.On("POST /v1.41/containers/c1/stop", [](auto&) { return Json(304, ""); });
  auto client = dockerd.Client();
  EXPECT_TRUE(client->StartContainer(Ctx(), "c1").ok());
  EXPECT_TRUE(client->StopContainer(Ctx(), "c1", StopOptions{7}).ok());
  EXPECT_EQ(dockerd.requests().back().target, "/v1.41/containers/c1/stop?t=7");
}

TEST(DockerClientImplTest, StopOutlivesAShorterCallerDeadline) {
  FakeDockerd dockerd;
  dockerd.On("POST /v1.41/containers/c1/stop", [](auto&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(600));  // Docker waiting for the process
    return Json(204, "");
  });
  auto client = dockerd.Client();
  ASSERT_TRUE(client->Ping(Ctx()).ok());
  const absl::Status status =
      client->StopContainer(common::Context::WithTimeout(absl::Milliseconds(100)), "c1", StopOptions{1});
  EXPECT_TRUE(status.ok()) << status;
}

TEST(DockerClientImplTest, StopReturnsOnceDockersListShowsTheExit) {
  FakeDockerd dockerd;
  dockerd.On("POST /v1.41/containers/c1/stop", [](auto&) { return Json(204, ""); });
  std::atomic<int> lists = 0;
  dockerd.On("GET /v1.41/containers/json", [&](auto&) {
    const char* state = ++lists < 3 ? "running" : "exited";
    return Json(200, absl::StrCat(R"([{"Id":"c1","Names":["/c1"],"State":")", state, R"("}])"));
  });
  auto client = dockerd.Client();
  ASSERT_TRUE(client->StopContainer(Ctx(), "c1", StopOptions{1}).ok());
  EXPECT_EQ(lists, 3);
  EXPECT_THAT(dockerd.requests().back().target, HasSubstr("c1"));
}

TEST(DockerClientImplTest, IdsThatCannotNameAnythingAreNotFoundWithoutAskingDocker) {
  FakeDockerd dockerd;
  auto client = dockerd.Client();
  for (const std::string& id : std::vector<std::string>{"../../../../etc/passwd", "", "a/b", "-rf", ".hidden",
                                                       "x?all=1", std::string(300, 'a'), "a\nb"}) {
    SCOPED_TRACE(id);
    EXPECT_TRUE(absl::IsNotFound(client->InspectContainer(Ctx(), id).status()));
    EXPECT_TRUE(absl::IsNotFound(client->StopContainer(Ctx(), id, StopOptions{1})));
    EXPECT_TRUE(absl::IsNotFound(client->RemoveContainer(Ctx(), id, true)));
    EXPECT_TRUE(absl::IsNotFound(client->InspectExec(Ctx(), id).status()));
    EXPECT_TRUE(absl::IsNotFound(client->ResizeContainer(Ctx(), id, {10, 10})));
  }
  EXPECT_EQ(Message(client->InspectContainer(Ctx(), "a\nb").status()), ("no such container: \"a\\nb\""));
  EXPECT_EQ(dockerd.requests().size(), 0u);
}

TEST(DockerClientImplTest, RemoveMissingContainerIsNotFound) {
  FakeDockerd dockerd;
  dockerd.On("DELETE /v1.41/containers/gone",
             [](auto&) { return Json(404, R"({"message":"No such container: gone"})"); });
  const absl::Status status = dockerd.Client()->RemoveContainer(Ctx(), "gone", true);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "remove container gone: No such container: gone");
  EXPECT_EQ(dockerd.requests().back().target, "/v1.41/containers/gone?force=1&v=1");
}

TEST(DockerClientImplTest, RemoveImageInUseIsFailedPrecondition) {
  FakeDockerd dockerd;
  dockerd.On("DELETE /v1.41/images/busybox:latest",
             [](auto&) { return Json(409, R"({"message":"conflict: unable to remove repository reference"})"); });
  const absl::Status status = dockerd.Client()->RemoveImage(Ctx(), "busybox:latest", false);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(dockerd.requests().back().target, "/v1.41/images/busybox:latest?force=0&noprune=0");
}

TEST(DockerClientImplTest, RemoveImageThatAConcurrentDeleteRemovedIsNotFound) {
  // Docker 20.10's answer when another delete of the image won the race (26.1 says 404).
  FakeDockerd dockerd;
  dockerd.On("DELETE /v1.41/images/sha256:abcd", [](auto&) {
    return Json(500, R"({"message":"unrecognized image ID sha256:abcd"})");
  });
  const absl::Status status = dockerd.Client()->RemoveImage(Ctx(), "sha256:abcd", false);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  EXPECT_EQ(status.message(), "remove image sha256:abcd: unrecognized image ID sha256:abcd");
}

constexpr char kSecretAuth[] = "eyJwYXNzd29yZCI6InMzY3JldCJ9";

TEST(DockerClientImplTest, PullSendsAuthAndReportsEachProgressLine) {
  FakeDockerd dockerd;
  dockerd.On("POST /v1.41/images/create", [](auto&) {
    return Chunked(200, {"{\"status\":\"Pulling from app\",\"id\":\"v1\"}\r\n{\"status\":\"Down",
                         "loading\",\"progressDetail\":{\"current\":1}}\r\n", "{\"status\":\"Digest: sha256:x\"}"});
  });
  std::vector<std::string> statuses;
  PullOptions options;
  options.reference = "registry:5000/app:v1";
  options.registry_auth = kSecretAuth;
  options.on_progress = [&](const json& j) { statuses.push_back(j.value("status", "")); };
  const absl::Status status = dockerd.Client()->PullImage(Ctx(), options);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_THAT(statuses, ElementsAre("Pulling from app", "Downloading", "Digest: sha256:x"));
  const ReceivedRequest req = dockerd.requests().back();
  EXPECT_EQ(UrlDecode(req.target), "/v1.41/images/create?fromImage=registry:5000/app&tag=v1");
  EXPECT_THAT(req.head, HasSubstr(absl::StrCat("X-Registry-Auth: ", kSecretAuth)));
}

TEST(DockerClientImplTest, PullErrorLineFailsWithoutLeakingCredentials) {
  FakeDockerd dockerd;
  dockerd.On("POST /v1.41/images/create", [](auto&) {
    return Chunked(200, {"{\"status\":\"Pulling from app\"}\n",
                         "{\"errorDetail\":{\"message\":\"unauthorized: authentication required\"},"
                         "\"error\":\"unauthorized: authentication required\"}\n"});
  });
  PullOptions options;
  options.reference = "registry:5000/app@sha256:abcd";
  options.registry_auth = kSecretAuth;
  const absl::Status status = dockerd.Client()->PullImage(Ctx(), options);
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(status.message(), "pull image registry:5000/app@sha256:abcd: unauthorized: authentication required");
  EXPECT_THAT(Message(status), Not(HasSubstr(kSecretAuth)));
  EXPECT_EQ(UrlDecode(dockerd.requests().back().target),
            "/v1.41/images/create?fromImage=registry:5000/app&tag=sha256:abcd");
}

TEST(DockerClientImplTest, PullHttpErrorIsMappedFromDockersMessage) {
  FakeDockerd dockerd;
  dockerd.On("POST /v1.41/images/create", [](auto&) {
    return Json(404, R"({"message":"manifest for app:v9 not found: manifest unknown: manifest unknown"})");
  });
  PullOptions options;
  options.reference = "app:v9";
  const absl::Status status = dockerd.Client()->PullImage(Ctx(), options);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(status), StartsWith("pull image app:v9: manifest for app:v9 not found"));
}

TEST(DockerClientImplTest, PullFromAnUnreachableRegistryIsUnavailableNamingIt) {
  FakeDockerd dockerd;
  dockerd.On("POST /v1.41/images/create", [](auto&) {
    return Json(500, R"({"message":"Get \"http://127.0.0.1:1/v2/\": dial tcp 127.0.0.1:1: connect: connection refused"})");
  });
  PullOptions options;
  options.reference = "127.0.0.1:1/app:v1";
  options.registry_auth = kSecretAuth;
  const absl::Status status = dockerd.Client()->PullImage(Ctx(), options);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_EQ(status.message(),
            "pull image 127.0.0.1:1/app:v1: registry 127.0.0.1:1 cannot be reached: Get \"http://127.0.0.1:1/v2/\": "
            "dial tcp 127.0.0.1:1: connect: connection refused");
}

TEST(DockerClientImplTest, PullWithoutProgressIsCancelled) {
  FakeDockerd dockerd;
  dockerd.On("POST /v1.41/images/create",
             [](auto&) { return Chunked(200, {"{\"status\":\"Pulling from app\"}\n"}, /*finish=*/false); });
  PullOptions options;
  options.reference = "busybox:latest";
  options.progress_deadline = absl::Milliseconds(300);
  const absl::Time start = absl::Now();
  const absl::Status status = dockerd.Client()->PullImage(Ctx(), options);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(Message(status), StartsWith("pull image busybox:latest: "));
  EXPECT_THAT(Message(status), HasSubstr("no progress for 300ms, cancelled"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
}

// One frame of Docker's multiplexed stream.
std::string Frame(int stream, std::string_view payload) {
  std::string out{static_cast<char>(stream), 0, 0, 0};
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((payload.size() >> shift) & 0xff);
  out.append(payload);
  return out;
}

// What dockerd sends for an exec started without an Upgrade header: a 200 head, the
// raw stream, then EOF.
Reply RawStream(const std::string& stream) {
  return {absl::StrCat("HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n\r\n", stream), false,
          true};
}

TEST(DockerClientImplTest, ExecRunsToEofAndSplitsStdoutFromStderr) {
  FakeDockerd dockerd;
  dockerd.On("POST /v1.41/containers/c1/exec", [](auto&) { return Json(201, R"({"Id":"e1"})"); });
  dockerd.On("POST /v1.41/exec/e1/start", [](auto&) {
    return RawStream(Frame(1, "hello ") + Frame(2, "warn\n") + Frame(1, "world\n") + Frame(3, "exec failed"));
  });
  dockerd.On("GET /v1.41/exec/e1/json",
             [](auto&) { return Json(200, R"({"Running":false,"ExitCode":3,"Pid":77})"); });
  auto client = dockerd.Client();
  ExecConfig config;
  config.cmd = {"sh", "-c", "echo hi"};
  auto id = client->CreateExec(Ctx(), "c1", config);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, "e1");
  const json sent = json::parse(dockerd.requests().back().body);
  EXPECT_EQ(sent["Cmd"], json({"sh", "-c", "echo hi"}));
  EXPECT_EQ(sent["AttachStdout"], true);
  EXPECT_EQ(sent["AttachStdin"], false);
  EXPECT_EQ(sent["Tty"], false);

  std::string out, err;
  ExecOutput output{[&](std::string_view d) { out.append(d); }, [&](std::string_view d) { err.append(d); }};
  const absl::Status ran = client->RunExec(Ctx(), "e1", false, output);
  ASSERT_TRUE(ran.ok()) << ran;
  EXPECT_EQ(out, "hello world\n");
  EXPECT_EQ(err, "warn\nexec failed");  // system errors go with stderr
  EXPECT_EQ(json::parse(dockerd.requests().back().body), json({{"Detach", false}, {"Tty", false}}));

  auto inspect = client->InspectExec(Ctx(), "e1");
  ASSERT_TRUE(inspect.ok()) << inspect.status();
  EXPECT_FALSE(inspect->running);
  EXPECT_EQ(inspect->exit_code, 3);
  EXPECT_EQ(inspect->pid, 77);
}

TEST(DockerClientImplTest, ExecWithTtyPassesTheStreamThrough) {
  FakeDockerd dockerd;
  dockerd.On("POST /v1.41/exec/e1/start", [](auto&) { return RawStream("raw \x01 bytes"); });
  std::string out;
  ExecOutput output{[&](std::string_view d) { out.append(d); }, nullptr};
  ASSERT_TRUE(dockerd.Client()->RunExec(Ctx(), "e1", true, output).ok());
  EXPECT_EQ(out, "raw \x01 bytes");
}

TEST(DockerClientImplTest, UpdateSendsResourcesAndMapsErrors) {
  FakeDockerd dockerd;
  dockerd.On("POST /v1.41/containers/c1/update", [](auto&) { return Json(200, R"({"Warnings":[]})"); });
  dockerd.On("POST /v1.41/containers/gone/update",
             [](auto&) { return Json(404, R"({"message":"No such container: gone"})"); });
  auto client = dockerd.Client();
  ASSERT_TRUE(client->UpdateContainer(Ctx(), "c1", json{{"Memory", 1024}, {"CpuShares", 2}}).ok());
  EXPECT_EQ(json::parse(dockerd.requests().back().body), json({{"Memory", 1024}, {"CpuShares", 2}}));
  const absl::Status gone = client->UpdateContainer(Ctx(), "gone", json{{"Memory", 1024}});
  EXPECT_EQ(gone.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(gone.message(), "update container gone: No such container: gone");
}

TEST(DockerClientImplTest, ExecInStoppedContainerIsFailedPrecondition) {
  FakeDockerd dockerd;
  dockerd.On("POST /v1.41/containers/c1/exec",
             [](auto&) { return Json(409, R"({"message":"Container c1 is not running"})"); });
  const auto id = dockerd.Client()->CreateExec(Ctx(), "c1", ExecConfig{});
  EXPECT_EQ(id.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(id.status().message(), "create exec in container c1: Container c1 is not running");
}

TEST(DockerClientImplTest, ExecStillRunningReportsNoExitCode) {
  FakeDockerd dockerd;
  dockerd.On("GET /v1.41/exec/e1/json", [](auto&) { return Json(200, R"({"Running":true,"ExitCode":null})"); });
  auto inspect = dockerd.Client()->InspectExec(Ctx(), "e1");
  ASSERT_TRUE(inspect.ok()) << inspect.status();
  EXPECT_TRUE(inspect->running);
  EXPECT_FALSE(inspect->exit_code.has_value());
}

TEST(DockerClientImplTest, ExecOutlivingTheDeadlineIsAbandoned) {
  FakeDockerd dockerd;
  dockerd.On("POST /v1.41/exec/e1/start", [](auto&) {
    Reply r = RawStream(Frame(1, "partial"));
    r.close = false;
    r.hang = true;
    return r;
  });
  auto client = dockerd.Client();
  ASSERT_TRUE(client->Ping(Ctx()).ok());
  std::string out;
  ExecOutput output{[&](std::string_view d) { out.append(d); }, nullptr};
  const absl::Status status =
      client->RunExec(common::Context::WithTimeout(absl::Milliseconds(300)), "e1", false, output);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_EQ(out, "partial");
}

// ---- Hijacked streams and resizes ----

constexpr char kUpgraded[] = "HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
                             "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n";

// Reads `fd` until EOF (failing the test when it does not come within 5 s).
std::string ReadToEof(int fd) {
  std::string out;
  char chunk[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) != 1) {
      ADD_FAILURE() << "no EOF within 5s";
      return out;
    }
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n <= 0) return out;
    out.append(chunk, static_cast<size_t>(n));
  }
}

// A process as dockerd relays it without a TTY: 101 with early output, each piece of
// stdin echoed as stdout, and at stdin's EOF a last stderr frame.
Reply UpgradedEcho() {
  Reply r{kUpgraded + Frame(1, "early ")};
  r.then = [](int fd) {
    char chunk[4096];
    for (ssize_t n; (n = ::read(fd, chunk, sizeof(chunk))) > 0;) {
      if (!testhttp::WriteAll(fd, Frame(1, std::string_view(chunk, static_cast<size_t>(n))))) return;
    }
    testhttp::WriteAll(fd, Frame(2, "stdin closed"));
  };
  return r;
}

TEST(DockerClientImplTest, StartExecAttachedHandsOverTheProcessStdio) {
  FakeDockerd dockerd;
  dockerd.On("POST /v1.41/exec/e1/start", [](auto&) { return UpgradedEcho(); });
  auto conn = dockerd.Client()->StartExecAttached(Ctx(), "e1", false);
  ASSERT_TRUE(conn.ok()) << conn.status();
  const ReceivedRequest req = dockerd.requests().back();
  EXPECT_THAT(req.head, HasSubstr("Connection: Upgrade"));
  EXPECT_THAT(req.head, HasSubstr("Upgrade: tcp"));
  EXPECT_EQ(json::parse(req.body), json({{"Detach", false}, {"Tty", false}}));

  ASSERT_TRUE(testhttp::WriteAll(conn->fd.get(), "typed"));
  ASSERT_EQ(::shutdown(conn->fd.get(), SHUT_WR), 0);
  std::string out, err;
  StdDemuxer demux([&](StdStream stream, std::string_view data) {
    (stream == StdStream::kStdout ? out : err).append(data);
  });
  ASSERT_TRUE(demux.Feed(conn->buffered + ReadToEof(conn->fd.get())));
  EXPECT_EQ(out, "early typed");
  EXPECT_EQ(err, "stdin closed");
}

TEST(DockerClientImplTest, StartExecAttachedSendsTheTtyFlag) {
  FakeDockerd dockerd;
  dockerd.On("POST /v1.41/exec/e1/start", [](auto&) { return Reply{std::string(kUpgraded) + "$ "}; });
  auto conn = dockerd.Client()->StartExecAttached(Ctx(), "e1", true);
  ASSERT_TRUE(conn.ok()) << conn.status();
  EXPECT_EQ(conn->buffered, "$ ");
  EXPECT_EQ(json::parse(dockerd.requests().back().body), json({{"Detach", false}, {"Tty", true}}));
}

TEST(DockerClientImplTest, StartExecAttachedMapsRefusals) {
  FakeDockerd dockerd;
  dockerd.On("POST /v1.41/exec/gone/start",
             [](auto&) { return Json(404, R"({"message":"No such exec instance: gone"})"); });
  dockerd.On("POST /v1.41/exec/e1/start",
             [](auto&) { return Json(409, R"({"message":"Container c1 is not running"})"); });
  auto client = dockerd.Client();
  const absl::Status gone = client->StartExecAttached(Ctx(), "gone", false).status();
  EXPECT_EQ(gone.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(gone.message(), "start exec gone: No such exec instance: gone");
  const absl::Status stopped = client->StartExecAttached(Ctx(), "e1", false).status();
  EXPECT_EQ(stopped.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(stopped.message(), "start exec e1: Container c1 is not running");
}

Reply ContainerState(bool running) {
  return Json(200, json({{"Id", "c1full"}, {"State", {{"Running", running}}}}).dump());
}

TEST(DockerClientImplTest, AttachAsksForTheRequestedStreamsOnly) {
  FakeDockerd dockerd;
  dockerd.On("GET /v1.41/containers/c1/json", [](auto&) { return ContainerState(true); });
  dockerd.On("POST /v1.41/containers/c1/attach", [](auto&) { return Reply{std::string(kUpgraded) + "hi"}; });
  auto client = dockerd.Client();
  auto conn = client->AttachContainer(Ctx(), "c1", AttachOptions{.stdin = true, .stdout = true});
  ASSERT_TRUE(conn.ok()) << conn.status();
  EXPECT_EQ(conn->buffered, "hi");
  ReceivedRequest req = dockerd.requests().back();
  EXPECT_EQ(req.target, "/v1.41/containers/c1/attach?stream=1&stdin=1&stdout=1");
  EXPECT_THAT(req.head, HasSubstr("Upgrade: tcp"));

  ASSERT_TRUE(client->AttachContainer(Ctx(), "c1", AttachOptions{.stderr = true}).ok());
  EXPECT_EQ(dockerd.requests().back().target, "/v1.41/containers/c1/attach?stream=1&stderr=1");
}

TEST(DockerClientImplTest, AttachToAStoppedContainerIsFailedPrecondition) {
  FakeDockerd dockerd;
  dockerd.On("GET /v1.41/containers/c1/json", [](auto&) { return ContainerState(false); });
  const absl::Status status = dockerd.Client()->AttachContainer(Ctx(), "c1", AttachOptions{.stdout = true}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), "attach to container c1: Container c1full is not running");
  // dockerd would have accepted it and waited for a start.
  EXPECT_EQ(dockerd.Count("POST /v1.41/containers/c1/attach"), 0);
}

TEST(DockerClientImplTest, AttachToAMissingContainerIsNotFound) {
  FakeDockerd dockerd;
  dockerd.On("GET /v1.41/containers/gone/json",
             [](auto&) { return Json(404, R"({"message":"No such container: gone"})"); });
  const absl::Status status = dockerd.Client()->AttachContainer(Ctx(), "gone", AttachOptions{.stdout = true}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "attach to container gone: No such container: gone");
}

TEST(DockerClientImplTest, ResizeSendsRowsAndColumns) {
  FakeDockerd dockerd;
  dockerd.On("POST /v1.41/exec/e1/resize", [](auto&) { return Json(200, ""); });
  dockerd.On("POST /v1.41/containers/c1/resize", [](auto&) { return Json(200, ""); });
  auto client = dockerd.Client();
  ASSERT_TRUE(client->ResizeExec(Ctx(), "e1", ConsoleSize{.height = 24, .width = 80}).ok());
  EXPECT_EQ(dockerd.requests().back().target, "/v1.41/exec/e1/resize?h=24&w=80");
  ASSERT_TRUE(client->ResizeContainer(Ctx(), "c1", ConsoleSize{.height = 40, .width = 120}).ok());
  EXPECT_EQ(dockerd.requests().back().target, "/v1.41/containers/c1/resize?h=40&w=120");
}

TEST(DockerClientImplTest, ResizeToAZeroDimensionIsInvalidWithoutAskingDocker) {
  FakeDockerd dockerd;
  auto client = dockerd.Client();
  const absl::Status exec = client->ResizeExec(Ctx(), "e1", ConsoleSize{.height = 0, .width = 80});
  EXPECT_EQ(exec.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(exec), StartsWith("resize exec e1: terminal size 80x0"));
  EXPECT_EQ(client->ResizeContainer(Ctx(), "c1", ConsoleSize{.height = 24, .width = 0}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(dockerd.requests().empty());
}

TEST(DockerClientImplTest, ResizeOfAProcessThatIsNotRunningIsFailedPrecondition) {
  FakeDockerd dockerd;
  dockerd.On("POST /v1.41/exec/ended/resize",
             [](auto&) { return Json(500, R"({"message":"cannot resize a stopped container: unknown"})"); });
  dockerd.On("POST /v1.41/exec/unstarted/resize",
             [](auto&) { return Json(500, R"({"message":"timeout waiting for exec session ready"})"); });
  dockerd.On("POST /v1.41/exec/deleted/resize",
             [](auto&) { return Json(500, R"({"message":"cannot resize a deleted process: unknown"})"); });
  dockerd.On("POST /v1.41/exec/broken/resize", [](auto&) { return Json(500, R"({"message":"runc failed"})"); });
  dockerd.On("POST /v1.41/containers/c1/resize",
             [](auto&) { return Json(409, R"({"message":"Container c1 is not running"})"); });
  auto client = dockerd.Client();
  const ConsoleSize size{.height = 24, .width = 80};
  const absl::Status ended = client->ResizeExec(Ctx(), "ended", size);
  EXPECT_EQ(ended.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ended.message(),
            "resize exec ended: the process is not running: cannot resize a stopped container: unknown");
  EXPECT_EQ(client->ResizeExec(Ctx(), "unstarted", size).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(client->ResizeExec(Ctx(), "deleted", size).message(),
            "resize exec deleted: the process is not running: cannot resize a deleted process: unknown");
  EXPECT_EQ(client->ResizeExec(Ctx(), "broken", size).code(), absl::StatusCode::kInternal);
  EXPECT_EQ(client->ResizeExec(Ctx(), "gone", size).code(), absl::StatusCode::kNotFound);
  const absl::Status container = client->ResizeContainer(Ctx(), "c1", size);
  EXPECT_EQ(container.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(container.message(), "resize container c1: Container c1 is not running");
}

// The body CreateExec sends with a console size to a dockerd of `api_version`.
json CreateExecBody(const std::string& api_version) {
  FakeDockerd dockerd;
  dockerd.SetApiVersion(api_version);
  dockerd.On(absl::StrCat("POST /v", api_version, "/containers/c1/exec"),
             [](auto&) { return Json(201, R"({"Id":"e1"})"); });
  ExecConfig config;
  config.cmd = {"sh"};
  config.tty = true;
  config.console_size = ConsoleSize{.height = 24, .width = 80};
  const auto id = dockerd.Client()->CreateExec(Ctx(), "c1", config);
  EXPECT_TRUE(id.ok()) << id.status();
  return json::parse(dockerd.requests().back().body);
}

TEST(DockerClientImplTest, CreateExecSendsTheConsoleSizeFromApi142) {
  EXPECT_EQ(CreateExecBody("1.42")["ConsoleSize"], json({24, 80}));
  EXPECT_EQ(CreateExecBody("1.45")["ConsoleSize"], json({24, 80}));
  EXPECT_FALSE(CreateExecBody("1.41").contains("ConsoleSize"));
}

}  // namespace
}  // namespace dockerclient
