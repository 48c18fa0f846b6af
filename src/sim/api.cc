#include "sim/api.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"

namespace infergrid::sim {

using json = nlohmann::ordered_json;  // fields in the order vLLM writes them

std::string ApiError::Json() const {
  json p = param ? json(*param) : json(nullptr);
  return json{{"error", {{"message", message}, {"type", type}, {"param", p}, {"code", status}}}}
      .dump();
}

namespace {

ApiError BadRequest(std::string message, std::optional<std::string> param = std::nullopt) {
  return ApiError{400, "BadRequestError", std::move(message), std::move(param)};
}

// vLLM answers schema violations (pydantic) with type "Bad Request".
ApiError Invalid(std::string message) {
  return ApiError{400, "Bad Request", std::move(message), std::nullopt};
}

std::optional<ApiError> ResolveModel(const json& body, const ParseContext& ctx,
                                     std::string* model) {
  if (!body.contains("model") || body["model"].is_null()) {
    *model = ctx.served_names.front();
    return std::nullopt;
  }
  if (!body["model"].is_string()) return Invalid("model: Input should be a valid string");
  *model = body["model"].get<std::string>();
  for (const auto& n : ctx.served_names) {
    if (n == *model) return std::nullopt;
  }
  return ApiError{404, "NotFoundError", fmt::format("The model `{}` does not exist.", *model),
                  "model"};
}

// Message content: a string, or a list of parts of which the text ones count.
std::optional<std::string> ContentText(const json& c) {
  if (c.is_null()) return std::string();
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) return std::nullopt;
  std::string out;
  for (const auto& part : c) {
    if (!part.is_object()) return std::nullopt;
    if (part.value("type", "") == "text" && part.contains("text") && part["text"].is_string()) {
      if (!out.empty()) out += "\n";
      out += part["text"].get<std::string>();
    }
  }
  return out;
}

std::variant<std::vector<uint32_t>, ApiError> ChatPrompt(const json& body,
                                                         bool add_generation_prompt) {
  if (!body.contains("messages") || !body["messages"].is_array()) {
    return Invalid("messages: Field required (a list of messages)");
  }
  std::vector<tokenizer::ChatMessage> msgs;
  for (size_t i = 0; i < body["messages"].size(); ++i) {
    const json& m = body["messages"][i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      return Invalid(fmt::format("messages.{}.role: Field required", i));
    }
    auto text = ContentText(m.value("content", json(nullptr)));
    if (!text)
      return Invalid(fmt::format("messages.{}.content: Input should be a valid string", i));
    msgs.push_back({m["role"].get<std::string>(), std::move(*text)});
  }
  return tokenizer::Tokenize(tokenizer::RenderChat(msgs, add_generation_prompt), true);
}

std::variant<std::vector<uint32_t>, ApiError> CompletionPrompt(const json& body) {
  if (!body.contains("prompt")) return Invalid("prompt: Field required");
  const json& p = body["prompt"];
  if (p.is_string()) return tokenizer::Tokenize(p.get<std::string>(), true);
  if (p.is_array() && p.size() == 1 && p[0].is_string()) {
    return tokenizer::Tokenize(p[0].get<std::string>(), true);
  }
  if (p.is_array() && !p.empty() && p[0].is_number_integer()) {  // token ids, used as given
    std::vector<uint32_t> ids;
    for (const auto& t : p) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
          t.get<int64_t>() >= tokenizer::kVocabSize) {
        return Invalid("prompt: token ids must be integers in [0, vocab size)");
      }
      ids.push_back(t.get<uint32_t>());
    }
    return ids;
  }
  if (p.is_array() && p.size() > 1) {
    return BadRequest("the simulator serves one prompt per request; send a batch as requests",
                      "prompt");
  }
  return Invalid("prompt: Input should be a valid string or list of token ids");
}

}  // namespace

