#include "sim/workload/gemm.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace zerosim::workload {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

struct Tile {
  int m, n;
};
// Matrix Multiplication Background User's Guide §2.3, most efficient first (ties keep the earlier tile).
constexpr std::array<Tile, 8> kTiles{
    {{256, 128}, {128, 256}, {128, 128}, {256, 64}, {64, 256}, {128, 64}, {64, 128}, {64, 64}}};
constexpr int kMaxSplitK = 16;

void check_rate(const GemmHardware& hw, const char* who) {
  if (!(hw.flop_rate > 0))
    throw std::invalid_argument(std::string(who) + ": flop_rate must be > 0");
}

} // namespace

std::array<Gemm, 2> backward_gemms(const Gemm& g) {
  return {Gemm{g.m, g.k, g.n, g.batch}, Gemm{g.k, g.n, g.m, g.batch}};
}

double tile_throughput(int tile_m, int tile_n) {
  const double reuse = static_cast<double>(tile_m) * tile_n / (tile_m + tile_n);
  return std::min(1.0, reuse / 64.0);
}

GemmTiling best_tiling(const Gemm& g, const GemmHardware& hw) {
  if (hw.sm_count < 1)
    throw std::invalid_argument("best_tiling: sm_count must be >= 1, got " + std::to_string(hw.sm_count));
  check_rate(hw, "best_tiling");
  if (g.m < 1 || g.n < 1 || g.k < 1 || g.batch < 1)
    throw std::invalid_argument("best_tiling: GEMM dimensions must be >= 1");
  const double m = static_cast<double>(g.m), n = static_cast<double>(g.n), k = static_cast<double>(g.k);
  const double batch = static_cast<double>(g.batch);
  const double operand_bytes = hw.element_bytes * (m * k + k * n + m * n) * batch;
  GemmTiling best;
  for (const Tile& t : kTiles) {
    const std::int64_t tiles = ceil_div(g.m, t.m) * ceil_div(g.n, t.n) * g.batch;
    const double rate = tile_throughput(t.m, t.n);
    for (int s = 1; s <= kMaxSplitK; ++s) {
      if (s > 1 && (tiles * s > hw.sm_count || ceil_div(g.k, s) < kMinSplitKDepth))
        break;
      const std::int64_t ctas = tiles * s;
      const std::int64_t waves = ceil_div(ctas, hw.sm_count);
      const double slot =
          static_cast<double>(waves) * hw.sm_count * 2.0 * t.m * t.n * static_cast<double>(ceil_div(g.k, s)) / rate;
      double bytes = operand_bytes;
      if (s > 1)
        bytes += 2.0 * 4.0 * m * n * s * batch; // fp32 partial sums written, then read back by the reduction
      const double seconds = std::max(slot / hw.flop_rate, hw.byte_rate > 0 ? bytes / hw.byte_rate : 0.0);
      if (best.waves == 0 || seconds < best.seconds)
        best = GemmTiling{t.m, t.n, s, ctas, waves, rate, g.flops(), slot, seconds};
    }
  }
  return best;
}

double gemm_seconds(const Gemm& g, const GemmHardware& hw) {
  check_rate(hw, "gemm_seconds");
  return hw.sm_count > 0 ? best_tiling(g, hw).seconds : g.flops() / hw.flop_rate;
}

double gemm_utilization(std::span<const Gemm> gemms, const GemmHardware& hw) {
  if (gemms.empty() || hw.sm_count == 0)
    return 1.0;
  double flops = 0, seconds = 0;
  for (const Gemm& g : gemms) {
    flops += g.flops();
    seconds += gemm_seconds(g, hw);
  }
  // Each GEMM takes at least its FLOPs at the large-GEMM rate, so the ratio is <= 1 but for rounding where the waves
  // fit exactly (1 + 2^-52 at four full waves): clamp.
  return seconds > 0 ? std::min(1.0, flops / hw.flop_rate / seconds) : 1.0;
}

} // namespace zerosim::workload
