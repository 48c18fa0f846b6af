#pragma once
// The simulator's OpenAI API surface as vLLM's server presents it: request parsing and
// validation into a SimRequest, and the exact shapes of responses, stream chunks and errors
// (docs/sim-model.md, "Server"). Pure: no I/O.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace infergrid::sim {

// vLLM's error response: {"error": {"message", "type", "param", "code"}}, status == code.
struct ApiError {
  int status;
  std::string type;  // "BadRequestError", "NotFoundError", "Bad Request", ...
  std::string message;
  std::optional<std::string> param;
  std::string Json() const;
};

enum class Endpoint { kChat, kCompletion };

struct SimRequest {
  Endpoint endpoint;
  std::string model;  // as asked for (or the first served name when absent)
  std::vector<uint32_t> prompt;
  std::optional<uint32_t> max_tokens;
  bool stream = false;
  bool include_usage = false;
  std::optional<uint64_t> seed;
};

struct ParseContext {
  std::vector<std::string> served_names;  // the first is the default
  uint32_t max_model_len;
};

// Parses and validates a request body; errors are what vLLM answers for the same input.
// A request must fit max_model_len with its max_tokens (if given).
std::variant<SimRequest, ApiError> ParseCompletion(Endpoint endpoint, std::string_view body,
                                                   const ParseContext& ctx);

// /tokenize: {"count", "max_model_len", "tokens", "token_strs"}.
std::variant<std::string, ApiError> Tokenize(std::string_view body, const ParseContext& ctx);

// /v1/models.
std::string ModelList(const std::vector<std::string>& served_names, const std::string& root,
                      uint32_t max_model_len, int64_t created);

// The text of a stream's pieces and of whole responses.
struct ResponseShape {
  Endpoint endpoint;
  std::string id;  // "chatcmpl-..." or "cmpl-..."
  std::string model;
  int64_t created;
  mutable std::string head;  // "data: {...,\"model\":...," rendered once, on first use
};

struct Usage {
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;
  std::optional<uint32_t> cached_tokens;  // with --enable-prompt-tokens-details
};

// Appends one SSE event ("data: ...\n\n"). The first chat chunk carries the role.
void AppendRoleChunk(const ResponseShape& s, std::string* out);
void AppendTextChunk(const ResponseShape& s, std::string_view text, const char* finish_reason,
                     std::string* out);
void AppendUsageChunk(const ResponseShape& s, const Usage& u, std::string* out);
void AppendDone(std::string* out);
void AppendErrorEvent(const ApiError& e, std::string* out);

std::string FullResponse(const ResponseShape& s, std::string_view text, const char* finish_reason,
                         const Usage& u);

}  // namespace infergrid::sim
