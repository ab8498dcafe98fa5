#include "sim/zero/zero_program.hpp"
#include "sim/error.hpp"
#include "sim/workload/workload.hpp"
#include "sim/zero/model_states.hpp"
#include "tests/zero/program_walker.hpp"
#include "tests/zero/test_model.hpp"

#include <catch2/catch.hpp>

#include <set>

using namespace zerosim;
using namespace zerosim::zero;
using namespace zerosim::zero::testing;
using program::CollectiveKind;
using program::MemTag;

namespace {
constexpr double kTol = 1e-9;
} // namespace

TEST_CASE(
    "generate_program: every stage / N_d / GA / overlap and checkpointing yields a valid / deadlock-free program "
    "that frees all transient buffers (memory conservation)",
    "[zero][unit]") {
  for (int stage = 0; stage <= 3; ++stage)
    for (int n : {1, 4})
      for (int ga : {1, 2})
        for (bool ckpt : {false, true})
          for (bool overlap : {false, true}) {
            TinyModel m;
            m.grad_accum = ga;
            m.checkpointing = ckpt;
            const auto wl = make_workload(m);
            auto z = zero_config(stage);
            z.overlap_comm = overlap;
            z.reduce_bucket_size = 1'500'000; // several buckets per backward
            INFO("stage " << stage << " N " << n << " GA " << ga << " ckpt " << ckpt << " overlap " << overlap);
            const auto p = generate(wl, z, n, 3);
            REQUIRE(program::validate(p).empty());
            REQUIRE(p.steps == 3);
            const auto r = walk(p);
            REQUIRE_FALSE(r.deadlock);
            // What the walker (an interpreter independent of the declaration) leaves allocated is exactly the
            // program's declared persistent buffers, and those are model states or buffers DeepSpeed keeps across
            // steps (zero_semantics.md §3.5 "Persistent GPU buffers"), never activations or working memory.
            REQUIRE(program::check_conservation(p).empty());
            std::set<program::BufferId> live;
            for (const auto& [buf, tag] : r.live_at_end) {
              INFO("buffer " << buf << " tag " << program::to_string(tag));
              live.insert(buf);
              REQUIRE(tag != MemTag::ACTIVATIONS);
              REQUIRE(tag != MemTag::WORKING);
              REQUIRE(tag != MemTag::GATHER_BUFFER);
              REQUIRE(tag != MemTag::LP_GRADS);
              // Without offload the step-time fp32 grads (stage 0 FP16_Optimizer's list and flat copy, stage 1/2's
              // cast partition, stage 3's sub-group buffer) and every flatten/cast temporary are freed by the step's
              // end (zero_semantics.md §3.3-§3.5).
              REQUIRE(tag != MemTag::FP32_GRADS);
              REQUIRE(tag != MemTag::FLATTEN_TEMP);
            }
            REQUIRE(live == std::set<program::BufferId>(p.persistent.begin(), p.persistent.end()));
            REQUIRE(r.timeline.back().tag(MemTag::ACTIVATIONS) == Approx(0).margin(kTol));
            // What stays is the model states the ZeRO paper counts (§5.1, K = 12): fp32 master 4 B + Adam m, v 8 B
            // per param, divided by N_d from stage 1 on, plus partition padding (stage 1/2: the flat group padded
            // to a multiple of 2 N_d, under 2 elements per rank; stage 3: each param padded to a multiple of N_d,
            // under one element per param and rank); stage 0-2 keep the full lp params (2 B each, the same padding).
            const double psi = static_cast<double>(wl.total_params);
            const double div = stage == 0 ? 1.0 : n;
            const double pad = 1.0 + static_cast<double>(wl.layers.size()) * 16.0; // elements, generous
            const auto& end = r.timeline.back();
            const double states = end.tag(MemTag::FP32_MASTER) + end.tag(MemTag::OPTIMIZER_STATES);
            CHECK(states >= 12.0 * psi / div - kTol);
            CHECK(states <= 12.0 * (psi / div + pad));
            if (stage < 3) {
              CHECK(end.tag(MemTag::LP_PARAMS) >= 2.0 * psi - kTol);
              CHECK(end.tag(MemTag::LP_PARAMS) <= 2.0 * (psi + 2.0 * n));
            }
          }
}

