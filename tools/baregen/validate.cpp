// Semantic checks on a parsed schema. Everything the generator relies on is established here, so
// generated code never has to handle an impossible shape.

#include <map>
#include <set>
#include <string>

#include "schema.hpp"

namespace baregen {
namespace {

class Validator {
  public:
    Validator(const Schema& s, const std::string& file) : schema_(s), file_(file) {
        for (const auto& d : s.decls) {
            if (!decls_.emplace(d.name, &d).second)
                fail(d.line, "duplicate type '" + d.name + "'");
        }
    }

    void run() {
        for (const auto& d : schema_.decls)
            check_decl(d);
        for (const auto& d : schema_.decls)
            visit_for_cycles(d.name, d.line);
    }

  private:
    [[noreturn]] void fail(int line, const std::string& msg) const {
        throw SchemaError{file_ + ":" + std::to_string(line) + ": " + msg};
    }

    const Decl* find(const std::string& name) const {
        auto it = decls_.find(name);
        return it == decls_.end() ? nullptr : it->second;
    }

    bool is_void_alias(const TypeRef& t) const {
        if (t.kind == TypeRef::Kind::Primitive)
            return t.prim == Prim::Void;
        if (t.kind != TypeRef::Kind::Named)
            return false;
        const Decl* d = find(t.name);
        return d && d->kind == Decl::Kind::Alias && is_void_alias(d->alias);
    }

    void check_decl(const Decl& d) {
        switch (d.kind) {
            case Decl::Kind::Struct: {
                if (d.fields.empty())
                    fail(d.line, "struct '" + d.name + "' has no fields");
                std::set<std::string> names;
                for (const auto& f : d.fields) {
                    if (!names.insert(f.name).second)
                        fail(f.line, "duplicate field '" + f.name + "'");
                    check_type(f.type, "a struct field");
                }
                break;
            }
            case Decl::Kind::Union: {
                if (d.members.empty())
                    fail(d.line, "union '" + d.name + "' has no members");
                std::set<std::uint64_t> tags;
                std::set<std::string> types;
                for (const auto& m : d.members) {
                    if (!find(m.type_name))
                        fail(m.line, "undefined type '" + m.type_name + "'");
                    if (!tags.insert(m.tag).second)
                        fail(m.line, "duplicate union tag");
                    if (!types.insert(m.type_name).second) {
                        fail(m.line, "type '" + m.type_name + "' appears twice in union");
                    }
                }
                break;
            }
            case Decl::Kind::Enum: {
                if (d.values.empty())
                    fail(d.line, "enum '" + d.name + "' has no values");
                std::set<std::string> names;
                std::set<std::uint64_t> values;
                for (const auto& v : d.values) {
                    if (!names.insert(v.name).second)
                        fail(d.line, "duplicate enum value " + v.name);
                    if (!values.insert(v.value).second)
                        fail(d.line, "duplicate enum number");
                }
                break;
            }
            case Decl::Kind::Alias:
                if (!(d.alias.kind == TypeRef::Kind::Primitive && d.alias.prim == Prim::Void)) {
                    check_type(d.alias, "an alias");
                }
                break;
        }
    }

    void check_type(const TypeRef& t, const char* where) {
        switch (t.kind) {
            case TypeRef::Kind::Primitive:
                if (t.prim == Prim::Void)
                    fail(t.line, std::string("void is not allowed in ") + where);
                return;
            case TypeRef::Kind::FixedData:
                return;
            case TypeRef::Kind::Named:
                if (!find(t.name))
                    fail(t.line, "undefined type '" + t.name + "'");
                if (is_void_alias(t)) {
                    fail(t.line, "void type '" + t.name + "' may only be a union member");
                }
                return;
            case TypeRef::Kind::Optional:
            case TypeRef::Kind::List:
                check_type(t.args[0], "a container");
                return;
            case TypeRef::Kind::Map:
                check_map_key(t.args[0]);
                check_type(t.args[1], "a map value");
                return;
        }
    }

    void check_map_key(const TypeRef& key) {
        const TypeRef* t = &key;
        while (t->kind == TypeRef::Kind::Named) {
            const Decl* d = find(t->name);
            if (!d)
                fail(t->line, "undefined type '" + t->name + "'");
            if (d->kind == Decl::Kind::Enum)
                return;
            if (d->kind != Decl::Kind::Alias)
                fail(key.line, "map keys must be primitive types");
            t = &d->alias;
        }
        const bool ok = t->kind == TypeRef::Kind::Primitive && t->prim != Prim::F32 &&
                        t->prim != Prim::F64 && t->prim != Prim::Data && t->prim != Prim::Void;
        if (!ok)
            fail(key.line, "map keys must be primitive types other than f32, f64, data, void");
    }

    // A type may only contain (by value) types that do not contain it back.
    void visit_for_cycles(const std::string& name, int line) {
        if (done_.count(name))
            return;
        if (!active_.insert(name).second)
            fail(line, "type '" + name + "' contains itself");
        const Decl* d = find(name);
        auto walk = [&](const TypeRef& t, auto&& self) -> void {
            if (t.kind == TypeRef::Kind::Named)
                visit_for_cycles(t.name, t.line);
            for (const auto& a : t.args)
                self(a, self);
        };
        switch (d->kind) {
            case Decl::Kind::Struct:
                for (const auto& f : d->fields)
                    walk(f.type, walk);
                break;
            case Decl::Kind::Union:
                for (const auto& m : d->members)
                    visit_for_cycles(m.type_name, m.line);
                break;
            case Decl::Kind::Alias:
                walk(d->alias, walk);
                break;
            case Decl::Kind::Enum:
                break;
        }
        active_.erase(name);
        done_.insert(name);
    }

    const Schema& schema_;
    const std::string& file_;
    std::map<std::string, const Decl*> decls_;
    std::set<std::string> active_;
    std::set<std::string> done_;
};

}  // namespace

void validate_schema(const Schema& schema, const std::string& file) {
    Validator(schema, file).run();
}

}  // namespace baregen
