// fake_vllm: the tests' small vLLM-shaped server as a process (see fake_vllm.h).
// Prints "listening on port N" once ready; stops on SIGINT or SIGTERM.

#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "common/signals.h"
#include "fake_vllm.h"

int main(int argc, char** argv) {
  CLI::App app{"fake_vllm: a vLLM-shaped test server"};
  infergrid::testing::FakeVllmOptions o;
  app.add_option("--port", o.port, "Port (0 picks one)");
  app.add_option("--host", o.host, "Address to bind");
  std::vector<std::string> names;
  app.add_option("--served-model-name", names, "Model names served (the first is the main one)");
  app.add_option("--token-delay-ms", o.token_delay_ms, "Delay between streamed tokens");
  app.add_option("--max-tokens", o.default_max_tokens,
                 "Tokens generated when max_tokens is not given");
  CLI11_PARSE(app, argc, argv);
  if (!names.empty()) {
    o.model = names[0];
    o.aliases.assign(names.begin() + 1, names.end());
  }

  sigset_t set = infergrid::BlockStopSignals();
  infergrid::testing::FakeVllm server(o);
  auto s = server.Start();
  if (!s.ok()) {
    std::cerr << "error: " << s.message() << "\n";
    return 1;
  }
  std::printf("listening on port %u\n", server.port());
  std::fflush(stdout);
  infergrid::WaitForStopSignal(set);
  server.Stop();
  return 0;
}
