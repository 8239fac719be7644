// ImageStatus and ListImages through shim::CriService, against the same Docker call
// through the same DockerClientImpl, against a bare HTTP GET on one keep-alive
// unix-socket connection (bench::RawUnixHttp), so that the shim's own cost and the
// transport's own cost are both visible. Needs a running dockerd and the test
// images (scripts/test-env.sh). Prints Google Benchmark's table, then latency
// percentiles and the ratios (targets: shim / Docker client ≤ 1.1×).
//
//   images_bench [--benchmark_min_time=0.5] [--benchmark_filter=...]
#include <cstdio>
#include <memory>
#include <string>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "common/log.h"
#include "dockerclient/docker_client_impl.h"
#include "shim/cri_service.h"
#include "shim/network/docker_bridge.h"
#include "tests/bench/bench_common.h"
#include "tests/integration/env.h"

namespace {

constexpr absl::Duration kCallTimeout = absl::Seconds(30);

struct Env {
  std::unique_ptr<dockerclient::DockerClient> docker;
  std::unique_ptr<network::NetworkPlugin> network;
  std::unique_ptr<shim::CriService> service;
  std::unique_ptr<bench::RawUnixHttp> raw;
  std::string api_prefix;  // "/v1.45"
  std::string image = testenv::BusyboxImage();
};

Env* env = nullptr;

common::Context Ctx() { return common::Context::WithTimeout(kCallTimeout); }

// Each op returns "" on success, else what went wrong.

std::string ShimImageStatus() {
  shim::v1::ImageStatusRequest req;
  req.mutable_image()->set_image(env->image);
  auto resp = env->service->ImageStatus(Ctx(), req);
  if (!resp.ok()) return resp.status().ToString();
  if (!resp->has_image()) return env->image + " not found";
  benchmark::DoNotOptimize(resp->image().id().data());
  return "";
}

std::string ClientInspectImage() {
  auto image = env->docker->InspectImage(Ctx(), env->image);
  if (!image.ok()) return image.status().ToString();
  benchmark::DoNotOptimize(image->id.data());
  return "";
}

std::string RawGet(const std::string& path, bool parse) { return env->raw->GetOk(env->api_prefix + path, parse); }

std::string RawInspectImage() { return RawGet("/images/" + env->image + "/json", false); }
std::string RawInspectImageParse() { return RawGet("/images/" + env->image + "/json", true); }

std::string ShimListImages() {
  auto resp = env->service->ListImages(Ctx(), shim::v1::ListImagesRequest());
  if (!resp.ok()) return resp.status().ToString();
  if (resp->images_size() == 0) return "ListImages returned no images";
  benchmark::DoNotOptimize(resp->images_size());
  return "";
}

std::string ClientListImages() {
  auto images = env->docker->ListImages(Ctx(), "");
  if (!images.ok()) return images.status().ToString();
  benchmark::DoNotOptimize(images->size());
  return "";
}

std::string RawListImages() { return RawGet("/images/json", false); }
std::string RawListImagesParse() { return RawGet("/images/json", true); }

void BM_ImageStatus_Shim(benchmark::State& s) { bench::Measure(s, "ImageStatus: shim", ShimImageStatus); }
void BM_InspectImage_Client(benchmark::State& s) { bench::Measure(s, "InspectImage: DockerClientImpl", ClientInspectImage); }
void BM_InspectImage_RawHttp(benchmark::State& s) { bench::Measure(s, "InspectImage: raw HTTP", RawInspectImage); }
void BM_InspectImage_RawHttpJson(benchmark::State& s) {
  bench::Measure(s, "InspectImage: raw HTTP + json::parse", RawInspectImageParse);
}
void BM_ListImages_Shim(benchmark::State& s) { bench::Measure(s, "ListImages: shim", ShimListImages); }
void BM_ListImages_Client(benchmark::State& s) { bench::Measure(s, "ListImages: DockerClientImpl", ClientListImages); }
void BM_ListImages_RawHttp(benchmark::State& s) { bench::Measure(s, "ListImages: raw HTTP", RawListImages); }
void BM_ListImages_RawHttpJson(benchmark::State& s) {
  bench::Measure(s, "ListImages: raw HTTP + json::parse", RawListImagesParse);
}

// Side by side, in rotating order: the figures the ratios come from.
void BM_Compare_ImageStatus(benchmark::State& s) {
  bench::Compare(s, {{"cmp ImageStatus: shim", ShimImageStatus},
                     {"cmp ImageStatus: DockerClientImpl", ClientInspectImage},
                     {"cmp ImageStatus: raw HTTP", RawInspectImage},
                     {"cmp ImageStatus: raw HTTP + json::parse", RawInspectImageParse}});
}
void BM_Compare_ListImages(benchmark::State& s) {
  bench::Compare(s, {{"cmp ListImages: shim", ShimListImages},
                     {"cmp ListImages: DockerClientImpl", ClientListImages},
                     {"cmp ListImages: raw HTTP", RawListImages},
                     {"cmp ListImages: raw HTTP + json::parse", RawListImagesParse}});
}

#define BENCH(fn) BENCHMARK(fn)->UseRealTime()->Unit(benchmark::kMicrosecond)
BENCH(BM_ImageStatus_Shim);
BENCH(BM_InspectImage_Client);
BENCH(BM_InspectImage_RawHttp);
BENCH(BM_InspectImage_RawHttpJson);
BENCH(BM_ListImages_Shim);
BENCH(BM_ListImages_Client);
BENCH(BM_ListImages_RawHttp);
BENCH(BM_ListImages_RawHttpJson);
BENCH(BM_Compare_ImageStatus);
BENCH(BM_Compare_ListImages);

int Setup(Env& e) {
  const std::string endpoint = testenv::DockerEndpoint();
  auto docker = dockerclient::DockerClientImpl::Create(endpoint);
  if (!docker.ok()) {
    std::fprintf(stderr, "images_bench: %s\n", docker.status().ToString().c_str());
    return 1;
  }
  e.docker = std::move(*docker);
  auto api = e.docker->Ping(Ctx());
  if (!api.ok()) {
    std::fprintf(stderr, "images_bench: dockerd must run (scripts/test-env.sh): %s\n", api.status().ToString().c_str());
    return 1;
  }
  e.api_prefix = "/v" + *api;
  e.network = std::make_unique<network::DockerBridgeNetwork>(*e.docker);
  shim::Options options;
  options.docker_endpoint = endpoint;
  options.pod_infra_image = testenv::PauseImage();
  e.service = std::make_unique<shim::CriService>(options, *e.docker, *e.network);
  std::string path = endpoint;
  if (absl::StartsWith(path, "unix://")) path = path.substr(7);
  e.raw = std::make_unique<bench::RawUnixHttp>(path);

  // Warm every path once (connections, API negotiation) and check the image is there.
  for (auto op : {ShimImageStatus, ClientInspectImage, RawInspectImage, ShimListImages, ClientListImages,
                  RawListImages}) {
    if (std::string err = op(); !err.empty()) {
      std::fprintf(stderr, "images_bench: setup: %s (run scripts/test-env.sh to build %s)\n", err.c_str(),
                   e.image.c_str());
      return 1;
    }
  }
  auto images = e.docker->ListImages(Ctx(), "");
  std::printf("images_bench: dockerd API %s, %zu images in the list, ImageStatus of %s\n", api->c_str(),
              images.ok() ? images->size() : 0, e.image.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  common::SetLogLevel(common::LogLevel::kWarning);
  Env e;
  env = &e;
  if (int rc = Setup(e); rc != 0) return rc;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();

  bench::PrintLatencyTable("Latency");
  bench::PrintRatioTable({
      {"ImageStatus: shim / DockerClientImpl inspect (side by side)", "cmp ImageStatus: shim",
       "cmp ImageStatus: DockerClientImpl", 1.1},
      {"ListImages: shim / DockerClientImpl list (side by side)", "cmp ListImages: shim",
       "cmp ListImages: DockerClientImpl", 1.1},
      {"InspectImage: DockerClientImpl / raw HTTP+parse (side by side)", "cmp ImageStatus: DockerClientImpl",
       "cmp ImageStatus: raw HTTP + json::parse", 0},
      {"InspectImage: DockerClientImpl / raw HTTP (side by side)", "cmp ImageStatus: DockerClientImpl",
       "cmp ImageStatus: raw HTTP", 0},
      {"ListImages: DockerClientImpl / raw HTTP+parse (side by side)", "cmp ListImages: DockerClientImpl",
       "cmp ListImages: raw HTTP + json::parse", 0},
      {"ListImages: DockerClientImpl / raw HTTP (side by side)", "cmp ListImages: DockerClientImpl",
       "cmp ListImages: raw HTTP", 0},
      {"ImageStatus: shim / raw HTTP (separate runs)", "ImageStatus: shim", "InspectImage: raw HTTP", 0},
      {"ImageStatus: shim / DockerClientImpl (separate runs)", "ImageStatus: shim", "InspectImage: DockerClientImpl",
       0},
      {"ListImages: shim / DockerClientImpl (separate runs)", "ListImages: shim", "ListImages: DockerClientImpl", 0},
  });
  env = nullptr;
  return 0;
}
