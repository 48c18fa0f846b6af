#pragma once
// A small Prometheus client: counters, gauges and histograms with labels, rendered in the
// text exposition format (version 0.0.4).
//
// Threading: every method is thread-safe. Families hand out stable child pointers that callers
// may cache for the life of the Registry; updates on a child are lock-free atomics.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace infergrid::metrics {

using LabelValues = std::vector<std::string>;

class Counter {
 public:
  void Inc(double v = 1.0);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double v);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  explicit Histogram(const std::vector<double>* bounds);
  void Observe(double v);
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  double sum() const { return sum_.load(std::memory_order_relaxed); }
  // Cumulative count for bucket i (upper bound bounds[i]); i == bounds.size() is +Inf.
  uint64_t cumulative(size_t i) const;

 private:
  const std::vector<double>* bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

enum class Type { kCounter, kGauge, kHistogram };

class Family {
 public:
  Family(Type type, std::string name, std::string help, std::vector<std::string> labels,
         std::vector<double> bounds);
  const std::string& name() const { return name_; }
  void Render(std::string* out) const;

 protected:
  template <typename T>
  T* Child(const LabelValues& values);

 private:
  Type type_;
  std::string name_;
  std::string help_;
  std::vector<std::string> labels_;
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::map<LabelValues, std::unique_ptr<Counter>> counters_;
  std::map<LabelValues, std::unique_ptr<Gauge>> gauges_;
  std::map<LabelValues, std::unique_ptr<Histogram>> histograms_;
};

class CounterFamily : public Family {
 public:
  using Family::Family;
  Counter* With(const LabelValues& values);
};
class GaugeFamily : public Family {
 public:
  using Family::Family;
  Gauge* With(const LabelValues& values);
};
class HistogramFamily : public Family {
 public:
  using Family::Family;
  Histogram* With(const LabelValues& values);
};

// A gauge whose samples are computed when /metrics is rendered (e.g. per-endpoint state).
struct GaugeSample {
  LabelValues labels;
  double value;
};
using GaugeCallback = std::function<std::vector<GaugeSample>()>;

class Registry {
 public:
  CounterFamily* AddCounter(std::string name, std::string help, std::vector<std::string> labels);
  GaugeFamily* AddGauge(std::string name, std::string help, std::vector<std::string> labels);
  HistogramFamily* AddHistogram(std::string name, std::string help, std::vector<std::string> labels,
                                std::vector<double> bounds);
  void AddGaugeCallback(std::string name, std::string help, std::vector<std::string> labels,
                        GaugeCallback cb);
  std::string Render() const;

 private:
  struct CallbackGauge {
    std::string name, help;
    std::vector<std::string> labels;
    GaugeCallback cb;
  };
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Family>> families_;
  std::vector<CallbackGauge> callbacks_;
};

// Escaping rules of the text format.
std::string EscapeLabelValue(const std::string& v);
std::string EscapeHelp(const std::string& v);
std::string FormatValue(double v);

}  // namespace infergrid::metrics
