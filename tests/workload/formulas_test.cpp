#include "sim/workload/formulas.hpp"

#include <catch2/catch.hpp>

using namespace zerosim;
using namespace zerosim::workload;

namespace {
constexpr double kPaperRounding = 1e-3; // the paper's 174.6B is printed to 4 digits (0.1%)
constexpr double kKorthikantiTol = 5e-3; // 2.87 GB / 50.3 MB printed to 3 digits (0.5%)
constexpr double kExact = 1e-12; // same arithmetic in another order
} // namespace

TEST_CASE("gpt_layer_params: GPT-3 175B layer has 12h²+13h = 1,812,099,072 parameters (zero_semantics §7.29)",
          "[workload][validation]") {
  // Narayanan et al. 2021 (arXiv 2104.04473) §5.1, h = 12288: 12·12288² + 13·12288 = 1,811,939,328 + 159,744.
  REQUIRE(gpt_layer_params(12288) == 1'812'099'072);
}

TEST_CASE("gpt_model_params: GPT-3 175B dims give 174.6B parameters (zero_semantics §7.29)", "[workload][validation]") {
  // Narayanan et al. 2021 Table 1 row "175B": l = 96, h = 12288, V = 51200, s = 2048 -> 174.6B.
  const auto p = static_cast<double>(gpt_model_params(96, 12288, 51200, 2048));
  REQUIRE(p == Approx(174.6e9).epsilon(kPaperRounding));
  // Exactly: 96·1,812,099,072 + (51200 + 2048)·12288 = 173,961,510,912 + 654,311,424.
  REQUIRE(gpt_model_params(96, 12288, 51200, 2048) == 174'615'822'336);
}

TEST_CASE("korthikanti_activation_bytes: GPT-3 layer s=2048 b=1 saves 2.87 GB (zero_semantics §7.28)",
          "[workload][validation]") {
  // Korthikanti et al. 2022 (arXiv 2205.05198) §4.1: sbh(34 + 5as/h), 5as/h = 80 -> 114·sbh = 2.87 GB (GB = 1e9).
  const Bytes act = korthikanti_activation_bytes(2048, 1, 12288, 96);
  REQUIRE(act.value() / kGB == Approx(2.87).epsilon(kKorthikantiTol));
  REQUIRE(act.value() == Approx(114.0 * 2048 * 12288).epsilon(kExact));
}

TEST_CASE("checkpointed_activation_bytes: full recompute keeps 50.3 MB per GPT-3 layer (zero_semantics §7.28)",
          "[workload][validation]") {
  // Korthikanti et al. 2022 (full recomputation; reference/zero_semantics.md §5.1):
  // 2sbh = 2·2048·1·12288 = 50,331,648 B = 50.3 MB.
  REQUIRE(checkpointed_activation_bytes(2048, 1, 12288).value() / 1e6 == Approx(50.3).epsilon(kKorthikantiTol));
}

TEST_CASE("flash_attention_activation_bytes: drops the 5as²b term and keeps 4asb of statistics", "[workload][unit]") {
  // 34·2048·12288 + 4·96·2048 = 855,638,016 + 786,432.
  REQUIRE(flash_attention_activation_bytes(2048, 1, 12288, 96).value() ==
          Approx(855'638'016.0 + 786'432.0).epsilon(kExact));
}

TEST_CASE("gemm_flops: 2 FLOPs per multiply-add", "[workload][unit]") { REQUIRE(gemm_flops(3, 5, 7).value() == 210.0); }

TEST_CASE("gpt_layer_forward_flops: 24bsh² + 4bs²h", "[workload][unit]") {
  // b = 2, s = 8, h = 4: 24·2·8·16 + 4·2·64·4 = 6144 + 2048.
  REQUIRE(gpt_layer_forward_flops(2, 8, 4).value() == 8192.0);
}

TEST_CASE("narayanan_iteration_flops: 1T model is 5.14e19 FLOPs per iteration with recompute (zero_semantics §7.30)",
          "[workload][validation]") {
  // Narayanan et al. 2021 eq. 3 and Table 1 last row: B = 3072, s = 2048, l = 128, h = 25600, V = 51200:
  //   96·B·s·l·h² = 96 · 3072 · 2048 · 128 · 655,360,000 = 50,665,495,807,918,080,000 = 5.06655e19
  //   1 + s/(6h) + V/(16lh) = 1 + 2048/153,600 + 51,200/52,428,800 = 1 + 0.0133333 + 0.0009766 = 1.0143099
  //   F = 5.06655e19 · 1.0143099 = 5.13905e19 FLOPs per iteration (the paper's 5.14e19 to its 3 digits).
  const Flops f = narayanan_iteration_flops(3072, 2048, 128, 25600, 51200, true);
  const double base = 3072.0 * 2048 * 128 * 25600.0 * 25600;
  CHECK(96 * base == 50665495807918080000.0);
  CHECK(f.value() == Approx(96 * base * (1 + 2048 / (6 * 25600.0) + 51200 / (16 * 128 * 25600.0))).epsilon(kExact));
  CHECK(f.value() == Approx(5.13905e19).epsilon(1e-5));
  CHECK(f.value() == Approx(5.14e19).epsilon(kPaperRounding));
  // At Table 1's 163 TFLOPS per GPU on 3072 A100s: F / (3072 · 163e12 FLOP/s) = 102.6 s per iteration, and the
  // aggregate 3072 · 163 TFLOPS = 500.7 PFLOPS (the paper prints 502 from the unrounded per-GPU rate).
  CHECK(f.value() / (3072 * 163e12) == Approx(102.6).epsilon(kPaperRounding));
  // Without recompute the same iteration is 72/96 of the base term with V/(12lh): ratio checked by hand.
  const Flops g = narayanan_iteration_flops(3072, 2048, 128, 25600, 51200, false);
  REQUIRE(g.value() == Approx(72 * base * (1 + 2048 / (6 * 25600.0) + 51200 / (12 * 128 * 25600.0))).epsilon(kExact));
}

TEST_CASE(
    "zero_infinity_mswm_bytes: hd = 65536 needs 16 hd^2 = 64 GiB of model-state working memory (zero_semantics §7.33)",
    "[workload][validation]") {
  // ZeRO-Infinity (arXiv 2104.07857) §3; reference/zero_semantics.md §7 item 33: fp16 param + grad (4 B) of the
  // hd x 4hd linear = 4 · 65536 · 262144 B = 68,719,476,736 B = 64 GiB exactly; hd = 8192 -> 1 GiB.
  CHECK(zero_infinity_mswm_bytes(65536).value() == Approx(64.0 * 1024 * 1024 * 1024).epsilon(kExact));
  CHECK(zero_infinity_mswm_bytes(8192).value() == Approx(1024.0 * 1024 * 1024).epsilon(kExact));
}

TEST_CASE(
    "zero_infinity_ait_params: AIT of params and grads is bsz x seq, optimizer states a quarter of it "
    "(zero_semantics §7.33)",
    "[workload][validation]") {
  // ZeRO-Infinity §4 (reference/zero_semantics.md §4.2, §7 item 33): bsz 2, seq 1024 -> 2048 FLOP/B; /4 -> 512.
  CHECK(zero_infinity_ait_params(2, 1024) == Approx(2048.0).epsilon(kExact));
  CHECK(zero_infinity_ait_optimizer(2, 1024) == Approx(512.0).epsilon(kExact));
}

TEST_CASE("zero_infinity_efficiency: ait x bw equal to the peak gives 50 percent (zero_semantics §7.33)",
          "[workload][validation]") {
  // efficiency = ait·bw / (ait·bw + peak) (ZeRO-Infinity §4). ait 1024, bw 68.36 GB/s -> ait·bw = 70 TFLOP/s = peak
  // of the paper's 70 TFLOPS GPU -> 0.5 (the paper: params/grads need about 70 GB/s for >50 % at small batch).
  CHECK(zero_infinity_efficiency(1024.0, 70e12 / 1024.0, 70e12) == Approx(0.5).epsilon(kExact));
  // A 4x higher bandwidth: 4/(4+1) = 0.8.
  CHECK(zero_infinity_efficiency(1024.0, 4.0 * 70e12 / 1024.0, 70e12) == Approx(0.8).epsilon(kExact));
}
