#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace infergrid {

std::vector<std::string_view> Split(std::string_view s, char sep);
std::string_view Trim(std::string_view s);
bool StartsWith(std::string_view s, std::string_view prefix);
// Lower-cases ASCII letters; HTTP header names compare this way.
std::string AsciiLower(std::string_view s);

}  // namespace infergrid
