#pragma once
// Coarse deadlines for one worker: timeouts without a timer per operation. Each Item is a
// deadline that an operation re-arms as it goes (an O(1) store, no syscall, no allocation); a
// sweep every `tick` calls OnExpire() on the items past due. Timeouts are thus accurate to one
// tick, which is ample for seconds-long limits and saves the timer-queue work and timerfd
// updates that an Asio timer per read or write costs on every request.
//
// Threading: not thread-safe. The service, its items and their callbacks all live on the
// worker's thread. Items must be destroyed before the service; the service's own timer must be
// stopped (Stop) before the worker's io_context is destroyed.

#include <chrono>
#include <memory>
#include <vector>

#include "common/duration.h"
#include "http/asio.h"

namespace infergrid::http {

class Deadlines {
 public:
  using Clock = std::chrono::steady_clock;

  class Item {
   public:
    // A null owner gives an inert item (never fires).
    explicit Item(Deadlines* owner);
    virtual ~Item();
    Item(const Item&) = delete;
    Item& operator=(const Item&) = delete;

    void ArmAfter(Duration d) { ArmAt(Clock::now() + d); }
    void ArmAt(Clock::time_point at) {
      at_ = at;
      fired_ = false;
    }
    void Disarm() { at_ = Clock::time_point::max(); }
    // Whether it expired since it was last armed.
    bool fired() const { return fired_; }

   protected:
    // Runs on the worker's thread from the sweep. Must not destroy items.
    virtual void OnExpire() = 0;

   private:
    friend class Deadlines;
    Deadlines* owner_;
    size_t slot_ = 0;
    Clock::time_point at_ = Clock::time_point::max();
    bool fired_ = false;
  };

  // An item that, on expiry, cancels the pending operations of a socket (they complete with
  // operation_aborted; check fired() to tell a timeout from other errors).
  class SocketItem : public Item {
   public:
    SocketItem(Deadlines* owner, tcp::socket* socket) : Item(owner), socket_(socket) {}

   protected:
    void OnExpire() override {
      error_code ignored;
      socket_->cancel(ignored);
    }

   private:
    tcp::socket* socket_;
  };

  Deadlines(asio::any_io_executor ex, Duration tick);
  ~Deadlines();
  void Start();
  void Stop();

 private:
  awaitable<void> Sweep();
  asio::any_io_executor ex_;
  Duration tick_;
  std::vector<Item*> items_;
  std::unique_ptr<asio::steady_timer> timer_;
  std::shared_ptr<bool> stopped_ = std::make_shared<bool>(false);
};

}  // namespace infergrid::http
