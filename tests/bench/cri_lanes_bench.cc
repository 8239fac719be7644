// The CRI server under bursts, lane by lane: the real services, dispatcher and gRPC
// limits on a unix socket, in-process, the CriService on a fake Docker where every
// call takes `--docker-ms` and the calls that wait on containers or registries
// (StopContainer, exec, RemoveContainer, PullImage) `--slow-ms`. Short calls are
// PodSandboxStatus and ContainerStatus, health calls Version. `--calls` calls of a
// lane are fired at once on one connection, as the kubelet's pod workers do: first
// each lane alone, then all lanes together. Printed per lane: calls answered OK,
// refused RESOURCE_EXHAUSTED, other errors, the latency percentiles of the calls
// answered OK and how many were per second (to the lane's last answer).
// Prints figures; no pass/fail.
//   cri_lanes_bench [--calls 300] [--docker-ms 5] [--slow-ms 200]
//   cri_lanes_bench --benchmark_min_time=x   (as scripts/test.sh BENCH=1 calls it: 50 calls)
#include <grpcpp/grpcpp.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "shim/cri_service.h"
#include "shim/dispatch/dispatcher.h"
#include "shim/grpc_limits.h"
#include "shim/grpc_services.h"
#include "tests/bench/bench_common.h"
#include "tests/support/grpc_burst.h"
#include "tests/unit/fake_network.h"
#include "tests/unit/gated_docker_client.h"

namespace {

namespace fs = std::filesystem;
namespace v1 = runtime::v1;
using testsupport::Burst;

constexpr char kPause[] = "registry.k8s.io/pause:3.10";
constexpr char kBusybox[] = "busybox:1.36";

// The services as main.cc serves them.
struct Server {
  Server(shim::CriService& service, const std::string& address)
      : runtime(service, shim::GrpcOptions{}, dispatcher), images(service, shim::GrpcOptions{}, dispatcher) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort(address, grpc::InsecureServerCredentials());
    builder.RegisterService(&runtime);
    builder.RegisterService(&images);
    shim::ApplyGrpcLimits(builder);
    server = builder.BuildAndStart();
  }
  ~Server() { shim::StopServing(*server, dispatcher, absl::Seconds(5)); }

  shim::dispatch::Dispatcher dispatcher;
  shim::RuntimeServiceImpl runtime;
  shim::ImageServiceImpl images;
  std::unique_ptr<grpc::Server> server;
};

struct Stubs {
  std::unique_ptr<v1::RuntimeService::Stub> runtime;
  std::unique_ptr<v1::ImageService::Stub> images;
};

// What a lane's calls are: its name and how to issue call number `i`.
struct LaneLoad {
  std::string lane;
  std::function<void(Burst&, int i)> issue;
};

struct Row {
  int ok = 0, refused = 0, other = 0;
  std::vector<double> ms;
  double seconds = 0;
};

void PrintRow(const std::string& scenario, const std::string& lane, const Row& r) {
  std::printf("%-9s %-10s %6d %8d %6d %9.1f %9.1f %9.1f %9.1f %9.0f\n", scenario.c_str(), lane.c_str(), r.ok, r.refused,
              r.other, bench::Percentile(r.ms, 50), bench::Percentile(r.ms, 90), bench::Percentile(r.ms, 99),
              r.ms.empty() ? 0.0 : *std::max_element(r.ms.begin(), r.ms.end()),
              r.seconds > 0 ? r.ok / r.seconds : 0.0);
  std::fflush(stdout);
}

