#pragma once
// Counters, gauges and histograms with labels, rendered in Prometheus' text format.
// Updates are lock-free: a series is found by hash in a table whose slots are filled
// once and never cleared, and its values are atomics. Only the first use of a label
// set takes the family's mutex, and so does a scrape.
#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "observability/exposition.h"

namespace observability {

class Counter {
 public:
  void Inc(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

class Gauge {
 public:
  void Add(int64_t n) { value_.fetch_add(n, std::memory_order_relaxed); }
  void Set(int64_t v) { value_.store(v, std::memory_order_relaxed); }
  int64_t Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

// Buckets by upper bound ("le"); the +Inf bucket is implicit.
class Histogram {
 public:
  explicit Histogram(const std::vector<double>& bounds);
  void Observe(double value);

  struct Snapshot {
    std::vector<uint64_t> cumulative;  // per bound, then +Inf (= count)
    double sum = 0;
  };
  Snapshot Read() const;

 private:
  const std::vector<double>& bounds_;  // the family's
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // per bucket, not cumulative
  std::atomic<double> sum_{0};
};

// Upper bounds for latencies from 1 ms to 2 min.
const std::vector<double>& LatencyBuckets();

class FamilyBase {
 public:
  virtual ~FamilyBase() = default;
  virtual void Write(TextWriter& out) const = 0;
};

// The series of one metric name, one per set of label values.
template <typename Metric>
class Family final : public FamilyBase {
 public:
  // `capacity` bounds the number of series: label sets beyond it share one series
  // whose labels are all "overflow" (it is a bug to need more).
  Family(std::string name, std::string help, std::vector<std::string> label_names,
         std::vector<double> bounds = {}, std::size_t capacity = 512);
  ~Family() override;

  // The series for these label values, in the order of the label names.
  Metric& With(std::initializer_list<std::string_view> values);

  void Write(TextWriter& out) const override;

 private:
  struct Series;
  static constexpr std::size_t kSlots = 1024;
  Series* Find(uint64_t hash, std::initializer_list<std::string_view> values) const;
  Metric& Insert(uint64_t hash, std::initializer_list<std::string_view> values);
  Series& Make(uint64_t hash, std::vector<std::string> values);  // under mu_

  const std::string name_, help_;
  const std::vector<std::string> label_names_;
  const std::vector<double> bounds_;
  const std::size_t capacity_;
  std::unique_ptr<std::atomic<Series*>[]> slots_;
  mutable std::mutex mu_;  // insertions, scrapes
  std::vector<std::unique_ptr<Series>> series_;  // guarded by mu_; never shrinks
  Series* overflow_ = nullptr;                   // guarded by mu_
};

extern template class Family<Counter>;
extern template class Family<Gauge>;
extern template class Family<Histogram>;

// Families in the order they were added, plus values computed at scrape time.
class Registry {
 public:
  Family<Counter>& AddCounter(std::string name, std::string help, std::vector<std::string> labels = {});
  Family<Gauge>& AddGauge(std::string name, std::string help, std::vector<std::string> labels = {});
  Family<Histogram>& AddHistogram(std::string name, std::string help, std::vector<std::string> labels,
                                  std::vector<double> bounds);
  // `collect` writes whole families when the registry is rendered.
  void AddCollector(std::function<void(TextWriter&)> collect);

  std::string Render() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<FamilyBase>> families_;
  std::vector<std::function<void(TextWriter&)>> collectors_;
};

}  // namespace observability
