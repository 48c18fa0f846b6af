#pragma once
// Child processes of the bench (the simulated fleet, the gateways under test): started in a
// process group of their own (a Ctrl-C at the terminal reaches the bench, which stops them in
// order), told to terminate if the bench dies (PR_SET_PDEATHSIG), their output in files.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/result.h"

namespace infergrid::bench {

class Processes {
 public:
  Processes() = default;
  ~Processes() { StopAll(); }
  Processes(const Processes&) = delete;
  Processes& operator=(const Processes&) = delete;

  // Starts argv[0] (a path) with stdout and stderr to `log_prefix`.out and .err. Returns an id.
  Result<size_t> Start(const std::string& name, const std::vector<std::string>& argv,
                       const std::string& log_prefix);
  // Waits until the child's stdout has `count` lines "listening on port N"; returns the ports.
  Result<std::vector<uint16_t>> WaitForPorts(size_t id, size_t count,
                                             std::chrono::milliseconds timeout);
  // Waits until 127.0.0.1:port accepts a connection (for programs that print nothing).
  Status WaitForListen(size_t id, uint16_t port, std::chrono::milliseconds timeout);
  bool Alive(size_t id);
  // SIGTERM, then SIGKILL after `grace`; reaps.
  void Stop(size_t id, std::chrono::milliseconds grace = std::chrono::seconds(10));
  void StopAll();
  std::string Describe(size_t id) const;  // name and the tail of its stderr

 private:
  struct Child {
    std::string name;
    pid_t pid = -1;
    std::string out, err;
    int status = 0;
  };
  std::vector<Child> children_;
};

// A port on 127.0.0.1 that was free a moment ago (for programs that cannot bind port 0 and
// report it).
Result<uint16_t> FreePort();

}  // namespace infergrid::bench
