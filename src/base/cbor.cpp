#include "base/cbor.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>

namespace rivetkit {

using json = nlohmann::json;

namespace {

// Deeper values are refused rather than walked recursively (input is at most a few MiB, so an
// adversary could otherwise nest tens of thousands of levels).
constexpr int kMaxDepth = 128;

double half_to_double(std::uint16_t h) {
    const int exp = (h >> 10) & 0x1f;
    const int mant = h & 0x3ff;
    double v = exp == 0    ? std::ldexp(mant, -24)
               : exp != 31 ? std::ldexp(mant + 1024, exp - 25)
               : (mant == 0 ? std::numeric_limits<double>::infinity()
                            : std::numeric_limits<double>::quiet_NaN());
    return (h & 0x8000) ? -v : v;
}

}  // namespace

bool read_cbor_argument(BytesView in, std::size_t& pos, std::uint8_t info,
                        std::uint64_t& out) noexcept {
    if (info < 24) {
        out = info;
        return true;
    }
    const std::size_t n = info == 24 ? 1 : info == 25 ? 2 : info == 26 ? 4 : info == 27 ? 8 : 0;
    if (n == 0 || pos > in.size() || in.size() - pos < n)
        return false;
    out = 0;
    for (std::size_t i = 0; i < n; ++i)
        out = (out << 8) | in[pos + i];
    pos += n;
    return true;
}

double cbor_float_value(std::uint8_t info, std::uint64_t bits) noexcept {
    if (info == 25)
        return half_to_double(static_cast<std::uint16_t>(bits));
    if (info == 26) {
        float f;
        const auto b32 = static_cast<std::uint32_t>(bits);
        std::memcpy(&f, &b32, sizeof f);
        return static_cast<double>(f);
    }
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
}

namespace {

// One walk for both uses: with `out` null it only checks (cbor_well_formed), otherwise it builds.
class Reader {
  public:
    Reader(BytesView in, CborReadNotes* notes) : in_(in), notes_(notes) {}

    bool document(json* out) { return item(0, out) && pos_ == in_.size(); }

  private:
    bool take(std::size_t n, BytesView& out) {
        if (in_.size() - pos_ < n)
            return false;
        out = in_.subspan(pos_, n);
        pos_ += n;
        return true;
    }
    bool argument(std::uint8_t info, std::uint64_t& v) {
        return read_cbor_argument(in_, pos_, info, v);
    }
    void note(bool CborReadNotes::*flag) {
        if (notes_ != nullptr)
            notes_->*flag = true;
    }
    // Appends bytes as they are: one copy for text too (a std::string filled from the bytes' own
    // iterators is a loop per character).
    static void append(std::string& out, BytesView raw) {
        out.append(as_chars(raw));
    }
    static void append(Bytes& out, BytesView raw) { out.insert(out.end(), raw.begin(), raw.end()); }

