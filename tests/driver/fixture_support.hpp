#pragma once
// Small helpers shared by the fixture files: JavaScript-like arithmetic on JSON numbers and
// JSON object access with defaults.

#include <chrono>
#include <cstdint>
#include <string>

#include "rivetkit/rivetkit.hpp"

namespace rivetkit::driver {

using namespace std::chrono_literals;

// a + b as JavaScript adds numbers: integers stay integers, otherwise a double.
inline Json add(const Json& a, const Json& b) {
    if (a.is_number_integer() && b.is_number_integer())
        return a.get<std::int64_t>() + b.get<std::int64_t>();
    const double x = a.is_number() ? a.get<double>() : 0.0;
    const double y = b.is_number() ? b.get<double>() : 0.0;
    return x + y;
}

// `value?.field` truthiness for a params object (null, absent, false, 0 and "" are false).
inline bool truthy_field(const Json& object, const char* field) {
    if (!object.is_object())
        return false;
    auto it = object.find(field);
    if (it == object.end() || it->is_null())
        return false;
    if (it->is_boolean())
        return it->get<bool>();
    if (it->is_number())
        return it->get<double>() != 0.0;
    if (it->is_string())
        return !it->get<std::string>().empty();
    return true;
}

// `object.field ?? fallback` for a string field.
inline std::string string_field(const Json& object, const char* field, std::string fallback) {
    if (object.is_object()) {
        auto it = object.find(field);
        if (it != object.end() && it->is_string())
            return it->get<std::string>();
    }
    return fallback;
}

}  // namespace rivetkit::driver