std::variant<SimRequest, ApiError> ParseCompletion(Endpoint endpoint, std::string_view body_text,
                                                   const ParseContext& ctx) {
  json body = json::parse(body_text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return Invalid("JSON decode error: the body is not valid JSON");
  if (!body.is_object()) return Invalid("Input should be a valid dictionary or object");
  SimRequest r;
  r.endpoint = endpoint;
  if (auto e = ResolveModel(body, ctx, &r.model)) return *e;

  auto prompt = endpoint == Endpoint::kChat ? ChatPrompt(body, true) : CompletionPrompt(body);
  if (auto* e = std::get_if<ApiError>(&prompt)) return *e;
  r.prompt = std::move(std::get<std::vector<uint32_t>>(prompt));

  for (const char* k : {"max_tokens", "max_completion_tokens"}) {
    if (!body.contains(k) || body[k].is_null()) continue;
    if (!body[k].is_number_integer())
      return Invalid(fmt::format("{}: Input should be a valid integer", k));
    int64_t v = body[k].get<int64_t>();
    if (v < 1) return BadRequest(fmt::format("{} must be at least 1, got {}.", k, v), k);
    r.max_tokens = static_cast<uint32_t>(std::min<int64_t>(v, UINT32_MAX));
  }
  if (body.contains("n") && !body["n"].is_null() &&
      (!body["n"].is_number_integer() || body["n"].get<int64_t>() != 1)) {
    return BadRequest("the simulator generates one choice per request (n must be 1)", "n");
  }
  if (body.contains("stream") && !body["stream"].is_null()) {
    if (!body["stream"].is_boolean()) return Invalid("stream: Input should be a valid boolean");
    r.stream = body["stream"].get<bool>();
  }
  if (body.contains("stream_options") && body["stream_options"].is_object()) {
    if (!r.stream)
      return BadRequest("Stream options can only be defined when `stream=True`.", "stream_options");
    r.include_usage = body["stream_options"].value("include_usage", true);
  }
  if (body.contains("seed") && body["seed"].is_number_integer()) {
    r.seed = body["seed"].get<uint64_t>();
  }

  const uint32_t n = static_cast<uint32_t>(r.prompt.size());
  if (n >= ctx.max_model_len) {
    return BadRequest(fmt::format("This model's maximum context length is {} tokens. However, "
                                  "your request has {} input tokens. Please reduce the length "
                                  "of the input messages.",
                                  ctx.max_model_len, n),
                      "input_tokens");
  }
  if (r.max_tokens && *r.max_tokens > ctx.max_model_len - n) {
    return BadRequest(
        fmt::format("'max_tokens' or 'max_completion_tokens' is too large: {}. This model's "
                    "maximum context length is {} tokens and your request has {} input tokens "
                    "({} > {} - {}).",
                    *r.max_tokens, ctx.max_model_len, n, *r.max_tokens, ctx.max_model_len, n),
        "max_tokens");
  }
  return r;
}

std::variant<std::string, ApiError> Tokenize(std::string_view body_text, const ParseContext& ctx) {
  json body = json::parse(body_text, nullptr, false);
  if (body.is_discarded() || !body.is_object()) return Invalid("the body is not a JSON object");
  std::string model;
  if (auto e = ResolveModel(body, ctx, &model)) return *e;
  bool want_strs = body.value("return_token_strs", false);
  std::vector<uint32_t> ids;
  std::vector<std::string_view> pieces;
  std::string text;
  if (body.contains("messages")) {
    auto p = ChatPrompt(body, body.value("add_generation_prompt", true));
    if (auto* e = std::get_if<ApiError>(&p)) return *e;
    ids = std::get<std::vector<uint32_t>>(p);
  } else if (body.contains("prompt") && body["prompt"].is_string()) {
    text = body["prompt"].get<std::string>();
    if (body.value("add_special_tokens", true)) ids.push_back(tokenizer::kBosToken);
    tokenizer::Encode(text, &ids, &pieces);
  } else {
    return Invalid("prompt or messages: Field required");
  }
  json out{{"count", ids.size()},
           {"max_model_len", ctx.max_model_len},
           {"tokens", ids},
           {"token_strs", nullptr}};
  if (want_strs) {
    json strs = json::array();
    size_t skip = ids.size() - pieces.size();
    for (size_t i = 0; i < skip; ++i) strs.push_back(i == 0 ? "<s>" : "");
    for (auto p : pieces) strs.push_back(std::string(p));
    if (pieces.empty() && body.contains("messages")) strs = nullptr;  // ids only for chats
    out["token_strs"] = strs;
  }
  return out.dump();
}

std::string ModelList(const std::vector<std::string>& served_names, const std::string& root,
                      uint32_t max_model_len, int64_t created) {
  json data = json::array();
  for (const auto& n : served_names) {
    data.push_back({{"id", n},
                    {"object", "model"},
                    {"created", created},
                    {"owned_by", "vllm"},
                    {"root", root},
                    {"parent", nullptr},
                    {"max_model_len", max_model_len},
                    {"permission", json::array({{{"id", "modelperm-infergrid-sim"},
                                                 {"object", "model_permission"},
                                                 {"created", created},
                                                 {"allow_create_engine", false},
                                                 {"allow_sampling", true},
                                                 {"allow_logprobs", true},
                                                 {"allow_search_indices", false},
                                                 {"allow_view", true},
                                                 {"allow_fine_tuning", false},
                                                 {"organization", "*"},
                                                 {"group", nullptr},
                                                 {"is_blocking", false}}})}});
  }
  return json{{"object", "list"}, {"data", data}}.dump();
}

namespace {

void AppendHead(const ResponseShape& s, std::string* out) {
  // The same for every chunk of a response: rendered (and JSON-escaped) once.
  if (!s.head.empty()) {
    *out += s.head;
    return;
  }
  fmt::format_to(std::back_inserter(s.head),
                 "data: {{\"id\":{},\"object\":\"{}\",\"created\":{},\"model\":{},",
                 json(s.id).dump(),
                 s.endpoint == Endpoint::kChat ? "chat.completion.chunk" : "text_completion",
                 s.created, json(s.model).dump());
  *out += s.head;
}

// A JSON string literal; the simulator's own words need no escaping, others go through json.
void AppendQuoted(std::string_view text, std::string* out) {
  for (unsigned char c : text) {
    if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) {
      *out += json(std::string(text)).dump();
      return;
    }
  }
  *out += '"';
  *out += text;
  *out += '"';
}

std::string UsageJson(const Usage& u) {
  json j{{"prompt_tokens", u.prompt_tokens},
         {"total_tokens", u.prompt_tokens + u.completion_tokens},
         {"completion_tokens", u.completion_tokens}};
  if (u.cached_tokens) j["prompt_tokens_details"] = {{"cached_tokens", *u.cached_tokens}};
  return j.dump();
}

}  // namespace

