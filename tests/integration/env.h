#pragma once
// Settings shared by integration tests; scripts/test-env.sh exports the same defaults.
#include <cstdlib>
#include <string>

namespace testenv {

inline std::string Get(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

inline std::string DockerEndpoint() { return Get("DOCKERSHIM_TEST_DOCKER", "unix:///var/run/docker.sock"); }
// Plain registry without auth, and one with htpasswd auth.
inline std::string Registry() { return Get("DOCKERSHIM_TEST_REGISTRY", "127.0.0.1:5000"); }
inline std::string AuthRegistry() { return Get("DOCKERSHIM_TEST_AUTH_REGISTRY", "127.0.0.1:5001"); }
inline std::string AuthUser() { return Get("DOCKERSHIM_TEST_AUTH_USER", "tester"); }
inline std::string AuthPassword() { return Get("DOCKERSHIM_TEST_AUTH_PASSWORD", "s3cret-pass"); }
// Locally built images (scripts/test-images.sh).
inline std::string BusyboxImage() { return "dockershim-test/busybox:latest"; }
inline std::string PauseImage() { return "dockershim-test/pause:latest"; }
inline std::string CniBinDir() { return Get("DOCKERSHIM_TEST_CNI_BIN", "/usr/lib/cni"); }

// "<ctl> <verb> <engine>": stops, starts or restarts the engine under test with
// DOCKERSHIM_TEST_ENGINE_CTL (scripts/docker-engines.sh). Empty when it may not: the
// private engines it starts are the tests' to restart, never the system's dockerd (20).
inline std::string EngineCtlCommand(const std::string& verb) {
  const std::string ctl = Get("DOCKERSHIM_TEST_ENGINE_CTL", "");
  const std::string engine = Get("DOCKERSHIM_TEST_ENGINE", "");
  if (ctl.empty() || engine.empty() || engine == "20") return "";
  return ctl + " " + verb + " " + engine;
}

}  // namespace testenv
