#include "config/yaml_reader.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace infergrid::config {

Mark Node::mark() const {
  if (!node_.IsDefined()) return {};
  auto m = node_.Mark();
  if (m.line < 0) return {};
  return Mark{m.line + 1, m.column + 1};
}

Status Node::Error(const std::string& message) const {
  return Status::Error(FormatError(*source_, mark(), path_, message));
}

Status Node::ExpectMap() const {
  if (!node_.IsMap()) return Error("expected a mapping");
  return Status::Ok();
}

Status Node::CheckKeys(const std::set<std::string>& allowed) const {
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    if (!it->first.IsScalar()) {
      return Error("keys must be plain strings");
    }
    std::string key = it->first.Scalar();
    if (allowed.count(key) == 0) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      auto m = it->first.Mark();
      return Status::Error(FormatError(
          *source_, Mark{m.line + 1, m.column + 1}, path_.empty() ? key : path_ + "." + key,
          fmt::format("unknown field '{}'; expected one of: {}", key, list)));
    }
  }
  return Status::Ok();
}

bool Node::Has(const std::string& key) const { return node_.IsMap() && node_[key].IsDefined(); }

Node Node::Get(const std::string& key) const {
  YAML::Node child = node_.IsMap() ? node_[key] : YAML::Node();
  return Node(child, path_.empty() ? key : path_ + "." + key, source_);
}

Status Node::ExpectSequence() const {
  if (!node_.IsSequence()) return Error("expected a list");
  return Status::Ok();
}

Node Node::At(size_t i) const { return Node(node_[i], fmt::format("{}[{}]", path_, i), source_); }

Result<std::string> Node::String() const {
  if (!node_.IsScalar()) return Error("expected a string");
  return node_.Scalar();
}

Result<int64_t> Node::Int(int64_t min, int64_t max) const {
  if (!node_.IsScalar()) return Error("expected an integer");
  try {
    auto v = node_.as<int64_t>();
    if (v < min || v > max)
      return Error(fmt::format("expected an integer from {} to {}, got {}", min, max, v));
    return v;
  } catch (const YAML::Exception&) {
    return Error(fmt::format("expected an integer, got '{}'", node_.Scalar()));
  }
}

Result<double> Node::Double(double min, double max) const {
  if (!node_.IsScalar()) return Error("expected a number");
  try {
    auto v = node_.as<double>();
    if (!(v >= min && v <= max))
      return Error(fmt::format("expected a number from {} to {}, got {}", min, max, v));
    return v;
  } catch (const YAML::Exception&) {
    return Error(fmt::format("expected a number, got '{}'", node_.Scalar()));
  }
}

Result<bool> Node::Bool() const {
  if (!node_.IsScalar()) return Error("expected true or false");
  const std::string& s = node_.Scalar();
  if (s == "true") return true;
  if (s == "false") return false;
  return Error(fmt::format("expected true or false, got '{}'", s));
}

Result<Duration> Node::Dur() const {
  if (!node_.IsScalar()) return Error("expected a duration such as 500ms, 2s or 1m");
  auto d = ParseDuration(node_.Scalar());
  if (!d.ok()) return Error(d.status().message());
  return d;
}

Status Node::ForEachEntry(const std::function<Status(const std::string&, const Node&)>& fn) const {
  if (!node_.IsMap()) return Error("expected a mapping");
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    if (!it->first.IsScalar()) return Error("keys must be plain strings");
    std::string key = it->first.Scalar();
    Status s = fn(key, Node(it->second, path_ + "." + key, source_));
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status ParseDocument(const std::string& yaml_text, const std::string* source,
                     const std::string& kind, DocumentHeader* header,
                     const std::function<Status(const Node& spec)>& body) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    return Status::Error(FormatError(*source, Mark{e.mark.line + 1, e.mark.column + 1}, "",
                                     "invalid YAML: " + e.msg));
  } catch (const YAML::Exception& e) {
    return Status::Error(FormatError(*source, {}, "", std::string("invalid YAML: ") + e.what()));
  }
  try {
    Node doc(root, "", source);
    if (!doc.IsMap()) return doc.Error("expected a mapping with apiVersion, kind and spec");
    IG_RETURN_IF_ERROR(doc.CheckKeys({"apiVersion", "kind", "metadata", "spec"}));
    if (!doc.Has("apiVersion"))
      return doc.Error("missing required field 'apiVersion' (infergrid.dev/v1)");
    IG_ASSIGN_OR_RETURN(std::string api, doc.Get("apiVersion").String());
    if (api != "infergrid.dev/v1") {
      return doc.Get("apiVersion").Error(fmt::format("expected 'infergrid.dev/v1', got '{}'", api));
    }
    if (!doc.Has("kind")) return doc.Error(fmt::format("missing required field 'kind' ({})", kind));
    IG_ASSIGN_OR_RETURN(std::string k, doc.Get("kind").String());
    if (k != kind) return doc.Get("kind").Error(fmt::format("expected '{}', got '{}'", kind, k));
    if (doc.Has("metadata")) {
      Node md = doc.Get("metadata");
      IG_RETURN_IF_ERROR(md.ExpectMap());
      IG_RETURN_IF_ERROR(md.CheckKeys({"name", "labels"}));
      if (md.Has("name")) {
        IG_ASSIGN_OR_RETURN(header->name, md.Get("name").String());
      }
      if (md.Has("labels")) {
        IG_RETURN_IF_ERROR(md.Get("labels").ForEachEntry(
            [header](const std::string& key, const Node& v) -> Status {
              IG_ASSIGN_OR_RETURN(header->labels[key], v.String());
              return Status::Ok();
            }));
      }
    }
    if (!doc.Has("spec")) return doc.Error("missing required field 'spec'");
    Node spec = doc.Get("spec");
    IG_RETURN_IF_ERROR(spec.ExpectMap());
    return body(spec);
  } catch (const YAML::Exception& e) {
    // yaml-cpp throws on some malformed trees; never let that escape.
    return Status::Error(
        FormatError(*source, {}, "", std::string("invalid document: ") + e.what()));
  }
}

Result<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::Error(fmt::format("{}: cannot read the file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace infergrid::config
