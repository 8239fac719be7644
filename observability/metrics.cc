#include "observability/metrics.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "absl/hash/hash.h"

namespace observability {

namespace {

// A malformed name or label set is a programming error, caught by the first test run.
[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "observability: %s\n", what.c_str());
  std::abort();
}

uint64_t HashValues(std::initializer_list<std::string_view> values) {
  uint64_t h = values.size();
  for (std::string_view v : values) h = absl::HashOf(h, absl::string_view(v.data(), v.size()));
  return h;
}

template <typename Metric>
std::string_view TypeName() {
  if constexpr (std::is_same_v<Metric, Counter>) return "counter";
  if constexpr (std::is_same_v<Metric, Gauge>) return "gauge";
  return "histogram";
}

}  // namespace

Histogram::Histogram(const std::vector<double>& bounds)
    : bounds_(bounds), counts_(new std::atomic<uint64_t>[bounds.size() + 1]) {
  for (std::size_t i = 0; i <= bounds.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double value) {
  const std::size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot s;
  uint64_t total = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    total += counts_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(total);
  }
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

const std::vector<double>& LatencyBuckets() {
  static const std::vector<double> buckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                              0.5,   1,      2.5,   5,    10,    30,   60,  120};
  return buckets;
}

template <typename Metric>
struct Family<Metric>::Series {
  template <typename... Args>
  Series(uint64_t h, std::vector<std::string> v, Args&&... args)
      : hash(h), values(std::move(v)), metric(std::forward<Args>(args)...) {}
  const uint64_t hash;
  const std::vector<std::string> values;
  Metric metric;
};

template <typename Metric>
Family<Metric>::Family(std::string name, std::string help, std::vector<std::string> label_names,
                       std::vector<double> bounds, std::size_t capacity)
    : name_(std::move(name)),
      help_(std::move(help)),
      label_names_(std::move(label_names)),
      bounds_(std::move(bounds)),
      capacity_(std::min(capacity, kSlots / 2)),
      slots_(new std::atomic<Series*>[kSlots]) {
  if (!IsValidName(name_, true)) Fail("invalid metric name \"" + name_ + "\"");
  for (const std::string& label : label_names_) {
    if (!IsValidName(label, false) || label.starts_with("__") || label == "le")
      Fail("invalid label name \"" + label + "\" of " + name_);
  }
  if (!std::is_sorted(bounds_.begin(), bounds_.end())) Fail("unsorted buckets of " + name_);
  for (std::size_t i = 0; i < kSlots; ++i) slots_[i].store(nullptr, std::memory_order_relaxed);
}

template <typename Metric>
Family<Metric>::~Family() = default;

template <typename Metric>
typename Family<Metric>::Series* Family<Metric>::Find(uint64_t hash,
                                                     std::initializer_list<std::string_view> values) const {
  for (std::size_t i = 0; i < kSlots; ++i) {
    Series* s = slots_[(hash + i) % kSlots].load(std::memory_order_acquire);
    if (s == nullptr) return nullptr;
    if (s->hash == hash && std::equal(s->values.begin(), s->values.end(), values.begin(), values.end()))
      return s;
  }
  return nullptr;
}

template <typename Metric>
Metric& Family<Metric>::With(std::initializer_list<std::string_view> values) {
  if (values.size() != label_names_.size()) Fail("wrong number of label values for " + name_);
  const uint64_t hash = HashValues(values);
  if (Series* s = Find(hash, values)) return s->metric;
  return Insert(hash, values);
}

template <typename Metric>
typename Family<Metric>::Series& Family<Metric>::Make(uint64_t hash, std::vector<std::string> values) {
  if constexpr (std::is_same_v<Metric, Histogram>) {
    series_.push_back(std::make_unique<Series>(hash, std::move(values), bounds_));
  } else {
    series_.push_back(std::make_unique<Series>(hash, std::move(values)));
  }
  return *series_.back();
}

