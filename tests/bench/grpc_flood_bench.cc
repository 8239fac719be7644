// Bad input on the CRI socket, against the dockershim binary: `--connections` clients
// that each open `--streams` calls and then never read a byte (raw HTTP/2, stream
// window 0, no ping or settings acknowledged): GetContainerEvents streams, ListContainers
// calls whose answers can never be sent, and requests that never end. Printed: the
// shim's resident memory, fds and threads idle, with the flood open, after
// `--reap-wait` seconds (its keepalive drops clients that answer no ping) and after the
// clients left; the latency of a normal client's Version, Status and ListContainers at
// each step, and how many flood connections the shim closed.
// Prints figures; no pass/fail. Needs the engine (scripts/test-env.sh).
//   grpc_flood_bench [--connections 2000] [--streams 3] [--reap-wait 0] [--shim build/shim/dockershim]
//   grpc_flood_bench --benchmark_min_time=x   (as scripts/test.sh BENCH=1 calls it: 200 connections)
#include <grpcpp/grpcpp.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "api/cri.h"
#include "tests/integration/env.h"
#include "tests/support/footprint.h"
#include "tests/support/raw_h2_client.h"
#include "tests/support/shim_process.h"

namespace {

namespace fs = std::filesystem;
namespace v1 = runtime::v1;

constexpr char kService[] = "/runtime.v1.RuntimeService/";

// "OK 1.2 ms" or "CODE: message" for each of a normal client's calls, on a new connection.
std::string NormalCalls(const std::string& socket_path) {
  auto stub =
      v1::RuntimeService::NewStub(grpc::CreateChannel("unix://" + socket_path, grpc::InsecureChannelCredentials()));
  std::string out;
  auto one = [&](const char* name, auto call) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    const absl::Time start = absl::Now();
    grpc::Status s = call(ctx);
    const double ms = absl::ToDoubleMilliseconds(absl::Now() - start);
    absl::StrAppend(&out, "  ", name, " ",
                    s.ok() ? absl::StrFormat("OK %.1f ms", ms)
                           : absl::StrFormat("%d after %.0f ms: %s", s.error_code(), ms, s.error_message()));
  };
  one("Version", [&](grpc::ClientContext& ctx) {
    v1::VersionResponse r;
    return stub->Version(&ctx, v1::VersionRequest(), &r);
  });
  one("Status", [&](grpc::ClientContext& ctx) {
    v1::StatusResponse r;
    return stub->Status(&ctx, v1::StatusRequest(), &r);
  });
  one("ListContainers", [&](grpc::ClientContext& ctx) {
    v1::ListContainersResponse r;
    return stub->ListContainers(&ctx, v1::ListContainersRequest(), &r);
  });
  return out;
}

