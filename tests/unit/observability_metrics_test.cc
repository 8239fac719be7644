// The Prometheus text exposition: escaping, number formats, HELP/TYPE lines,
// histogram buckets, series per label set, the series cap; /proc/self/stat parsing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>

#include "observability/exposition.h"
#include "observability/metrics.h"
#include "observability/process_metrics.h"

namespace observability {
namespace {

using ::testing::HasSubstr;

TEST(Exposition, EscapesHelpAndLabelValues) {
  EXPECT_EQ(EscapeHelp("a\\b\nc \"q\""), "a\\\\b\\nc \"q\"");  // quotes stay in HELP
  EXPECT_EQ(EscapeLabelValue("a\\b\nc \"q\""), "a\\\\b\\nc \\\"q\\\"");
  EXPECT_EQ(EscapeLabelValue("/containers/{id}/json"), "/containers/{id}/json");
}

TEST(Exposition, FormatsValuesAsPrometheusReadsThem) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(42), "42");
  EXPECT_EQ(FormatValue(0.005), "0.005");
  EXPECT_EQ(FormatValue(-1.5), "-1.5");
  EXPECT_EQ(FormatValue(1e21), "1e+21");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
}

TEST(Exposition, ValidatesNames) {
  EXPECT_TRUE(IsValidName("dockershim_cri_requests_total", true));
  EXPECT_TRUE(IsValidName("ns:sub_metric", true));
  EXPECT_FALSE(IsValidName("ns:sub", false));  // no colon in a label name
  EXPECT_FALSE(IsValidName("9lives", true));
  EXPECT_FALSE(IsValidName("with-dash", true));
  EXPECT_FALSE(IsValidName("", false));
}

TEST(Exposition, WritesHelpTypeAndSamples) {
  TextWriter out;
  out.Family("x_total", "Things.\nSecond line \\ done.", "counter");
  out.Sample("x_total", {{"method", "GET"}, {"path", "say \"hi\""}}, 3);
  out.Sample("x_total", {}, 1.5);
  out.Sample("x_bucket", {{"a", "b"}}, 2, {"le", "+Inf"});
  EXPECT_EQ(out.text(),
            "# HELP x_total Things.\\nSecond line \\\\ done.\n"
            "# TYPE x_total counter\n"
            "x_total{method=\"GET\",path=\"say \\\"hi\\\"\"} 3\n"
            "x_total 1.5\n"
            "x_bucket{a=\"b\",le=\"+Inf\"} 2\n");
}

TEST(Metrics, CounterSeriesPerLabelSet) {
  Registry registry;
  Family<Counter>& family = registry.AddCounter("req_total", "Requests.", {"method", "code"});
  family.With({"Version", "OK"}).Inc();
  family.With({"Version", "OK"}).Inc(2);
  family.With({"RunPodSandbox", "NOT_FOUND"}).Inc();
  EXPECT_EQ(family.With({"Version", "OK"}).Value(), 3u);
  // Series come sorted by label values.
  EXPECT_EQ(registry.Render(),
            "# HELP req_total Requests.\n"
            "# TYPE req_total counter\n"
            "req_total{method=\"RunPodSandbox\",code=\"NOT_FOUND\"} 1\n"
            "req_total{method=\"Version\",code=\"OK\"} 3\n");
}

TEST(Metrics, GaugeGoesUpAndDown) {
  Registry registry;
  Family<Gauge>& family = registry.AddGauge("active", "Open now.", {"kind"});
  family.With({"exec"}).Add(2);
  family.With({"exec"}).Add(-1);
  family.With({"attach"}).Set(5);
  EXPECT_THAT(registry.Render(), HasSubstr("# TYPE active gauge\nactive{kind=\"attach\"} 5\nactive{kind=\"exec\"} 1\n"));
}

