#include "gateway/openai.h"

#include <nlohmann/json.hpp>

namespace infergrid::gateway {

using nlohmann::json;

std::string ErrorJson(const ApiError& e) {
  json err = {{"message", e.message},
              {"type", e.type},
              {"param", e.param.empty() ? json(nullptr) : json(e.param)},
              {"code", e.code.empty() ? json(nullptr) : json(e.code)}};
  // Messages may quote client input; never throw on bytes that are not UTF-8.
  return json{{"error", err}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

uint32_t EstimateTokens(std::string_view text) { return static_cast<uint32_t>((text.size() + 3) / 4); }

namespace {

ApiError Invalid(std::string message, std::string param, std::string code = "invalid_type") {
  ApiError e;
  e.status = 400;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

// Appends the text of a chat message's content (a string, or a list of parts).
bool AppendContent(const json& content, std::string* out) {
  if (content.is_null()) return true;
  if (content.is_string()) {
    *out += content.get_ref<const std::string&>();
    return true;
  }
  if (!content.is_array()) return false;
  for (const auto& part : content) {
    if (!part.is_object()) return false;
    auto it = part.find("text");
    if (it != part.end() && it->is_string()) *out += it->get_ref<const std::string&>();
  }
  return true;
}

}  // namespace

std::variant<RequestInfo, ApiError> ParseInferenceRequest(ApiKind api, std::string_view body,
                                                          std::string_view session_header) {
  json doc = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return Invalid("We could not parse the JSON body of your request. The body must be valid JSON.", "",
                   "invalid_json");
  }
  if (!doc.is_object()) return Invalid("The request body must be a JSON object.", "", "invalid_json");

  RequestInfo info;
  info.api = api;
  auto model = doc.find("model");
  if (model == doc.end() || model->is_null()) {
    return Invalid("You must provide a model parameter.", "model", "missing_required_parameter");
  }
  if (!model->is_string()) return Invalid("'model' must be a string.", "model");
  info.model = model->get<std::string>();

  if (auto it = doc.find("stream"); it != doc.end() && !it->is_null()) {
    if (!it->is_boolean()) return Invalid("'stream' must be a boolean.", "stream");
    info.stream = it->get<bool>();
  }
  if (auto it = doc.find("stream_options"); it != doc.end() && !it->is_null() && !it->is_object()) {
    return Invalid("'stream_options' must be an object.", "stream_options");
  }
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    auto it = doc.find(key);
    if (it == doc.end() || it->is_null()) continue;
    if (!it->is_number_integer() || it->get<int64_t>() < 0) {
      return Invalid(std::string("'") + key + "' must be a non-negative integer.", key);
    }
    info.max_tokens = static_cast<uint32_t>(std::min<int64_t>(it->get<int64_t>(), UINT32_MAX));
  }
  std::string user, cache_key;
  if (auto it = doc.find("user"); it != doc.end() && !it->is_null()) {
    if (!it->is_string()) return Invalid("'user' must be a string.", "user");
    user = it->get<std::string>();
  }
  if (auto it = doc.find("prompt_cache_key"); it != doc.end() && !it->is_null()) {
    if (!it->is_string()) return Invalid("'prompt_cache_key' must be a string.", "prompt_cache_key");
    cache_key = it->get<std::string>();
  }
  info.session_key = !session_header.empty() ? std::string(session_header) : !cache_key.empty() ? cache_key : user;

  uint32_t token_ids = 0;
  if (api == ApiKind::kChatCompletions) {
    auto it = doc.find("messages");
    if (it == doc.end()) return Invalid("'messages' is a required property.", "messages", "missing_required_parameter");
    if (!it->is_array()) return Invalid("'messages' must be an array of message objects.", "messages");
    if (it->empty()) return Invalid("'messages' must contain at least one message.", "messages", "empty_array");
    for (size_t i = 0; i < it->size(); ++i) {
      const json& m = (*it)[i];
      std::string param = "messages[" + std::to_string(i) + "]";
      if (!m.is_object()) return Invalid("Each message must be an object.", param);
      auto role = m.find("role");
      if (role == m.end() || !role->is_string()) {
        return Invalid("Each message must have a string 'role'.", param + ".role");
      }
      info.prompt_text += role->get_ref<const std::string&>();
      info.prompt_text += ": ";
      auto content = m.find("content");
      if (content != m.end() && !AppendContent(*content, &info.prompt_text)) {
        return Invalid("A message's 'content' must be a string or an array of content parts.", param + ".content");
      }
      info.prompt_text += "\n";
    }
  } else {
    auto it = doc.find("prompt");
    if (it == doc.end()) return Invalid("'prompt' is a required property.", "prompt", "missing_required_parameter");
    if (it->is_string()) {
      info.prompt_text = it->get<std::string>();
    } else if (it->is_array()) {
      for (const auto& p : *it) {
        if (p.is_string()) {
          info.prompt_text += p.get_ref<const std::string&>();
        } else if (p.is_number_integer()) {
          ++token_ids;
        } else if (p.is_array()) {
          for (const auto& t : p) {
            if (!t.is_number_integer()) return Invalid("'prompt' token arrays must hold integers.", "prompt");
            ++token_ids;
          }
        } else {
          return Invalid("'prompt' must be a string, an array of strings or an array of token ids.", "prompt");
        }
      }
    } else {
      return Invalid("'prompt' must be a string, an array of strings or an array of token ids.", "prompt");
    }
  }
  info.prompt_tokens_estimate = EstimateTokens(info.prompt_text) + token_ids;
  return info;
}

}  // namespace infergrid::gateway
