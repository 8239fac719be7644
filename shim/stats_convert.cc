#include "shim/stats_convert.h"

namespace shim {
namespace {

// The interface the kubelet's summary shows for a pod (as containerd and CRI-O choose it).
constexpr char kDefaultInterface[] = "eth0";

int64_t Nanos(absl::Time t) { return absl::ToUnixNanos(t); }

uint64_t FlooredDifference(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

void SetPsiData(const stats::PressureLine& line, v1::PsiData& data) {
  // The kernel counts microseconds; CRI's PsiData.Total is nanoseconds (as the kubelet's
  // summary documents it and containerd converts it).
  data.set_total(line.total_us * 1000);
  data.set_avg10(line.avg10);
  data.set_avg60(line.avg60);
  data.set_avg300(line.avg300);
}

// A line the file lacks (cpu's "full" before Linux 5.13) stays unset.
void SetPsi(const stats::Pressure& pressure, v1::PsiStats& psi) {
  if (pressure.some) SetPsiData(*pressure.some, *psi.mutable_some());
  if (pressure.full) SetPsiData(*pressure.full, *psi.mutable_full());
}

void SetCpu(const CgroupReading& r, v1::CpuUsage& cpu) {
  cpu.set_timestamp(Nanos(r.at));
  cpu.mutable_usage_core_nano_seconds()->set_value(*r.figures.cpu_usage_ns);
  if (r.nano_cores) cpu.mutable_usage_nano_cores()->set_value(*r.nano_cores);
  if (r.figures.cpu_pressure) SetPsi(*r.figures.cpu_pressure, *cpu.mutable_psi());
}

void SetMemory(const CgroupReading& r, v1::MemoryUsage& memory) {
  const stats::MemoryFigures& m = *r.figures.memory;
  memory.set_timestamp(Nanos(r.at));
  memory.mutable_working_set_bytes()->set_value(m.working_set_bytes);
  memory.mutable_usage_bytes()->set_value(m.usage_bytes);
  memory.mutable_rss_bytes()->set_value(m.rss_bytes);
  memory.mutable_page_faults()->set_value(m.page_faults);
  memory.mutable_major_page_faults()->set_value(m.major_page_faults);
  // What the kubelet's eviction and kubectl top read as headroom; none without a limit.
  if (m.limit_bytes) memory.mutable_available_bytes()->set_value(FlooredDifference(*m.limit_bytes, m.working_set_bytes));
  if (r.figures.memory_pressure) SetPsi(*r.figures.memory_pressure, *memory.mutable_psi());
}

void SetSwap(const CgroupReading& r, v1::SwapUsage& swap) {
  const stats::MemoryFigures& m = *r.figures.memory;
  swap.set_timestamp(Nanos(r.at));
  swap.mutable_swap_usage_bytes()->set_value(*m.swap_usage_bytes);
  if (m.swap_limit_bytes)
    swap.mutable_swap_available_bytes()->set_value(FlooredDifference(*m.swap_limit_bytes, *m.swap_usage_bytes));
}

// For v1::ContainerStats and v1::LinuxPodSandboxStats. IoUsage holds only PSI: none on
// cgroup v1, as containerd has it.
template <typename Stats>
void SetCgroupFigures(const CgroupReading& r, Stats& stats) {
  if (r.figures.cpu_usage_ns) SetCpu(r, *stats.mutable_cpu());
  if (r.figures.memory) SetMemory(r, *stats.mutable_memory());
  if (r.figures.io_pressure) {
    v1::IoUsage& io = *stats.mutable_io();
    io.set_timestamp(Nanos(r.at));
    SetPsi(*r.figures.io_pressure, *io.mutable_psi());
  }
}

void SetWritableLayer(const stats::LayerUsage& layer, const std::string& fs_mountpoint, v1::FilesystemUsage& fs) {
  fs.set_timestamp(Nanos(layer.measured_at));
  fs.mutable_fs_id()->set_mountpoint(fs_mountpoint);
  fs.mutable_used_bytes()->set_value(layer.usage.bytes);
  fs.mutable_inodes_used()->set_value(layer.usage.inodes);
}

void SetNetwork(const NetworkReading& r, v1::NetworkUsage& network) {
  network.set_timestamp(Nanos(r.at));
  for (const stats::InterfaceCounters& counters : r.interfaces) {
    v1::NetworkInterfaceUsage& usage = *network.add_interfaces();
    usage.set_name(counters.name);
    usage.mutable_rx_bytes()->set_value(counters.rx_bytes);
    usage.mutable_rx_errors()->set_value(counters.rx_errors);
    usage.mutable_tx_bytes()->set_value(counters.tx_bytes);
    usage.mutable_tx_errors()->set_value(counters.tx_errors);
    if (counters.name == kDefaultInterface) *network.mutable_default_interface() = usage;
  }
  if (!network.has_default_interface() && network.interfaces_size() > 0)
    *network.mutable_default_interface() = network.interfaces(0);
}

}  // namespace

v1::ContainerStats ToContainerStats(const ContainerFigures& figures, const std::string& fs_mountpoint) {
  v1::ContainerStats out;
  const v1::Container& c = figures.container;
  v1::ContainerAttributes& attributes = *out.mutable_attributes();
  attributes.set_id(c.id());
  *attributes.mutable_metadata() = c.metadata();
  *attributes.mutable_labels() = c.labels();
  *attributes.mutable_annotations() = c.annotations();
  if (const auto& r = figures.cgroup) {
    SetCgroupFigures(*r, out);
    if (r->figures.memory && r->figures.memory->swap_usage_bytes) SetSwap(*r, *out.mutable_swap());
  }
  if (figures.writable_layer) SetWritableLayer(*figures.writable_layer, fs_mountpoint, *out.mutable_writable_layer());
  return out;
}

v1::PodSandboxStats ToPodSandboxStats(const PodFigures& figures, const std::string& fs_mountpoint) {
  v1::PodSandboxStats out;
  const v1::PodSandbox& s = figures.sandbox;
  v1::PodSandboxAttributes& attributes = *out.mutable_attributes();
  attributes.set_id(s.id());
  *attributes.mutable_metadata() = s.metadata();
  *attributes.mutable_labels() = s.labels();
  *attributes.mutable_annotations() = s.annotations();
  v1::LinuxPodSandboxStats& linux = *out.mutable_linux();
  if (const auto& r = figures.cgroup) {
    SetCgroupFigures(*r, linux);
    if (r->figures.process_count) {
      linux.mutable_process()->set_timestamp(Nanos(r->at));
      linux.mutable_process()->mutable_process_count()->set_value(*r->figures.process_count);
    }
  }
  if (figures.network) SetNetwork(*figures.network, *linux.mutable_network());
  for (const ContainerFigures& container : figures.containers)
    *linux.add_containers() = ToContainerStats(container, fs_mountpoint);
  return out;
}

}  // namespace shim
