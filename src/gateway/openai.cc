#include "gateway/openai.h"

#include <cstring>
#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"

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

namespace {

ApiError Invalid(std::string message, std::string param, std::string code = "invalid_type") {
  ApiError e;
  e.status = 400;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

}  // namespace

namespace {

// Reads the fields the gateway needs in one pass over the body, without building a DOM (the
// body itself is forwarded as received). Facts are gathered as they stream by; the checks run
// at the end in a fixed order, so the first error reported does not depend on key order.
class RequestSax {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  enum class Type { kAbsent, kNull, kString, kBool, kInt, kNegativeInt, kFloat, kObject, kArray };
  struct Field {
    Type type = Type::kAbsent;
    std::string s;
    bool b = false;
    uint64_t u = 0;
  };
  struct Error {
    bool set = false;
    std::string message, param, code;
  };

  explicit RequestSax(ApiKind api) : api_(api) {}

  bool null() { return Scalar(Type::kNull); }
  bool boolean(bool v) {
    if (Field* f = TopField()) f->b = v;
    return Scalar(Type::kBool);
  }
  bool number_integer(number_integer_t v) {
    if (v >= 0) return number_unsigned(static_cast<uint64_t>(v));
    return Scalar(Type::kNegativeInt);
  }
  bool number_unsigned(number_unsigned_t v) {
    if (Field* f = TopField()) f->u = v;
    last_uint_ = v;
    return Scalar(Type::kInt);
  }
  bool number_float(number_float_t, const string_t&) { return Scalar(Type::kFloat); }
  bool binary(binary_t&) { return Scalar(Type::kString); }
  bool string(string_t& v) {
    if (Field* f = TopField()) f->s = v;
    text_ = &v;
    bool ok = Scalar(Type::kString);
    text_ = nullptr;
    return ok;
  }
  bool start_object(std::size_t) { return Open(Type::kObject); }
  bool start_array(std::size_t) { return Open(Type::kArray); }
  bool key(string_t& k) {
    key_ = k;
    return true;
  }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    malformed_ = true;
    return false;
  }

  std::variant<RequestInfo, ApiError> Finish(std::string_view session_header);

 private:
  enum class Ctx { kTop, kIgnore, kMessages, kMessage, kContent, kPart, kPrompt, kPromptTokens };
  struct Message {
    bool role_ok = false;
    bool content_bad = false;
    std::string role, content;
  };

  Field* TopField() {
    if (stack_.size() != 1) return nullptr;
    if (key_ == "model") return &model_;
    if (key_ == "stream") return &stream_;
    if (key_ == "stream_options") return &stream_options_;
    if (key_ == "max_tokens") return &max_tokens_;
    if (key_ == "max_completion_tokens") return &max_completion_tokens_;
    if (key_ == "user") return &user_;
    if (key_ == "prompt_cache_key") return &cache_key_;
    if (key_ == "messages") return &messages_;
    if (key_ == "prompt") return &prompt_;
    return nullptr;
  }

  std::string MessageParam() const {
    return "messages[" + std::to_string(message_count_ - 1) + "]";
  }

  void Fail(Error* e, std::string message, std::string param, std::string code = "invalid_type") {
    if (e->set) return;
    *e = Error{true, std::move(message), std::move(param), std::move(code)};
  }

  void PromptBad() {
    Fail(&prompt_error_, "'prompt' must be a string, an array of strings or an array of token ids.",
         "prompt");
  }