TEST_CASE(
    "generate_program: streams per stage follow overlap_comm (zero_semantics.md §3.4 / §3.5 / §3.7) "
    "(zero_semantics §7.12)",
    "[zero][unit]") {
  const auto wl = make_workload();
  auto names = [&](int stage, std::optional<bool> overlap) {
    auto z = zero_config(stage);
    z.overlap_comm = overlap;
    std::vector<std::string> v;
    for (const auto& s : generate(wl, z, 4).streams)
      v.push_back(s.name);
    return v;
  };
  using V = std::vector<std::string>;
  REQUIRE(names(0, std::nullopt) == V{"compute"});
  REQUIRE(names(1, std::nullopt) == V{"compute"}); // overlap_comm defaults to false for stage 1/2
  REQUIRE(names(2, std::nullopt) == V{"compute"});
  REQUIRE(names(2, true) == V{"compute", "comm"});
  REQUIRE(names(3, std::nullopt) == V{"compute", "gather", "reduce"}); // default true in stage 3
  REQUIRE(names(3, false) == V{"compute"});
}

TEST_CASE(
    "generate_program: N_d = 1 issues no all-gather for stages 1-3 but still issues the gradient "
    "collectives (zero_semantics.md §3.6) (zero_semantics §7.18, §7.19)",
    "[zero][validation]") {
  const auto wl = make_workload();
  for (int stage = 0; stage <= 3; ++stage) {
    INFO("stage " << stage);
    const auto r = walk(generate(wl, zero_config(stage), 1));
    for (int step : {0, 1}) {
      REQUIRE(r.stats(step, CollectiveKind::ALL_GATHER).calls == 0);
      if (stage == 3)
        REQUIRE(r.stats(step, CollectiveKind::REDUCE_SCATTER).calls > 0);
      else
        REQUIRE(r.stats(step, CollectiveKind::ALL_REDUCE).calls > 0);
    }
    if (stage == 3)
      REQUIRE(r.peak([](const Sample& s) { return s.tag(MemTag::GATHER_BUFFER); }) == 0);
  }
}

TEST_CASE(
    "generate_program: at N_d = 1 stages 1-3 hold no less model-state memory than stage 0 "
    "(zero_semantics.md §3.6)",
    "[zero][validation]") {
  // Steady state = peak over step 1 (the second step, after lazy Adam state exists) of lp params + lp grads +
  // grad partition + fp32 master + Adam states. Stage 0: 2 + 2 + 4 + 8 = 16Ψ.
  const TinyModel m;
  const auto wl = make_workload(m);
  auto states = [&](int stage) {
    return walk(generate(wl, zero_config(stage), 1)).peak([](const Sample& s) { return s.model_states(); }, 1);
  };
  const double s0 = states(0);
  REQUIRE(s0 == Approx(16 * psi(m)).epsilon(kTol));
  for (int stage = 1; stage <= 3; ++stage) {
    INFO("stage " << stage);
    REQUIRE(states(stage) >= s0 * (1 - kTol));
  }
}

