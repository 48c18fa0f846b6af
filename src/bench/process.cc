#include "bench/process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace infergrid::bench {

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool CanConnect(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
}

}  // namespace

Result<size_t> Processes::Start(const std::string& name, const std::vector<std::string>& argv,
                                const std::string& log_prefix) {
  Child c;
  c.name = name;
  c.out = log_prefix + ".out";
  c.err = log_prefix + ".err";
  int out = open(c.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int err = open(c.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0 || err < 0) {
    if (out >= 0) close(out);
    if (err >= 0) close(err);
    return Status::Error(fmt::format("{}: cannot write {}.out/.err", name, log_prefix));
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(out);
    close(err);
    return Status::Error(fmt::format("{}: fork: {}", name, std::strerror(errno)));
  }
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    dup2(out, 1);
    dup2(err, 2);
    int in = open("/dev/null", O_RDONLY);
    if (in >= 0) dup2(in, 0);
    signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execv(args[0], args.data());
    dprintf(2, "exec %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(out);
  close(err);
  c.pid = pid;
  children_.push_back(std::move(c));
  return children_.size() - 1;
}

bool Processes::Alive(size_t id) {
  Child& c = children_[id];
  if (c.pid <= 0) return false;
  pid_t r = waitpid(c.pid, &c.status, WNOHANG);
  if (r == c.pid) {
    c.pid = -1;
    return false;
  }
  return true;
}

Result<std::vector<uint16_t>> Processes::WaitForPorts(size_t id, size_t count,
                                                      std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    std::vector<uint16_t> ports;
    std::istringstream in(ReadFile(children_[id].out));
    std::string line;
    constexpr std::string_view kTag = "listening on port ";
    while (std::getline(in, line)) {
      size_t p = line.find(kTag);
      if (p != std::string::npos) ports.push_back(std::atoi(line.c_str() + p + kTag.size()));
    }
    if (ports.size() >= count) return ports;
    if (!Alive(id)) return Status::Error(fmt::format("{} exited early", Describe(id)));
    if (std::chrono::steady_clock::now() > deadline) {
      return Status::Error(fmt::format("{} did not start in time", Describe(id)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Status Processes::WaitForListen(size_t id, uint16_t port, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!CanConnect(port)) {
    if (!Alive(id)) return Status::Error(fmt::format("{} exited early", Describe(id)));
    if (std::chrono::steady_clock::now() > deadline) {
      return Status::Error(fmt::format("{} did not listen on port {} in time", Describe(id), port));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Status::Ok();
}

void Processes::Stop(size_t id, std::chrono::milliseconds grace) {
  Child& c = children_[id];
  if (c.pid <= 0) return;
  kill(c.pid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (Alive(id)) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(-c.pid, SIGKILL);  // its group: an nginx master's workers too
      kill(c.pid, SIGKILL);
      waitpid(c.pid, &c.status, 0);
      c.pid = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void Processes::StopAll() {
  for (size_t i = children_.size(); i-- > 0;) Stop(i);
}

std::string Processes::Describe(size_t id) const {
  const Child& c = children_[id];
  std::string err = ReadFile(c.err);
  if (err.size() > 2000) err = "..." + err.substr(err.size() - 2000);
  return fmt::format("{} (log {}){}", c.name, c.err, err.empty() ? "" : ":\n" + err);
}

Result<uint16_t> FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return Status::Error("socket: " + std::string(std::strerror(errno)));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    return Status::Error("bind: " + std::string(std::strerror(errno)));
  }
  uint16_t port = ntohs(a.sin_port);
  close(fd);
  return port;
}

}  // namespace infergrid::bench
