#include "workload/workload.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/hash.h"
#include "tokenizer/tokenizer.h"

namespace infergrid::workload {

namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

bool MultiTurn(ClientKind k) { return k == ClientKind::kCodingAgent || k == ClientKind::kChat; }

Result<ClientKind> ParseKind(const config::Node& n) {
  IG_ASSIGN_OR_RETURN(std::string s, n.String());
  if (s == "coding-agent") return ClientKind::kCodingAgent;
  if (s == "chat") return ClientKind::kChat;
  if (s == "shared-doc-qa") return ClientKind::kSharedDocQa;
  if (s == "random") return ClientKind::kRandom;
  return n.Error(fmt::format(
      "unknown client type '{}'; expected one of: chat, coding-agent, random, shared-doc-qa", s));
}

// Defaults per kind (docs/planner.md lists them).
ClientGroup Defaults(ClientKind k) {
  ClientGroup g;
  g.kind = k;
  g.name = ClientKindName(k);
  switch (k) {
    case ClientKind::kCodingAgent:
      g.system_prompt_tokens = 6000;
      g.context_tokens = Distribution::Lognormal(10000, 0.6, 2000, 40000);
      g.first_message_tokens = Distribution::Lognormal(400, 0.8, 20, 4000);
      g.next_message_tokens = Distribution::Lognormal(1200, 1.2, 20, 16000);
      g.output_tokens = Distribution::Lognormal(250, 1.0, 10, 4000);
      g.think_seconds = Distribution::Exponential(3);
      g.turns = Distribution::Lognormal(20, 0.8, 1, 200);
      g.session_gap_seconds = Distribution::Exponential(10);
      g.max_context_tokens = 100000;
      break;
    case ClientKind::kChat:
      g.system_prompt_tokens = 500;
      g.first_message_tokens = Distribution::Lognormal(150, 1.0, 5, 4000);
      g.next_message_tokens = Distribution::Lognormal(80, 1.0, 5, 4000);
      g.output_tokens = Distribution::Lognormal(350, 0.7, 10, 2000);
      g.think_seconds = Distribution::Lognormal(20, 1.0, 2, 300);
      g.turns = Distribution::Lognormal(6, 0.8, 1, 60);
      g.session_gap_seconds = Distribution::Exponential(60);
      g.max_context_tokens = 32000;
      break;
    case ClientKind::kSharedDocQa:
      g.system_prompt_tokens = 300;
      g.context_tokens = Distribution::Lognormal(8000, 0.5, 1000, 32000);
      g.first_message_tokens = Distribution::Lognormal(60, 0.6, 5, 500);
      g.output_tokens = Distribution::Lognormal(200, 0.7, 10, 1000);
      g.think_seconds = Distribution::Exponential(5);
      g.documents = 200;
      g.zipf = 1.0;
      break;
    case ClientKind::kRandom:
      g.first_message_tokens = Distribution::Lognormal(1000, 1.0, 10, 16000);
      g.output_tokens = Distribution::Lognormal(250, 0.8, 10, 2000);
      g.think_seconds = Distribution::Exponential(2);
      break;
  }
  return g;
}

Status ParseGroup(const config::Node& n, ClientGroup* out) {
  IG_RETURN_IF_ERROR(n.ExpectMap());
  IG_RETURN_IF_ERROR(n.CheckKeys(
      {"name", "type", "count", "sessionsPerSecond", "systemPromptTokens", "contextTokens",
       "firstMessageTokens", "nextMessageTokens", "outputTokens", "thinkSeconds", "turns",
       "sessionGapSeconds", "maxContextTokens", "repositoryReuse", "documents", "zipf"}));
  if (!n.Has("type")) {
    return n.Error("missing required field 'type' (coding-agent, chat, shared-doc-qa or random)");
  }
  IG_ASSIGN_OR_RETURN(ClientKind kind, ParseKind(n.Get("type")));
  ClientGroup g = Defaults(kind);
  if (n.Has("name")) {
    IG_ASSIGN_OR_RETURN(g.name, n.Get("name").String());
  }
  if (n.Has("count") == n.Has("sessionsPerSecond")) {
    return n.Error("give exactly one of 'count' (closed loop) and 'sessionsPerSecond' (open loop)");
  }
  if (n.Has("count")) {
    IG_ASSIGN_OR_RETURN(int64_t c, n.Get("count").Int(1, 10000000));
    g.count = static_cast<uint32_t>(c);
  } else {
    IG_ASSIGN_OR_RETURN(g.sessions_per_second, n.Get("sessionsPerSecond").Double(1e-6, 1e6));
  }
  constexpr double kTok = 10000000;
  if (n.Has("systemPromptTokens")) {
    IG_ASSIGN_OR_RETURN(int64_t v, n.Get("systemPromptTokens").Int(0, 1000000));
    g.system_prompt_tokens = static_cast<uint32_t>(v);
  }
  struct D {
    const char* key;
    Distribution* d;
    double lo, hi;
  };
  for (const D& d :
       {D{"contextTokens", &g.context_tokens, 0, kTok},
        D{"firstMessageTokens", &g.first_message_tokens, 1, kTok},
        D{"nextMessageTokens", &g.next_message_tokens, 0, kTok},
        D{"outputTokens", &g.output_tokens, 1, kTok}, D{"thinkSeconds", &g.think_seconds, 0, 1e6},
        D{"turns", &g.turns, 1, 1e6}, D{"sessionGapSeconds", &g.session_gap_seconds, 0, 1e6}}) {
    if (!n.Has(d.key)) continue;
    IG_ASSIGN_OR_RETURN(*d.d, ParseDistribution(n.Get(d.key), d.lo, d.hi));
  }
  if (n.Has("maxContextTokens")) {
    IG_ASSIGN_OR_RETURN(int64_t v, n.Get("maxContextTokens").Int(0, 100000000));
    g.max_context_tokens = static_cast<uint32_t>(v);
  }
  if (n.Has("repositoryReuse")) {
    IG_ASSIGN_OR_RETURN(g.repository_reuse, n.Get("repositoryReuse").Double(0, 1));
  }
  if (n.Has("documents")) {
    IG_ASSIGN_OR_RETURN(int64_t v, n.Get("documents").Int(1, 10000000));
    g.documents = static_cast<uint32_t>(v);
  }
  if (n.Has("zipf")) {
    IG_ASSIGN_OR_RETURN(g.zipf, n.Get("zipf").Double(0, 10));
  }
  *out = std::move(g);
  return Status::Ok();
}

}  // namespace

