// The schema parser, its semantic checks, name mapping and the shape of generated code.

#include <gtest/gtest.h>

#include <string>

#include "generator.hpp"
#include "schema.hpp"

namespace baregen {
namespace {

std::string parse_error(const std::string& text) {
    try {
        parse_schema(text, "t.bare");
    } catch (const SchemaError& e) {
        return e.message;
    }
    return "";
}

TEST(BaregenParseTest, ParsesEveryDeclarationKind) {
    const Schema s = parse_schema(R"(
        # comment
        type Id str
        type Key data[16]
        type Point struct {
            x: i32   # trailing comment
            tags: map<str><list<optional<u8>>>
        }
        type Mode enum { OFF ON = 4 AUTO }
        type Empty void
        type Shape union { Point | Empty = 9 | Id }
        type Legacy { a: uint }
        enum OldStyle { A B }
    )");
    ASSERT_EQ(s.decls.size(), 8u);
    const Decl& point = s.decls[2];
    EXPECT_EQ(point.kind, Decl::Kind::Struct);
    ASSERT_EQ(point.fields.size(), 2u);
    EXPECT_EQ(point.fields[1].type.kind, TypeRef::Kind::Map);
    EXPECT_EQ(point.fields[1].type.args[1].kind, TypeRef::Kind::List);
    EXPECT_EQ(point.fields[1].type.args[1].args[0].kind, TypeRef::Kind::Optional);
    EXPECT_EQ(s.decls[1].alias.kind, TypeRef::Kind::FixedData);
    EXPECT_EQ(s.decls[1].alias.length, 16u);

    const Decl& mode = s.decls[3];
    ASSERT_EQ(mode.values.size(), 3u);
    EXPECT_EQ(mode.values[1].value, 4u);
    EXPECT_EQ(mode.values[2].value, 5u);

    const Decl& shape = s.decls[5];
    ASSERT_EQ(shape.members.size(), 3u);
    EXPECT_EQ(shape.members[0].tag, 0u);
    EXPECT_EQ(shape.members[1].tag, 9u);
    EXPECT_EQ(shape.members[2].tag, 10u);
    EXPECT_EQ(s.decls[6].kind, Decl::Kind::Struct);
    EXPECT_EQ(s.decls[7].kind, Decl::Kind::Enum);
}

TEST(BaregenParseTest, ReportsErrorsWithLineNumbers) {
    EXPECT_EQ(parse_error("type A struct {\n  b: Missing\n}"),
              "t.bare:2: undefined type 'Missing'");
    EXPECT_NE(parse_error("type A u8\ntype A u16").find("duplicate type"), std::string::npos);
    EXPECT_NE(parse_error("type A struct { v: void }").find("void is not allowed"),
              std::string::npos);
    EXPECT_NE(parse_error("type V void\ntype A struct { v: V }").find("only be a union member"),
              std::string::npos);
    EXPECT_NE(parse_error("type A map<f64><str>").find("map keys"), std::string::npos);
    EXPECT_NE(parse_error("type A map<data><str>").find("map keys"), std::string::npos);
    EXPECT_NE(parse_error("type A struct { b: B }\ntype B struct { a: A }").find("contains itself"),
              std::string::npos);
    EXPECT_NE(parse_error("type A union { A | A }").find("twice"), std::string::npos);
    EXPECT_NE(parse_error("type A union { B = 1 | C = 1 }\ntype B u8\ntype C u16")
                  .find("duplicate union tag"),
              std::string::npos);
    EXPECT_NE(parse_error("type A struct {}").find("no fields"), std::string::npos);
    EXPECT_NE(parse_error("type A struct { x: u8 $ }").find("unexpected character"),
              std::string::npos);
    EXPECT_NE(parse_error("type A list<u8>[4]").find("fixed-length lists"), std::string::npos);
}

TEST(BaregenNamesTest, FieldNamesBecomeSnakeCase) {
    EXPECT_EQ(field_name("actorId"), "actor_id");
    EXPECT_EQ(field_name("lastInsertRowId"), "last_insert_row_id");
    EXPECT_EQ(field_name("httpURLPath"), "http_url_path");
    EXPECT_EQ(field_name("a_u8"), "a_u8");
    EXPECT_EQ(field_name("class"), "class_");
    EXPECT_EQ(field_name("delete"), "delete_");
    EXPECT_EQ(field_name("data"), "data");
}

TEST(BaregenNamesTest, EnumValuesBecomePascalCase) {
    EXPECT_EQ(enum_value_name("SLEEP_INTENT"), "SleepIntent");
    EXPECT_EQ(enum_value_name("OK"), "Ok");
    EXPECT_EQ(enum_value_name("HandlerError"), "HandlerError");
}

TEST(BaregenGenerateTest, EmitsTypesInDependencyOrder) {
    const Schema s = parse_schema(R"(
        type Outer struct { inner: Inner  items: Items }
        type Items list<Inner>
        type Inner struct { id: Id }
        type Id str
        type Msg union { Outer | Items }
    )");
    const GenOutput out = generate(s, GenOptions{"a::b", "x/y.hpp", "t.bare"});
    const auto& h = out.header;
    EXPECT_NE(h.find("namespace a::b {"), std::string::npos);
    EXPECT_NE(h.find("using Id = std::string;"), std::string::npos);
    EXPECT_NE(h.find("struct Items {\n    std::vector<Inner> value{};"), std::string::npos);
    EXPECT_NE(h.find("std::variant<Outer, Items> value{};"), std::string::npos);
    EXPECT_LT(h.find("using Id"), h.find("struct Inner {"));
    EXPECT_LT(h.find("struct Inner {"), h.find("struct Items {"));
    EXPECT_LT(h.find("struct Items {"), h.find("struct Outer {"));
    // `using` aliases are transparent: no codec of their own.
    EXPECT_EQ(h.find("const Id& v"), std::string::npos);
    EXPECT_NE(out.source.find("#include \"x/y.hpp\""), std::string::npos);
}

}  // namespace
}  // namespace baregen
