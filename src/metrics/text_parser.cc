#include "metrics/text_parser.h"

#include <fmt/format.h>

#include <cstdlib>

#include "common/strings.h"

namespace infergrid::metrics {
namespace {

bool IsNameChar(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         (!first && c >= '0' && c <= '9');
}

bool ParseDouble(std::string_view s, double* out) {
  if (s == "+Inf" || s == "Inf") {
    *out = HUGE_VAL;
    return true;
  }
  if (s == "-Inf") {
    *out = -HUGE_VAL;
    return true;
  }
  std::string tmp(s);
  char* end = nullptr;
  *out = std::strtod(tmp.c_str(), &end);
  return end != tmp.c_str() && *end == '\0';
}

// Parses `{a="x",b="y"}` starting at s[*pos] == '{'.
bool ParseLabels(std::string_view s, size_t* pos, std::map<std::string, std::string>* labels) {
  size_t i = *pos + 1;
  while (true) {
    while (i < s.size() && (s[i] == ' ' || s[i] == ',')) ++i;
    if (i < s.size() && s[i] == '}') {
      *pos = i + 1;
      return true;
    }
    size_t start = i;
    while (i < s.size() && IsNameChar(s[i], i == start)) ++i;
    if (i == start || i >= s.size() || s[i] != '=') return false;
    std::string key(s.substr(start, i - start));
    ++i;
    if (i >= s.size() || s[i] != '"') return false;
    ++i;
    std::string value;
    while (i < s.size() && s[i] != '"') {
      if (s[i] == '\\' && i + 1 < s.size()) {
        ++i;
        value.push_back(s[i] == 'n' ? '\n' : s[i]);
      } else {
        value.push_back(s[i]);
      }
      ++i;
    }
    if (i >= s.size()) return false;
    ++i;  // closing quote
    (*labels)[key] = std::move(value);
  }
}

}  // namespace

Result<std::vector<Sample>> ParseText(std::string_view text) {
  std::vector<Sample> out;
  size_t line_no = 0;
  for (std::string_view line : Split(text, '\n')) {
    ++line_no;
    line = Trim(line);
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    size_t i = 0;
    while (i < line.size() && IsNameChar(line[i], i == 0)) ++i;
    if (i == 0) return Status::Error(fmt::format("line {}: expected a metric name", line_no));
    s.name = std::string(line.substr(0, i));
    if (i < line.size() && line[i] == '{') {
      if (!ParseLabels(line, &i, &s.labels)) {
        return Status::Error(fmt::format("line {}: malformed labels", line_no));
      }
    }
    std::string_view rest = Trim(line.substr(i));
    size_t sp = rest.find(' ');
    std::string_view value = sp == std::string_view::npos ? rest : rest.substr(0, sp);
    if (!ParseDouble(value, &s.value)) {
      return Status::Error(fmt::format("line {}: '{}' is not a number", line_no, value));
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace infergrid::metrics
