// Turns a validated schema into C++: value types in dependency order, then per-type
// encode/decode functions. Containers are coded inline so that `uint` and `u64` (both
// std::uint64_t) never depend on overload resolution to pick their wire format.

#include "generator.hpp"

#include <map>
#include <set>
#include <sstream>

namespace baregen {
namespace {

// How a declaration appears in C++.
enum class Shape {
    Struct,   // struct with fields
    Union,    // struct wrapping std::variant
    Enum,     // enum class
    Void,     // empty struct (void alias, only ever a union member)
    Newtype,  // struct { T value; } for container aliases and union-member aliases
    Using,    // plain `using` alias, transparent to the codec
};

class Generator {
  public:
    Generator(const Schema& s, const GenOptions& o) : opt_(o) {
        std::set<std::string> union_members;
        for (const auto& d : s.decls) {
            decls_[d.name] = &d;
            for (const auto& m : d.members)
                union_members.insert(m.type_name);
        }
        for (const auto& d : s.decls)
            shapes_[d.name] = shape_of(d, union_members.count(d.name) > 0);
        for (const auto& d : s.decls)
            order(d.name);
    }

    GenOutput run() {
        GenOutput out;
        out.header = header();
        out.source = source();
        return out;
    }

  private:
    static Shape shape_of(const Decl& d, bool is_union_member) {
        switch (d.kind) {
            case Decl::Kind::Struct:
                return Shape::Struct;
            case Decl::Kind::Union:
                return Shape::Union;
            case Decl::Kind::Enum:
                return Shape::Enum;
            case Decl::Kind::Alias:
                break;
        }
        const TypeRef& t = d.alias;
        if (t.kind == TypeRef::Kind::Primitive && t.prim == Prim::Void)
            return Shape::Void;
        const bool container = t.kind == TypeRef::Kind::Optional || t.kind == TypeRef::Kind::List ||
                               t.kind == TypeRef::Kind::Map;
        return container || is_union_member ? Shape::Newtype : Shape::Using;
    }

    void order(const std::string& name) {
        if (!visited_.insert(name).second)
            return;
        const Decl& d = *decls_.at(name);
        auto walk = [&](const TypeRef& t, auto&& self) -> void {
            if (t.kind == TypeRef::Kind::Named)
                order(t.name);
            for (const auto& a : t.args)
                self(a, self);
        };
        for (const auto& f : d.fields)
            walk(f.type, walk);
        for (const auto& m : d.members)
            order(m.type_name);
        if (d.kind == Decl::Kind::Alias)
            walk(d.alias, walk);
        ordered_.push_back(&d);
    }

    bool has_codec(const std::string& name) const { return shapes_.at(name) != Shape::Using; }

    static std::string prim_cpp(Prim p) {
        switch (p) {
            case Prim::Uint:
                return "std::uint64_t";
            case Prim::Int:
                return "std::int64_t";
            case Prim::U8:
                return "std::uint8_t";
            case Prim::U16:
                return "std::uint16_t";
            case Prim::U32:
                return "std::uint32_t";
            case Prim::U64:
                return "std::uint64_t";
            case Prim::I8:
                return "std::int8_t";
            case Prim::I16:
                return "std::int16_t";
            case Prim::I32:
                return "std::int32_t";
            case Prim::I64:
                return "std::int64_t";
            case Prim::F32:
                return "float";
            case Prim::F64:
                return "double";
            case Prim::Bool:
                return "bool";
            case Prim::Str:
                return "std::string";
            case Prim::Data:
                return "std::vector<std::uint8_t>";
            case Prim::Void:
                break;
        }
        return "void";
    }

    // Suffix of the Writer/Reader method for a primitive: write_<suffix> / read_<suffix>.
    static std::string prim_method(Prim p) {
        switch (p) {
            case Prim::Uint:
                return "uint";
            case Prim::Int:
                return "int";
            case Prim::U8:
                return "u8";
            case Prim::U16:
                return "u16";
            case Prim::U32:
                return "u32";
            case Prim::U64:
                return "u64";
            case Prim::I8:
                return "i8";
            case Prim::I16:
                return "i16";
            case Prim::I32:
                return "i32";
            case Prim::I64:
                return "i64";
            case Prim::F32:
                return "f32";
            case Prim::F64:
                return "f64";
            case Prim::Bool:
                return "bool";
            case Prim::Str:
                return "str";
            case Prim::Data:
                return "data";
            case Prim::Void:
                break;
        }
        return "";
    }

