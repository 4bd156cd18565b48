#include "base/random.hpp"

#include <array>
#include <cstring>

namespace rivetkit {

std::mt19937_64 random_engine() {
    std::random_device device;
    std::array<std::uint32_t, 8> words{};
    for (auto& w : words)
        w = device();
    std::seed_seq seq(words.begin(), words.end());
    return std::mt19937_64(seq);
}

void fill_os_random(std::uint8_t* out, std::size_t n) {
    std::random_device device;
    while (n > 0) {
        const std::uint32_t word = device();
        const std::size_t take = n < sizeof word ? n : sizeof word;
        std::memcpy(out, &word, take);
        out += take;
        n -= take;
    }
}

}  // namespace rivetkit
