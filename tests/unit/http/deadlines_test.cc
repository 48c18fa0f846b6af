#include "http/deadlines.h"

#include <gtest/gtest.h>

#include <memory>

namespace infergrid::http {
namespace {

class CountingItem : public Deadlines::Item {
 public:
  using Item::Item;
  int expired = 0;

 protected:
  void OnExpire() override { ++expired; }
};

// Runs `io` until `done` or a generous bound, so a broken sweep fails instead of hanging.
template <typename F>
void RunUntil(asio::io_context& io, F done) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done() && std::chrono::steady_clock::now() < until)
    io.run_for(std::chrono::milliseconds(5));
}

TEST(Deadlines, ArmedItemsFireOnceAndDisarmedOnesNever) {
  asio::io_context io;
  Deadlines d(io.get_executor(), std::chrono::milliseconds(5));
  d.Start();
  CountingItem armed(&d), disarmed(&d), never(&d);
  armed.ArmAfter(std::chrono::milliseconds(20));
  disarmed.ArmAfter(std::chrono::milliseconds(20));
  disarmed.Disarm();
  RunUntil(io, [&] { return armed.expired > 0; });
  EXPECT_EQ(armed.expired, 1);
  EXPECT_TRUE(armed.fired());
  // It does not fire again until re-armed, and re-arming clears fired().
  io.run_for(std::chrono::milliseconds(30));
  EXPECT_EQ(armed.expired, 1);
  armed.ArmAfter(std::chrono::hours(1));
  EXPECT_FALSE(armed.fired());
  EXPECT_EQ(disarmed.expired, 0);
  EXPECT_EQ(never.expired, 0);
  d.Stop();
}

TEST(Deadlines, ItemsMayComeAndGoInAnyOrder) {
  asio::io_context io;
  Deadlines d(io.get_executor(), std::chrono::milliseconds(5));
  d.Start();
  std::vector<std::unique_ptr<CountingItem>> items;
  for (int i = 0; i < 10; ++i) items.push_back(std::make_unique<CountingItem>(&d));
  // Remove from the middle and the front: the rest must still be swept.
  items.erase(items.begin() + 5);
  items.erase(items.begin());
  for (auto& item : items) item->ArmAfter(std::chrono::milliseconds(10));
  RunUntil(io, [&] {
    for (auto& item : items) {
      if (item->expired == 0) return false;
    }
    return true;
  });
  for (auto& item : items) EXPECT_EQ(item->expired, 1);
  d.Stop();
}

TEST(Deadlines, SocketItemCancelsThePendingOperation) {
  asio::io_context io;
  Deadlines d(io.get_executor(), std::chrono::milliseconds(5));
  d.Start();
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  tcp::socket client(io), server(io);
  client.connect(acceptor.local_endpoint());
  acceptor.accept(server);
  Deadlines::SocketItem item(&d, &server);
  item.ArmAfter(std::chrono::milliseconds(20));
  error_code got;
  bool done = false;
  char byte;
  server.async_read_some(asio::buffer(&byte, 1), [&](error_code ec, size_t) {
    got = ec;
    done = true;
  });
  RunUntil(io, [&] { return done; });
  EXPECT_EQ(got, asio::error::operation_aborted);
  EXPECT_TRUE(item.fired());
  EXPECT_TRUE(server.is_open());  // cancelled, not closed: the server can still answer 408
  d.Stop();
}

}  // namespace
}  // namespace infergrid::http
