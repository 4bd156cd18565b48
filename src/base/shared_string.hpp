#pragma once
// SharedString: an immutable string shared by reference count.
//
// An actor's id is kept by a dozen objects for the actor's whole life (context, storage layers,
// the SQLite file, the registry entry). Engine ids have 30 characters, past std::string's inline
// buffer, so each std::string copy was its own heap block; copies of a SharedString share one.
// It reads as a `const std::string&` or a `std::string_view` (implicitly), and compares and orders
// by its characters.

#include <compare>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace rivetkit {

class SharedString {
  public:
    SharedString() noexcept = default;
    SharedString(std::string s) : text_(std::make_shared<const std::string>(std::move(s))) {}
    SharedString(std::string_view s) : SharedString(std::string(s)) {}
    SharedString(const char* s) : SharedString(std::string(s)) {}

    const std::string& str() const noexcept { return text_ ? *text_ : empty_string(); }
    operator const std::string&() const noexcept { return str(); }
    operator std::string_view() const noexcept { return str(); }
    std::string_view view() const noexcept { return str(); }
    const char* c_str() const noexcept { return str().c_str(); }
    std::size_t size() const noexcept { return str().size(); }
    bool empty() const noexcept { return str().empty(); }

    friend bool operator==(const SharedString& a, const SharedString& b) noexcept {
        return a.text_ == b.text_ || a.view() == b.view();
    }
    friend std::strong_ordering operator<=>(const SharedString& a,
                                            const SharedString& b) noexcept {
        return a.view() <=> b.view();
    }
    // Against plain text, each kind an exact match (so a literal is not also a SharedString).
    friend bool operator==(const SharedString& a, std::string_view b) noexcept {
        return a.view() == b;
    }
    friend bool operator==(const SharedString& a, const std::string& b) noexcept {
        return a.view() == b;
    }
    friend bool operator==(const SharedString& a, const char* b) noexcept { return a.view() == b; }
    friend std::strong_ordering operator<=>(const SharedString& a, std::string_view b) noexcept {
        return a.view() <=> b;
    }
    friend std::strong_ordering operator<=>(const SharedString& a, const std::string& b) noexcept {
        return a.view() <=> std::string_view(b);
    }

  private:
    static const std::string& empty_string() noexcept {
        static const std::string empty;
        return empty;
    }

    std::shared_ptr<const std::string> text_;
};

}  // namespace rivetkit
