#include "base/log.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace rivetkit::log {
namespace {

std::atomic<Level> g_level{Level::info};
std::atomic<Format> g_format{Format::logfmt};
std::mutex g_stderr_mutex;

// Captures visible to every thread; guarded by g_global_mutex, counted for a lock-free fast path.
std::mutex g_global_mutex;
std::vector<Capture*> g_global_captures;
std::atomic<std::size_t> g_global_count{0};

thread_local std::vector<Capture*> t_captures;

bool needs_quoting(std::string_view s) {
    if (s.empty())
        return true;
    return std::any_of(s.begin(), s.end(), [](char c) {
        return c == ' ' || c == '"' || c == '=' || c == '\\' ||
               static_cast<unsigned char>(c) < 0x20;
    });
}

void append_escaped(std::string& out, std::string_view s) {
    for (char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
                } else {
                    out += c;
                }
        }
    }
}

void append_logfmt_value(std::string& out, std::string_view s) {
    if (needs_quoting(s)) {
        out += '"';
        append_escaped(out, s);
        out += '"';
    } else {
        out += s;
    }
}

void append_json_value(std::string& out, const Value& v) {
    switch (v.kind()) {
        case Value::Kind::string:
            out += '"';
            append_escaped(out, v.string_view());
            out += '"';
            break;
        case Value::Kind::float64: {
            std::string s = v.to_string();
            // JSON has no NaN/Infinity literals.
            if (s == "nan" || s == "inf" || s == "-inf") {
                out += '"' + s + '"';
            } else {
                out += s;
            }
            break;
        }
        default:
            out += v.to_string();
    }
}

}  // namespace

std::string_view level_name(Level level) noexcept {
    switch (level) {
        case Level::trace:
            return "trace";
        case Level::debug:
            return "debug";
        case Level::info:
            return "info";
        case Level::warn:
            return "warn";
        case Level::error:
            return "error";
        case Level::off:
            return "off";
    }
    return "unknown";
}

std::optional<Level> parse_level(std::string_view text) noexcept {
    std::string lower(text);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower == "trace")
        return Level::trace;
    if (lower == "debug")
        return Level::debug;
    if (lower == "info")
        return Level::info;
    if (lower == "warn" || lower == "warning")
        return Level::warn;
    if (lower == "error")
        return Level::error;
    if (lower == "off" || lower == "none")
        return Level::off;
    return std::nullopt;
}

std::string Value::to_string() const {
    switch (kind_) {
        case Kind::string:
            return std::string(str_);
        case Kind::int64:
            return fmt::format("{}", i64_);
        case Kind::uint64:
            return fmt::format("{}", u64_);
        case Kind::float64:
            return fmt::format("{}", f64_);
        case Kind::boolean:
            return u64_ ? "true" : "false";
    }
    return {};
}

std::optional<std::string> Record::field(std::string_view key) const {
    for (const auto& [k, v] : fields) {
        if (k == key)
            return v;
    }
    return std::nullopt;
}

bool Record::has_field(std::string_view key, std::string_view value) const {
    auto v = field(key);
    return v && *v == value;
}

void set_level(Level l) noexcept {
    g_level.store(l, std::memory_order_relaxed);
}
Level level() noexcept {
    return g_level.load(std::memory_order_relaxed);
}
void set_format(Format f) noexcept {
    g_format.store(f, std::memory_order_relaxed);
}

void init_from_env() {
    if (const char* lvl = std::getenv("RIVET_LOG_LEVEL")) {
        if (auto parsed = parse_level(lvl))
            set_level(*parsed);
    }
    if (const char* f = std::getenv("RIVET_LOG_FORMAT")) {
        std::string_view fv(f);
        if (fv == "json")
            set_format(Format::json);
        if (fv == "logfmt")
            set_format(Format::logfmt);
    }
}

bool enabled(Level l) noexcept {
    if (l >= g_level.load(std::memory_order_relaxed) && l != Level::off)
        return true;
    return !t_captures.empty() || g_global_count.load(std::memory_order_relaxed) != 0;
}

