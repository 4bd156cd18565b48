#pragma once
// The parsed form of a BARE schema file (draft-devault-bare schema language).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace baregen {

enum class Prim {
    Uint,
    Int,
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
    F32,
    F64,
    Bool,
    Str,
    Data,
    Void
};

struct TypeRef {
    enum class Kind { Primitive, FixedData, Named, Optional, List, Map };
    Kind kind = Kind::Primitive;
    Prim prim = Prim::Void;
    std::string name;           // Named
    std::size_t length = 0;     // FixedData
    std::vector<TypeRef> args;  // Optional/List: [elem]; Map: [key, value]
    int line = 0;
};

struct Field {
    std::string name;
    TypeRef type;
    int line = 0;
};

struct UnionMember {
    std::string type_name;
    std::uint64_t tag = 0;
    int line = 0;
};

struct EnumValue {
    std::string name;
    std::uint64_t value = 0;
};

struct Decl {
    enum class Kind { Struct, Union, Enum, Alias };
    Kind kind = Kind::Alias;
    std::string name;
    std::vector<Field> fields;         // Struct
    std::vector<UnionMember> members;  // Union
    std::vector<EnumValue> values;     // Enum
    TypeRef alias;                     // Alias
    int line = 0;
};

struct Schema {
    std::vector<Decl> decls;
};

// Parses schema text; throws SchemaError with "<file>:<line>: message" on syntax or semantic errors
// (undefined or duplicate names, void outside a named alias, invalid map keys, cycles).
Schema parse_schema(const std::string& text, const std::string& file_name = "<schema>");

struct SchemaError {
    std::string message;
};

}  // namespace baregen