TEST_CASE("generate_program: rejects offload and bad settings naming the rule", "[zero][unit]") {
  const auto wl = make_workload();
  SECTION("offload_param alone is a valid program (DeepSpeed accepts it) and needs no CPU Adam time") {
    auto z = zero_config(3);
    z.offload_param = scenario::OffloadDevice::CPU;
    CHECK(program::validate(generate(wl, z, 4)).empty());
    z.offload_param = scenario::OffloadDevice::NVME;
    CHECK(program::validate(generate(wl, z, 4)).empty());
  }
  SECTION("offload_optimizer=nvme needs a CPU Adam time like cpu") {
    auto z = zero_config(3);
    z.offload_optimizer = scenario::OffloadDevice::NVME;
    REQUIRE_THROWS_WITH(generate(wl, z, 4), Catch::Contains("cpu_adam_seconds_per_param"));
  }
  SECTION("offload_optimizer=cpu needs a CPU Adam time") {
    auto z = zero_config(2);
    z.offload_optimizer = scenario::OffloadDevice::CPU;
    REQUIRE_THROWS_WITH(generate(wl, z, 4), Catch::Contains("cpu_adam_seconds_per_param"));
  }
  SECTION("offload_param needs stage 3") {
    auto z = zero_config(2);
    z.offload_param = scenario::OffloadDevice::CPU;
    REQUIRE_THROWS_WITH(generate(wl, z, 4), Catch::Contains("stage 3"));
  }
  SECTION("offload_optimizer with stage 0") {
    auto z = zero_config(0);
    z.offload_optimizer = scenario::OffloadDevice::CPU;
    REQUIRE_THROWS_WITH(generate(wl, z, 4), Catch::Contains("stage 1, 2 or 3"));
  }
  SECTION("unknown stage") { REQUIRE_THROWS_WITH(generate(wl, zero_config(4), 4), Catch::Contains("zero.stage")); }
  SECTION("dp_degree 0") { REQUIRE_THROWS_WITH(generate(wl, zero_config(1), 0), Catch::Contains("dp_degree")); }
  SECTION("no steps") { REQUIRE_THROWS_WITH(generate(wl, zero_config(1), 1, 0), Catch::Contains("steps")); }
}

TEST_CASE(
    "generate_program: compute FLOPs per micro-step are the workload's fwd + bwd plus recompute only with "
    "activation checkpointing",
    "[zero][unit]") {
  // Hand calculation from make_workload: 4 blocks x (fwd 1e9 + bwd 2e9) = 1.2e10 FLOP per micro-step; with
  // checkpointing each block's forward re-runs in backward: + 4 x 1e9. Two steps of GA = 2 -> 4 micro-steps.
  for (bool ckpt : {false, true}) {
    TinyModel m;
    m.checkpointing = ckpt;
    m.grad_accum = 2;
    for (int stage = 0; stage <= 3; ++stage) {
      INFO("stage " << stage << " ckpt " << ckpt);
      const auto p = generate(make_workload(m), zero_config(stage), 4, 2);
      double flops = 0;
      for (const auto& s : p.streams)
        for (const auto& op : s.ops)
          if (const auto* c = std::get_if<program::Compute>(&op.body))
            flops += c->flops.value();
      REQUIRE(flops == Approx(4 * (1.2e10 + (ckpt ? 4e9 : 0))).epsilon(kTol));
    }
  }
}

TEST_CASE(
    "generate_program: GPT-2 (124M) from build_workload gives the paper's model states at N_d = 4 up to "
    "padding and in-flight grads",
    "[zero][e2e]") {
  // Integration with workload::build_workload (GPT-2 small dims, openai-community/gpt2 config.json). Expected:
  // peak over step 1 of lp params + lp grads + grad partitions + fp32 master + Adam between the paper's P_os /
  // P_os+g / P_os+g+p for Ψ = w.total_params and that plus 2 B x (largest tensor + largest layer) for the grads
  // autograd holds before they reach a bucket and the stage 1/2 partition padding.
  scenario::ModelSpec gpt2;
  gpt2.name = "gpt2";
  gpt2.family = scenario::ModelFamily::GPT2;
  gpt2.hidden = 768;
  gpt2.layers = 12;
  gpt2.heads = 12;
  gpt2.kv_heads = 12;
  gpt2.intermediate = 3072;
  gpt2.vocab = 50257;
  gpt2.max_positions = 1024;
  scenario::TrainingSpec t;
  t.micro_batch = 1;
  t.seq_len = 1024;
  const auto w = workload::build_workload(gpt2, t);
  const double psi_w = static_cast<double>(w.total_params);
  const double slack =
      2.0 * static_cast<double>(w.largest_tensor_numel + w.largest_layer_params) + 16.0 * 2 * 4; // + padding
  for (int stage = 0; stage <= 3; ++stage) {
    INFO("stage " << stage);
    const auto p = generate(w, zero_config(stage), 4);
    REQUIRE(program::validate(p).empty());
    const auto r = walk(p);
    REQUIRE_FALSE(r.deadlock);
    const double expected = zerosim::zero::paper_model_state_bytes(stage, psi_w, 4).value();
    const double states = r.peak([](const Sample& s) { return s.model_states(); }, 1);
    REQUIRE(states >= expected * (1 - kTol));
    REQUIRE(states <= expected + slack);
  }
}

