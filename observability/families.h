#pragma once
// Every metric the shim exports, in one registry: what /metrics serves.
#include "observability/metrics.h"

namespace observability {

struct Families {
  Family<Counter>& cri_requests;        // {method, code}
  Family<Histogram>& cri_duration;      // {method}
  Family<Gauge>& cri_queued;            // {lane}
  Family<Histogram>& cri_queue_wait;    // {lane}
  Family<Histogram>& docker_duration;   // {method, endpoint, status}
  Family<Histogram>& cni_duration;      // {operation, plugin, network}
  Family<Counter>& cni_errors;          // {operation, plugin, network}
  Family<Gauge>& streaming_active;      // {kind}
  Family<Counter>& streaming_total;     // {kind}
  Family<Counter>& log_bytes;           // {}
  Family<Histogram>& log_lag;           // {}
};

// Created on first use, with the process and build-info collectors.
Registry& DefaultRegistry();
Families& Metrics();

}  // namespace observability
