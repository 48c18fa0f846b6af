#pragma once
// A strict reader over a yaml-cpp tree: knows the path and position of each node, rejects
// unknown fields and wrong types with FILE:LINE:COL messages, and never lets a yaml-cpp
// exception escape.

#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>
#include <set>
#include <string>

#include "common/result.h"
#include "config/config.h"

namespace infergrid::config {

class Node {
 public:
  Node(YAML::Node node, std::string path, const std::string* source)
      : node_(std::move(node)), path_(std::move(path)), source_(source) {}

  const std::string& path() const { return path_; }
  Mark mark() const;
  bool IsMap() const { return node_.IsMap(); }
  bool IsSequence() const { return node_.IsSequence(); }
  bool IsScalar() const { return node_.IsScalar(); }
  bool IsNull() const { return !node_.IsDefined() || node_.IsNull(); }

  // An error at this node.
  Status Error(const std::string& message) const;

  // Map access. Check() rejects keys outside `allowed`.
  Status ExpectMap() const;
  Status CheckKeys(const std::set<std::string>& allowed) const;
  bool Has(const std::string& key) const;
  Node Get(const std::string& key) const;

  // Sequences.
  Status ExpectSequence() const;
  size_t size() const { return node_.size(); }
  Node At(size_t i) const;

  // Scalars.
  Result<std::string> String() const;
  Result<int64_t> Int(int64_t min, int64_t max) const;
  Result<double> Double(double min, double max) const;
  Result<bool> Bool() const;
  Result<Duration> Dur() const;

  // Iterates a map's entries in document order.
  Status ForEachEntry(const std::function<Status(const std::string&, const Node&)>& fn) const;

 private:
  YAML::Node node_;
  std::string path_;
  const std::string* source_;
};

// A v1 document (apiVersion: infergrid.dev/v1, kind, metadata, spec) parsed from YAML text:
// checks the header and hands `body` the spec. yaml-cpp's exceptions become FILE:LINE:COL
// errors. Shared by the Gateway config and the planner's Fleet and Workload files.
struct DocumentHeader {
  std::string name;
  std::map<std::string, std::string> labels;
};
Status ParseDocument(const std::string& yaml_text, const std::string* source,
                     const std::string& kind, DocumentHeader* header,
                     const std::function<Status(const Node& spec)>& body);

// The whole of a text file, or an error naming it.
Result<std::string> ReadTextFile(const std::string& path);

}  // namespace infergrid::config
