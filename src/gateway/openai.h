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

}  // namespace infergrid::gateway
