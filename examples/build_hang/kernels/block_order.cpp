// block_order.cpp -- BROKEN ON PURPOSE: the build never finishes in practice.
//
// Picks, at compile time, the multiplier `a` of the block-order permutation tile = (a * block) % 4096
// that spreads 256 consecutive blocks most evenly over 64 (hashed) DRAM channels. Every one of the 2048
// odd candidates is scored by its own constant expression of ~0.5M loop iterations. g++ interprets
// constant expressions roughly a million times slower than native code (~2 s per candidate here), so the
// search takes over an hour of compile time (each candidate stays under g++'s per-expression
// -fconstexpr-ops-limit, so no error ends it early, and the integers it touches stay small, so the
// compiler's memory stays bounded). Computing this table once offline would have been instant.
#include <utility>

namespace {

constexpr int kPeriod = 4096;   // the permutation acts on blocks modulo 4096
constexpr int kChannels = 64;
constexpr int kWindow = 256;    // blocks resident at the same time

// Worst number of hits on one channel over windows of kWindow consecutive blocks. Lower is better.
constexpr int imbalance(int a) {
    int worst = 0;
    for (int start = 0; start < kPeriod; start += 128) {
        for (int channel = 0; channel < kChannels; ++channel) {
            int hits = 0;
            int tile = (a * start) & (kPeriod - 1);
            for (int j = 0; j < kWindow; ++j) {
                hits += ((tile ^ (tile >> 6)) % kChannels) == channel;
                tile = (tile + a) & (kPeriod - 1);
            }
            worst = hits > worst ? hits : worst;
        }
    }
    return worst;
}

template <int I>
constexpr int kImbalance = imbalance(2 * I + 1);  // one constant evaluation per candidate

template <int... Is>
constexpr int best_multiplier(std::integer_sequence<int, Is...>) {
    const int scores[] = {kImbalance<Is>...};
    int best = 0;
    for (int i = 1; i < static_cast<int>(sizeof...(Is)); ++i)
        if (scores[i] < scores[best]) best = i;
    return 2 * best + 1;
}

constexpr int kBestMultiplier = best_multiplier(std::make_integer_sequence<int, kPeriod / 2>{});

}  // namespace

extern "C" int block_order_multiplier() { return kBestMultiplier; }
