#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "common/result.h"

namespace infergrid {

// Splits "host:port" (host may be empty, meaning 0.0.0.0, or a bracketed IPv6 address).
Result<std::pair<std::string, uint16_t>> ParseHostPort(const std::string& s);

}  // namespace infergrid
