#include "shim/cri_service.h"

namespace shim {

CriService::CriService(Options options, dockerclient::DockerClient& docker, network::NetworkPlugin& network)
    : options_(std::move(options)),
      docker_(docker),
      network_(network),
      checkpoints_(options_.root_directory),
      oom_(options_.oom_score_adj_floor) {}

absl::Status CriService::Init() { return checkpoints_.Init(); }

CriService::~CriService() = default;

}  // namespace shim