    // A byte or text string, definite or in chunks of its own major type; appended to `out`.
    template <typename Str>
    bool chunks(std::uint8_t major, std::uint8_t info, Str* out) {
        if (info != 31) {
            std::uint64_t len = 0;
            BytesView raw;
            if (!argument(info, len) || len > in_.size() - pos_ ||
                !take(static_cast<std::size_t>(len), raw))
                return false;
            if (out != nullptr)
                append(*out, raw);
            return true;
        }
        while (true) {
            if (pos_ >= in_.size())
                return false;
            const std::uint8_t head = in_[pos_++];
            if (head == 0xff)
                return true;
            if ((head >> 5) != major || (head & 31) == 31 || !chunks(major, head & 31, out))
                return false;
        }
    }
    // A byte string (binary) or a text string, as a value when `out` is set.
    template <typename Str>
    bool string_item(std::uint8_t major, std::uint8_t info, json* out) {
        if (out == nullptr)
            return chunks<Str>(major, info, nullptr);
        Str content;
        if (!chunks(major, info, &content))
            return false;
        if constexpr (std::is_same_v<Str, json::binary_t>)
            *out = json::binary(std::move(content));
        else
            *out = std::move(content);
        return true;
    }
    bool container(std::uint8_t major, std::uint8_t info, int depth, json* out) {
        if (out != nullptr)
            *out = major == 4 ? json::array() : json::object();
        const bool indefinite = info == 31;
        std::uint64_t n = 0;
        if (!indefinite && (!argument(info, n) || n > in_.size() - pos_))
            return false;
        for (std::uint64_t i = 0; indefinite || i < n; ++i) {
            if (indefinite) {
                if (pos_ >= in_.size())
                    return false;
                if (in_[pos_] == 0xff) {
                    ++pos_;
                    return true;
                }
            }
            json key;
            if (major == 5) {
                // Keys must be text or scalars (as JSON object keys become); a container key is
                // refused: rendering nested keys as text grows exponentially with depth (found by
                // fuzz_client_encoding).
                if (!item(depth + 1, &key))
                    return false;
                if (!key.is_string()) {
                    if (!(key.is_number() || key.is_boolean() || key.is_null()))
                        return false;
                    note(&CborReadNotes::non_text_key);
                    key = key.dump();
                }
            }
            if (out == nullptr) {
                if (!item(depth + 1, nullptr))
                    return false;
                continue;
            }
            json value;
            if (!item(depth + 1, &value))
                return false;
            if (major == 4)
                out->get_ref<json::array_t&>().push_back(std::move(value));
            else
                (*out)[key.get_ref<const std::string&>()] = std::move(value);
        }
        return true;
    }
    bool simple(std::uint8_t info, json* out) {
        std::uint64_t bits = 0;
        switch (info) {
            case 20:
            case 21:
                if (out != nullptr)
                    *out = info == 21;
                return true;
            case 22:
            case 23:
                if (info == 23)
                    note(&CborReadNotes::undefined);
                if (out != nullptr)
                    *out = nullptr;
                return true;
            case 25:
            case 26:
            case 27:
                if (!argument(info, bits))
                    return false;
                if (out != nullptr)
                    *out = cbor_float_value(info, bits);
                return true;
            default:
                if (info >= 20)
                    return false;
                note(&CborReadNotes::undefined);  // unassigned simple values read as null
                if (out != nullptr)
                    *out = nullptr;
                return true;
        }
    }
    bool item(int depth, json* out) {
        if (depth > kMaxDepth || pos_ >= in_.size())
            return false;
        const std::uint8_t head = in_[pos_++];
        const std::uint8_t major = head >> 5;
        const std::uint8_t info = head & 31;
        std::uint64_t v = 0;
        switch (major) {
            case 0:
                if (!argument(info, v))
                    return false;
                if (out != nullptr)
                    *out = v;
                return true;
            case 1:
                if (!argument(info, v))
                    return false;
                if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
                    note(&CborReadNotes::wide_negative);
                    if (out != nullptr)
                        *out = -1.0 - static_cast<double>(v);
                } else if (out != nullptr) {
                    *out = -1 - static_cast<std::int64_t>(v);
                }
                return true;
            case 2:
                return string_item<json::binary_t>(2, info, out);
            case 3:
                return string_item<std::string>(3, info, out);
            case 4:
            case 5:
                return container(major, info, depth, out);
            case 6:
                if (!argument(info, v))
                    return false;
                note(&CborReadNotes::tagged);
                if (!item(depth + 1, out))
                    return false;
                if (out != nullptr && (v == 2 || v == 3) && out->is_binary())
                    out->get_binary().set_subtype(static_cast<std::uint8_t>(v));
                return true;
            default:
                return simple(info, out);
        }
    }

    BytesView in_;
    std::size_t pos_ = 0;
    CborReadNotes* notes_;
};

class Writer {
  public:
    explicit Writer(Bytes& out) : out_(out) {}

