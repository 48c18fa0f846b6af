#include "metrics/registry.h"

#include <fmt/format.h>

#include <cmath>

namespace infergrid::metrics {
namespace {
void AtomicAdd(std::atomic<double>& a, double v) {
  double cur = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
  }
}

void RenderLabels(std::string* out, const std::vector<std::string>& names,
                  const LabelValues& values, const char* extra_name = nullptr,
                  const std::string& extra_value = "") {
  if (names.empty() && extra_name == nullptr) {
    return;
  }
  out->push_back('{');
  bool first = true;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!first) out->push_back(',');
    first = false;
    *out += names[i];
    *out += "=\"";
    *out += EscapeLabelValue(i < values.size() ? values[i] : "");
    out->push_back('"');
  }
  if (extra_name != nullptr) {
    if (!first) out->push_back(',');
    *out += extra_name;
    *out += "=\"";
    *out += extra_value;
    out->push_back('"');
  }
  out->push_back('}');
}

const char* TypeName(Type t) {
  switch (t) {
    case Type::kCounter:
      return "counter";
    case Type::kGauge:
      return "gauge";
    case Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}
}  // namespace

std::string EscapeLabelValue(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string EscapeHelp(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

void Counter::Inc(double v) { AtomicAdd(value_, v); }
void Gauge::Add(double v) { AtomicAdd(value_, v); }

Histogram::Histogram(const std::vector<double>* bounds)
    : bounds_(bounds), buckets_(new std::atomic<uint64_t>[bounds->size() + 1]) {
  for (size_t i = 0; i <= bounds_->size(); ++i) buckets_[i].store(0);
}

void Histogram::Observe(double v) {
  size_t i = 0;
  while (i < bounds_->size() && v > (*bounds_)[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  AtomicAdd(sum_, v);
}

uint64_t Histogram::cumulative(size_t i) const {
  uint64_t total = 0;
  for (size_t j = 0; j <= i && j <= bounds_->size(); ++j)
    total += buckets_[j].load(std::memory_order_relaxed);
  return total;
}

Family::Family(Type type, std::string name, std::string help, std::vector<std::string> labels,
               std::vector<double> bounds)
    : type_(type),
      name_(std::move(name)),
      help_(std::move(help)),
      labels_(std::move(labels)),
      bounds_(std::move(bounds)) {}

template <>
Counter* Family::Child<Counter>(const LabelValues& values) {
  std::lock_guard lock(mu_);
  auto& slot = counters_[values];
  if (!slot) slot = std::make_unique<Counter>();
  return slot.get();
}
template <>
Gauge* Family::Child<Gauge>(const LabelValues& values) {
  std::lock_guard lock(mu_);
  auto& slot = gauges_[values];
  if (!slot) slot = std::make_unique<Gauge>();
  return slot.get();
}
template <>
Histogram* Family::Child<Histogram>(const LabelValues& values) {
  std::lock_guard lock(mu_);
  auto& slot = histograms_[values];
  if (!slot) slot = std::make_unique<Histogram>(&bounds_);
  return slot.get();
}

Counter* CounterFamily::With(const LabelValues& values) { return Child<Counter>(values); }
Gauge* GaugeFamily::With(const LabelValues& values) { return Child<Gauge>(values); }
Histogram* HistogramFamily::With(const LabelValues& values) { return Child<Histogram>(values); }

void Family::Render(std::string* out) const {
  *out +=
      fmt::format("# HELP {} {}\n# TYPE {} {}\n", name_, EscapeHelp(help_), name_, TypeName(type_));
  std::lock_guard lock(mu_);
  switch (type_) {
    case Type::kCounter:
      for (const auto& [values, c] : counters_) {
        *out += name_;
        RenderLabels(out, labels_, values);
        *out += " " + FormatValue(c->value()) + "\n";
      }
      break;
    case Type::kGauge:
      for (const auto& [values, g] : gauges_) {
        *out += name_;
        RenderLabels(out, labels_, values);
        *out += " " + FormatValue(g->value()) + "\n";
      }
      break;
    case Type::kHistogram:
      for (const auto& [values, h] : histograms_) {
        for (size_t i = 0; i <= bounds_.size(); ++i) {
          *out += name_ + "_bucket";
          RenderLabels(out, labels_, values, "le",
                       i < bounds_.size() ? FormatValue(bounds_[i]) : "+Inf");
          *out += " " + std::to_string(h->cumulative(i)) + "\n";
        }
        *out += name_ + "_sum";
        RenderLabels(out, labels_, values);
        *out += " " + FormatValue(h->sum()) + "\n";
        *out += name_ + "_count";
        RenderLabels(out, labels_, values);
        *out += " " + std::to_string(h->count()) + "\n";
      }
      break;
  }
}

CounterFamily* Registry::AddCounter(std::string name, std::string help,
                                    std::vector<std::string> labels) {
  auto f = std::make_unique<CounterFamily>(Type::kCounter, std::move(name), std::move(help),
                                           std::move(labels), std::vector<double>{});
  auto* raw = f.get();
  std::lock_guard lock(mu_);
  families_.push_back(std::move(f));
  return raw;
}

GaugeFamily* Registry::AddGauge(std::string name, std::string help,
                                std::vector<std::string> labels) {
  auto f = std::make_unique<GaugeFamily>(Type::kGauge, std::move(name), std::move(help),
                                         std::move(labels), std::vector<double>{});
  auto* raw = f.get();
  std::lock_guard lock(mu_);
  families_.push_back(std::move(f));
  return raw;
}

HistogramFamily* Registry::AddHistogram(std::string name, std::string help,
                                        std::vector<std::string> labels,
                                        std::vector<double> bounds) {
  auto f = std::make_unique<HistogramFamily>(Type::kHistogram, std::move(name), std::move(help),
                                             std::move(labels), std::move(bounds));
  auto* raw = f.get();
  std::lock_guard lock(mu_);
  families_.push_back(std::move(f));
  return raw;
}

void Registry::AddGaugeCallback(std::string name, std::string help, std::vector<std::string> labels,
                                GaugeCallback cb) {
  std::lock_guard lock(mu_);
  callbacks_.push_back({std::move(name), std::move(help), std::move(labels), std::move(cb)});
}

std::string Registry::Render() const {
  std::string out;
  std::lock_guard lock(mu_);
  for (const auto& f : families_) f->Render(&out);
  for (const auto& cb : callbacks_) {
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", cb.name, EscapeHelp(cb.help), cb.name);
    for (const auto& s : cb.cb()) {
      out += cb.name;
      RenderLabels(&out, cb.labels, s.labels);
      out += " " + FormatValue(s.value) + "\n";
    }
  }
  return out;
}

}  // namespace infergrid::metrics
