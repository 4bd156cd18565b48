// Tokeniser and recursive-descent parser for the BARE schema language, plus semantic checks.

#include <cctype>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "schema.hpp"

namespace baregen {
namespace {

struct Token {
    enum class Kind { Ident, Number, Punct, End };
    Kind kind = Kind::End;
    std::string text;
    int line = 0;
};

class Lexer {
  public:
    Lexer(const std::string& text, std::string file) : text_(text), file_(std::move(file)) {}

    std::vector<Token> run() {
        std::vector<Token> out;
        while (true) {
            skip_space_and_comments();
            if (pos_ >= text_.size())
                break;
            const char c = text_[pos_];
            if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
                out.push_back(take_while(Token::Kind::Ident, [](char ch) {
                    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
                }));
            } else if (std::isdigit(static_cast<unsigned char>(c))) {
                out.push_back(take_while(Token::Kind::Number, [](char ch) {
                    return std::isdigit(static_cast<unsigned char>(ch)) != 0;
                }));
            } else if (std::string_view("{}<>[]|=:(),;").find(c) != std::string_view::npos) {
                out.push_back(Token{Token::Kind::Punct, std::string(1, c), line_});
                ++pos_;
            } else {
                throw SchemaError{file_ + ":" + std::to_string(line_) + ": unexpected character '" +
                                  std::string(1, c) + "'"};
            }
        }
        out.push_back(Token{Token::Kind::End, "", line_});
        return out;
    }

  private:
    void skip_space_and_comments() {
        while (pos_ < text_.size()) {
            const char c = text_[pos_];
            if (c == '\n') {
                ++line_;
                ++pos_;
            } else if (std::isspace(static_cast<unsigned char>(c))) {
                ++pos_;
            } else if (c == '#') {
                while (pos_ < text_.size() && text_[pos_] != '\n')
                    ++pos_;
            } else {
                break;
            }
        }
    }

    template <typename Pred>
    Token take_while(Token::Kind kind, Pred pred) {
        const std::size_t start = pos_;
        while (pos_ < text_.size() && pred(text_[pos_]))
            ++pos_;
        return Token{kind, text_.substr(start, pos_ - start), line_};
    }

    const std::string& text_;
    std::string file_;
    std::size_t pos_ = 0;
    int line_ = 1;
};

const std::map<std::string, Prim, std::less<>>& primitive_names() {
    static const std::map<std::string, Prim, std::less<>> names = {
        {"uint", Prim::Uint}, {"int", Prim::Int}, {"u8", Prim::U8},     {"u16", Prim::U16},
        {"u32", Prim::U32},   {"u64", Prim::U64}, {"i8", Prim::I8},     {"i16", Prim::I16},
        {"i32", Prim::I32},   {"i64", Prim::I64}, {"f32", Prim::F32},   {"f64", Prim::F64},
        {"bool", Prim::Bool}, {"str", Prim::Str}, {"data", Prim::Data}, {"void", Prim::Void},
    };
    return names;
}

class Parser {
  public:
    Parser(std::vector<Token> tokens, std::string file)
        : toks_(std::move(tokens)), file_(std::move(file)) {}

    Schema run() {
        Schema schema;
        while (peek().kind != Token::Kind::End)
            schema.decls.push_back(parse_decl());
        return schema;
    }

  private:
    const Token& peek() const { return toks_[pos_]; }
    Token next() { return toks_[pos_ < toks_.size() - 1 ? pos_++ : pos_]; }
    bool accept(const std::string& punct) {
        if (peek().kind == Token::Kind::Punct && peek().text == punct) {
            ++pos_;
            return true;
        }
        return false;
    }
    [[noreturn]] void error(const std::string& msg, int line) const {
        throw SchemaError{file_ + ":" + std::to_string(line) + ": " + msg};
    }
    void expect(const std::string& punct) {
        if (!accept(punct))
            error("expected '" + punct + "', found '" + peek().text + "'", peek().line);
    }
    std::string ident(const char* what) {
        if (peek().kind != Token::Kind::Ident) {
            error(std::string("expected ") + what + ", found '" + peek().text + "'", peek().line);
        }
        return next().text;
    }
    std::uint64_t number() {
        if (peek().kind != Token::Kind::Number)
            error("expected a number", peek().line);
        const Token t = next();
        if (t.text.size() > 19)
            error("number too large", t.line);
        return std::stoull(t.text);
    }

