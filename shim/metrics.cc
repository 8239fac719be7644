// ListMetricDescriptors and ListPodSandboxMetrics (StreamPodSandboxMetrics streams the
// list): the figures of ListPodSandboxStats as the kubelet's CRI metrics collector takes
// them, named and labelled as cAdvisor's /metrics/cadvisor series so that dashboards and
// alerts keep working. Values are integers (CRI's UInt64Value): CPU time in whole
// seconds. A pod's own cgroup and network series carry container="", as cAdvisor's pod
// cgroups do.
#include <string>
#include <vector>

#include "common/status.h"
#include "shim/cri_service.h"
#include "shim/stats_sampler.h"

namespace shim {
namespace {

// Every metric's first label keys (the kubelet's own CRI descriptors use these); a
// container's ID is its "id" (cAdvisor's is the cgroup path), a pod's own series
// have the sandbox's.
const std::vector<std::string> kBaseLabelKeys = {"pod", "namespace", "container", "id", "image"};

struct MetricSpec {
  const char* name;
  const char* help;
  v1::MetricType type;
  std::vector<std::string> extra_label_keys;
};

const MetricSpec kCpuUsage{"container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.",
                           v1::COUNTER, {"cpu"}};
const MetricSpec kMemoryUsage{"container_memory_usage_bytes",
                              "Current memory usage in bytes, including all memory regardless of when it was accessed",
                              v1::GAUGE, {}};
const MetricSpec kMemoryWorkingSet{"container_memory_working_set_bytes", "Current working set in bytes.", v1::GAUGE,
                                   {}};
const MetricSpec kMemoryRss{"container_memory_rss", "Size of RSS in bytes.", v1::GAUGE, {}};
const MetricSpec kMemorySwap{"container_memory_swap", "Container swap usage in bytes.", v1::GAUGE, {}};
const MetricSpec kMemoryFailures{"container_memory_failures_total", "Cumulative count of memory allocation failures.",
                                 v1::COUNTER, {"failure_type", "scope"}};
const MetricSpec kMemoryLimit{"container_spec_memory_limit_bytes", "Memory limit for the container.", v1::GAUGE, {}};
// pids.current, which counts threads: cAdvisor's container_threads, not its container_processes.
const MetricSpec kThreads{"container_threads", "Number of threads running inside the container", v1::GAUGE, {}};
const MetricSpec kReceiveBytes{"container_network_receive_bytes_total", "Cumulative count of bytes received",
                               v1::COUNTER, {"interface"}};
const MetricSpec kReceiveErrors{"container_network_receive_errors_total",
                                "Cumulative count of errors encountered while receiving", v1::COUNTER, {"interface"}};
const MetricSpec kTransmitBytes{"container_network_transmit_bytes_total", "Cumulative count of bytes transmitted",
                                v1::COUNTER, {"interface"}};
const MetricSpec kTransmitErrors{"container_network_transmit_errors_total",
                                 "Cumulative count of errors encountered while transmitting", v1::COUNTER,
                                 {"interface"}};

const MetricSpec* const kAllMetrics[] = {&kCpuUsage,      &kMemoryUsage,   &kMemoryWorkingSet, &kMemoryRss,
                                         &kMemorySwap,    &kMemoryFailures, &kMemoryLimit,     &kThreads,
                                         &kReceiveBytes,  &kReceiveErrors, &kTransmitBytes,    &kTransmitErrors};

// Samples of one container or pod, read at one time.
class MetricWriter {
 public:
  MetricWriter(std::vector<std::string> base_label_values, absl::Time at,
               google::protobuf::RepeatedPtrField<v1::Metric>* out)
      : base_(std::move(base_label_values)), timestamp_(absl::ToUnixNanos(at)), out_(out) {}

  void Add(const MetricSpec& spec, uint64_t value, const std::vector<std::string>& extra_label_values = {}) {
    v1::Metric& metric = *out_->Add();
    metric.set_name(spec.name);
    metric.set_timestamp(timestamp_);
    metric.set_metric_type(spec.type);
    for (const std::string& v : base_) metric.add_label_values(v);
    for (const std::string& v : extra_label_values) metric.add_label_values(v);
    metric.mutable_value()->set_value(value);
  }