const char* ClientKindName(ClientKind k) {
  switch (k) {
    case ClientKind::kCodingAgent:
      return "coding-agent";
    case ClientKind::kChat:
      return "chat";
    case ClientKind::kSharedDocQa:
      return "shared-doc-qa";
    case ClientKind::kRandom:
      return "random";
  }
  return "";
}

Result<WorkloadSpec> ParseWorkload(const std::string& yaml_text, const std::string& source) {
  WorkloadSpec w;
  w.source = source;
  config::DocumentHeader header;
  IG_RETURN_IF_ERROR(config::ParseDocument(
      yaml_text, &w.source, "Workload", &header, [&w](const config::Node& spec) -> Status {
        IG_RETURN_IF_ERROR(spec.CheckKeys({"seed", "duration", "warmup", "rampUp", "clients"}));
        if (spec.Has("seed")) {
          IG_ASSIGN_OR_RETURN(int64_t s, spec.Get("seed").Int(0, INT64_MAX));
          w.seed = static_cast<uint64_t>(s);
        }
        auto seconds = [&spec](const char* key, double* out) -> Status {
          if (!spec.Has(key)) return Status::Ok();
          IG_ASSIGN_OR_RETURN(Duration d, spec.Get(key).Dur());
          *out = std::chrono::duration<double>(d).count();
          return Status::Ok();
        };
        IG_RETURN_IF_ERROR(seconds("duration", &w.duration_s));
        IG_RETURN_IF_ERROR(seconds("warmup", &w.warmup_s));
        IG_RETURN_IF_ERROR(seconds("rampUp", &w.ramp_up_s));
        if (!(w.duration_s > 0)) return spec.Get("duration").Error("must be more than 0");
        if (w.warmup_s >= w.duration_s) {
          return spec.Get("warmup").Error("must be shorter than the duration");
        }
        if (!spec.Has("clients")) return spec.Error("missing required field 'clients'");
        config::Node clients = spec.Get("clients");
        IG_RETURN_IF_ERROR(clients.ExpectSequence());
        if (clients.size() == 0) return clients.Error("expected at least one client group");
        for (size_t i = 0; i < clients.size(); ++i) {
          ClientGroup g;
          IG_RETURN_IF_ERROR(ParseGroup(clients.At(i), &g));
          w.groups.push_back(std::move(g));
        }
        return Status::Ok();
      }));
  w.name = header.name.empty() ? source : header.name;
  return w;
}

Result<WorkloadSpec> LoadWorkloadFile(const std::string& path) {
  IG_ASSIGN_OR_RETURN(std::string text, config::ReadTextFile(path));
  return ParseWorkload(text, path);
}

Client::Client(const WorkloadSpec& spec, size_t group, uint64_t index, bool open_loop)
    : group_(&spec.groups[group]),
      group_index_(group),
      index_(index),
      open_loop_(open_loop),
      spec_seed_(spec.seed),
      rng_(Seed(0xc11e47)) {
  const ClientGroup& g = *group_;
  if (g.kind == ClientKind::kCodingAgent) repo_tokens_ = Draw(g.context_tokens);
  if (g.kind == ClientKind::kSharedDocQa) {
    double sum = 0;
    zipf_cdf_.reserve(g.documents);
    for (uint32_t d = 1; d <= g.documents; ++d) {
      sum += 1.0 / std::pow(d, g.zipf);
      zipf_cdf_.push_back(sum);
    }
    for (double& c : zipf_cdf_) c /= sum;
  }
}

uint64_t Client::Seed(uint64_t a, uint64_t b) const {
  return Mix64(spec_seed_ ^ Mix64((group_index_ + 1) * kGolden ^ Mix64(index_ + kGolden) ^
                                  Mix64(a * kGolden + b)));
}