// Fires `calls` calls of each of `loads` at once; a row per lane.
std::map<std::string, Row> Fire(const std::vector<LaneLoad>& loads, int calls) {
  std::map<std::string, std::unique_ptr<Burst>> bursts;
  for (int i = 0; i < calls; ++i)
    for (const LaneLoad& load : loads) {
      auto& burst = bursts[load.lane];
      if (!burst) burst = std::make_unique<Burst>();
      load.issue(*burst, i);
    }
  std::map<std::string, Row> rows;
  for (auto& [lane, burst] : bursts) {
    std::vector<Burst::Outcome> outcomes;
    Row& row = rows[lane];
    if (!burst->Await(absl::Minutes(5), &outcomes)) {
      std::printf("%s: calls still unanswered after 5 minutes\n", lane.c_str());
      continue;
    }
    absl::Duration last;
    for (const auto& o : outcomes) {
      last = std::max(last, o.latency);
      if (o.status.ok()) {
        ++row.ok;
        row.ms.push_back(absl::ToDoubleMilliseconds(o.latency));
      } else if (o.status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
        ++row.refused;
      } else if (row.other++ == 0) {
        std::printf("  %s %s: %d %s\n", lane.c_str(), o.rpc.c_str(), o.status.error_code(),
                    o.status.error_message().c_str());
      }
    }
    row.seconds = absl::ToDoubleSeconds(last);
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 300, docker_ms = 5, slow_ms = 200;
  CLI::App app{"cri_lanes_bench: bursts of CRI calls per lane against a fake Docker"};
  app.add_option("--calls", calls, "calls per lane fired at once")->capture_default_str()->check(CLI::Range(1, 100000));
  app.add_option("--docker-ms", docker_ms, "latency of every fake Docker call, ms")->capture_default_str();
  app.add_option("--slow-ms", slow_ms, "latency of stops, execs, removals and pulls, ms")->capture_default_str();
  std::string brief;
  app.add_option("--benchmark_min_time", brief, "any value: a brief run, 50 calls");
  CLI11_PARSE(app, argc, argv);
  if (!brief.empty()) calls = 50;

  std::string tmpl = (fs::temp_directory_path() / "dslanes.XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) {
    std::perror("cri_lanes_bench: mkdtemp");
    return 1;
  }
  const std::string dir = tmpl;
  common::SetLogLevel(common::LogLevel::kWarning);
  testing_fakes::GatedDockerClient docker;
  testing_fakes::FakeNetwork network;
  docker.AddImage({kPause});
  docker.AddImage({kBusybox});
  docker.AddPullableImage("registry.local/app:1");
  shim::Options options;
  options.root_directory = dir + "/state";
  options.pod_infra_image = kPause;
  options.oom_score_adj_floor = -1000;
  shim::CriService service(options, docker, network);
  if (absl::Status s = service.Init(); !s.ok()) {
    std::fprintf(stderr, "cri_lanes_bench: %s\n", s.ToString().c_str());
    return 1;
  }

  // Pods and containers: `calls` to stop or remove per scenario, 20 to exec in.
  const common::Context ctx;  // no deadline: the fake answers at once while containers are made
  std::vector<std::string> sandboxes, containers;
  auto make_containers = [&](int n) {
    std::vector<std::string> made;
    for (int i = 0; i < n; ++i) {
      if (i % 10 == 0) {
        v1::RunPodSandboxRequest run;
        v1::PodSandboxConfig* pod = run.mutable_config();
        pod->mutable_metadata()->set_name(absl::StrCat("pod", sandboxes.size()));
        pod->mutable_metadata()->set_namespace_("lanes");
        pod->mutable_metadata()->set_uid(absl::StrCat("uid-", sandboxes.size()));
        pod->mutable_linux();
        sandboxes.push_back(service.RunPodSandbox(ctx, run)->pod_sandbox_id());
      }
      v1::CreateContainerRequest create;
      create.set_pod_sandbox_id(sandboxes.back());
      create.mutable_config()->mutable_metadata()->set_name(absl::StrCat("c", containers.size()));
      create.mutable_config()->mutable_image()->set_image(kBusybox);
      create.mutable_sandbox_config()->mutable_metadata()->set_name("pod");
      const std::string id = service.CreateContainer(ctx, create)->container_id();
      v1::StartContainerRequest start;
      start.set_container_id(id);
      (void)service.StartContainer(ctx, start);
      containers.push_back(id);
      made.push_back(id);
    }
    return made;
  };
  const std::vector<std::string> exec_targets = make_containers(20);

  // Docker's latencies apply to the scenarios, not to making their containers.
  auto set_latencies = [&](bool on) {
    for (const char* op : {"Ping", "Version", "Info", "ListContainers", "InspectContainer", "ListImages",
                           "InspectImage", "CreateContainer", "StartContainer"})
      docker.SetLatency(op, absl::Milliseconds(on ? docker_ms : 0));
    for (const char* op : {"StopContainer", "RunExec", "RemoveContainer", "PullImage"})
      docker.SetLatency(op, absl::Milliseconds(on ? slow_ms : 0));
  };

  const std::string address = "unix://" + dir + "/cri.sock";
  Server server(service, address);
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  Stubs stubs{v1::RuntimeService::NewStub(channel), v1::ImageService::NewStub(channel)};
  const absl::Duration timeout = absl::Minutes(2);  // the kubelet's runtime request timeout

  std::vector<std::string> stop_targets, remove_targets;
  const std::vector<LaneLoad> loads = {
      {"health",
       [&](Burst& b, int) {
         b.Issue<v1::VersionResponse>("Version", v1::VersionRequest(), timeout,
                                      [&](auto... a) { stubs.runtime->async()->Version(a...); });
       }},
      {"short",
       [&](Burst& b, int i) {
         if (i % 2) {
           v1::ContainerStatusRequest req;
           req.set_container_id(exec_targets[i % exec_targets.size()]);
           b.Issue<v1::ContainerStatusResponse>("ContainerStatus", req, timeout,
                                                [&](auto... a) { stubs.runtime->async()->ContainerStatus(a...); });
         } else {
           v1::PodSandboxStatusRequest req;
           req.set_pod_sandbox_id(sandboxes[i % sandboxes.size()]);
           b.Issue<v1::PodSandboxStatusResponse>("PodSandboxStatus", req, timeout,
                                                 [&](auto... a) { stubs.runtime->async()->PodSandboxStatus(a...); });
         }
       }},
      {"lifecycle",
       [&](Burst& b, int i) {
         v1::RemoveContainerRequest req;
         req.set_container_id(remove_targets[i]);
         b.Issue<v1::RemoveContainerResponse>("RemoveContainer", req, timeout,
                                              [&](auto... a) { stubs.runtime->async()->RemoveContainer(a...); });
       }},
      {"process",
       [&](Burst& b, int i) {
         if (i % 2) {
           v1::StopContainerRequest req;
           req.set_container_id(stop_targets[i]);
           b.Issue<v1::StopContainerResponse>("StopContainer", req, timeout,
                                              [&](auto... a) { stubs.runtime->async()->StopContainer(a...); });
         } else {
           v1::ExecSyncRequest req;
           req.set_container_id(exec_targets[i % exec_targets.size()]);
           req.add_cmd("true");
           b.Issue<v1::ExecSyncResponse>("ExecSync", req, timeout,
                                         [&](auto... a) { stubs.runtime->async()->ExecSync(a...); });
         }
       }},
      {"pull",
       [&](Burst& b, int) {
         v1::PullImageRequest req;
         req.mutable_image()->set_image("registry.local/app:1");
         b.Issue<v1::PullImageResponse>("PullImage", req, timeout,
                                        [&](auto... a) { stubs.images->async()->PullImage(a...); });
       }},
  };

  std::printf(
      "cri_lanes_bench: %d calls per lane at once on one connection; Docker %d ms, stop/exec/remove/pull %d ms\n",
      calls, docker_ms, slow_ms);
  std::printf("%-9s %-10s %6s %8s %6s %9s %9s %9s %9s %9s\n", "scenario", "lane", "ok", "refused", "other", "p50 ms",
              "p90 ms", "p99 ms", "max ms", "calls/s");
  // Each scenario stops and removes containers of its own; the stopped ones go
  // afterwards, so that every scenario finds as many containers in Docker.
  auto prepare = [&] {
    set_latencies(false);
    for (const std::string& id : stop_targets) {
      v1::RemoveContainerRequest req;
      req.set_container_id(id);
      (void)service.RemoveContainer(ctx, req);
    }
    stop_targets = make_containers(calls);
    remove_targets = make_containers(calls);
    set_latencies(true);
  };
  for (const LaneLoad& load : loads) {
    prepare();
    for (const auto& [lane, row] : Fire({load}, calls)) PrintRow("alone", lane, row);
  }
  prepare();
  for (const auto& [lane, row] : Fire(loads, calls)) PrintRow("together", lane, row);
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}
