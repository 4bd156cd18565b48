#pragma once
// SQLite values and rows as JSON, for any nlohmann JSON type (the typed API's Json, the
// inspector's ordered_json that keeps columns in SELECT order): NULL → null, INTEGER / REAL →
// number, TEXT → string, BLOB → binary; a row is an object keyed by column name (a later column
// of the same name wins).

#include <nlohmann/json.hpp>

#include "sqlite/database.hpp"

namespace rivetkit::sqlite {

template <typename J>
J value_to_json(const Value& value) {
    return std::visit(
        [](const auto& v) -> J {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::monostate>) {
                return J(nullptr);
            } else if constexpr (std::is_same_v<T, Bytes>) {
                return J::binary(std::vector<std::uint8_t>(v.begin(), v.end()));
            } else {
                return J(v);
            }
        },
        value);
}

template <typename J>
J rows_to_json(const QueryResult& rows) {
    J out = J::array();
    for (const auto& row : rows.rows) {
        J object = J::object();
        for (std::size_t i = 0; i < row.size() && i < rows.columns.size(); ++i)
            object[rows.columns[i]] = value_to_json<J>(row[i]);
        out.push_back(std::move(object));
    }
    return out;
}

}  // namespace rivetkit::sqlite