void Print(const char* phase, pid_t pid, const std::string& socket_path, const std::string& extra = "") {
  auto f = testsupport::ReadFootprint(pid);
  if (!f.ok()) {
    std::printf("%-22s %s\n", phase, f.status().ToString().c_str());
    return;
  }
  std::printf("%-22s rss %7.1f MiB (anon %7.1f)  fds %5d  threads %3d %s\n%-22s%s\n", phase, f->rss_kb / 1024.0,
              f->anon_kb / 1024.0, f->fds, f->threads, extra.c_str(), "", NormalCalls(socket_path).c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int connections = 2000, streams = 3, reap_wait = 0;
  std::string shim_binary = DOCKERSHIM_BINARY;
  CLI::App app{"grpc_flood_bench: clients that never read, against the dockershim binary"};
  app.add_option("--connections", connections, "flood connections")->capture_default_str()->check(CLI::Range(1, 60000));
  app.add_option("--streams", streams, "calls per flood connection")
      ->capture_default_str()
      ->check(CLI::Range(0, 10000));
  app.add_option("--reap-wait", reap_wait, "seconds to wait for the shim to drop the flood before the clients leave")
      ->capture_default_str();
  app.add_option("--shim", shim_binary, "the dockershim binary")->capture_default_str();
  std::string brief;
  app.add_option("--benchmark_min_time", brief, "any value: a brief run, 200 connections");
  CLI11_PARSE(app, argc, argv);
  if (!brief.empty()) connections = 200;

  // The flood's fds are ours and the shim's: both need more than the usual 1024.
  rlimit nofile{};
  ::getrlimit(RLIMIT_NOFILE, &nofile);
  nofile.rlim_cur = nofile.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &nofile);

  std::string tmpl = (fs::temp_directory_path() / "dsflood.XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) {
    std::perror("grpc_flood_bench: mkdtemp");
    return 1;
  }
  const std::string dir = tmpl;
  testsupport::ShimLaunch launch;
  launch.binary = shim_binary;
  launch.socket_path = dir + "/ds.sock";
  launch.output_dir = dir;
  launch.private_netns = false;
  launch.args = {"--container-runtime-endpoint", "unix://" + launch.socket_path, "--docker-endpoint",
                 testenv::DockerEndpoint(), "--network-plugin", "docker", "--root-directory", dir + "/root",
                 "--log-level", "warn"};
  auto shim = testsupport::ShimProcess::Start(launch);
  if (!shim.ok()) {
    std::fprintf(stderr, "grpc_flood_bench: %s\n", shim.status().ToString().c_str());
    return 1;
  }
  const pid_t pid = (*shim)->pid();
  std::printf("grpc_flood_bench: %s (pid %d) on %s: %d connections x %d calls that never read (fd limit %llu)\n",
              shim_binary.c_str(), pid, testenv::DockerEndpoint().c_str(), connections, streams,
              static_cast<unsigned long long>(nofile.rlim_cur));
  Print("idle", pid, launch.socket_path);

  std::string list;
  v1::ListContainersRequest().SerializeToString(&list);
  std::vector<std::unique_ptr<testsupport::RawH2Connection>> flood;
  int failed = 0;
  const absl::Time start = absl::Now();
  for (int i = 0; i < connections; ++i) {
    auto conn = testsupport::RawH2Connection::Open(launch.socket_path, /*initial_window=*/0);
    if (!conn.ok()) {
      if (failed++ == 0) std::printf("  connection %d: %s\n", i, conn.status().ToString().c_str());
      continue;
    }
    for (int s = 0; s < streams; ++s) {
      absl::Status sent;
      switch (s % 3) {
        case 0:
          sent = (*conn)->Call(absl::StrCat(kService, "GetContainerEvents"), "", /*complete=*/true);
          break;
        case 1:
          sent = (*conn)->Call(absl::StrCat(kService, "ListContainers"), list, /*complete=*/true);
          break;
        default:
          sent = (*conn)->Call(absl::StrCat(kService, "ListContainers"), list, /*complete=*/false);
      }
      if (!sent.ok() && failed++ == 0) std::printf("  connection %d: %s\n", i, sent.ToString().c_str());
    }
    flood.push_back(*std::move(conn));
  }
  std::printf("  opened %zu connections in %.1f s (%d failures)\n", flood.size(),
              absl::ToDoubleSeconds(absl::Now() - start), failed);
  absl::SleepFor(absl::Seconds(2));
  auto closed = [&] {
    int n = 0;
    for (auto& c : flood) n += c->ClosedByServer();
    return absl::StrCat("(", n, " flood connections closed by the shim)");
  };
  Print("flood open", pid, launch.socket_path, closed());
  if (reap_wait > 0) {
    absl::SleepFor(absl::Seconds(reap_wait));
    Print(absl::StrCat("after ", reap_wait, " s").c_str(), pid, launch.socket_path, closed());
  }
  flood.clear();
  absl::SleepFor(absl::Seconds(3));
  Print("flood gone", pid, launch.socket_path);
  auto code = (*shim)->Stop();
  std::printf("shim stopped: %s\n",
              code.ok() ? absl::StrCat("exit ", *code).c_str() : code.status().ToString().c_str());
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}