template <typename Metric>
Metric& Family<Metric>::Insert(uint64_t hash, std::initializer_list<std::string_view> values) {
  std::lock_guard lock(mu_);
  if (Series* s = Find(hash, values)) return s->metric;  // another thread won
  if (series_.size() >= capacity_) {
    // Not in the slots: every label set beyond the capacity lands here.
    if (!overflow_) overflow_ = &Make(0, std::vector<std::string>(label_names_.size(), "overflow"));
    return overflow_->metric;
  }
  Series* s = &Make(hash, std::vector<std::string>(values.begin(), values.end()));
  // Less than half the slots are used, so a free one is always found.
  for (std::size_t i = 0;; ++i) {
    std::atomic<Series*>& slot = slots_[(hash + i) % kSlots];
    if (slot.load(std::memory_order_relaxed) == nullptr) {
      slot.store(s, std::memory_order_release);
      return s->metric;
    }
  }
}

template <typename Metric>
void Family<Metric>::Write(TextWriter& out) const {
  std::vector<const Series*> sorted;
  {
    std::lock_guard lock(mu_);
    for (const auto& s : series_) sorted.push_back(s.get());
  }
  std::sort(sorted.begin(), sorted.end(), [](const Series* a, const Series* b) { return a->values < b->values; });
  out.Family(name_, help_, TypeName<Metric>());
  for (const Series* s : sorted) {
    LabelPairs labels;
    for (std::size_t i = 0; i < label_names_.size(); ++i) labels.emplace_back(label_names_[i], s->values[i]);
    if constexpr (std::is_same_v<Metric, Histogram>) {
      const Histogram::Snapshot snap = s->metric.Read();
      for (std::size_t i = 0; i < bounds_.size(); ++i) {
        const std::string le = FormatValue(bounds_[i]);
        out.Sample(name_ + "_bucket", labels, static_cast<double>(snap.cumulative[i]), {"le", le});
      }
      out.Sample(name_ + "_bucket", labels, static_cast<double>(snap.cumulative.back()), {"le", "+Inf"});
      out.Sample(name_ + "_sum", labels, snap.sum);
      out.Sample(name_ + "_count", labels, static_cast<double>(snap.cumulative.back()));
    } else {
      out.Sample(name_, labels, static_cast<double>(s->metric.Value()));
    }
  }
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

Family<Counter>& Registry::AddCounter(std::string name, std::string help, std::vector<std::string> labels) {
  auto family = std::make_unique<Family<Counter>>(std::move(name), std::move(help), std::move(labels));
  Family<Counter>& ref = *family;
  std::lock_guard lock(mu_);
  families_.push_back(std::move(family));
  return ref;
}

Family<Gauge>& Registry::AddGauge(std::string name, std::string help, std::vector<std::string> labels) {
  auto family = std::make_unique<Family<Gauge>>(std::move(name), std::move(help), std::move(labels));
  Family<Gauge>& ref = *family;
  std::lock_guard lock(mu_);
  families_.push_back(std::move(family));
  return ref;
}

Family<Histogram>& Registry::AddHistogram(std::string name, std::string help, std::vector<std::string> labels,
                                          std::vector<double> bounds) {
  auto family =
      std::make_unique<Family<Histogram>>(std::move(name), std::move(help), std::move(labels), std::move(bounds));
  Family<Histogram>& ref = *family;
  std::lock_guard lock(mu_);
  families_.push_back(std::move(family));
  return ref;
}

void Registry::AddCollector(std::function<void(TextWriter&)> collect) {
  std::lock_guard lock(mu_);
  collectors_.push_back(std::move(collect));
}

std::string Registry::Render() const {
  TextWriter out;
  std::lock_guard lock(mu_);
  for (const auto& family : families_) family->Write(out);
  for (const auto& collect : collectors_) collect(out);
  return out.Take();
}

}  // namespace observability
