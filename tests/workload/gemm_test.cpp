#include "sim/workload/gemm.hpp"
#include "sim/workload/workload.hpp"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <vector>

using namespace zerosim::workload;

namespace {
constexpr double kTol = 1e-12;
// Compute only (no operand-read floor) at 1e15 FLOP/s, on an A100's 108 SMs.
constexpr GemmHardware kA100Compute{108, 1e15, 0, 2};
} // namespace

TEST_CASE("gemm: backward runs dX = dY·Wᵀ and dW = Xᵀ·dY, twice the forward FLOPs", "[workload][gemm][unit]") {
  const Gemm fwd{1024, 3072, 768, 2};
  const auto b = backward_gemms(fwd);
  CHECK(b[0] == Gemm{1024, 768, 3072, 2}); // input gradient: m×k, reduction over n
  CHECK(b[1] == Gemm{768, 3072, 1024, 2}); // weight gradient: k×n, reduction over m
  CHECK(b[0].flops() + b[1].flops() == Approx(2 * fwd.flops()).epsilon(kTol));
}

TEST_CASE("gemm: tile throughput follows operand reuse, full from 128x128 up", "[workload][gemm][unit]") {
  // reuse = tm·tn / (tm + tn), relative to 64: 256x128 85.3 -> 1; 128x128 64 -> 1; 256x64 51.2 -> 0.8;
  // 128x64 42.67 -> 2/3; 64x64 32 -> 1/2.
  CHECK(tile_throughput(256, 128) == 1.0);
  CHECK(tile_throughput(128, 128) == 1.0);
  CHECK(tile_throughput(256, 64) == Approx(0.8).epsilon(kTol));
  CHECK(tile_throughput(64, 128) == Approx(2.0 / 3).epsilon(kTol));
  CHECK(tile_throughput(64, 64) == Approx(0.5).epsilon(kTol));
}

TEST_CASE("gemm: a GEMM whose 256x128 tiles fill exactly one wave runs at the large-GEMM rate",
          "[workload][gemm][unit]") {
  // m = 9·256, n = 12·128: 108 tiles on 108 SMs, one full wave.
  const auto t = best_tiling({2304, 1536, 4096}, kA100Compute);
  CHECK(t.tile_m == 256);
  CHECK(t.tile_n == 128);
  CHECK(t.split_k == 1);
  CHECK(t.waves == 1);
  CHECK(t.utilization() == Approx(1.0).epsilon(kTol));
}

TEST_CASE("gemm: wave quantization picks the tile that fills the waves (NVIDIA matmul guide §3.2)",
          "[workload][gemm][unit]") {
  // m = 2048, n = 1728 = 16·108, k = 4096 on 108 SMs. Hand calculation per tile (util = m·n / (waves·108·tm·tn)
  // × throughput):
  //   256x128: 8·14 = 112 tiles -> 2 waves: 3538944 / (216·32768) = 0.5
  //   128x128: 16·14 = 224 -> 3 waves: 3538944 / (324·16384) = 0.667
  //   256x64:  8·27 = 216 -> 2 waves, no padding: 1.0 × 0.8 = 0.8       <- best
  //   128x64:  16·27 = 432 -> 4 waves: 1.0 × 2/3
  // No split-K: the tiles already exceed one wave.
  const auto t = best_tiling({2048, 1728, 4096}, kA100Compute);
  CHECK(t.tile_m == 256);
  CHECK(t.tile_n == 64);
  CHECK(t.split_k == 1);
  CHECK(t.waves == 2);
  CHECK(t.utilization() == Approx(0.8).epsilon(kTol));
  CHECK(t.seconds == Approx(2.0 * 2048 * 1728 * 4096 / 0.8 / 1e15).epsilon(kTol));
}

TEST_CASE("gemm: a GEMM with few tiles and a long K is split along K to fill the SMs", "[workload][gemm][unit]") {
  // m = n = 256, k = 8192 (a weight gradient of a small layer) on 108 SMs. Per tile, the largest split that fits
  // one wave (tiles·s <= 108, ⌈k/s⌉ >= 256), slot = 108·2·tm·tn·⌈k/s⌉ / throughput:
  //   256x128: 2 tiles, s 16, ⌈k/s⌉ 512: 3.6239e9       128x128: 4 tiles, s 16: 1.8119e9
  //   128x64:  8 tiles, s 13, ⌈8192/13⌉ = 631: 108·2·8192·631 / (2/3) = 1.67478e9   <- best
  //   64x64:  16 tiles, s 6, 1366: 2.4171e9             256x64: 4 tiles, s 16: 2.2649e9
  const auto t = best_tiling({256, 256, 8192}, kA100Compute);
  CHECK(t.tile_m == 128);
  CHECK(t.tile_n == 64);
  CHECK(t.split_k == 13);
  CHECK(t.ctas == 104);
  CHECK(t.slot_flops == Approx(108.0 * 2 * 8192 * 631 * 1.5).epsilon(kTol));
  CHECK(t.utilization() == Approx(2.0 * 256 * 256 * 8192 / (108.0 * 2 * 8192 * 631 * 1.5)).epsilon(kTol));
}

