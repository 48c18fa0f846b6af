#pragma once
// The OpenAI-compatible request and error shapes the gateway reads and writes. Pure: parses a
// body into the scheduler's RequestInfo, or into an ApiError ready to send.

#include <string>
#include <string_view>
#include <variant>

#include "infergrid/request.h"

namespace infergrid::gateway {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // empty: null
  std::string code;   // empty: null
};

// {"error":{"message":...,"type":...,"param":...,"code":...}}
std::string ErrorJson(const ApiError& e);

// Reads model, stream, messages/prompt, max_tokens/max_completion_tokens, user and
// prompt_cache_key. The session key is the x-session-id header if given, else
// prompt_cache_key, else user.
std::variant<RequestInfo, ApiError> ParseInferenceRequest(ApiKind api, std::string_view body,
                                                          std::string_view session_header);

// Reads the token usage a model server reports from its response as it is relayed, piece by
// piece: the last "prompt_tokens" and "completion_tokens" seen (vLLM puts them in a
// non-streaming body, and in a stream's last chunk when asked for include_usage). Without
// them, a stream's content events are counted as its output tokens (one token each, as vLLM
// sends them).
class UsageSniffer {
 public:
  void Feed(std::string_view piece);
  bool has_usage() const { return completion_tokens_ >= 0; }
  int64_t prompt_tokens() const { return prompt_tokens_; }          // -1: not reported
  int64_t completion_tokens() const { return completion_tokens_; }  // -1: not reported
  int64_t stream_events() const { return events_; }  // `data:` events other than [DONE]

 private:
  // The end of the previous piece, for a field split across pieces (no allocation).
  char tail_[48];
  size_t tail_len_ = 0;
  int64_t prompt_tokens_ = -1;
  int64_t completion_tokens_ = -1;
  int64_t events_ = 0;
  uint64_t fed_ = 0;         // bytes fed so far
  uint64_t scan_from_ = 0;   // where the search for the next event resumes (absolute)
  char before_tail_ = '\n';  // the byte just before tail_
};

}  // namespace infergrid::gateway
