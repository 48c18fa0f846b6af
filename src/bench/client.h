#pragma once
// The bench's HTTP client: one keep-alive HTTP/1.1 connection to a gateway, sending OpenAI
// requests and timing what comes back as a user would see it: the first token's arrival, each
// later chunk's, the end. Streaming (SSE) and plain JSON replies; every failure is classified
// (connect, write, read, timeout, http_<status>, stream_error, incomplete, bad_response) and
// none is thrown.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "http/asio.h"

namespace infergrid::bench {

using http::asio::any_io_executor;
using Headers = std::vector<std::pair<std::string, std::string>>;

struct Reply {
  int status = 0;
  std::string error;  // empty: a complete reply
  std::string error_detail;
  double first_token_s = -1;       // wall seconds from sending to the first token (streaming)
  double total_s = 0;              // ... to the end of the reply
  std::vector<double> token_gaps;  // wall seconds between successive chunks with content
  uint32_t chunks = 0;             // chunks with content
  std::string text;                // the reply's content
  // From the reply's usage, when it has one (else completion_tokens = chunks).
  uint32_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
  bool had_usage = false;
};

class Connection {
 public:
  Connection(any_io_executor ex, std::string host, uint16_t port);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // POSTs `body` (JSON) to `path`. `stream`: the body asks for SSE. A request is retried once
  // on a fresh connection when a reused one was closed by the peer before any byte of a reply
  // (an idle keep-alive connection's close racing the request), as HTTP clients do.
  http::awaitable<Reply> Post(const std::string& path, const std::string& body,
                              const Headers& headers, bool stream, double timeout_s);
  // GET or POST with an empty body; the reply body in `text`, the status in `status`.
  http::awaitable<Reply> Simple(const std::string& method, const std::string& path,
                                double timeout_s);
  // Closes the socket: a request in progress ends with an error.
  void Close();

 private:
  enum class Mode { kSse, kJson, kRaw };
  http::awaitable<Reply> Once(const std::string& request, Mode mode, double timeout_s,
                              bool* reused_and_silent);

  any_io_executor ex_;
  std::string host_;
  uint16_t port_;
  std::shared_ptr<http::tcp::socket> sock_;
};

// Extracts what a streaming chunk carries: the content of choices[0] (chat delta or text),
// usage, or an error. Returns false for a line that is not JSON.
struct ChunkInfo {
  std::string content;
  bool error = false;
  std::string error_message;
  bool has_usage = false;
  uint32_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
};
bool ParseChunk(std::string_view json, ChunkInfo* out);

}  // namespace infergrid::bench