TEST_CASE("GeneratorContext: a layer's saved tensors are allocated one buffer each and freed in its backward",
          "[zero][unit]") {
  // block.0 saves three tensors of 1e6, 2e6 and 3e6 B (sum = its saved_activations, 6e6 B): forward allocates three
  // ACTIVATIONS buffers, "act block.0", "act block.0 #1", "act block.0 #2", each adding its own size to the tag;
  // all are freed by the end of the step (block.0's backward).
  TinyModel m;
  auto wl = make_workload(m);
  auto& blk = wl.layers.at(0);
  REQUIRE(blk.name == "block.0");
  blk.saved_activations = Bytes(6e6);
  blk.activation_tensors = {Bytes(1e6), Bytes(2e6), Bytes(3e6)};
  const auto r = walk(generate(wl, zero_config(0), 1));
  const auto* first = find_nth_alloc(r, 0, "act block.0", 0);
  const auto* second = find_nth_alloc(r, 0, "act block.0 #1", 0);
  const auto* third = find_nth_alloc(r, 0, "act block.0 #2", 0);
  REQUIRE(first != nullptr);
  REQUIRE(second != nullptr);
  REQUIRE(third != nullptr);
  REQUIRE(find_nth_alloc(r, 0, "act block.0 #3", 0) == nullptr);
  REQUIRE(second->tag(MemTag::ACTIVATIONS) - first->tag(MemTag::ACTIVATIONS) == Approx(2e6).epsilon(kTol));
  REQUIRE(third->tag(MemTag::ACTIVATIONS) - second->tag(MemTag::ACTIVATIONS) == Approx(3e6).epsilon(kTol));
  // Every activation of the step is freed by its end.
  REQUIRE(last_of(r, 0)->tag(MemTag::ACTIVATIONS) == 0);
}

TEST_CASE("GeneratorContext: layer compute ops carry the GEMM utilization of the layer's GEMMs on the GPU",
          "[zero][unit]") {
  // block.0 runs one GEMM m = 2048, n = 1728, k = 4096. On 108 SMs (compute only) its best tiling is 256x64 in two
  // full waves at 0.8 of the large-GEMM rate (hand calculation in gemm_test.cpp); the checkpointed layer's
  // recompute runs the same GEMM, its backward the two backward GEMMs. Without an SM count every op carries 1.
  TinyModel m;
  m.checkpointing = true;
  auto wl = make_workload(m);
  wl.layers.at(0).gemms = {workload::Gemm{2048, 1728, 4096}};
  wl.layers.at(0).recompute_flops = Flops(1e9);
  wl.layers.at(0).recompute_gemms = wl.layers.at(0).gemms;
  const workload::GemmHardware hw{108, 1e15, 0, 2};
  auto util_of = [](const program::StepProgram& p, const std::string& label) {
    for (const auto& s : p.streams)
      for (const auto& op : s.ops)
        if (const auto* c = std::get_if<program::Compute>(&op.body); c && p.labels.at(op.label) == label)
          return c->gemm_utilization;
    return -1.0;
  };
  GeneratorInput in{wl, zero_config(0), 1, 1};
  in.gemm = hw;
  const auto p = generate_program(in);
  CHECK(util_of(p, "fwd block.0") == Approx(0.8).epsilon(kTol));
  CHECK(util_of(p, "recompute block.0") == Approx(0.8).epsilon(kTol));
  const auto bwd = workload::backward_gemms(workload::Gemm{2048, 1728, 4096});
  CHECK(util_of(p, "bwd block.0") == Approx(workload::gemm_utilization(bwd, hw)).epsilon(kTol));
  CHECK(util_of(p, "bwd block.0") < 1.0);
  CHECK(util_of(p, "fwd block.1") == 1.0); // no GEMM list: the large-GEMM rate
  const auto plain = generate(wl, zero_config(0), 1, 1);
  CHECK(util_of(plain, "fwd block.0") == 1.0);
}
