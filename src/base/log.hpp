#pragma once
// Structured logging: a message plus key/value fields.
//
// Every log line in rivetkit goes through `log::emit` with a fixed message text and fields such as
// `actor_id`, so tests can assert on messages and fields the way upstream's tests do. Output is
// logfmt (default) or JSON on stderr, chosen by RIVET_LOG_FORMAT; the threshold by RIVET_LOG_LEVEL.
// A `log::Capture` records every record (all levels) emitted while it is alive; by default it sees
// only the thread that created it, so tests running in parallel threads do not see each other.

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/shared_string.hpp"

namespace rivetkit::log {

enum class Level : std::uint8_t { trace, debug, info, warn, error, off };

std::string_view level_name(Level level) noexcept;
std::optional<Level> parse_level(std::string_view text) noexcept;

enum class Format : std::uint8_t { logfmt, json };

// A field value. Holds a view for strings: the caller's data must outlive the `emit` call only.
class Value {
  public:
    enum class Kind : std::uint8_t { string, int64, uint64, float64, boolean };

    Value(std::string_view s) noexcept : kind_(Kind::string), str_(s) {}
    Value(const char* s) noexcept : kind_(Kind::string), str_(s) {}
    Value(const std::string& s) noexcept : kind_(Kind::string), str_(s) {}
    Value(const SharedString& s) noexcept : kind_(Kind::string), str_(s.view()) {}
    Value(bool b) noexcept : kind_(Kind::boolean), u64_(b ? 1u : 0u) {}
    Value(int i) noexcept : kind_(Kind::int64), i64_(i) {}
    Value(long i) noexcept : kind_(Kind::int64), i64_(i) {}
    Value(long long i) noexcept : kind_(Kind::int64), i64_(i) {}
    Value(unsigned u) noexcept : kind_(Kind::uint64), u64_(u) {}
    Value(unsigned long u) noexcept : kind_(Kind::uint64), u64_(u) {}
    Value(unsigned long long u) noexcept : kind_(Kind::uint64), u64_(u) {}
    Value(double d) noexcept : kind_(Kind::float64), f64_(d) {}

    Kind kind() const noexcept { return kind_; }
    std::string to_string() const;
    std::string_view string_view() const noexcept { return str_; }

  private:
    Kind kind_;
    std::string_view str_{};
    union {
        std::int64_t i64_;
        std::uint64_t u64_ = 0;
        double f64_;
    };
};

struct Field {
    std::string_view key;
    Value value;
};

using Fields = std::initializer_list<Field>;

// A record as a capture stores it: fields rendered to strings.
struct Record {
    Level level;
    std::string message;
    std::vector<std::pair<std::string, std::string>> fields;

    // The value of `key`, if the record has that field.
    std::optional<std::string> field(std::string_view key) const;
    bool has_field(std::string_view key, std::string_view value) const;
};

void set_level(Level level) noexcept;
Level level() noexcept;
void set_format(Format format) noexcept;
// Reads RIVET_LOG_LEVEL and RIVET_LOG_FORMAT; unknown values keep the defaults (info, logfmt).
void init_from_env();

// True when a record at `level` would go anywhere (stderr or a capture).
bool enabled(Level level) noexcept;
void emit(Level level, std::string_view message, Fields fields);

inline void trace(std::string_view m, Fields f = {}) {
    if (enabled(Level::trace))
        emit(Level::trace, m, f);
}
inline void debug(std::string_view m, Fields f = {}) {
    if (enabled(Level::debug))
        emit(Level::debug, m, f);
}
inline void info(std::string_view m, Fields f = {}) {
    if (enabled(Level::info))
        emit(Level::info, m, f);
}
inline void warn(std::string_view m, Fields f = {}) {
    if (enabled(Level::warn))
        emit(Level::warn, m, f);
}
inline void error(std::string_view m, Fields f = {}) {
    if (enabled(Level::error))
        emit(Level::error, m, f);
}

// Renders one record the way stderr output does (without the timestamp); used by the sinks and
// tests.
std::string render(Format format, Level level, std::string_view message, Fields fields);

// Records every log record while alive. Captures nest; each live capture sees every record.
class Capture {
  public:
    enum class Scope : std::uint8_t { this_thread, all_threads };

    explicit Capture(Scope scope = Scope::this_thread);
    ~Capture();
    Capture(const Capture&) = delete;
    Capture& operator=(const Capture&) = delete;

    std::vector<Record> records() const;
    // Records whose message equals `message` exactly.
    std::vector<Record> find(std::string_view message) const;
    std::size_t count(std::string_view message) const;
    void clear();

    // Internal: called by emit.
    void push(Record record);

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    Scope scope_;
};

}  // namespace rivetkit::log