  // A value (scalar or the start of a container) at the current position.
  void Value(Type t) {
    if (stack_.empty()) {
      root_ = t;
      return;
    }
    switch (stack_.back()) {
      case Ctx::kTop:
        if (Field* f = TopField()) f->type = t;
        if (key_ == "prompt" && t == Type::kString && text_) prompt_text_ = *text_;
        break;
      case Ctx::kMessages:
        ++message_count_;
        if (t != Type::kObject)
          Fail(&messages_error_, "Each message must be an object.", MessageParam());
        break;
      case Ctx::kMessage:
        if (key_ == "role") {
          if (t == Type::kString && text_) {
            message_.role_ok = true;
            message_.role = *text_;
          }
        } else if (key_ == "content") {
          if (t == Type::kString && text_) {
            message_.content = *text_;
          } else if (t != Type::kNull && t != Type::kArray) {
            message_.content_bad = true;
          }
        }
        break;
      case Ctx::kContent:
        if (t != Type::kObject) message_.content_bad = true;
        break;
      case Ctx::kPart:
        if (key_ == "text" && t == Type::kString && text_) {
          if (!message_.content.empty()) message_.content += "\n";  // parts join as vLLM's do
          message_.content += *text_;
        }
        break;
      case Ctx::kPrompt:
        if (t == Type::kString && text_) {
          prompt_text_ += *text_;
        } else if (t == Type::kInt || t == Type::kNegativeInt) {
          ++token_ids_;
          if (t == Type::kInt) prompt_ids_.push_back(static_cast<uint32_t>(last_uint_));
        } else if (t != Type::kArray) {
          PromptBad();
        }
        break;
      case Ctx::kPromptTokens:
        if (t == Type::kInt || t == Type::kNegativeInt) {
          ++token_ids_;
          if (t == Type::kInt) prompt_ids_.push_back(static_cast<uint32_t>(last_uint_));
        } else {
          Fail(&prompt_error_, "'prompt' token arrays must hold integers.", "prompt");
        }
        break;
      case Ctx::kIgnore:
        break;
    }
  }

  bool Scalar(Type t) {
    Value(t);
    return true;
  }

  bool Open(Type t) {
    Value(t);
    Ctx next = Ctx::kIgnore;
    if (stack_.empty()) {
      next = Ctx::kTop;
    } else {
      Ctx parent = stack_.back();
      if (parent == Ctx::kTop && key_ == "messages" && t == Type::kArray &&
          api_ == ApiKind::kChatCompletions) {
        next = Ctx::kMessages;
      } else if (parent == Ctx::kTop && key_ == "prompt" && t == Type::kArray &&
                 api_ == ApiKind::kCompletions) {
        next = Ctx::kPrompt;
      } else if (parent == Ctx::kMessages && t == Type::kObject) {
        next = Ctx::kMessage;
        message_ = Message{};
      } else if (parent == Ctx::kMessage && key_ == "content" && t == Type::kArray) {
        next = Ctx::kContent;
      } else if (parent == Ctx::kContent && t == Type::kObject) {
        next = Ctx::kPart;
      } else if (parent == Ctx::kPrompt && t == Type::kArray) {
        next = Ctx::kPromptTokens;
      }
    }
    stack_.push_back(next);
    key_.clear();
    return true;
  }

  bool Close() {
    Ctx done = stack_.back();
    stack_.pop_back();
    if (done == Ctx::kMessage) {
      if (!message_.role_ok) {
        Fail(&messages_error_, "Each message must have a string 'role'.", MessageParam() + ".role");
      } else if (message_.content_bad) {
        Fail(&messages_error_,
             "A message's 'content' must be a string or an array of content parts.",
             MessageParam() + ".content");
      }
      // Rendered by the servers' template, so token counts and prefixes agree with theirs.
      tokenizer::AppendChatMessage(message_.role, message_.content, &prompt_text_);
    }
    // Back in the enclosing object: the key that named this container is spent.
    key_.clear();
    return true;
  }

