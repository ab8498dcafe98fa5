// The text of a YAML node as a user wrote it: a scalar as is, anything else in flow style ("[1, 2]", "{a: 1}").
// Used for messages, compare/sweep values and labels. Header-only; callers link yaml-cpp.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace zerosim::scenario {

/// Scalar text, or the node emitted in YAML flow style.
inline std::string yaml_text(const YAML::Node& n) {
  if (n.IsScalar())
    return n.Scalar();
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

} // namespace zerosim::scenario