    std::string cpp_type(const TypeRef& t) const {
        switch (t.kind) {
            case TypeRef::Kind::Primitive:
                return prim_cpp(t.prim);
            case TypeRef::Kind::FixedData:
                return "std::array<std::uint8_t, " + std::to_string(t.length) + ">";
            case TypeRef::Kind::Named:
                return t.name;
            case TypeRef::Kind::Optional:
                return "std::optional<" + cpp_type(t.args[0]) + ">";
            case TypeRef::Kind::List:
                return "std::vector<" + cpp_type(t.args[0]) + ">";
            case TypeRef::Kind::Map:
                return "std::vector<std::pair<" + cpp_type(t.args[0]) + ", " + cpp_type(t.args[1]) +
                       ">>";
        }
        return "";
    }

    // `using` aliases are coded as the type they name.
    const TypeRef& codec_type(const TypeRef& t) const {
        if (t.kind == TypeRef::Kind::Named && !has_codec(t.name)) {
            return codec_type(decls_.at(t.name)->alias);
        }
        return t;
    }

    // MARK: Header

    std::string header() const {
        std::ostringstream o;
        o << "// Generated by baregen from " << opt_.schema_label << ". Do not edit.\n"
          << "#pragma once\n\n"
          << "#include <array>\n#include <cstdint>\n#include <optional>\n#include <string>\n"
          << "#include <string_view>\n#include <utility>\n#include <variant>\n#include <vector>\n\n"
          << "#include \"bare/codec.hpp\"\n\n"
          << "namespace " << opt_.cpp_namespace << " {\n\n";
        for (const Decl* d : ordered_)
            type_definition(o, *d);
        for (const Decl* d : ordered_) {
            if (!has_codec(d->name))
                continue;
            o << "void encode(::rivetkit::bare::Writer& w, const " << d->name << "& v);\n"
              << "void decode(::rivetkit::bare::Reader& r, " << d->name << "& v);\n"
              << "constexpr std::string_view bare_type_name(const " << d->name
              << "*) noexcept { return \"" << d->name << "\"; }\n";
            if (shapes_.at(d->name) == Shape::Enum) {
                o << "std::string_view to_string(" << d->name << " v) noexcept;\n";
            }
        }
        o << "\n}  // namespace " << opt_.cpp_namespace << "\n";
        return o.str();
    }

    void type_definition(std::ostringstream& o, const Decl& d) const {
        const std::string eq =
            "    friend bool operator==(const " + d.name + "&, const " + d.name + "&) = default;\n";
        switch (shapes_.at(d.name)) {
            case Shape::Struct:
                o << "struct " << d.name << " {\n";
                for (const auto& f : d.fields) {
                    o << "    " << cpp_type(f.type) << " " << field_name(f.name) << "{};\n";
                }
                o << eq << "};\n\n";
                return;
            case Shape::Union:
                union_definition(o, d, eq);
                return;
            case Shape::Enum:
                o << "enum class " << d.name << " : std::uint64_t {\n";
                for (const auto& v : d.values) {
                    o << "    " << enum_value_name(v.name) << " = " << v.value << ",\n";
                }
                o << "};\n\n";
                return;
            case Shape::Void:
                o << "struct " << d.name << " {\n" << eq << "};\n\n";
                return;
            case Shape::Newtype:
                o << "struct " << d.name << " {\n    " << cpp_type(d.alias) << " value{};\n"
                  << eq << "};\n\n";
                return;
            case Shape::Using:
                o << "using " << d.name << " = " << cpp_type(d.alias) << ";\n\n";
                return;
        }
    }

    void union_definition(std::ostringstream& o, const Decl& d, const std::string& eq) const {
        o << "struct " << d.name << " {\n    std::variant<";
        for (std::size_t i = 0; i < d.members.size(); ++i) {
            o << (i ? ", " : "") << d.members[i].type_name;
        }
        o << "> value{};\n\n    // Wire tag of each alternative, by variant index.\n"
          << "    static constexpr std::array<std::uint64_t, " << d.members.size() << "> kTags{";
        for (std::size_t i = 0; i < d.members.size(); ++i) {
            o << (i ? ", " : "") << d.members[i].tag;
        }
        o << "};\n"
          << "    std::uint64_t tag() const noexcept { return kTags[value.index()]; }\n"
          << "    template <typename T>\n"
          << "    bool is() const noexcept { return std::holds_alternative<T>(value); }\n"
          << "    template <typename T>\n"
          << "    const T* get_if() const noexcept { return std::get_if<T>(&value); }\n"
          << "    template <typename T>\n"
          << "    T* get_if() noexcept { return std::get_if<T>(&value); }\n"
          << eq << "};\n\n";
    }

    // MARK: Source

