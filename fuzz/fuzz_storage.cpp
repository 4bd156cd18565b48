// Arbitrary rows of the actor's internal SQLite tables (src/core/actor/storage_rows.hpp), as a
// database written by another host could hold them, decoded into the core's records. Input: a
// sequence of column values, each a tag byte and its payload (0 NULL, 1 INTEGER 8 bytes, 2 REAL
// 8 bytes, 3 TEXT u8 length, 4 BLOB u16 length); tag 0xff ends a row. Every decoder sees every
// row; what decodes must survive writing back the way the store writes it.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/actor/storage_rows.hpp"

namespace storage = rivetkit::core::storage;
using rivetkit::Bytes;

namespace {

struct Input {
    const std::uint8_t* data;
    std::size_t size;
    std::size_t pos = 0;

    bool take(std::size_t n, const std::uint8_t*& out) {
        if (size - pos < n)
            return false;
        out = data + pos;
        pos += n;
        return true;
    }
};

std::vector<storage::Row> parse(const std::uint8_t* data, std::size_t size) {
    Input in{data, size};
    std::vector<storage::Row> rows(1);
    const std::uint8_t* p = nullptr;
    while (in.take(1, p)) {
        switch (*p) {
            case 0:
                rows.back().emplace_back(std::monostate{});
                break;
            case 1:
            case 2: {
                const bool real = *p == 2;
                if (!in.take(8, p))
                    return rows;
                std::uint64_t raw = 0;
                std::memcpy(&raw, p, 8);
                if (real) {
                    double d = 0;
                    std::memcpy(&d, &raw, 8);
                    rows.back().emplace_back(d);
                } else {
                    rows.back().emplace_back(static_cast<std::int64_t>(raw));
                }
                break;
            }
            case 3: {
                if (!in.take(1, p))
                    return rows;
                const std::size_t n = *p;
                if (!in.take(n, p))
                    return rows;
                rows.back().emplace_back(std::string(reinterpret_cast<const char*>(p), n));
                break;
            }
            case 4: {
                if (!in.take(2, p))
                    return rows;
                const std::size_t n = p[0] | (std::size_t{p[1]} << 8);
                if (!in.take(n, p))
                    return rows;
                rows.back().emplace_back(Bytes(p, p + n));
                break;
            }
            case 0xff:
                rows.emplace_back();
                break;
            default:
                return rows;
        }
    }
    return rows;
}

void check(bool ok) {
    if (!ok)
        std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto rows = parse(data, size);
    const std::string_view actor = "fuzz";
    const std::vector<storage::Row> rest(rows.begin() + 1, rows.end());
    (void)storage::actor_from_rows(actor, rows.front(), rest);
    for (const auto& row : rows) {
        if (auto conn = storage::connection_from_row(actor, row); conn.ok()) {
            // Written back as the store writes a connection, it reads as the same record.
            const auto& c = conn.value();
            storage::Row again{c.id,
                               Bytes(c.parameters),
                               Bytes(c.state),
                               storage::subscriptions_cbor(c),
                               Bytes(c.gateway_id.begin(), c.gateway_id.end()),
                               Bytes(c.request_id.begin(), c.request_id.end()),
                               std::int64_t{c.server_message_index},
                               std::int64_t{c.client_message_index},
                               c.request_path,
                               storage::request_headers_cbor(c)};
            auto reread = storage::connection_from_row(actor, again);
            check(reread.ok() && reread.value() == c);
        }
        auto runtime = storage::runtime_from_row(actor, row);
        (void)storage::queue_message_from_row(actor, row);
        (void)storage::user_kv_from_row(actor, row);
        std::optional<storage::RuntimeRow> maybe;
        if (runtime.ok())
            maybe = runtime.value();
        if (auto meta = storage::queue_metadata_from(actor, maybe, row); meta.ok() && meta.value())
            check(meta.value()->next_id >= 1);
        for (const auto& value : row) {
            if (const auto* blob = std::get_if<Bytes>(&value))
                (void)storage::schema_version(actor, *blob);
        }
    }
    return 0;
}
