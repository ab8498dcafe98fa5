#include "sim/zero/model_states.hpp"
#include "sim/error.hpp"

#include <catch2/catch.hpp>

using namespace zerosim;
using namespace zerosim::zero;

namespace {
constexpr double kPaperTol = 0.005; // 0.5%: the paper prints 31.4 / 16.6 (rounded)
constexpr double kExact = 1e-9; // closed forms reproduced exactly
constexpr double kPrintTol = 0.005; // DeepSpeed prints two decimals (e.g. 0.12 GiB)
constexpr double kPsi = 7.5e9;
double gb(Bytes b) { return b.value() / kGB; }
double gib(Bytes b) { return b.value() / kGiB; }
} // namespace

TEST_CASE(
    "paper_model_state_bytes: ZeRO Fig. 1 / 7.5B params on 64 GPUs is 120 / 31.4 / 16.6 / 1.875 GB "
    "(zero_semantics §7.1)",
    "[zero][validation]") {
  // Rajbhandari et al. 2020 (arXiv 1910.02054) Fig. 1 and §5; zero_semantics.md §1.1 and §7 item 1.
  REQUIRE(gb(paper_model_state_bytes(0, kPsi, 64)) == Approx(120.0).epsilon(kPaperTol));
  REQUIRE(gb(paper_model_state_bytes(1, kPsi, 64)) == Approx(31.4).epsilon(kPaperTol));
  REQUIRE(gb(paper_model_state_bytes(2, kPsi, 64)) == Approx(16.6).epsilon(kPaperTol));
  REQUIRE(gb(paper_model_state_bytes(3, kPsi, 64)) == Approx(1.875).epsilon(kPaperTol));
}

TEST_CASE(
    "paper_model_state_bytes: Table 1 rows for N_d = 1 / 4 / 16 (zero_semantics.md §1.2) (zero_semantics §7.2, §7.3)",
    "[zero][validation]") {
  struct Row {
    int nd;
    double pos, posg, posgp; // GB, from the §1.2 table (7.5B columns)
  };
  const Row rows[] = {{1, 120, 120, 120}, {4, 52.5, 41.25, 30}, {16, 35.625, 21.5625, 7.5}};
  for (const auto& r : rows) {
    INFO("N_d = " << r.nd);
    REQUIRE(gb(paper_model_state_bytes(0, kPsi, r.nd)) == Approx(120.0).epsilon(kExact));
    REQUIRE(gb(paper_model_state_bytes(1, kPsi, r.nd)) == Approx(r.pos).epsilon(kExact));
    REQUIRE(gb(paper_model_state_bytes(2, kPsi, r.nd)) == Approx(r.posg).epsilon(kExact));
    REQUIRE(gb(paper_model_state_bytes(3, kPsi, r.nd)) == Approx(r.posgp).epsilon(kExact));
  }
  // 128B and 1T columns at N_d = 64 / 1024 (§1.2; §7 items 2 and 3).
  REQUIRE(gb(paper_model_state_bytes(1, 128e9, 64)) == Approx(536).epsilon(kExact));
  REQUIRE(gb(paper_model_state_bytes(2, 128e9, 64)) == Approx(284).epsilon(kExact));
  REQUIRE(gb(paper_model_state_bytes(3, 128e9, 64)) == Approx(32).epsilon(kExact));
  REQUIRE(gb(paper_model_state_bytes(3, 1e12, 1024)) == Approx(15.625).epsilon(kExact));
}

TEST_CASE("paper_model_state_bytes: rejects a stage outside 0..3 and N_d < 1", "[zero][unit]") {
  REQUIRE_THROWS_WITH(paper_model_state_bytes(4, kPsi, 1), Catch::Contains("stage"));
  REQUIRE_THROWS_WITH(paper_model_state_bytes(1, kPsi, 0), Catch::Contains("dp_degree"));
}

TEST_CASE("estimate_zero2_model_states_mem_needs: t5-3b on 1x8 GPUs matches memory.rst (zero_semantics §7.6, §7.7)",
          "[zero][validation]") {
  // zero_semantics.md §2.3 and §7 items 6-7: Ψ = 2851e6. GPU 11.28 GiB with the current (v0.14.3+) formula
  // 2Ψ + 18Ψ/N = 12.117e9 B; CPU Ψ·4·8·1.5 = 136.85e9 B = 127.45 GiB; offload: GPU 2Ψ = 5.31 GiB,
  // CPU Ψ·max(4·8, 16)·1.5 = 127.45 GiB.
  const auto none = estimate_zero2_model_states_mem_needs(2851e6, 8, 1, false);
  REQUIRE(gib(none.gpu) == Approx(11.28).epsilon(kPrintTol));
  REQUIRE(gib(none.cpu) == Approx(127.45).epsilon(kPrintTol));
  const auto off = estimate_zero2_model_states_mem_needs(2851e6, 8, 1, true);
  REQUIRE(gib(off.gpu) == Approx(5.31).epsilon(kPrintTol));
  REQUIRE(gib(off.cpu) == Approx(127.45).epsilon(kPrintTol));
}

TEST_CASE("estimate_zero3_model_states_mem_needs: t5-3b and t5-large docs examples (zero_semantics §7.8, §7.9)",
          "[zero][validation]") {
  // zero_semantics.md §2.3, §7 item 8: Ψ = 2851e6, largest layer 32e6, 1x8 GPUs, zero_init = 1 (cold numbers).
  const auto cc = estimate_zero3_model_states_mem_needs(2851e6, 32e6, 8, 1, true, true, true);
  REQUIRE(gib(cc.gpu) == Approx(0.12).epsilon(0.01 / 0.12)); // printed with two decimals
  REQUIRE(gib(cc.cpu) == Approx(71.69).epsilon(kPrintTol));
  const auto nc = estimate_zero3_model_states_mem_needs(2851e6, 32e6, 8, 1, true, false, true);
  REQUIRE(gib(nc.gpu) == Approx(0.78).epsilon(0.01 / 0.78));
  REQUIRE(gib(nc.cpu) == Approx(63.72).epsilon(kPrintTol));
  const auto nn = estimate_zero3_model_states_mem_needs(2851e6, 32e6, 8, 1, false, false, true);
  REQUIRE(gib(nn.gpu) == Approx(6.09).epsilon(kPrintTol));
  REQUIRE(gib(nn.cpu) == Approx(1.43).epsilon(kPrintTol));
  // §7 item 9: t5-large 737.67M params, largest layer 32.90M, 4 GPUs -> 3291 / 477 MiB (no offload / optimizer
  // offload), MiB = 2^20 B.
  const auto t5l = estimate_zero3_model_states_mem_needs(737.67e6, 32.90e6, 4, 1, false, false, true);
  REQUIRE(t5l.gpu.value() / kMiB == Approx(3291).epsilon(kPrintTol));
  const auto t5o = estimate_zero3_model_states_mem_needs(737.67e6, 32.90e6, 4, 1, true, false, true);
  REQUIRE(t5o.gpu.value() / kMiB == Approx(477).epsilon(kPrintTol));
}

TEST_CASE("estimate_zero2_model_states_mem_needs: rejects zero GPUs", "[zero][unit]") {
  REQUIRE_THROWS_WITH(estimate_zero2_model_states_mem_needs(1e9, 0, 1, false), Catch::Contains("gpus_per_node"));
  REQUIRE_THROWS_WITH(estimate_zero3_model_states_mem_needs(1e9, 1e6, 8, 0, false, false, true),
                      Catch::Contains("nodes"));
}