    std::string source() const {
        std::ostringstream o;
        o << "// Generated by baregen from " << opt_.schema_label << ". Do not edit.\n"
          << "#include \"" << opt_.header_include << "\"\n\n"
          << "#include <string>\n\n#include \"bare/map_keys.hpp\"\n\n"
          << "namespace " << opt_.cpp_namespace << " {\n\n";
        for (const Decl* d : ordered_) {
            if (has_codec(d->name))
                codec_definitions(o, *d);
        }
        o << "}  // namespace " << opt_.cpp_namespace << "\n";
        return o.str();
    }

    void codec_definitions(std::ostringstream& o, const Decl& d) const {
        const std::string enc =
            "void encode(::rivetkit::bare::Writer& w, const " + d.name + "& v) {\n";
        const std::string dec = "void decode(::rivetkit::bare::Reader& r, " + d.name + "& v) {\n";
        switch (shapes_.at(d.name)) {
            case Shape::Struct:
                o << enc;
                for (const auto& f : d.fields)
                    encode_value(o, f.type, "v." + field_name(f.name), 1);
                o << "}\n\n" << dec;
                for (const auto& f : d.fields) {
                    decode_value(o, f.type, "v." + field_name(f.name), 1);
                    o << "    if (r.failed()) return r.add_field(\"" << f.name << "\");\n";
                }
                o << "}\n\n";
                return;
            case Shape::Union:
                union_codec(o, d, enc, dec);
                return;
            case Shape::Enum:
                enum_codec(o, d, enc, dec);
                return;
            case Shape::Void:
                o << "void encode(::rivetkit::bare::Writer&, const " << d.name << "&) {}\n\n"
                  << "void decode(::rivetkit::bare::Reader&, " << d.name << "&) {}\n\n";
                return;
            case Shape::Newtype:
                o << enc;
                encode_value(o, d.alias, "v.value", 1);
                o << "}\n\n" << dec;
                decode_value(o, d.alias, "v.value", 1);
                o << "}\n\n";
                return;
            case Shape::Using:
                return;
        }
    }

    void union_codec(std::ostringstream& o, const Decl& d, const std::string& enc,
                     const std::string& dec) const {
        o << enc << "    switch (v.value.index()) {\n";
        for (std::size_t i = 0; i < d.members.size(); ++i) {
            o << "        case " << i << ":\n            w.write_tag(" << d.members[i].tag
              << ");\n            encode(w, std::get<" << i
              << ">(v.value));\n            return;\n";
        }
        o << "        default:\n            return;\n    }\n}\n\n";
        o << dec << "    const std::size_t at = r.offset();\n"
          << "    const std::uint64_t tag = r.read_tag();\n    if (r.failed()) return;\n"
          << "    switch (tag) {\n";
        for (std::size_t i = 0; i < d.members.size(); ++i) {
            o << "        case " << d.members[i].tag << ":\n            decode(r, v.value.emplace<"
              << i << ">());\n            if (r.failed()) r.add_field(\"" << d.members[i].type_name
              << "\");\n            return;\n";
        }
        o << "        default:\n            return r.fail_at(at, \"unknown tag \" + "
             "std::to_string(tag) + \" for union "
          << d.name << "\");\n    }\n}\n\n";
    }

    void enum_codec(std::ostringstream& o, const Decl& d, const std::string& enc,
                    const std::string& dec) const {
        o << enc << "    w.write_uint(static_cast<std::uint64_t>(v));\n}\n\n";
        o << dec << "    const std::size_t at = r.offset();\n"
          << "    const std::uint64_t raw = r.read_uint();\n    if (r.failed()) return;\n"
          << "    switch (raw) {\n";
        for (const auto& val : d.values)
            o << "        case " << val.value << ":\n";
        o << "            v = static_cast<" << d.name << ">(raw);\n            return;\n"
          << "        default:\n            return r.fail_at(at, \"unknown value \" + "
             "std::to_string(raw) + \" for enum "
          << d.name << "\");\n    }\n}\n\n";
        o << "std::string_view to_string(" << d.name << " v) noexcept {\n    switch (v) {\n";
        for (const auto& val : d.values) {
            o << "        case " << d.name << "::" << enum_value_name(val.name) << ":\n"
              << "            return \"" << val.name << "\";\n";
        }
        o << "    }\n    return \"<unknown>\";\n}\n\n";
    }

    static std::string pad(int depth) {
        return std::string(static_cast<std::size_t>(depth) * 4, ' ');
    }