std::string render(Format format, Level level, std::string_view message, Fields fields) {
    std::string out;
    out.reserve(64 + message.size() + fields.size() * 24);
    if (format == Format::json) {
        out += "{\"level\":\"";
        out += level_name(level);
        out += "\",\"msg\":";
        append_json_value(out, Value(message));
        for (const auto& f : fields) {
            out += ",\"";
            append_escaped(out, f.key);
            out += "\":";
            append_json_value(out, f.value);
        }
        out += '}';
    } else {
        out += "level=";
        out += level_name(level);
        out += " msg=";
        append_logfmt_value(out, message);
        for (const auto& f : fields) {
            out += ' ';
            out += f.key;
            out += '=';
            append_logfmt_value(out, f.value.to_string());
        }
    }
    return out;
}

void emit(Level level, std::string_view message, Fields fields) {
    if (!t_captures.empty() || g_global_count.load(std::memory_order_relaxed) != 0) {
        Record rec{level, std::string(message), {}};
        rec.fields.reserve(fields.size());
        for (const auto& f : fields)
            rec.fields.emplace_back(std::string(f.key), f.value.to_string());
        for (Capture* c : t_captures)
            c->push(rec);
        if (g_global_count.load(std::memory_order_relaxed) != 0) {
            std::lock_guard lock(g_global_mutex);
            for (Capture* c : g_global_captures)
                c->push(rec);
        }
    }
    if (level < g_level.load(std::memory_order_relaxed) || level == Level::off)
        return;

    const Format format = g_format.load(std::memory_order_relaxed);
    const auto now = std::chrono::system_clock::now();
    std::string line;
    if (format == Format::json) {
        std::string body = render(format, level, message, fields);
        line = fmt::format("{{\"ts\":\"{:%Y-%m-%dT%H:%M:%S}Z\",{}\n",
                           std::chrono::floor<std::chrono::microseconds>(now), body.substr(1));
    } else {
        line = fmt::format("ts={:%Y-%m-%dT%H:%M:%S}Z {}\n",
                           std::chrono::floor<std::chrono::microseconds>(now),
                           render(format, level, message, fields));
    }
    std::lock_guard lock(g_stderr_mutex);
    std::fwrite(line.data(), 1, line.size(), stderr);
}

struct Capture::Impl {
    mutable std::mutex mutex;
    std::vector<Record> records;
};

Capture::Capture(Scope scope) : impl_(std::make_unique<Impl>()), scope_(scope) {
    if (scope_ == Scope::this_thread) {
        t_captures.push_back(this);
    } else {
        std::lock_guard lock(g_global_mutex);
        g_global_captures.push_back(this);
        g_global_count.fetch_add(1, std::memory_order_relaxed);
    }
}

Capture::~Capture() {
    if (scope_ == Scope::this_thread) {
        std::erase(t_captures, this);
    } else {
        std::lock_guard lock(g_global_mutex);
        std::erase(g_global_captures, this);
        g_global_count.fetch_sub(1, std::memory_order_relaxed);
    }
}

void Capture::push(Record record) {
    std::lock_guard lock(impl_->mutex);
    impl_->records.push_back(std::move(record));
}

std::vector<Record> Capture::records() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->records;
}

std::vector<Record> Capture::find(std::string_view message) const {
    std::lock_guard lock(impl_->mutex);
    std::vector<Record> out;
    for (const auto& r : impl_->records) {
        if (r.message == message)
            out.push_back(r);
    }
    return out;
}

std::size_t Capture::count(std::string_view message) const {
    std::lock_guard lock(impl_->mutex);
    return static_cast<std::size_t>(
        std::count_if(impl_->records.begin(), impl_->records.end(),
                      [&](const Record& r) { return r.message == message; }));
}

void Capture::clear() {
    std::lock_guard lock(impl_->mutex);
    impl_->records.clear();
}

}  // namespace rivetkit::log