TEST(Metrics, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  Registry registry;
  Family<Histogram>& family = registry.AddHistogram("lat_seconds", "Latency.", {"m"}, {0.25, 0.5, 1});
  Histogram& h = family.With({"a"});
  for (double v : {0.125, 0.25, 0.375, 0.75, 0.75, 3.0}) h.Observe(v);
  // 0.25 falls in le="0.25": the bound is inclusive.
  EXPECT_EQ(registry.Render(),
            "# HELP lat_seconds Latency.\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{m=\"a\",le=\"0.25\"} 2\n"
            "lat_seconds_bucket{m=\"a\",le=\"0.5\"} 3\n"
            "lat_seconds_bucket{m=\"a\",le=\"1\"} 5\n"
            "lat_seconds_bucket{m=\"a\",le=\"+Inf\"} 6\n"
            "lat_seconds_sum{m=\"a\"} 5.25\n"
            "lat_seconds_count{m=\"a\"} 6\n");
}

TEST(Metrics, HistogramWithoutLabels) {
  Registry registry;
  registry.AddHistogram("lag_seconds", "Lag.", {}, {1}).With({}).Observe(2);
  EXPECT_THAT(registry.Render(), HasSubstr("lag_seconds_bucket{le=\"1\"} 0\nlag_seconds_bucket{le=\"+Inf\"} 1\n"
                                           "lag_seconds_sum 2\nlag_seconds_count 1\n"));
}

TEST(Metrics, LabelSetsBeyondTheCapShareAnOverflowSeries) {
  Family<Counter> family("c_total", "C.", {"id"}, {}, 3);
  for (const char* id : {"a", "b", "c", "d", "e"}) family.With({id}).Inc();
  family.With({"a"}).Inc();  // still its own series
  TextWriter out;
  family.Write(out);
  EXPECT_THAT(out.text(), HasSubstr("c_total{id=\"a\"} 2\n"));
  EXPECT_THAT(out.text(), HasSubstr("c_total{id=\"c\"} 1\n"));
  EXPECT_THAT(out.text(), HasSubstr("c_total{id=\"overflow\"} 2\n"));
  EXPECT_THAT(out.text(), ::testing::Not(HasSubstr("id=\"d\"")));
}

TEST(Metrics, ConcurrentUpdatesAreAllCounted) {
  Family<Counter> family("c_total", "C.", {"method"});
  Family<Histogram> histograms("h_seconds", "H.", {"method"}, {0.5});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10000; ++i) {
        const std::string method = "m" + std::to_string((i + t) % 50);
        family.With({method}).Inc();
        histograms.With({method}).Observe(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  uint64_t total = 0;
  for (int m = 0; m < 50; ++m) total += family.With({"m" + std::to_string(m)}).Value();
  EXPECT_EQ(total, 40000u);
  EXPECT_EQ(histograms.With({"m0"}).Read().cumulative.back(), 800u);
  EXPECT_EQ(histograms.With({"m0"}).Read().sum, 800.0);
}

TEST(ProcessMetrics, ParsesProcStat) {
  // A command name with spaces and a parenthesis, as /proc allows.
  const std::string stat =
      "1234 (dockershim (x) y) S 1 1234 1234 0 -1 4194560 2000 0 0 0 250 50 0 0 20 0 7 0 500 "
      "104857600 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
  const std::optional<ProcessStats> s = ParseProcStat(stat, 100, 4096, 1'700'000'000);
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->cpu_seconds, 3.0);  // (250 + 50) / 100
  EXPECT_EQ(s->threads, 7);
  EXPECT_DOUBLE_EQ(s->start_time_seconds, 1'700'000'005.0);
  EXPECT_EQ(s->virtual_bytes, 104857600u);
  EXPECT_EQ(s->resident_bytes, 2560u * 4096);
  EXPECT_FALSE(ParseProcStat("1234 (x) S 1 2", 100, 4096, 0));
}

TEST(ProcessMetrics, WritesTheStandardFamiliesForThisProcess) {
  TextWriter out;
  WriteProcessMetrics(out);
  for (const char* family : {"process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds",
                             "process_threads", "process_max_fds", "process_start_time_seconds"}) {
    EXPECT_THAT(out.text(), HasSubstr(std::string("\n") + family + " ")) << family;
  }
  EXPECT_THAT(out.text(), HasSubstr("# TYPE process_cpu_seconds_total counter\n"));
}

}  // namespace
}  // namespace observability
