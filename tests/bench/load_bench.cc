// Load on the real dockershim binary, over its CRI socket, with a real engine and the
// real CNI plugins: `--pods` pods with one container each are created (RunPodSandbox,
// CreateContainer, StartContainer) and removed (StopContainer, RemoveContainer,
// StopPodSandbox, RemovePodSandbox) by `--clients` concurrent gRPC clients (one
// channel and connection each), `--rounds` times. Printed per round: the calls that
// failed (by code), p50/p99/max latency per RPC, and what the round left behind:
// containers of the bench's pod namespace in Docker, host-local IP reservations,
// checkpoint files, CNI cache files, and the shim's fds, threads and resident memory
// (VmRSS; anonymous and file-backed from smaps_rollup). Before the rounds: the idle
// shim and the shim with `--idle-pods` pods polled as a kubelet polls (relist and
// stats lists); `--smaps` also prints resident memory by kind of mapping there.
//
// Verdict (printed, and the exit code): every call succeeded, nothing left after any
// round, no more fds after the last round than after the first, no more threads but
// testsupport::kThreadSlack, and RSS after the last round within 10% of the first.
//
// The shim runs in a network namespace of its own (the bridge dsload0 and the veths'
// host ends go with it); IPAM state, CNI cache, root and logs are in a temp dir.
// Containers of the pod namespace "dsload-bench" are removed at start (a killed run)
// and at the end. Needs root, the engine and the test images (scripts/test-env.sh).
//   load_bench [--pods 100] [--clients 8] [--rounds 5] [--idle-pods 20] [--smaps]
//              [--shim build/shim/dockershim] [--shim-arg=--log-level=warn ...]
//   load_bench --benchmark_min_time=x   (as scripts/test.sh BENCH=1 calls it: a brief run)
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/context.h"
#include "dockerclient/docker_client_impl.h"
#include "tests/bench/bench_common.h"
#include "tests/integration/env.h"
#include "tests/support/footprint.h"
#include "tests/support/load_driver.h"

namespace {

namespace fs = std::filesystem;
using testsupport::Figures;
using testsupport::Footprint;

constexpr char kNamespace[] = "dsload-bench";

struct RoundRow {
  int round = 0;
  double create_s = 0, remove_s = 0;
  Figures figures;
  testsupport::Leftovers left;
  Footprint peak, after;
};

double SecondsSince(bench::Clock::time_point t0) {
  return std::chrono::duration<double>(bench::Clock::now() - t0).count();
}

std::string Codes(const Figures& figures) {
  std::map<grpc::StatusCode, int> codes;
  for (const auto& [name, rpc] : figures.rpcs)
    for (const auto& [code, n] : rpc.failures) codes[code] += n;
  std::vector<std::string> parts;
  for (const auto& [code, n] : codes) parts.push_back(absl::StrCat(n, "x code ", static_cast<int>(code)));
  return parts.empty() ? "-" : absl::StrJoin(parts, ", ");
}

void PrintFailures(const Figures& figures) {
  for (const auto& [name, rpc] : figures.rpcs)
    if (!rpc.first_error.empty()) std::printf("    %s failed first with: %s\n", name.c_str(), rpc.first_error.c_str());
}

void PrintFootprint(const char* phase, const Footprint& f) {
  std::printf("  %-28s %8.1f %8.1f %8.1f %8.1f %7d %7d\n", phase, f.rss_kb / 1024.0, f.anon_kb / 1024.0,
              f.file_kb / 1024.0, f.private_kb / 1024.0, f.threads, f.fds);
}

void PrintMappingKinds(const char* phase, pid_t pid) {
  auto kinds = testsupport::ReadMappingKinds(pid);
  if (!kinds.ok()) {
    std::printf("  %s: %s\n", phase, kinds.status().ToString().c_str());
    return;
  }
  std::vector<std::pair<int64_t, std::string>> sorted;
  for (const auto& [kind, kb] : *kinds)
    if (kb > 0) sorted.emplace_back(kb, kind);
  std::sort(sorted.rbegin(), sorted.rend());
  std::printf("\nResident memory by mapping, %s (kB)\n", phase);
  for (const auto& [kb, kind] : sorted) std::printf("  %-40s %8lld\n", kind.c_str(), static_cast<long long>(kb));
}

absl::StatusOr<Footprint> Settled(pid_t pid, absl::Duration settle) {
  absl::SleepFor(settle);
  return testsupport::ReadFootprint(pid);
}

}  // namespace

