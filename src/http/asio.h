#pragma once
// The Asio/Beast vocabulary of the I/O layers. Coroutines complete with error codes
// (redirect_error), never exceptions, on the request path.

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace infergrid::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

template <typename T = void>
using awaitable = asio::awaitable<T>;

inline auto with_ec(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

using StringRequest = bhttp::request<bhttp::string_body>;
using StringResponse = bhttp::response<bhttp::string_body>;

}  // namespace infergrid::http