 private:
  std::vector<std::string> base_;
  int64_t timestamp_;
  google::protobuf::RepeatedPtrField<v1::Metric>* out_;
};

void AddCgroupMetrics(const CgroupReading& r, MetricWriter& w) {
  const stats::CgroupFigures& f = r.figures;
  if (f.cpu_usage_ns) w.Add(kCpuUsage, *f.cpu_usage_ns / 1000000000, {"total"});
  if (const std::optional<stats::MemoryFigures>& m = f.memory) {
    w.Add(kMemoryUsage, m->usage_bytes);
    w.Add(kMemoryWorkingSet, m->working_set_bytes);
    w.Add(kMemoryRss, m->rss_bytes);
    if (m->swap_usage_bytes) w.Add(kMemorySwap, *m->swap_usage_bytes);
    // memory.stat's total_* figures (v1), hierarchical on v2 too: cAdvisor's "hierarchy" scope.
    w.Add(kMemoryFailures, m->page_faults, {"pgfault", "hierarchy"});
    w.Add(kMemoryFailures, m->major_page_faults, {"pgmajfault", "hierarchy"});
    w.Add(kMemoryLimit, m->limit_bytes.value_or(0));  // cAdvisor's 0 for unlimited
  }
  if (f.process_count) w.Add(kThreads, *f.process_count);
}

void AddNetworkMetrics(const NetworkReading& r, MetricWriter& w) {
  for (const stats::InterfaceCounters& counters : r.interfaces) {
    w.Add(kReceiveBytes, counters.rx_bytes, {counters.name});
    w.Add(kReceiveErrors, counters.rx_errors, {counters.name});
    w.Add(kTransmitBytes, counters.tx_bytes, {counters.name});
    w.Add(kTransmitErrors, counters.tx_errors, {counters.name});
  }
}

v1::PodSandboxMetrics ToPodSandboxMetrics(const PodFigures& pod) {
  v1::PodSandboxMetrics out;
  const v1::PodSandbox& sandbox = pod.sandbox;
  out.set_pod_sandbox_id(sandbox.id());
  const std::string& pod_name = sandbox.metadata().name();
  const std::string& pod_namespace = sandbox.metadata().namespace_();
  const std::vector<std::string> pod_labels = {pod_name, pod_namespace, "", sandbox.id(), ""};
  if (pod.cgroup) {
    MetricWriter writer(pod_labels, pod.cgroup->at, out.mutable_metrics());
    AddCgroupMetrics(*pod.cgroup, writer);
  }
  if (pod.network) {
    MetricWriter writer(pod_labels, pod.network->at, out.mutable_metrics());
    AddNetworkMetrics(*pod.network, writer);
  }
  for (const ContainerFigures& figures : pod.containers) {
    if (!figures.cgroup) continue;  // not running: nothing to sample
    const v1::Container& c = figures.container;
    v1::ContainerMetrics& metrics = *out.add_container_metrics();
    metrics.set_container_id(c.id());
    MetricWriter writer({pod_name, pod_namespace, c.metadata().name(), c.id(), c.image().image()}, figures.cgroup->at,
                        metrics.mutable_metrics());
    AddCgroupMetrics(*figures.cgroup, writer);
  }
  return out;
}

}  // namespace

absl::StatusOr<v1::ListMetricDescriptorsResponse> CriService::ListMetricDescriptors(
    const common::Context&, const v1::ListMetricDescriptorsRequest&) {
  v1::ListMetricDescriptorsResponse resp;
  for (const MetricSpec* spec : kAllMetrics) {
    v1::MetricDescriptor& descriptor = *resp.add_descriptors();
    descriptor.set_name(spec->name);
    descriptor.set_help(spec->help);
    for (const std::string& key : kBaseLabelKeys) descriptor.add_label_keys(key);
    for (const std::string& key : spec->extra_label_keys) descriptor.add_label_keys(key);
  }
  return resp;
}

absl::StatusOr<v1::ListPodSandboxMetricsResponse> CriService::ListPodSandboxMetrics(
    const common::Context& ctx, const v1::ListPodSandboxMetricsRequest&) {
  ASSIGN_OR_RETURN(std::vector<PodFigures> pods, FiguresOfReadyPods(ctx, v1::PodSandboxFilter()));
  v1::ListPodSandboxMetricsResponse resp;
  for (const PodFigures& pod : pods) *resp.add_pod_metrics() = ToPodSandboxMetrics(pod);
  return resp;
}

}  // namespace shim
