#include "observability/families.h"

#include "observability/process_metrics.h"

namespace observability {

namespace {

struct Defaults {
  Registry registry;
  Families families{
      registry.AddCounter("dockershim_cri_requests_total", "CRI calls served, by method and gRPC status code.",
                          {"method", "code"}),
      registry.AddHistogram("dockershim_cri_request_duration_seconds", "Time to serve a CRI call, by method.",
                            {"method"}, LatencyBuckets()),
      registry.AddGauge("dockershim_cri_queued_calls",
                        "CRI calls waiting for a worker, by lane (see ARCHITECTURE.md, \"Serving CRI calls\").",
                        {"lane"}),
      registry.AddHistogram("dockershim_cri_queue_wait_seconds",
                            "Time CRI calls waited for a worker before they ran or were refused, by lane.",
                            {"lane"}, LatencyBuckets()),
      registry.AddHistogram("dockershim_docker_request_duration_seconds",
                            "Docker Engine API requests: time to the whole answer, by HTTP method, path template "
                            "and status (\"error\" when no answer came).",
                            {"method", "endpoint", "status"}, LatencyBuckets()),
      registry.AddHistogram("dockershim_cni_operation_duration_seconds",
                            "CNI plugin runs (ADD, DEL, CHECK), by plugin and network.",
                            {"operation", "plugin", "network"}, LatencyBuckets()),
      registry.AddCounter("dockershim_cni_operation_errors_total", "CNI plugin runs that failed.",
                          {"operation", "plugin", "network"}),
      registry.AddGauge("dockershim_streaming_sessions_active", "Exec, attach and port-forward sessions open now.",
                        {"kind"}),
      registry.AddCounter("dockershim_streaming_sessions_total", "Exec, attach and port-forward sessions opened.",
                          {"kind"}),
      registry.AddCounter("dockershim_log_copier_bytes_total", "Bytes written to CRI container log files."),
      registry.AddHistogram("dockershim_log_copier_lag_seconds",
                            "Age of the newest log line of each write to a CRI log file (Docker's timestamp to "
                            "the write).",
                            {}, LatencyBuckets()),
  };
  Defaults() {
    registry.AddCollector(WriteProcessMetrics);
    registry.AddCollector([](TextWriter& out) {
      out.Family("dockershim_build_info", "The running dockershim's version; always 1.", "gauge");
      out.Sample("dockershim_build_info", {{"version", DOCKERSHIM_VERSION}}, 1);
    });
  }
};

Defaults& Instance() {
  static Defaults* defaults = new Defaults();  // never destroyed: threads may record during exit
  return *defaults;
}

}  // namespace

Registry& DefaultRegistry() { return Instance().registry; }
Families& Metrics() { return Instance().families; }

}  // namespace observability
