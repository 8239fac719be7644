// The per-call cost of the metrics hooks (what every CRI call, Docker request and
// CNI run pays with or without --metrics-bind-addr), and of a scrape. Figures only.
//   observability_bench [--benchmark_filter=...]
// BM_RpcScope* is the whole hook of one CRI call at the default log level: log
// context, one counter and one histogram update. BM_DockerCall is the transport's
// hook: path template, histogram update. ".../threads:2" runs two threads on the same
// series, the contended case.
#include <benchmark/benchmark.h>

#include <string>

#include "absl/status/statusor.h"
#include "common/log.h"
#include "observability/families.h"
#include "observability/hooks.h"
#include "observability/rpc_scope.h"

namespace {

using namespace observability;

void BM_CounterInc(benchmark::State& state) {
  Counter& c = Metrics().cri_requests.With({"Version", "OK"});
  for (auto _ : state) c.Inc();
}
BENCHMARK(BM_CounterInc)->Threads(1)->Threads(2);

void BM_CounterWithLabels(benchmark::State& state) {
  for (auto _ : state) Metrics().cri_requests.With({"ContainerStatus", "OK"}).Inc();
}
BENCHMARK(BM_CounterWithLabels)->Threads(1)->Threads(2);

void BM_HistogramObserve(benchmark::State& state) {
  Histogram& h = Metrics().cri_duration.With({"ContainerStatus"});
  double v = 0.0001;
  for (auto _ : state) {
    h.Observe(v);
    v += 0.0001;
  }
}
BENCHMARK(BM_HistogramObserve)->Threads(1)->Threads(2);

struct StatusLike {
  std::string container_id() const { return "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"; }
};

void BM_RpcScope(benchmark::State& state) {
  for (auto _ : state) {
    RpcScope scope("ContainerStatus", StatusLike{});
    scope.Finish(0, "");
  }
}
BENCHMARK(BM_RpcScope)->Threads(1)->Threads(2);

void BM_DockerCall(benchmark::State& state) {
  struct Response {
    int status = 200;
    std::string body;
  };
  const std::string target = "/v1.41/containers/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef/json";
  for (auto _ : state) {
    DockerCall call("GET", target, {}, {});
    benchmark::DoNotOptimize(call.Done(absl::StatusOr<Response>(Response{})));
  }
}
BENCHMARK(BM_DockerCall)->Threads(1)->Threads(2);

void BM_DockerEndpoint(benchmark::State& state) {
  const std::string target = "/v1.41/images/127.0.0.1:5000/busybox:latest/json";
  for (auto _ : state) benchmark::DoNotOptimize(DockerEndpoint(target));
}
BENCHMARK(BM_DockerEndpoint);

// A scrape with every CRI method and 60 Docker series populated.
void BM_Render(benchmark::State& state) {
  for (int m = 0; m < 41; ++m) {
    const std::string method = "Method" + std::to_string(m);
    Metrics().cri_requests.With({method, "OK"}).Inc();
    Metrics().cri_duration.With({method}).Observe(0.01);
  }
  for (int e = 0; e < 60; ++e) {
    Metrics().docker_duration.With({"GET", "/endpoint" + std::to_string(e), "200"}).Observe(0.001);
  }
  std::size_t bytes = 0;
  for (auto _ : state) bytes = DefaultRegistry().Render().size();
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_Render)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  common::SetLogLevel(common::LogLevel::kInfo);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
