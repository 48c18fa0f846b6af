#include "http/deadlines.h"

namespace infergrid::http {

Deadlines::Item::Item(Deadlines* owner) : owner_(owner) {
  if (owner_) {
    slot_ = owner_->items_.size();
    owner_->items_.push_back(this);
  }
}

Deadlines::Item::~Item() {
  if (!owner_) return;
  auto& v = owner_->items_;
  Item* last = v.back();
  v[slot_] = last;
  last->slot_ = slot_;
  v.pop_back();
}

Deadlines::Deadlines(asio::any_io_executor ex, Duration tick) : ex_(std::move(ex)), tick_(tick) {}

Deadlines::~Deadlines() { *stopped_ = true; }

void Deadlines::Start() {
  timer_ = std::make_unique<asio::steady_timer>(ex_);
  asio::co_spawn(ex_, Sweep(), asio::detached);
}

void Deadlines::Stop() {
  *stopped_ = true;
  timer_.reset();  // an I/O object: it must go before its io_context
}

awaitable<void> Deadlines::Sweep() {
  auto stopped = stopped_;
  while (!*stopped) {
    timer_->expires_after(tick_);
    error_code ec;
    co_await timer_->async_wait(with_ec(ec));
    if (*stopped) co_return;
    auto now = Clock::now();
    for (size_t i = 0; i < items_.size(); ++i) {
      Item* item = items_[i];
      if (item->at_ <= now) {
        item->at_ = Clock::time_point::max();
        item->fired_ = true;
        try {
          item->OnExpire();
        } catch (...) {
          // Only allocation can fail here; one lost expiry must not stop every other.
        }
      }
    }
  }
}

}  // namespace infergrid::http
