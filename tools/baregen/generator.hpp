#pragma once
// Emits a C++ header and source for a validated schema.

#include <string>
#include <string_view>

#include "schema.hpp"

namespace baregen {

struct GenOptions {
    std::string cpp_namespace;   // e.g. "rivetkit::proto::envoy_v8"
    std::string header_include;  // how the source includes the header, e.g. "proto/envoy_v8.hpp"
    std::string schema_label;    // shown in the "generated from" banner
};

struct GenOutput {
    std::string header;
    std::string source;
};

GenOutput generate(const Schema& schema, const GenOptions& options);

// camelCase / PascalCase field name → snake_case, with a trailing '_' for C++ keywords.
std::string field_name(std::string_view schema_name);
// SCREAMING_CASE or PascalCase enum value → PascalCase.
std::string enum_value_name(std::string_view schema_name);

}  // namespace baregen
