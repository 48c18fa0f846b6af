#pragma once
// Workloads: who sends what, and when. A workload is a mix of client groups; each client is an
// agent or a user that sends a series of requests (turns) in sessions (conversations). The
// planner replays them in virtual time, and the live bench (src/bench/) sends the same turns
// (same parameters, same seeds) over HTTP. Documented field by field in docs/planner.md.
//
// Kinds of client:
//   coding-agent  A long system prompt shared by every agent; per-agent repository context
//                 (the same in each of its tasks); a task message; then turns that each append
//                 the model's reply and a tool's output, with the tool's run time between
//                 turns. A task ends after `turns` turns or before `maxContextTokens`; the
//                 agent then starts a new task (a new session) on the same repository.
//   chat          A short shared system prompt; turns that append the reply and a new user
//                 message, with a human's reading and typing time between.
//   shared-doc-qa One-turn questions about one of `documents` documents (popularity Zipf with
//                 exponent `zipf`), each behind the shared system prompt.
//   random        One-turn prompts of random tokens: no reuse at all.
// Loop: `count: N` is a closed loop (N clients, each sends its next turn only after the last
// one's reply, plus its think time, forever); `sessionsPerSecond: R` an open loop (sessions
// start as a Poisson process at rate R; each client runs one session and leaves).
//
// Content is described, not materialised: a turn appends segments (role, seed, length), and
// the consumer turns a segment into tokens (the planner: SegmentTokens) or text (the bench).
// Every draw comes from the client's own generator, so the content of every turn is the same
// whatever the timing, i.e. whatever routing policy is under test.

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/result.h"
#include "workload/distribution.h"

namespace infergrid::workload {

enum class ClientKind { kCodingAgent, kChat, kSharedDocQa, kRandom };
const char* ClientKindName(ClientKind k);

struct ClientGroup {
  std::string name;  // for reports; defaults to the kind
  ClientKind kind = ClientKind::kCodingAgent;
  uint32_t count = 0;              // closed loop: this many clients
  double sessions_per_second = 0;  // open loop: Poisson session arrivals
  uint32_t system_prompt_tokens = 0;
  Distribution context_tokens;        // coding-agent: repository context; doc-qa: document
  Distribution first_message_tokens;  // the task, the first user message, the question
  Distribution next_message_tokens;   // per later turn: tool output, or the next user message
  Distribution output_tokens;         // the model's reply
  Distribution think_seconds;         // between a reply and the next turn
  Distribution turns;                 // turns per session
  Distribution session_gap_seconds;   // closed loop: between a session's end and the next
  uint32_t max_context_tokens = 0;    // a session ends before its prompt would pass this
  double repository_reuse = 1.0;      // coding-agent: chance a new task keeps the repository
  uint32_t documents = 0;             // shared-doc-qa
  double zipf = 1.0;
};

struct WorkloadSpec {
  std::string name;
  uint64_t seed = 1;
  double duration_s = 600;  // new turns start until then
  double warmup_s = 0;      // turns arriving earlier are not measured
  double ramp_up_s = 0;     // closed-loop clients start uniformly spread over this
  std::vector<ClientGroup> groups;
  std::string source;
};

Result<WorkloadSpec> ParseWorkload(const std::string& yaml_text, const std::string& source);
Result<WorkloadSpec> LoadWorkloadFile(const std::string& path);

enum class Role { kSystem, kUser, kAssistant, kTool };

// Tokens (or text) drawn deterministically from `seed`: equal seeds give equal content.
struct Segment {
  Role role;
  uint64_t seed;
  uint32_t tokens;
};

struct TurnPlan {
  bool new_session = false;     // the conversation starts afresh before `append`
  std::vector<Segment> append;  // what the client adds before sending
  uint32_t output_tokens = 0;   // the reply's length (the simulated model's choice)
  uint64_t output_seed = 0;     // the reply's content
  double delay_s = 0;           // after the previous reply (or the client's start)
  uint64_t session_id = 0;      // unique across the workload
  std::string session_key;      // sent as x-session-id; empty for none
};

// One agent or user. Not thread-safe; deterministic given (spec seed, group, index).
class Client {
 public:
  Client(const WorkloadSpec& spec, size_t group, uint64_t index, bool open_loop);

  const ClientGroup& group() const { return *group_; }
  size_t group_index() const { return group_index_; }
  // The next turn, or nullopt when the client is done (an open-loop client after its session).
  std::optional<TurnPlan> Next();
  // The conversation's length so far, in tokens (segments and replies).
  uint64_t context_tokens() const { return context_; }

 private:
  uint32_t Draw(const Distribution& d);
  // Fills the turn's session and output identity; remembers its reply's length.
  void Identify(TurnPlan* t);
  uint64_t Seed(uint64_t a, uint64_t b = 0) const;

  const ClientGroup* group_;
  size_t group_index_;
  uint64_t index_;
  bool open_loop_;
  uint64_t spec_seed_;
  std::mt19937_64 rng_;
  std::vector<double> zipf_cdf_;
  uint32_t repo_tokens_ = 0;
  uint64_t repo_ = 0;  // which repository the agent works in (changes with repositoryReuse < 1)
  uint64_t context_ = 0;
  uint64_t sessions_ = 0;
  uint32_t turn_ = 0;  // within the session; 0: none started
  uint32_t turns_left_ = 0;
  uint32_t last_output_ = 0;  // the reply the next turn will carry in its history
  bool done_ = false;
};

// Poisson session arrivals of one open-loop group: the next start time after `t`.
double NextSessionArrival(const ClientGroup& g, double t, std::mt19937_64& rng);

// Appends `n` token ids drawn from `seed` (ids 3..vocab-1, as the tokenizer's pieces).
void SegmentTokens(uint64_t seed, uint32_t n, std::vector<uint32_t>* out);

}  // namespace infergrid::workload
