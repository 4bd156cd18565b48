#include <cctype>
#include <set>
#include <string>

#include "generator.hpp"

namespace baregen {
namespace {

bool is_upper(char c) {
    return std::isupper(static_cast<unsigned char>(c)) != 0;
}
bool is_lower(char c) {
    return std::islower(static_cast<unsigned char>(c)) != 0;
}
bool is_digit(char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
}
char lower(char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}
char upper(char c) {
    return static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
}

const std::set<std::string>& cpp_keywords() {
    static const std::set<std::string> k = {
        "alignas",       "alignof",      "and",       "asm",
        "auto",          "bool",         "break",     "case",
        "catch",         "char",         "class",     "concept",
        "const",         "consteval",    "constexpr", "constinit",
        "continue",      "co_await",     "co_return", "co_yield",
        "decltype",      "default",      "delete",    "do",
        "double",        "else",         "enum",      "explicit",
        "export",        "extern",       "false",     "float",
        "for",           "friend",       "goto",      "if",
        "inline",        "int",          "long",      "mutable",
        "namespace",     "new",          "noexcept",  "not",
        "nullptr",       "operator",     "or",        "private",
        "protected",     "public",       "register",  "requires",
        "return",        "short",        "signed",    "sizeof",
        "static",        "struct",       "switch",    "template",
        "this",          "thread_local", "throw",     "true",
        "try",           "typedef",      "typeid",    "typename",
        "union",         "unsigned",     "using",     "virtual",
        "void",          "volatile",     "while",     "xor",
        "static_assert", "static_cast",
    };
    return k;
}

}  // namespace

std::string field_name(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (is_upper(c)) {
            const bool prev_lower = i > 0 && (is_lower(s[i - 1]) || is_digit(s[i - 1]));
            // The last capital of an acronym starts the next word: "httpURLPath" → http_url_path.
            const bool acronym_end =
                i > 0 && is_upper(s[i - 1]) && i + 1 < s.size() && is_lower(s[i + 1]);
            if ((prev_lower || acronym_end) && !out.empty() && out.back() != '_')
                out += '_';
            out += lower(c);
        } else {
            out += c;
        }
    }
    if (cpp_keywords().count(out))
        out += '_';
    return out;
}

std::string enum_value_name(std::string_view s) {
    bool has_lower = false;
    for (char c : s)
        has_lower = has_lower || is_lower(c);
    std::string out;
    if (has_lower) {
        out = std::string(s);
        out[0] = upper(out[0]);
        return out;
    }
    bool start = true;
    for (char c : s) {
        if (c == '_') {
            start = true;
            continue;
        }
        out += start ? upper(c) : lower(c);
        start = false;
    }
    return out;
}

}  // namespace baregen