int main(int argc, char** argv) {
  int pods = 100, clients = 8, rounds = 5, idle_pods = 20;
  double settle_s = 3;
  bool smaps = false, keep = false;
  std::string shim_binary = DOCKERSHIM_BINARY;
  std::vector<std::string> shim_args;
  CLI::App app{"load_bench: CRI load on the dockershim binary, with leak checks"};
  app.add_option("--pods", pods, "pods per round")->capture_default_str()->check(CLI::Range(1, 60000));
  app.add_option("--clients", clients, "concurrent gRPC clients")->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--rounds", rounds, "create/remove rounds")->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--idle-pods", idle_pods, "pods of the steady-state measurement before the rounds (0: none)")
      ->capture_default_str();
  app.add_option("--settle", settle_s, "seconds to wait before each footprint reading")->capture_default_str();
  app.add_flag("--smaps", smaps, "print resident memory by kind of mapping");
  app.add_flag("--keep", keep, "keep the temp dir (the shim's stderr is in it)");
  app.add_option("--shim", shim_binary, "the dockershim binary")->capture_default_str();
  app.add_option("--shim-arg", shim_args, "an extra flag for the shim (repeatable)");
  // scripts/test.sh (BENCH=1) runs every bench briefly with this flag.
  std::string brief;
  app.add_option("--benchmark_min_time", brief, "any value: a brief run, 10 pods x 4 clients x 2 rounds, 5 idle pods");
  CLI11_PARSE(app, argc, argv);
  if (!brief.empty()) pods = 10, clients = 4, rounds = 2, idle_pods = 5, settle_s = 1;
  const absl::Duration settle = absl::Seconds(settle_s);

  std::string tmpl = (fs::temp_directory_path() / "dsload.XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) {
    std::perror("load_bench: mkdtemp");
    return 1;
  }
  const std::string dir = tmpl;
  const std::string endpoint = testenv::DockerEndpoint();
  auto docker = dockerclient::DockerClientImpl::Create(endpoint);
  if (!docker.ok()) {
    std::fprintf(stderr, "load_bench: %s\n", docker.status().ToString().c_str());
    return 1;
  }
  auto remove_ours = [&] {
    bench::RemoveContainersNamed(
        **docker,
        [](std::string_view name) {
          return name.find(std::string("_") + kNamespace + "_") != std::string_view::npos;
        },
        "load_bench");
  };
  remove_ours();  // a killed earlier run

  auto run = testsupport::PrepareLoadRun(shim_binary, dir, kNamespace, "dsload0", clients);
  if (!run.ok()) {
    std::fprintf(stderr, "load_bench: %s\n", run.status().ToString().c_str());
    return 1;
  }
  const testsupport::LeftoverPlaces& places = run->places;
  run->launch.args.insert(run->launch.args.end(), shim_args.begin(), shim_args.end());
  auto shim = testsupport::ShimProcess::Start(run->launch);
  if (!shim.ok()) {
    std::fprintf(stderr, "load_bench: %s\n", shim.status().ToString().c_str());
    return 1;
  }
  const pid_t pid = (*shim)->pid();
  std::printf("load_bench: %s (pid %d) on %s, %d pods x %d clients x %d rounds, shim flags: %s\n", shim_binary.c_str(),
              pid, endpoint.c_str(), pods, clients, rounds, absl::StrJoin(shim_args, " ").c_str());
  std::fflush(stdout);

  testsupport::LoadDriver driver(run->options);

  std::vector<std::pair<std::string, Footprint>> phases;
  bool ok = true;
  auto footprint = [&](const std::string& phase, const absl::StatusOr<Footprint>& f) {
    if (!f.ok()) {
      std::fprintf(stderr, "load_bench: %s: %s\n", phase.c_str(), f.status().ToString().c_str());
      ok = false;
      return Footprint{};
    }
    phases.emplace_back(phase, *f);
    if (smaps) PrintMappingKinds(phase.c_str(), pid);
    return *f;
  };
  footprint("idle, fresh", Settled(pid, settle));

  if (idle_pods > 0) {
    Figures figures;
    std::vector<testsupport::Pod> up = driver.CreatePods("idle", idle_pods, &figures);
    for (int i = 0; i < 3; ++i) {
      driver.Poll(up, &figures);
      absl::SleepFor(absl::Seconds(1));
    }
    footprint(absl::StrCat(idle_pods, " pods, polled"), Settled(pid, settle));
    driver.RemovePods(up, &figures);
    footprint(absl::StrCat("idle, after ", idle_pods, " pods"), Settled(pid, settle));
    if (figures.Failures() > 0) {
      std::printf("load_bench: %d calls failed around the %d-pod phase: %s\n", figures.Failures(), idle_pods,
                  Codes(figures).c_str());
      PrintFailures(figures);
      ok = false;
    }
  }

  std::vector<RoundRow> rows;
  for (int r = 1; r <= rounds; ++r) {
    RoundRow row;
    row.round = r;
    auto t0 = bench::Clock::now();
    std::vector<testsupport::Pod> up = driver.CreatePods(absl::StrCat("r", r), pods, &row.figures);
    row.create_s = SecondsSince(t0);
    if (auto f = testsupport::ReadFootprint(pid); f.ok()) row.peak = *f;
    t0 = bench::Clock::now();
    driver.RemovePods(up, &row.figures);
    row.remove_s = SecondsSince(t0);
    if (auto left = testsupport::CountLeftovers(places); left.ok()) {
      row.left = *left;
    } else {
      std::fprintf(stderr, "load_bench: round %d: %s\n", r, left.status().ToString().c_str());
      ok = false;
    }
    row.after = footprint(absl::StrCat("after round ", r), Settled(pid, settle));
    std::printf("load_bench: round %d: up in %.1f s, down in %.1f s, %d failed calls, %d left behind, RSS %.1f MB\n", r,
                row.create_s, row.remove_s, row.figures.Failures(), row.left.Total(), row.after.rss_kb / 1024.0);
    std::fflush(stdout);
    rows.push_back(std::move(row));
  }

  std::printf("\nRounds (%d pods, %d clients; leftovers counted right after the round, the footprint %.0f s later)\n",
              pods, clients, settle_s);
  std::printf("  %5s %8s %8s %8s %-16s %5s %5s %5s %5s %6s %6s %8s %8s %8s %8s\n", "round", "up s", "down s",
              "failed", "codes", "ctrs", "IPs", "ckpts", "cache", "fds", "thr", "RSS MB", "anon MB", "file MB",
              "peak MB");
  for (const RoundRow& row : rows) {
    std::printf("  %5d %8.1f %8.1f %8d %-16s %5d %5d %5d %5d %6d %6d %8.1f %8.1f %8.1f %8.1f\n", row.round,
                row.create_s, row.remove_s, row.figures.Failures(), Codes(row.figures).c_str(), row.left.containers,
                row.left.ip_allocations, row.left.checkpoints, row.left.cni_cache_files, row.after.fds,
                row.after.threads, row.after.rss_kb / 1024.0, row.after.anon_kb / 1024.0, row.after.file_kb / 1024.0,
                row.peak.rss_kb / 1024.0);
    PrintFailures(row.figures);
  }
  std::printf("\nLatency per RPC and round (ms)\n  %-18s", "RPC");
  for (const RoundRow& row : rows) std::printf("   r%-2d p50    p99    max", row.round);
  std::printf("\n");
  for (const char* rpc : {"RunPodSandbox", "CreateContainer", "StartContainer", "StopContainer", "RemoveContainer",
                          "StopPodSandbox", "RemovePodSandbox"}) {
    std::printf("  %-18s", rpc);
    for (const RoundRow& row : rows) {
      auto it = row.figures.rpcs.find(rpc);
      const std::vector<double> ms = it == row.figures.rpcs.end() ? std::vector<double>{} : it->second.ms;
      std::printf(" %9.0f %6.0f %6.0f", bench::Percentile(ms, 50), bench::Percentile(ms, 99),
                  bench::Percentile(ms, 100));
    }
    std::printf("\n");
  }

  footprint("idle, after the rounds", Settled(pid, settle));
  std::printf("\nFootprint (MB; private = not shared with other processes)\n");
  std::printf("  %-28s %8s %8s %8s %8s %7s %7s\n", "phase", "RSS", "anon", "file", "private", "threads", "fds");
  for (const auto& [phase, f] : phases) PrintFootprint(phase.c_str(), f);

  std::vector<std::string> verdict;
  for (const RoundRow& row : rows) {
    if (row.figures.Failures() > 0) verdict.push_back(absl::StrCat("round ", row.round, ": failed calls"));
    if (row.left.Total() > 0) verdict.push_back(absl::StrCat("round ", row.round, ": objects left behind"));
  }
  if (!rows.empty()) {
    const Footprint& first = rows.front().after;
    const Footprint& last = rows.back().after;
    if (last.fds > first.fds) verdict.push_back(absl::StrCat("fds grew from ", first.fds, " to ", last.fds));
    if (last.threads > first.threads + testsupport::kThreadSlack)
      verdict.push_back(absl::StrCat("threads grew from ", first.threads, " to ", last.threads));
    if (last.rss_kb > first.rss_kb * 11 / 10)
      verdict.push_back(absl::StrCat("RSS after the last round ", last.rss_kb, " kB > 110% of the first's ",
                                     first.rss_kb, " kB"));
  }
  if (!ok) verdict.push_back("a measurement failed (above)");

  auto code = (*shim)->Stop();
  std::printf("\nshim: SIGTERM -> %s\n", code.ok() ? absl::StrCat("exit ", *code).c_str() : code.status().ToString().c_str());
  if (!code.ok() || *code != 0) verdict.push_back("the shim did not exit cleanly on SIGTERM");
  remove_ours();
  if (keep) {
    std::printf("kept %s\n", dir.c_str());
  } else {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::printf("\nload_bench: %s%s\n", verdict.empty() ? "PASS" : "FAIL: ", absl::StrJoin(verdict, "; ").c_str());
  return verdict.empty() ? 0 : 1;
}