  ApiKind api_;
  std::vector<Ctx> stack_;
  std::string key_;
  const std::string* text_ = nullptr;  // the string value being reported, if any
  bool malformed_ = false;
  Type root_ = Type::kAbsent;
  Field model_, stream_, stream_options_, max_tokens_, max_completion_tokens_, user_, cache_key_,
      messages_, prompt_;
  size_t message_count_ = 0;
  Message message_;
  Error messages_error_, prompt_error_;
  std::string prompt_text_;
  uint32_t token_ids_ = 0;
  uint64_t last_uint_ = 0;
  std::vector<uint32_t> prompt_ids_;  // a prompt given as token ids
};

std::variant<RequestInfo, ApiError> RequestSax::Finish(std::string_view session_header) {
  if (malformed_) {
    return Invalid("We could not parse the JSON body of your request. The body must be valid JSON.",
                   "", "invalid_json");
  }
  if (root_ != Type::kObject)
    return Invalid("The request body must be a JSON object.", "", "invalid_json");
  RequestInfo info;
  info.api = api_;
  if (model_.type == Type::kAbsent || model_.type == Type::kNull) {
    return Invalid("You must provide a model parameter.", "model", "missing_required_parameter");
  }
  if (model_.type != Type::kString) return Invalid("'model' must be a string.", "model");
  info.model = std::move(model_.s);
  if (stream_.type != Type::kAbsent && stream_.type != Type::kNull) {
    if (stream_.type != Type::kBool) return Invalid("'stream' must be a boolean.", "stream");
    info.stream = stream_.b;
  }
  if (stream_options_.type != Type::kAbsent && stream_options_.type != Type::kNull &&
      stream_options_.type != Type::kObject) {
    return Invalid("'stream_options' must be an object.", "stream_options");
  }
  for (auto [key, f] :
       {std::pair<const char*, Field*>{"max_tokens", &max_tokens_},
        std::pair<const char*, Field*>{"max_completion_tokens", &max_completion_tokens_}}) {
    if (f->type == Type::kAbsent || f->type == Type::kNull) continue;
    if (f->type != Type::kInt)
      return Invalid(std::string("'") + key + "' must be a non-negative integer.", key);
    info.max_tokens = static_cast<uint32_t>(std::min<uint64_t>(f->u, UINT32_MAX));
  }
  std::string user, cache_key;
  if (user_.type != Type::kAbsent && user_.type != Type::kNull) {
    if (user_.type != Type::kString) return Invalid("'user' must be a string.", "user");
    user = std::move(user_.s);
  }
  if (cache_key_.type != Type::kAbsent && cache_key_.type != Type::kNull) {
    if (cache_key_.type != Type::kString)
      return Invalid("'prompt_cache_key' must be a string.", "prompt_cache_key");
    cache_key = std::move(cache_key_.s);
  }
  info.session_key = !session_header.empty() ? std::string(session_header)
                     : !cache_key.empty()    ? cache_key
                                             : user;
  if (api_ == ApiKind::kChatCompletions) {
    if (messages_.type == Type::kAbsent) {
      return Invalid("'messages' is a required property.", "messages",
                     "missing_required_parameter");
    }
    if (messages_.type != Type::kArray)
      return Invalid("'messages' must be an array of message objects.", "messages");
    if (message_count_ == 0)
      return Invalid("'messages' must contain at least one message.", "messages", "empty_array");
    if (messages_error_.set)
      return Invalid(messages_error_.message, messages_error_.param, messages_error_.code);
  } else {
    if (prompt_.type == Type::kAbsent) {
      return Invalid("'prompt' is a required property.", "prompt", "missing_required_parameter");
    }
    if (prompt_.type != Type::kString && prompt_.type != Type::kArray) PromptBad();
    if (prompt_error_.set)
      return Invalid(prompt_error_.message, prompt_error_.param, prompt_error_.code);
  }
  if (info.api == ApiKind::kChatCompletions) tokenizer::AppendGenerationPrompt(&prompt_text_);
  info.prompt_text = std::move(prompt_text_);
  // The prompt as the servers will see it (cache-aware scorers hash these): token-id prompts
  // as given; text through the servers' tokenizer, after their beginning-of-sequence token.
  // The estimate is the tokens of the text (with the BOS) plus the ids given.
  uint32_t text_tokens = 0;
  if (info.prompt_text.empty() && token_ids_ > 0) {
    info.prompt_token_ids = std::move(prompt_ids_);
  } else {
    info.prompt_token_ids.reserve(info.prompt_text.size() / 3 + 2);
    info.prompt_token_ids.push_back(tokenizer::kBosToken);
    tokenizer::Encode(info.prompt_text, &info.prompt_token_ids);
    text_tokens = static_cast<uint32_t>(info.prompt_token_ids.size());
    info.prompt_token_ids.insert(info.prompt_token_ids.end(), prompt_ids_.begin(),
                                 prompt_ids_.end());
  }
  info.prompt_tokens_estimate = text_tokens + token_ids_;
  return info;
}

}  // namespace

