#include "plan/fleet.h"

#include <fmt/format.h>

#include "config/yaml_reader.h"
#include "engine_model/profiles.h"

namespace infergrid::plan {

namespace {

Status ParseGroup(const config::Node& n, ServerGroup* g) {
  IG_RETURN_IF_ERROR(n.ExpectMap());
  IG_RETURN_IF_ERROR(n.CheckKeys(
      {"name", "count", "accelerator", "model", "tp", "dtype", "kvCacheDtype", "pricePerHour",
       "maxNumSeqs", "maxNumBatchedTokens", "blockSize", "gpuMemoryUtilization", "maxModelLen",
       "longPrefillTokenThreshold", "enablePrefixCaching"}));
  for (const char* key : {"accelerator", "model"}) {
    if (!n.Has(key)) return n.Error(fmt::format("missing required field '{}'", key));
  }
  engine_model::ServerOptions& o = g->options;
  IG_ASSIGN_OR_RETURN(std::string accel, n.Get("accelerator").String());
  o.accelerator = engine_model::FindAccelerator(accel);
  if (o.accelerator == nullptr) {
    return n.Get("accelerator")
        .Error(fmt::format("unknown accelerator '{}'; expected one of: {}", accel,
                           engine_model::AcceleratorNames()));
  }
  IG_ASSIGN_OR_RETURN(std::string model, n.Get("model").String());
  o.model = engine_model::FindModel(model);
  if (o.model == nullptr) {
    return n.Get("model").Error(fmt::format("unknown model profile '{}'; expected one of: {}",
                                            model, engine_model::ModelNames()));
  }
  g->name = accel;
  if (n.Has("name")) {
    IG_ASSIGN_OR_RETURN(g->name, n.Get("name").String());
  }
  auto u32 = [&n](const char* key, uint32_t* out, int64_t lo, int64_t hi) -> Status {
    if (!n.Has(key)) return Status::Ok();
    IG_ASSIGN_OR_RETURN(int64_t v, n.Get(key).Int(lo, hi));
    *out = static_cast<uint32_t>(v);
    return Status::Ok();
  };
  IG_RETURN_IF_ERROR(u32("count", &g->count, 1, 100000));
  IG_RETURN_IF_ERROR(u32("tp", &o.tp, 1, 64));
  IG_RETURN_IF_ERROR(u32("maxNumSeqs", &o.max_num_seqs, 1, 100000));
  IG_RETURN_IF_ERROR(u32("maxNumBatchedTokens", &o.max_num_batched_tokens, 1, 10000000));
  IG_RETURN_IF_ERROR(u32("blockSize", &o.block_size, 1, 1024));
  IG_RETURN_IF_ERROR(u32("maxModelLen", &o.max_model_len, 2, 100000000));
  IG_RETURN_IF_ERROR(
      u32("longPrefillTokenThreshold", &o.long_prefill_token_threshold, 0, 10000000));
  if (n.Has("dtype")) {
    IG_ASSIGN_OR_RETURN(std::string d, n.Get("dtype").String());
    auto dt = engine_model::ParseDtype(d);
    if (!dt) return n.Get("dtype").Error(fmt::format("expected bf16 or fp8, got '{}'", d));
    o.dtype = *dt;
  }
  if (n.Has("kvCacheDtype")) {
    IG_ASSIGN_OR_RETURN(std::string d, n.Get("kvCacheDtype").String());
    auto kv = engine_model::ParseKvCacheBytes(d);
    if (!kv) {
      return n.Get("kvCacheDtype").Error(fmt::format("expected auto, bf16 or fp8, got '{}'", d));
    }
    o.kv_bytes = *kv;
  }
  if (n.Has("gpuMemoryUtilization")) {
    IG_ASSIGN_OR_RETURN(o.gpu_memory_utilization, n.Get("gpuMemoryUtilization").Double(0.01, 1));
  }
  if (n.Has("enablePrefixCaching")) {
    IG_ASSIGN_OR_RETURN(o.enable_prefix_caching, n.Get("enablePrefixCaching").Bool());
  }
  if (n.Has("pricePerHour")) {
    IG_ASSIGN_OR_RETURN(g->price_per_hour, n.Get("pricePerHour").Double(0, 1e6));
  }
  // Build once here so a model that does not fit is reported at its group.
  auto s = engine_model::MakeServer(o);
  if (!s.ok()) return n.Error(s.status().message());
  return Status::Ok();
}

}  // namespace

Result<FleetSpec> ParseFleet(const std::string& yaml_text, const std::string& source) {
  FleetSpec f;
  f.source = source;
  config::DocumentHeader header;
  IG_RETURN_IF_ERROR(config::ParseDocument(
      yaml_text, &f.source, "Fleet", &header, [&f](const config::Node& spec) -> Status {
        IG_RETURN_IF_ERROR(spec.CheckKeys({"servers"}));
        if (!spec.Has("servers")) return spec.Error("missing required field 'servers'");
        config::Node servers = spec.Get("servers");
        IG_RETURN_IF_ERROR(servers.ExpectSequence());
        if (servers.size() == 0) return servers.Error("expected at least one server group");
        for (size_t i = 0; i < servers.size(); ++i) {
          ServerGroup g;
          IG_RETURN_IF_ERROR(ParseGroup(servers.At(i), &g));
          if (i > 0 && g.options.block_size != f.groups[0].options.block_size) {
            return servers.At(i).Error(
                "every server group needs the same blockSize (the planner hashes prompts once)");
          }
          for (const auto& other : f.groups) {
            if (other.name == g.name)
              return servers.At(i).Error(fmt::format("duplicate group name '{}'", g.name));
          }
          f.groups.push_back(std::move(g));
        }
        return Status::Ok();
      }));
  f.name = header.name.empty() ? source : header.name;
  return f;
}

Result<FleetSpec> LoadFleetFile(const std::string& path) {
  IG_ASSIGN_OR_RETURN(std::string text, config::ReadTextFile(path));
  return ParseFleet(text, path);
}

Result<Fleet> BuildFleet(const FleetSpec& spec) {
  Fleet f;
  f.name = spec.name;
  for (size_t gi = 0; gi < spec.groups.size(); ++gi) {
    const ServerGroup& g = spec.groups[gi];
    f.group_names.push_back(g.name);
    auto setup = engine_model::MakeServer(g.options);
    if (!setup.ok()) return Status::Error(g.name + ": " + setup.status().message());
    setup->engine.record_kv_events = false;  // turned on by policies that read them
    for (uint32_t i = 0; i < g.count; ++i) {
      Server s;
      s.name = fmt::format("{}-{}", g.name, i);
      s.group = gi;
      s.setup = *setup;
      s.capacity = engine_model::CapacityOf(*setup, g.price_per_hour);
      f.servers.push_back(std::move(s));
    }
    f.block_size = g.options.block_size;
  }
  return f;
}

}  // namespace infergrid::plan
