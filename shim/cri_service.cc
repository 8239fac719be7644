#include "shim/cri_service.h"

#include "common/status.h"
#include "shim/stats_sampler.h"

namespace shim {

CriService::CriService(Options options, dockerclient::DockerClient& docker, network::NetworkPlugin& network)
    : options_(std::move(options)),
      docker_(docker),
      network_(network),
      checkpoints_(options_.root_directory),
      oom_(options_.oom_score_adj_floor),
      stats_(std::make_unique<StatsSampler>(docker, SamplerOptions{options_.proc_root, options_.cgroup_prefix,
                                                                   options_.clock, options_.writable_layers})) {}

absl::Status CriService::Init() {
  RETURN_IF_ERROR(checkpoints_.Init());
  ResumeLogCopies(common::Context::WithTimeout(absl::Seconds(30)));
  return absl::OkStatus();
}

CriService::~CriService() = default;

}  // namespace shim
