#pragma once
// Status and Result<T>: how errors travel on the control plane (config, start-up) and
// through the request path without exceptions.

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace infergrid {

class Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !message_.has_value(); }
  const std::string& message() const {
    static const std::string kEmpty;
    return message_ ? *message_ : kEmpty;
  }

 private:
  explicit Status(std::string message) : message_(std::move(message)) {}
  std::optional<std::string> message_;
};

// Holds either a value or an error Status. Accessing value() of an error is a bug.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace infergrid

#define IG_CONCAT_INNER(a, b) a##b
#define IG_CONCAT(a, b) IG_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function if `expr` (a Status) is an error.
#define IG_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::infergrid::Status ig_status_ = (expr); \
    if (!ig_status_.ok()) return ig_status_; \
  } while (0)

// `lhs = value of expr` (a Result<T>), or returns its Status from the enclosing function.
#define IG_ASSIGN_OR_RETURN(lhs, expr) \
  IG_ASSIGN_OR_RETURN_IMPL(IG_CONCAT(ig_result_, __LINE__), lhs, expr)
#define IG_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
