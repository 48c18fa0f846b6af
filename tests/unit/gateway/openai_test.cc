#include "gateway/openai.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"

namespace infergrid::gateway {
namespace {

ApiError ErrorFor(ApiKind api, const std::string& body) {
  auto r = ParseInferenceRequest(api, body, "");
  EXPECT_TRUE(std::holds_alternative<ApiError>(r)) << body;
  return std::holds_alternative<ApiError>(r) ? std::get<ApiError>(r) : ApiError{};
}

TEST(OpenAi, ReadsChatFields) {
  auto r =
      ParseInferenceRequest(ApiKind::kChatCompletions,
                            R"({"model":"m","stream":true,"max_completion_tokens":64,"user":"u",
                                     "messages":[{"role":"system","content":"be brief"},
                                                 {"role":"user","content":[{"type":"text","text":"hello"}]}]})",
                            "");
  ASSERT_TRUE(std::holds_alternative<RequestInfo>(r));
  const auto& info = std::get<RequestInfo>(r);
  EXPECT_EQ(info.model, "m");
  EXPECT_TRUE(info.stream);
  EXPECT_EQ(info.max_tokens, 64u);
  EXPECT_EQ(info.session_key, "u");
  // Rendered with the servers' chat template and counted with their tokenizer, so the
  // gateway's count is exactly what the simulator (and its prefix blocks) will see.
  EXPECT_EQ(info.prompt_text, "<|system|>\nbe brief\n<|user|>\nhello\n<|assistant|>\n");
  std::vector<tokenizer::ChatMessage> msgs = {{"system", "be brief"}, {"user", "hello"}};
  EXPECT_EQ(info.prompt_tokens_estimate,
            tokenizer::Tokenize(tokenizer::RenderChat(msgs, true), true).size());
}

TEST(OpenAi, SessionKeyPrecedence) {
  const char* body = R"({"model":"m","prompt":"x","user":"u","prompt_cache_key":"k"})";
  EXPECT_EQ(
      std::get<RequestInfo>(ParseInferenceRequest(ApiKind::kCompletions, body, "hdr")).session_key,
      "hdr");
  EXPECT_EQ(
      std::get<RequestInfo>(ParseInferenceRequest(ApiKind::kCompletions, body, "")).session_key,
      "k");
}

TEST(OpenAi, CompletionPromptForms) {
  auto tokens =
      ParseInferenceRequest(ApiKind::kCompletions, R"({"model":"m","prompt":[1,2,3,4,5]})", "");
  EXPECT_EQ(std::get<RequestInfo>(tokens).prompt_tokens_estimate, 5u);
  auto batch =
      ParseInferenceRequest(ApiKind::kCompletions, R"({"model":"m","prompt":["abcd","efgh"]})", "");
  EXPECT_EQ(std::get<RequestInfo>(batch).prompt_text, "abcdefgh");
  auto text =
      ParseInferenceRequest(ApiKind::kCompletions, R"({"model":"m","prompt":"Hi, you"})", "");
  EXPECT_EQ(std::get<RequestInfo>(text).prompt_tokens_estimate,
            tokenizer::Tokenize("Hi, you", true).size());
}

TEST(OpenAi, RejectsBadInputWithParam) {
  auto e = ErrorFor(ApiKind::kChatCompletions, "{not json");
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.code, "invalid_json");
  e = ErrorFor(ApiKind::kChatCompletions, R"({"messages":[]})");
  EXPECT_EQ(e.param, "model");
  e = ErrorFor(ApiKind::kChatCompletions, R"({"model":7,"messages":[]})");
  EXPECT_EQ(e.param, "model");
  e = ErrorFor(ApiKind::kChatCompletions, R"({"model":"m","messages":"hi"})");
  EXPECT_EQ(e.param, "messages");
  EXPECT_EQ(e.message, "'messages' must be an array of message objects.");
  e = ErrorFor(ApiKind::kChatCompletions, R"({"model":"m","messages":[{"content":"x"}]})");
  EXPECT_EQ(e.param, "messages[0].role");
  e = ErrorFor(ApiKind::kChatCompletions,
               R"({"model":"m","messages":[{"role":"user","content":5}]})");
  EXPECT_EQ(e.param, "messages[0].content");
  e = ErrorFor(ApiKind::kChatCompletions,
               R"({"model":"m","messages":[{"role":"user"}],"stream":"yes"})");
  EXPECT_EQ(e.param, "stream");
  e = ErrorFor(ApiKind::kChatCompletions,
               R"({"model":"m","messages":[{"role":"user"}],"max_tokens":-1})");
  EXPECT_EQ(e.param, "max_tokens");
  e = ErrorFor(ApiKind::kCompletions, R"({"model":"m"})");
  EXPECT_EQ(e.param, "prompt");
  e = ErrorFor(ApiKind::kCompletions, R"({"model":"m","prompt":{"a":1}})");
  EXPECT_EQ(e.param, "prompt");
  e = ErrorFor(ApiKind::kCompletions, R"([1,2])");
  EXPECT_EQ(e.code, "invalid_json");
}

TEST(OpenAi, ErrorJsonHasOpenAiShape) {
  ApiError e;
  e.status = 404;
  e.message = "no such model";
  e.param = "model";
  e.code = "model_not_found";
  auto j = nlohmann::json::parse(ErrorJson(e));
  EXPECT_EQ(j["error"]["message"], "no such model");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "model");
  EXPECT_EQ(j["error"]["code"], "model_not_found");
  e.param.clear();
  e.code.clear();
  j = nlohmann::json::parse(ErrorJson(e));
  EXPECT_TRUE(j["error"]["param"].is_null());
  EXPECT_TRUE(j["error"]["code"].is_null());
}

}  // namespace
}  // namespace infergrid::gateway