    void head(std::uint8_t major, std::uint64_t n) {
        const auto m = static_cast<std::uint8_t>(major << 5);
        if (n < 24) {
            out_.push_back(static_cast<std::uint8_t>(m | n));
        } else if (n <= 0xff) {
            out_.push_back(m | 24);
            out_.push_back(static_cast<std::uint8_t>(n));
        } else if (n <= 0xffff) {
            out_.push_back(m | 25);
            put_be(n, 2);
        } else if (n <= 0xffffffff) {
            out_.push_back(m | 26);
            put_be(n, 4);
        } else {
            out_.push_back(m | 27);
            put_be(n, 8);
        }
    }
    void bytes(std::uint8_t major, const void* data, std::size_t n) {
        head(major, n);
        const auto* p = static_cast<const std::uint8_t*>(data);
        out_.insert(out_.end(), p, p + n);
    }
    void real(double d) {
        if (std::isnan(d)) {
            out_.insert(out_.end(), {0xf9, 0x7e, 0x00});
        } else if (std::isinf(d)) {
            out_.insert(out_.end(), {0xf9, static_cast<std::uint8_t>(d > 0 ? 0x7c : 0xfc), 0x00});
        } else if (d >= static_cast<double>(std::numeric_limits<float>::lowest()) &&
                   d <= static_cast<double>(std::numeric_limits<float>::max()) &&
                   static_cast<double>(static_cast<float>(d)) == d) {
            const auto f = static_cast<float>(d);
            std::uint32_t bits;
            std::memcpy(&bits, &f, sizeof bits);
            out_.push_back(0xfa);
            put_be(bits, 4);
        } else {
            std::uint64_t bits;
            std::memcpy(&bits, &d, sizeof bits);
            out_.push_back(0xfb);
            put_be(bits, 8);
        }
    }
    void value(const json& v) {
        switch (v.type()) {
            case json::value_t::null:
                out_.push_back(0xf6);
                break;
            case json::value_t::boolean:
                out_.push_back(v.get<bool>() ? 0xf5 : 0xf4);
                break;
            case json::value_t::number_integer: {
                const auto n = v.get<std::int64_t>();
                if (n >= 0)
                    head(0, static_cast<std::uint64_t>(n));
                else
                    head(1, static_cast<std::uint64_t>(-1 - n));
                break;
            }
            case json::value_t::number_unsigned:
                head(0, v.get<std::uint64_t>());
                break;
            case json::value_t::number_float:
                real(v.get<double>());
                break;
            case json::value_t::string: {
                const auto& s = v.get_ref<const std::string&>();
                bytes(3, s.data(), s.size());
                break;
            }
            case json::value_t::binary: {
                const auto& b = v.get_binary();
                if (b.has_subtype())
                    head(6, b.subtype());
                bytes(2, b.data(), b.size());
                break;
            }
            case json::value_t::array:
                head(4, v.size());
                for (const auto& item : v)
                    value(item);
                break;
            case json::value_t::object:
                head(5, v.size());
                for (const auto& [key, item] : v.get_ref<const json::object_t&>()) {
                    bytes(3, key.data(), key.size());
                    value(item);
                }
                break;
            case json::value_t::discarded:
                break;
        }
    }

  private:
    void put_be(std::uint64_t v, int n) {
        for (int i = n - 1; i >= 0; --i)
            out_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    }
    Bytes& out_;
};

}  // namespace

std::optional<json> read_cbor(BytesView cbor, CborReadNotes* notes) {
    json out;
    if (!Reader(cbor, notes).document(&out))
        return std::nullopt;
    return out;
}

bool cbor_well_formed(BytesView cbor) {
    return Reader(cbor, nullptr).document(nullptr);
}

void write_cbor(const json& value, Bytes& out) {
    Writer(out).value(value);
}

void write_cbor_head(std::uint8_t major, std::uint64_t argument, Bytes& out) {
    Writer(out).head(major, argument);
}

nlohmann::json parse_cbor_or_discarded(BytesView cbor) {
    try {
        return nlohmann::json::from_cbor(cbor.begin(), cbor.end(), /*strict=*/true,
                                         /*allow_exceptions=*/false);
    } catch (const nlohmann::json::exception&) {
        return nlohmann::json(nlohmann::json::value_t::discarded);
    }
}

}  // namespace rivetkit