    Decl parse_decl() {
        const Token kw = next();
        Decl d;
        d.line = kw.line;
        if (kw.kind != Token::Kind::Ident)
            error("expected 'type' or 'enum'", kw.line);
        if (kw.text == "enum") {  // legacy: enum Name { ... }
            d.name = ident("a type name");
            parse_enum_body(d);
            return d;
        }
        if (kw.text != "type")
            error("expected 'type', found '" + kw.text + "'", kw.line);
        d.name = ident("a type name");
        if (peek().kind == Token::Kind::Ident && peek().text == "struct") {
            next();
            parse_struct_body(d);
        } else if (peek().kind == Token::Kind::Ident && peek().text == "union") {
            next();
            parse_union_body(d);
        } else if (peek().kind == Token::Kind::Ident && peek().text == "enum") {
            next();
            parse_enum_body(d);
        } else if (peek().kind == Token::Kind::Punct && peek().text == "{") {
            parse_struct_body(d);  // legacy: type Name { fields }
        } else {
            d.kind = Decl::Kind::Alias;
            d.alias = parse_type();
        }
        return d;
    }

    void parse_struct_body(Decl& d) {
        d.kind = Decl::Kind::Struct;
        expect("{");
        while (!accept("}")) {
            Field f;
            f.line = peek().line;
            f.name = ident("a field name");
            expect(":");
            f.type = parse_type();
            accept(",");
            d.fields.push_back(std::move(f));
        }
    }

    void parse_union_body(Decl& d) {
        d.kind = Decl::Kind::Union;
        expect("{");
        std::uint64_t next_tag = 0;
        accept("|");
        while (!accept("}")) {
            UnionMember m;
            m.line = peek().line;
            m.type_name = ident("a union member type name");
            if (accept("="))
                next_tag = number();
            m.tag = next_tag++;
            d.members.push_back(std::move(m));
            if (!accept("|")) {
                expect("}");
                break;
            }
        }
    }

    void parse_enum_body(Decl& d) {
        d.kind = Decl::Kind::Enum;
        expect("{");
        std::uint64_t next_value = 0;
        while (!accept("}")) {
            EnumValue v;
            v.name = ident("an enum value name");
            if (accept("="))
                next_value = number();
            v.value = next_value++;
            accept(",");
            d.values.push_back(std::move(v));
        }
    }

    TypeRef parse_type() {
        TypeRef t;
        t.line = peek().line;
        const std::string name = ident("a type");
        if (name == "optional" || name == "list") {
            t.kind = name == "optional" ? TypeRef::Kind::Optional : TypeRef::Kind::List;
            expect("<");
            t.args.push_back(parse_type());
            expect(">");
            if (t.kind == TypeRef::Kind::List && accept("[")) {
                error("fixed-length lists are not supported", t.line);
            }
            return t;
        }
        if (name == "map") {
            t.kind = TypeRef::Kind::Map;
            expect("<");
            t.args.push_back(parse_type());
            expect(">");
            expect("<");
            t.args.push_back(parse_type());
            expect(">");
            return t;
        }
        if (name == "data" && (accept("[") || accept("<"))) {
            const std::string close = toks_[pos_ - 1].text == "[" ? "]" : ">";
            t.kind = TypeRef::Kind::FixedData;
            t.length = number();
            if (t.length == 0)
                error("data[0] is not a valid type", t.line);
            expect(close);
            return t;
        }
        const auto& prims = primitive_names();
        if (auto it = prims.find(name); it != prims.end()) {
            t.kind = TypeRef::Kind::Primitive;
            t.prim = it->second;
            return t;
        }
        t.kind = TypeRef::Kind::Named;
        t.name = name;
        return t;
    }

    std::vector<Token> toks_;
    std::string file_;
    std::size_t pos_ = 0;
};

}  // namespace

void validate_schema(const Schema& schema, const std::string& file);

Schema parse_schema(const std::string& text, const std::string& file_name) {
    Schema schema = Parser(Lexer(text, file_name).run(), file_name).run();
    validate_schema(schema, file_name);
    return schema;
}

}  // namespace baregen