void AppendRoleChunk(const ResponseShape& s, std::string* out) {
  AppendHead(s, out);
  *out +=
      "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
      "\"logprobs\":null,\"finish_reason\":null}]}\n\n";
}

void AppendTextChunk(const ResponseShape& s, std::string_view text, const char* finish_reason,
                     std::string* out) {
  AppendHead(s, out);
  *out += s.endpoint == Endpoint::kChat ? "\"choices\":[{\"index\":0,\"delta\":{\"content\":"
                                        : "\"choices\":[{\"index\":0,\"text\":";
  AppendQuoted(text, out);
  if (s.endpoint == Endpoint::kChat) *out += '}';
  *out += ",\"logprobs\":null,\"finish_reason\":";
  if (finish_reason) {
    *out += '"';
    *out += finish_reason;
    *out += "\",\"stop_reason\":null";
  } else {
    *out += "null";
  }
  *out += "}]}\n\n";
}

void AppendUsageChunk(const ResponseShape& s, const Usage& u, std::string* out) {
  AppendHead(s, out);
  *out += "\"choices\":[],\"usage\":" + UsageJson(u) + "}\n\n";
}

void AppendDone(std::string* out) { *out += "data: [DONE]\n\n"; }

void AppendErrorEvent(const ApiError& e, std::string* out) { *out += "data: " + e.Json() + "\n\n"; }

std::string FullResponse(const ResponseShape& s, std::string_view text, const char* finish_reason,
                         const Usage& u) {
  json choice;
  if (s.endpoint == Endpoint::kChat) {
    choice = {{"index", 0},
              {"message",
               {{"role", "assistant"},
                {"content", text},
                {"refusal", nullptr},
                {"tool_calls", json::array()},
                {"reasoning_content", nullptr}}},
              {"logprobs", nullptr},
              {"finish_reason", finish_reason},
              {"stop_reason", nullptr}};
  } else {
    choice = {{"index", 0},
              {"text", text},
              {"logprobs", nullptr},
              {"finish_reason", finish_reason},
              {"stop_reason", nullptr},
              {"prompt_logprobs", nullptr}};
  }
  json j{{"id", s.id},
         {"object", s.endpoint == Endpoint::kChat ? "chat.completion" : "text_completion"},
         {"created", s.created},
         {"model", s.model},
         {"choices", json::array({choice})},
         {"usage", json::parse(UsageJson(u))},
         {"system_fingerprint", nullptr},
         {"prompt_logprobs", nullptr},
         {"kv_transfer_params", nullptr}};
  if (s.endpoint == Endpoint::kChat) j["service_tier"] = nullptr;
  return j.dump();
}

}  // namespace infergrid::sim