uint32_t Client::Draw(const Distribution& d) {
  return static_cast<uint32_t>(std::llround(std::max(0.0, d.Sample(rng_))));
}

std::optional<TurnPlan> Client::Next() {
  if (done_) return std::nullopt;
  const ClientGroup& g = *group_;
  TurnPlan t;
  const Role next_role = g.kind == ClientKind::kCodingAgent ? Role::kTool : Role::kUser;
  if (turn_ > 0 && turns_left_ > 0) {
    uint32_t msg = Draw(g.next_message_tokens);
    uint32_t out = std::max(1u, Draw(g.output_tokens));
    if (g.max_context_tokens == 0 || context_ + last_output_ + msg + out <= g.max_context_tokens) {
      context_ += last_output_;
      t.append.push_back({next_role, Seed(sessions_, 1000 + turn_), msg});
      context_ += msg;
      t.output_tokens = out;
      t.delay_s = std::max(0.0, g.think_seconds.Sample(rng_));
      --turns_left_;
      ++turn_;
      Identify(&t);
      return t;
    }
  }
  // A new session.
  if (open_loop_ && sessions_ > 0) {
    done_ = true;
    return std::nullopt;
  }
  if (sessions_ > 0) {
    const Distribution& gap = MultiTurn(g.kind) ? g.session_gap_seconds : g.think_seconds;
    t.delay_s = std::max(0.0, gap.Sample(rng_));
  }
  ++sessions_;
  t.new_session = true;
  context_ = 0;
  auto add = [&](Role r, uint64_t seed, uint32_t n) {
    if (n == 0) return;
    t.append.push_back({r, seed, n});
    context_ += n;
  };
  // Shared by every client of the group: the same seed for all.
  const uint64_t shared = Mix64(spec_seed_ ^ Mix64((group_index_ + 1) * kGolden ^ 0x5157e3));
  switch (g.kind) {
    case ClientKind::kCodingAgent:
      if (sessions_ > 1 &&
          std::uniform_real_distribution<double>(0, 1)(rng_) >= g.repository_reuse) {
        ++repo_;  // another repository (another user's task in this agent slot)
        repo_tokens_ = Draw(g.context_tokens);
      }
      add(Role::kSystem, shared, g.system_prompt_tokens);
      add(Role::kUser, Seed(0x7e90, repo_), repo_tokens_);
      add(Role::kUser, Seed(sessions_, 1), std::max(1u, Draw(g.first_message_tokens)));
      break;
    case ClientKind::kChat:
      add(Role::kSystem, shared, g.system_prompt_tokens);
      add(Role::kUser, Seed(sessions_, 1), std::max(1u, Draw(g.first_message_tokens)));
      break;
    case ClientKind::kSharedDocQa: {
      double u = std::uniform_real_distribution<double>(0, 1)(rng_);
      uint32_t doc = static_cast<uint32_t>(std::lower_bound(zipf_cdf_.begin(), zipf_cdf_.end(), u) -
                                           zipf_cdf_.begin());
      doc = std::min<uint32_t>(doc, g.documents - 1);
      uint64_t doc_seed = Mix64(shared ^ Mix64(doc + 1));
      std::mt19937_64 doc_rng(doc_seed);  // a document's length is the document's own
      uint32_t len = static_cast<uint32_t>(std::llround(g.context_tokens.Sample(doc_rng)));
      add(Role::kSystem, shared, g.system_prompt_tokens);
      add(Role::kUser, doc_seed, len);
      add(Role::kUser, Seed(sessions_, 1), std::max(1u, Draw(g.first_message_tokens)));
      break;
    }
    case ClientKind::kRandom:
      add(Role::kUser, Seed(sessions_, 1), std::max(1u, Draw(g.first_message_tokens)));
      break;
  }
  turn_ = 1;
  turns_left_ = MultiTurn(g.kind) ? std::max(1u, Draw(g.turns)) - 1 : 0;
  t.output_tokens = std::max(1u, Draw(g.output_tokens));
  Identify(&t);
  return t;
}

void Client::Identify(TurnPlan* t) {
  t->session_id = Seed(0x5e55, sessions_);
  t->output_seed = Seed(sessions_, 2000000 + turn_);
  t->session_key =
      MultiTurn(group_->kind) ? fmt::format("{}-{}-s{}", group_->name, index_, sessions_) : "";
  last_output_ = t->output_tokens;
}

double NextSessionArrival(const ClientGroup& g, double t, std::mt19937_64& rng) {
  return t + std::exponential_distribution<double>(g.sessions_per_second)(rng);
}

void SegmentTokens(uint64_t seed, uint32_t n, std::vector<uint32_t>* out) {
  constexpr uint32_t kFirst = 3;  // after the tokenizer's special ids
  for (uint32_t i = 0; i < n; ++i) {
    out->push_back(kFirst + static_cast<uint32_t>(Mix64(seed + i * kGolden) %
                                                  (tokenizer::kVocabSize - kFirst)));
  }
}

}  // namespace infergrid::workload