    void encode_value(std::ostringstream& o, const TypeRef& type, const std::string& e,
                      int depth) const {
        const TypeRef& t = codec_type(type);
        const std::string p = pad(depth);
        const std::string n = std::to_string(depth);
        switch (t.kind) {
            case TypeRef::Kind::Primitive:
                o << p << "w.write_" << prim_method(t.prim) << "(" << e << ");\n";
                return;
            case TypeRef::Kind::FixedData:
                o << p << "w.write_fixed_data(" << e << ");\n";
                return;
            case TypeRef::Kind::Named:
                o << p << "encode(w, " << e << ");\n";
                return;
            case TypeRef::Kind::Optional:
                o << p << "w.write_optional_tag(" << e << ".has_value());\n"
                  << p << "if (" << e << ".has_value()) {\n";
                encode_value(o, t.args[0], "(*" + e + ")", depth + 1);
                o << p << "}\n";
                return;
            case TypeRef::Kind::List:
                o << p << "w.write_length(" << e << ".size());\n"
                  << p << "for (const auto& e" << n << " : " << e << ") {\n";
                encode_value(o, t.args[0], "e" + n, depth + 1);
                o << p << "}\n";
                return;
            case TypeRef::Kind::Map:
                o << p << "w.write_length(" << e << ".size());\n"
                  << p << "for (const auto& e" << n << " : " << e << ") {\n";
                encode_value(o, t.args[0], "e" + n + ".first", depth + 1);
                encode_value(o, t.args[1], "e" + n + ".second", depth + 1);
                o << p << "}\n";
                return;
        }
    }

    void decode_value(std::ostringstream& o, const TypeRef& type, const std::string& e,
                      int depth) const {
        const TypeRef& t = codec_type(type);
        const std::string p = pad(depth);
        const std::string n = std::to_string(depth);
        switch (t.kind) {
            case TypeRef::Kind::Primitive:
                o << p << e << " = r.read_" << prim_method(t.prim) << "();\n";
                return;
            case TypeRef::Kind::FixedData:
                o << p << e << " = r.read_fixed_data<" << t.length << ">();\n";
                return;
            case TypeRef::Kind::Named:
                o << p << "decode(r, " << e << ");\n";
                return;
            case TypeRef::Kind::Optional:
                o << p << "if (r.read_optional_tag()) {\n"
                  << p << "    auto& o" << n << " = " << e << ".emplace();\n";
                decode_value(o, t.args[0], "o" + n, depth + 1);
                o << p << "} else {\n" << p << "    " << e << ".reset();\n" << p << "}\n";
                return;
            case TypeRef::Kind::List:
            case TypeRef::Kind::Map:
                decode_sequence(o, t, e, depth);
                return;
        }
    }

    // Lists and maps: the count is checked against the remaining input before reserving.
    void decode_sequence(std::ostringstream& o, const TypeRef& t, const std::string& e,
                         int depth) const {
        const std::string p = pad(depth);
        const std::string n = std::to_string(depth);
        const bool is_map = t.kind == TypeRef::Kind::Map;
        o << p << "{\n";
        if (is_map)
            o << p << "    const std::size_t at" << n << " = r.offset();\n";
        o << p << "    const std::size_t n" << n << " = r.read_length();\n"
          << p << "    " << e << ".clear();\n"
          << p << "    " << e << ".reserve(n" << n << ");\n"
          << p << "    for (std::size_t i" << n << " = 0; i" << n << " < n" << n << "; ++i" << n
          << ") {\n"
          << p << "        auto& e" << n << " = " << e << ".emplace_back();\n";
        if (is_map) {
            decode_value(o, t.args[0], "e" + n + ".first", depth + 2);
            decode_value(o, t.args[1], "e" + n + ".second", depth + 2);
        } else {
            decode_value(o, t.args[0], "e" + n, depth + 2);
        }
        o << p << "        if (r.failed()) {\n"
          << p << "            r.add_index(i" << n << ");\n"
          << p << "            break;\n"
          << p << "        }\n"
          << p << "    }\n";
        if (is_map) {
            o << p << "    if (!r.failed()) {\n"
              << p << "        if (auto dup = ::rivetkit::bare::find_duplicate_key(" << e
              << ")) {\n"
              << p << "            r.fail_at(at" << n << ", \"duplicate map key\");\n"
              << p << "            r.add_index(*dup);\n"
              << p << "        }\n"
              << p << "    }\n";
        }
        o << p << "}\n";
    }

    const GenOptions& opt_;
    std::map<std::string, const Decl*> decls_;
    std::map<std::string, Shape> shapes_;
    std::set<std::string> visited_;
    std::vector<const Decl*> ordered_;
};

}  // namespace

GenOutput generate(const Schema& schema, const GenOptions& options) {
    return Generator(schema, options).run();
}

}  // namespace baregen