std::variant<RequestInfo, ApiError> ParseInferenceRequest(ApiKind api, std::string_view body,
                                                          std::string_view session_header) {
  RequestSax sax(api);
  json::sax_parse(body.begin(), body.end(), &sax, nlohmann::detail::input_format_t::json,
                  /*strict=*/true);
  return sax.Finish(session_header);
}

namespace {
// The number after `"field":` (spaces allowed) at or after `from`, or -1; `end` is set past it.
int64_t NumberAfter(std::string_view s, size_t from, size_t* end) {
  size_t i = from;
  while (i < s.size() && (s[i] == ' ' || s[i] == ':')) ++i;
  if (i >= s.size() || s[i] < '0' || s[i] > '9') return -1;
  int64_t v = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9' && v < (int64_t{1} << 50)) {
    v = v * 10 + (s[i] - '0');
    ++i;
  }
  if (i == s.size()) return -1;  // the number may go on in the next piece
  *end = i;
  return v;
}
}  // namespace

void UsageSniffer::Feed(std::string_view piece) {
  static constexpr std::string_view kPrompt = "\"prompt_tokens\"";
  static constexpr std::string_view kCompletion = "\"completion_tokens\"";
  static constexpr size_t kKeep = 40;  // longer than a field name and its number
  std::string joined;
  std::string_view s = piece;
  if (tail_len_ > 0) {
    joined.assign(tail_, tail_len_);
    joined.append(piece);
    s = joined;
  }
  // Offsets in `s` are absolute ones less `base`. An event is counted once its first seven
  // bytes are here ("data: [DONE]" is not one).
  const uint64_t base = fed_ - tail_len_;
  fed_ += piece.size();
  size_t from = scan_from_ > base ? static_cast<size_t>(scan_from_ - base) : 0;
  size_t pos = from;
  for (; (pos = s.find("data:", pos)) != std::string_view::npos; pos += 5) {
    if (pos + 12 > s.size()) break;  // decide when more has come
    // A field starts a line; "data:" inside generated text does not.
    const char before = pos > 0 ? s[pos - 1] : base > 0 ? before_tail_ : '\n';
    if (before != '\n' && before != '\r') continue;
    if (s.substr(pos + 5, 7).find("[DONE]") == std::string_view::npos) ++events_;
  }
  scan_from_ = base + (pos != std::string_view::npos ? pos : s.size() >= 4 ? s.size() - 4 : 0);
  for (auto [field, out] :
       {std::pair{kPrompt, &prompt_tokens_}, std::pair{kCompletion, &completion_tokens_}}) {
    for (size_t pos = 0; (pos = s.find(field, pos)) != std::string_view::npos;) {
      size_t end = 0;
      int64_t v = NumberAfter(s, pos + field.size(), &end);
      if (v >= 0) *out = v;
      pos += field.size();
    }
  }
  size_t keep = std::min(kKeep, s.size());
  if (s.size() > keep) before_tail_ = s[s.size() - keep - 1];
  std::memcpy(tail_, s.data() + s.size() - keep, keep);
  tail_len_ = keep;
}

}  // namespace infergrid::gateway