TEST_CASE("gemm: eager attention's P·V is bound by reading the probabilities", "[workload][gemm][unit]") {
  // P[s×s]·V[s×d] per (sequence, head): s = 2048, d = 96, b·a = 96 products. Operands and output:
  // 2 B·(2048·2048 + 2048·96 + 2048·96)·96 = 880803840 B -> 0.8808 ms at 1e12 B/s; the tensor cores need
  // 2·2048·96·2048·96 = 77.3 GFLOP -> 0.1 ms even at the 0.75 tile fill of n = 96, so the roofline's memory side
  // sets the time.
  const GemmHardware hw{108, 1e15, 1e12, 2};
  const Gemm pv{2048, 96, 2048, 96};
  CHECK(gemm_seconds(pv, hw) == Approx(880803840.0 / 1e12).epsilon(kTol));
  const std::vector<Gemm> one{pv};
  CHECK(gemm_utilization(one, hw) == Approx(pv.flops() / 1e15 / (880803840.0 / 1e12)).epsilon(kTol));
}

TEST_CASE("gemm: without an SM count every GEMM runs at the large-GEMM rate", "[workload][gemm][unit]") {
  const std::vector<Gemm> gemms{{100, 100, 100}, {7, 3, 5, 2}};
  CHECK(gemm_utilization(gemms, GemmHardware{0, 1e15, 1e12, 2}) == 1.0);
  CHECK(gemm_utilization({}, kA100Compute) == 1.0);
  CHECK(gemm_seconds({100, 100, 100}, GemmHardware{0, 1e15, 1e12, 2}) == Approx(2e6 / 1e15).epsilon(kTol));
}

TEST_CASE("gemm: bad hardware or shapes throw", "[workload][gemm][unit]") {
  CHECK_THROWS_AS(best_tiling({1, 1, 1}, GemmHardware{0, 1e15, 0, 2}), std::invalid_argument);
  CHECK_THROWS_AS(best_tiling({1, 1, 1}, GemmHardware{108, 0, 0, 2}), std::invalid_argument);
  CHECK_THROWS_AS(best_tiling({0, 1, 1}, kA100Compute), std::invalid_argument);
  CHECK_THROWS_AS(gemm_seconds({1, 1, 1}, GemmHardware{108, -1, 0, 2}), std::invalid_argument);
}

TEST_CASE("gemm: a utilization never exceeds 1, even where the waves fit exactly", "[workload][gemm][unit]") {
  // TinyLlama-1.1B (h 2048, kv 4 x 64, I 5632) at 8,192 tokens on an RTX 4090 (128 SMs, 165.2 TFLOPS x 0.96,
  // 1008 GB/s x 0.89): q_proj 8192 x 2048 x 2048 cuts into 32 x 16 = 512 tiles of 256 x 128, four full waves, so
  // each GEMM runs at the large-GEMM rate and the ratio FLOPs / rate / time is 1 up to rounding -- which had come
  // out as 1 + 2^-52 and made the program invalid (gemm_utilization must lie in (0, 1]).
  const GemmHardware rtx4090{128, 165.2e12 * 0.96, 1008e9 * 0.89, 2};
  const std::vector<Gemm> layer{{8192, 2048, 2048}, {8192, 256, 2048},  {8192, 256, 2048}, {8192, 2048, 2048},
                                {8192, 5632, 2048}, {8192, 5632, 2048}, {8192, 2048, 5632}};
  for (std::int64_t tokens : {2048, 4096, 8192, 16384, 32768}) {
    std::vector<Gemm> g = layer;
    for (auto& x : g)
      x.m = tokens;
    INFO("tokens " << tokens);
    const double u = gemm_utilization(g, rtx4090);
    CHECK(u > 0);
    CHECK(u <= 1.0);
    for (const auto& x : g) {
      CHECK(gemm_utilization(std::vector<Gemm>{x}, rtx4090) <= 1.0);
    }
    Layer l; // the same GEMMs as a layer: forward, and backward's dX and dW GEMMs
    l.gemms = g;
    const auto lu = layer_gemm_utilization(l, rtx4090);
    CHECK(lu.forward <= 1.0);
    CHECK(lu.backward > 0);
    CHECK(lu.backward <= 1.0);
  }
}
