#include "sim/zero/stage3_generator.hpp"
#include "sim/zero/model_states.hpp"
#include "tests/zero/program_walker.hpp"
#include "tests/zero/test_model.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

using namespace zerosim;
using namespace zerosim::zero;
using namespace zerosim::zero::testing;
using program::CollectiveKind;
using program::MemTag;

namespace {
constexpr double kTol = 1e-9;

scenario::ZeroConfig no_persistence() {
  auto z = zero_config(3);
  z.stage3_param_persistence_threshold = 0; // every param gathered on demand (the paper's P_os+g+p)
  return z;
}

/// generate_program with DeepSpeed-like host costs (HostSpec defaults): the host thread issues the all-gathers.
program::StepProgram generate_with_host(const workload::Workload& wl, const scenario::ZeroConfig& z, int n) {
  GeneratorInput in{wl, z, n, 2, 0.0, scenario::HostSpec{}};
  return generate_program(in);
}

/// Whether step 1's first all-gather on the gather stream runs only after step 0's last fp32 -> lp copy.
bool first_gather_after_last_copy(const program::StepProgram& p) {
  return ordered_after(p, find_op(p, "compute", 0, "fp32->lp", true),
                       find_op(p, "gather", 1, "allgather", false, true));
}
} // namespace

TEST_CASE(
    "Stage3Generator: steady-state model states equal the paper's P_os+g+p = 16Ψ/N_d plus transient "
    "full-size grads (ZeRO §5)",
    "[zero][validation]") {
  // lp partitions 2Ψ/N + grad partitions 2Ψ/N + master 4Ψ/N + m,v 8Ψ/N = 16Ψ/N (no padding: every numel is a
  // multiple of N here, and no persistent params). DeepSpeed difference: each param's full lp grad is allocated
  // when its backward kernel is issued and freed at its hook (record_stream keeps only the block for the reduce
  // stream's copy), so at most one full grad counts as allocated at a time: the weight's 2 x 1,000,000 B.
  const TinyModel m;
  const double block_grads = 2.0 * static_cast<double>(m.weight_numel);
  for (int n : {1, 2, 4}) {
    INFO("N_d = " << n);
    const auto r = walk(generate(make_workload(m), no_persistence(), n));
    const double expected = paper_model_state_bytes(3, psi(m), n).value();
    const double states = r.peak([](const Sample& s) { return s.model_states(); }, 1);
    REQUIRE(states >= expected * (1 - kTol));
    REQUIRE(states <= expected + block_grads);
  }
}

TEST_CASE(
    "Stage3Generator: per-rank wire bytes per step are 1.5x stage 0 once stage 1/2 all-reduce is "
    "counted (ZeRO §7) (zero_semantics §7.5, §7.13)",
    "[zero][validation]") {
  // Hand calculation, N = 4, f = (N-1)/N = 0.75, lp = 2 B, payload P = 2Ψ bytes:
  //   stage 0: all-reduce 2·f·P                          = 1.5 P
  //   stage 2: all-reduce 2·f·P (multi-rank bucket) + all-gather f·P = 2.25 P (paper: 2Ψ elements = 1.5 P)
  //   stage 3: all-gather fwd f·P + all-gather bwd f·P + reduce-scatter f·P = 2.25 P = 1.5 x stage 0
  // Stage 3 needs max_reuse_distance = 0 and no prefetch so forward-gathered params are released and re-gathered in
  // backward (with the default 1e9 a small model keeps them, see the next test; a prefetch walking past a param's
  // backward use keeps it too, partitioned_param_coordinator.py l.642-651), and no persistent params.
  const TinyModel m;
  const int n = 4;
  const auto wl = make_workload(m);
  const double payload = 2 * psi(m);
  auto z3 = no_persistence();
  z3.stage3_max_reuse_distance = 0;
  z3.stage3_prefetch_bucket_size = 0;
  const double w0 = walk(generate(wl, zero_config(0), n)).wire_bytes(1, n);
  const double w2 = walk(generate(wl, zero_config(2), n)).wire_bytes(1, n);
  const auto r3 = walk(generate(wl, z3, n));
  REQUIRE(w0 == Approx(1.5 * payload).epsilon(kTol));
  REQUIRE(w2 == Approx(2.25 * payload).epsilon(kTol));
  for (int step : {0, 1}) {
    INFO("step " << step);
    REQUIRE(r3.wire_bytes(step, n) == Approx(1.5 * w0).epsilon(kTol));
    REQUIRE(r3.stats(step, CollectiveKind::REDUCE_SCATTER).payload == Approx(payload).epsilon(kTol));
  }
}

TEST_CASE(
    "Stage3Generator: with the default reuse distance 1e9 a small model keeps forward-gathered params until "
    "backward from step 2 on (§3.5) (zero_semantics §7.22, §7.23)",
    "[zero][validation]") {
  // Step 0 records the trace and releases after every use: fwd + bwd gathers = 2 x 2Ψ bytes. From step 1 the
  // remaining fwd+bwd volume (< 2Ψ = 8e6 elements) is below max_reuse_distance, so backward re-gathers nothing.
  const TinyModel m;
  const auto r = walk(generate(make_workload(m), no_persistence(), 4, 3));
  REQUIRE(r.stats(0, CollectiveKind::ALL_GATHER).payload == Approx(4 * psi(m)).epsilon(kTol));
  REQUIRE(r.stats(1, CollectiveKind::ALL_GATHER).payload == Approx(2 * psi(m)).epsilon(kTol));
  REQUIRE(r.stats(2, CollectiveKind::ALL_GATHER).payload == Approx(2 * psi(m)).epsilon(kTol));
}

TEST_CASE("Stage3Generator: no prefetch in the first step / prefetch from the second (§3.5) (zero_semantics §7.23)",
          "[zero][validation]") {
  // Each block gathers w + b coalesced: flat buffer 1/001/000 x 2 B plus the per-param full tensors
  // 1/001/000 x 2 B -> 4/004/000 B while one block is fetched on demand (step 0). From step 1 the prefetcher
  // (5e7-element window) gathers upcoming blocks ahead, so more than one block is gathered at once.
  const TinyModel m;
  auto z = no_persistence();
  z.stage3_max_reuse_distance = 0;
  const auto r = walk(generate(make_workload(m), z, 4));
  const double one_block = 2 * 2.0 * static_cast<double>(m.weight_numel + m.bias_numel);
  auto gathered = [](const Sample& s) { return s.tag(MemTag::GATHER_BUFFER); };
  REQUIRE(r.peak(gathered, 0) == Approx(one_block).epsilon(kTol));
  REQUIRE(r.peak(gathered, 1) > one_block);
}

TEST_CASE(
    "Stage3Generator: one 1e9 B IPG bucket from init / never freed and not doubled by overlap_comm "
    "(stage3.py) (zero_semantics §7.11)",
    "[zero][validation]") {
  const TinyModel m;
  const auto r = walk(generate(make_workload(m), zero_config(3), 4));
  REQUIRE(last_of(r, -1)->tag(MemTag::IPG_BUCKET) == Approx(1e9).epsilon(kTol));
  REQUIRE(r.peak([](const Sample& s) { return s.tag(MemTag::IPG_BUCKET); }) == Approx(1e9).epsilon(kTol));
  REQUIRE(r.timeline.back().tag(MemTag::IPG_BUCKET) == Approx(1e9).epsilon(kTol));
}

TEST_CASE(
    "Stage3Generator: fp32 grad transient is 4 x sub-group elements and Adam state grows 8Ψ/N at the first "
    "step (zero_semantics §7.17, §7.20)",
    "[zero][validation]") {
  const TinyModel m;
  {
    // Default sub_group_size 1e9 > Ψ/N: one sub-group of Ψ/N -> 4Ψ/N B.
    const auto r = walk(generate(make_workload(m), zero_config(3), 4));
    REQUIRE(r.peak([](const Sample& s) { return s.tag(MemTag::FP32_GRADS); }, 1) ==
            Approx(4 * psi(m) / 4).epsilon(kTol));
    REQUIRE(last_of(r, -1)->tag(MemTag::OPTIMIZER_STATES) == 0);
    REQUIRE(last_of(r, 0)->tag(MemTag::OPTIMIZER_STATES) == Approx(8 * psi(m) / 4).epsilon(kTol));
  }
  {
    // sub_group_size 2e6, N = 1: greedy packing w0 b0 w1 = 2,001,000 | b1 w2 b2 w3 = 2,002,000 | b3 = 1,000.
    auto z = zero_config(3);
    z.sub_group_size = 2'000'000;
    const auto r = walk(generate(make_workload(m), z, 1));
    REQUIRE(r.peak([](const Sample& s) { return s.tag(MemTag::FP32_GRADS); }, 1) ==
            Approx(4 * 2'002'000.0).epsilon(kTol));
  }
}

TEST_CASE(
    "Stage3Generator: optimizer init holds one zero fp32 grad of the largest sub-group over the fp32 master, then "
    "frees it before the IPG bucket (stage3.py initialize_optimizer_states)",
    "[zero][validation]") {
  // DeepSpeed stage3.py _setup_for_real_optimizer: _create_fp32_partitions casts each sub-group's lp partition to
  // its fp32 master partition (the cast and its clone: at most 4 B x one sub-group beyond the masters made so far);
  // then initialize_optimizer_states allocates torch.zeros(largest sub-group, fp32), points every sub-group's fp32
  // grad at a narrow() of it and, without offload, sets those grads to None at its end; only then come the IPG
  // bucket and grad_partitions_flat_buffer. So the init transient is 4 B x the largest sub-group over
  //   lp partitions 2Ψ/N + fp32 master 4Ψ/N
  // (the casts of _create_fp32_partitions never exceed it).
  const TinyModel m;
  {
    // N = 1, sub_group_size 2e6: w0 b0 w1 = 2,001,000 | b1 w2 b2 w3 = 2,002,000 | b3 = 1,000 (greedy packing).
    // lp 2 x 4,004,000 = 8,008,000 B; master 4 x 4,004,000 = 16,016,000 B; zero grad 4 x 2,002,000 = 8,008,000 B;
    auto z = zero_config(3);
    z.sub_group_size = 2'000'000;
    const auto r = walk(generate(make_workload(m), z, 1));
    const Sample* t = find_nth_alloc(r, -1, "init fp32 grad", 0);
    REQUIRE(t != nullptr);
    CHECK(t->tag(MemTag::FP32_GRADS) == Approx(8'008'000).epsilon(kTol));
    CHECK(t->tag(MemTag::FP32_MASTER) == Approx(16'016'000).epsilon(kTol));
    CHECK(t->tag(MemTag::LP_PARAMS) == Approx(8'008'000).epsilon(kTol));
    CHECK(t->tag(MemTag::IPG_BUCKET) == 0);
    CHECK(t->total == Approx(8'008'000 + 16'016'000 + 8'008'000).epsilon(kTol));
    CHECK(t->tag(MemTag::GRAD_PARTITION) == 0);
    CHECK(r.peak([](const Sample& s) { return s.tag(MemTag::FP32_GRADS); }, -1) == Approx(8'008'000).epsilon(kTol));
    const Sample* ipg = find_nth_alloc(r, -1, "ipg bucket", 0);
    REQUIRE(ipg != nullptr);
    CHECK(ipg->tag(MemTag::FP32_GRADS) == 0);
  }
  {
    // N = 2, no persistent params, sub_group_size 1e6: partitions of ceil(numel / 2): w 500,000, b 500 ->
    // w0 b0 w1 = 1,000,500 | b1 w2 b2 w3 = 1,001,000 | b3 = 500. lp 2 x 2,002,000 = 4,004,000 B; master
    // 4 x 2,002,000 = 8,008,000 B; zero grad 4 x 1,001,000 = 4,004,000 B.
    auto z = no_persistence();
    z.sub_group_size = 1'000'000;
    const auto r = walk(generate(make_workload(m), z, 2));
    const Sample* t = find_nth_alloc(r, -1, "init fp32 grad", 0);
    REQUIRE(t != nullptr);
    CHECK(t->tag(MemTag::FP32_GRADS) == Approx(4'004'000).epsilon(kTol));
    CHECK(t->total == Approx(4'004'000 + 8'008'000 + 4'004'000).epsilon(kTol));
    CHECK(last_of(r, -1)->tag(MemTag::FP32_GRADS) == 0);
  }
}

TEST_CASE(
    "Stage3Generator: grad_partitions_flat_buffer is allocated last at init, in zero.grad_accum_dtype "
    "(stage3.py _setup_for_real_optimizer)",
    "[zero][validation]") {
  // TinyModel at N = 1: Ψ = 4,004,000 elements, one partition of all of them. stage3.py l.742-746 sizes the buffer
  // with dtype=self.gradient_accumulation_dtype: 2 B x 4,004,000 = 8,008,000 B in the model's bf16/fp16,
  // 4 B x 4,004,000 = 16,016,000 B with fp32 accumulation. It comes after the IPG bucket.
  const TinyModel m;
  for (const auto& [dtype, bytes] : {std::pair{scenario::GradAccumDtype::MODEL, 8'008'000.0},
                                     std::pair{scenario::GradAccumDtype::FP32, 16'016'000.0}}) {
    auto z = zero_config(3);
    z.grad_accum_dtype = dtype;
    const auto r = walk(generate(make_workload(m), z, 1));
    const Sample* g = find_nth_alloc(r, -1, "grad partitions", 0);
    REQUIRE(g != nullptr);
    CHECK(g->tag(MemTag::GRAD_PARTITION) == Approx(bytes).epsilon(kTol));
    CHECK(g->tag(MemTag::IPG_BUCKET) > 0); // the bucket came first
  }
}

TEST_CASE(
    "Stage3Generator: persistent params (numel <= threshold) stay fully resident and are all-gathered after "
    "the step (§3.5) (zero_semantics §7.21)",
    "[zero][validation]") {
  // Default threshold 1e5: the four biases (1,000 elements each) persist: + 4,000 x 2 B of full lp params, and a
  // post-step all-gather of 4,000 x 2 B; the weights are gathered per block.
  const TinyModel m;
  const int n = 4;
  const auto r = walk(generate(make_workload(m), zero_config(3), n));
  const double persistent = 2.0 * 4 * static_cast<double>(m.bias_numel);
  REQUIRE(last_of(r, 1)->tag(MemTag::LP_PARAMS) == Approx(2 * psi(m) / n + persistent).epsilon(kTol));
  // Step 1: forward gathers of the 4 weights (kept through backward) + the persistent all-gather.
  const double weights = 2.0 * 4 * static_cast<double>(m.weight_numel);
  REQUIRE(r.stats(1, CollectiveKind::ALL_GATHER).payload == Approx(weights + persistent).epsilon(kTol));
  // Step 0: forward and backward weight gathers (no trace yet), the persistent params' first fetch and the
  // post-step all-gather.
  REQUIRE(r.stats(0, CollectiveKind::ALL_GATHER).payload == Approx(2 * weights + 2 * persistent).epsilon(kTol));
}

TEST_CASE(
    "Stage3Generator: the trace completes after the first micro-step so GA > 1 prefetches inside step 0 "
    "(partitioned_param_coordinator reset_step) (zero_semantics §7.23)",
    "[zero][validation]") {
  // GA = 2, reuse distance 0: micro-step 0 gathers one block at a time (4,004,000 B peak, see above); micro-step 1
  // of the same optimizer step already prefetches, so step 0's peak of gathered params exceeds one block.
  TinyModel m;
  m.grad_accum = 2;
  auto z = no_persistence();
  z.stage3_max_reuse_distance = 0;
  const auto r = walk(generate(make_workload(m), z, 4, 1));
  const double one_block = 2 * 2.0 * static_cast<double>(m.weight_numel + m.bias_numel);
  REQUIRE(r.peak([](const Sample& s) { return s.tag(MemTag::GATHER_BUFFER); }, 0) > one_block);
}

TEST_CASE(
    "Stage3Generator: with activation checkpointing the re-run forward fetches again: 3 gathers per param in the "
    "first step, 1 from the second (torch.utils.checkpoint re-enters the modules, parameter_offload.py hooks)",
    "[zero][validation]") {
  // Step 0 (trace being recorded, every release frees): forward gather, release; the recomputed forward inside
  // backward gathers again, releases; the backward gathers a third time: 3 x 2Ψ bytes of gathered payload
  // (without checkpointing 2 x 2Ψ, previous tests). From step 1, with the default reuse distance 1e9, the forward
  // keeps every param of this small model for its next use, so the recompute and backward gather nothing: 2Ψ.
  TinyModel m;
  m.checkpointing = true;
  const auto r = walk(generate(make_workload(m), no_persistence(), 4, 3));
  REQUIRE(r.stats(0, CollectiveKind::ALL_GATHER).payload == Approx(6 * psi(m)).epsilon(kTol));
  REQUIRE(r.stats(1, CollectiveKind::ALL_GATHER).payload == Approx(2 * psi(m)).epsilon(kTol));
  REQUIRE(r.stats(2, CollectiveKind::ALL_GATHER).payload == Approx(2 * psi(m)).epsilon(kTol));
  // With max_reuse_distance 0 and no prefetch (whose walk would keep a param it passes until that use) every
  // release frees, in every step: forward, recompute and backward each gather.
  auto z = no_persistence();
  z.stage3_max_reuse_distance = 0;
  z.stage3_prefetch_bucket_size = 0;
  const auto r0 = walk(generate(make_workload(m), z, 4, 2));
  REQUIRE(r0.stats(1, CollectiveKind::ALL_GATHER).payload == Approx(6 * psi(m)).epsilon(kTol));
}

TEST_CASE(
    "Stage3Generator: parameters are fetched and released per submodule, around its share of the layer's kernels "
    "(partitioned_param_coordinator.py fetch_sub_module / release_sub_module)",
    "[zero][validation]") {
  // Two blocks, each of two submodules: "attn" (one 3e7-element weight) and "mlp" (one 1e7-element weight), no
  // persistence, N_d = 4. DeepSpeed's post-forward hook of attn releases its weight before mlp's pre-forward hook
  // fetches mlp's, so in step 0 (trace recording: no prefetch, every release happens) each forward kernel runs
  // with its own weight alone gathered: attn 3e7 x 2 B = 6e7 B, mlp 1e7 x 2 B = 2e7 B (a whole-layer fetch would
  // hold 8e7 B through both). The kernels split by the submodules' numel: attn 3/4 of the layer's 1e9 forward
  // FLOPs and 2e9 backward FLOPs, mlp 1/4.
  auto wl = make_workload(TinyModel{2});
  wl.total_params = 0;
  for (auto& l : wl.layers) {
    l.params = {{l.name + ".attn.weight", 30'000'000, true}, {l.name + ".mlp.weight", 10'000'000, true}};
    l.param_count = 40'000'000;
    l.param_grad_bytes_lp = Bytes(2.0 * 40e6);
    wl.total_params += l.param_count;
  }
  wl.trainable_params = wl.total_params;
  wl.largest_tensor_numel = 30'000'000;
  wl.largest_layer_params = 30'000'000;
  const auto p = generate(wl, no_persistence(), 4);
  const auto r = walk(p);
  REQUIRE_FALSE(r.deadlock);
  const auto* attn = find_nth_op(r, 0, "fwd block.0.attn", 0);
  const auto* mlp = find_nth_op(r, 0, "fwd block.0.mlp", 0);
  REQUIRE(attn != nullptr);
  REQUIRE(mlp != nullptr);
  CHECK(attn->tag(MemTag::GATHER_BUFFER) == Approx(6e7).epsilon(kTol));
  CHECK(mlp->tag(MemTag::GATHER_BUFFER) == Approx(2e7).epsilon(kTol));
  // Backward runs the parts in reverse: mlp first, then attn, each with its own weight gathered again.
  const auto* mlp_bwd = find_nth_op(r, 0, "bwd block.1.mlp", 0);
  const auto* attn_bwd = find_nth_op(r, 0, "bwd block.1.attn", 0);
  REQUIRE(mlp_bwd != nullptr);
  REQUIRE(attn_bwd != nullptr);
  CHECK(mlp_bwd->tag(MemTag::GATHER_BUFFER) == Approx(2e7).epsilon(kTol));
  CHECK(attn_bwd->tag(MemTag::GATHER_BUFFER) == Approx(6e7).epsilon(kTol));
  // The FLOP split, read from the program's Compute ops of step 0's first pass.
  auto flops_of = [&](const std::string& label) {
    for (const auto& st : p.streams)
      for (const auto& op : st.ops)
        if (p.labels[op.label] == label)
          if (const auto* c = std::get_if<program::Compute>(&op.body))
            return c->flops.value();
    return -1.0;
  };
  CHECK(flops_of("fwd block.0.attn") == Approx(0.75e9).epsilon(kTol));
  CHECK(flops_of("fwd block.0.mlp") == Approx(0.25e9).epsilon(kTol));
  CHECK(flops_of("bwd block.0.attn") == Approx(1.5e9).epsilon(kTol));
  CHECK(flops_of("bwd block.0.mlp") == Approx(0.5e9).epsilon(kTol));
}

TEST_CASE(
    "Stage3Generator: with activation checkpointing the reuse distance walks the recompute too: a recompute keeps "
    "its params for the backward right after it (partitioned_param_coordinator.py __params_to_release)",
    "[zero][validation]") {
  // 4 checkpointed blocks of one 1,001,000-element submodule (weight + bias, no persistence), N_d = 4. The
  // recorded order of a micro-step: forward 0 1 2 3, then per block from the last its recompute and its backward:
  // 3 3 2 2 1 1 0 0. Step 1 (trace complete; step 0 releases everything), without prefetch (bucket 0: every use
  // fetches on demand, one call each), with stage3_max_reuse_distance = 1.5e6:
  // - forward of block u < 3 is released: before its recompute come >= 2 other modules (>= 2.0e6 numel);
  //   block 3 is kept (its recompute is the next module);
  // - every recompute keeps its params: its backward is the next module (distance 0);
  // - backward releases (no later use in the micro-step).
  // All-gather calls: forward 4 + recompute of blocks 2, 1, 0 = 3 + backward 0 = 7. With distance 0 every use
  // gathers: 4 + 4 + 4 = 12. With the default 1e9 the whole 4e6-numel model stays gathered from forward to
  // backward: 4. With the default prefetch bucket (5e7) the first fetch's walk takes blocks 1-3 in one call and
  // goes on to the end of the trace, past every block's recompute and backward use while it is gathered, so every
  // block is kept until its last use whatever the distance (partitioned_param_coordinator.py l.470-472, l.642-651):
  // 2 calls.
  TinyModel m;
  m.checkpointing = true;
  const auto wl = make_workload(m);
  auto calls = [&](Elements reuse, Elements bucket) {
    auto z = no_persistence();
    z.stage3_max_reuse_distance = reuse;
    z.stage3_prefetch_bucket_size = bucket;
    auto r = walk(generate(wl, z, 4));
    REQUIRE_FALSE(r.deadlock);
    return r.stats(1, CollectiveKind::ALL_GATHER).calls;
  };
  CHECK(calls(1'500'000, 0) == 7);
  CHECK(calls(0, 0) == 12);
  CHECK(calls(1'000'000'000, 0) == 4);
  for (const Elements reuse : {Elements{0}, Elements{1'500'000}, Elements{1'000'000'000}})
    CHECK(calls(reuse, 50'000'000) == 2);
}

TEST_CASE(
    "Stage3Generator: a submodule the prefetch walk passes while it is gathered stays gathered until that later use, "
    "counted against max_live_parameters (partitioned_param_coordinator.py __params_to_release)",
    "[zero][validation]") {
  // TinyModel with the default persistence: the 1,000-element biases persist, so each of the 4 block submodules
  // gathers one 1,000,000-element weight w (2,000,000 B in its own buffer when gathered alone); N_d = 4, reuse
  // distance 0, so only the prefetch marks can keep a block. Trace positions: forward 0-3 = blocks 0-3, backward
  // 4-7 = blocks 3, 2, 1, 0. fetch_sub_module marks every param its walk pops with that use's step id, whether it
  // takes it or skips it as AVAILABLE / INFLIGHT (l.470-472), and __params_to_release keeps a param marked for a
  // later use (l.642-651). All-gather calls in step 1 (trace complete), the post-step persistent all-gather included:
  // - default max_live (1e9), prefetch bucket 5e7: w0 on demand; its walk takes w1-w3 in one call and runs to the
  //   end of the trace, marking each block's backward use: nothing is released before its backward, which gathers
  //   nothing: 2 + 1 = 3 calls (7 if each block were released after its forward use and gathered again).
  // - max_live 2.5e6 (available = gathered or in-flight numel; budget = min(2.5e6 - available, 5e7)):
  //   pos 0: w0 on demand (available 1e6), budget 1.5e6: the walk takes w1, w2 (one call; 3e6); block 0 released
  //     (2e6).
  //   pos 1: budget 0.5e6: passes w2, takes w3 (3e6); block 1 released (2e6).
  //   pos 2: budget 0.5e6: passes block 3 (pos 3, 4) and block 2 itself (pos 5), takes w1 for pos 6 (3e6); block 2,
  //     marked for pos 5, is KEPT.
  //   pos 3: budget 2.5e6 - 3e6 < 0 (the kept w2 counts): no walk; block 3, marked for pos 4, is kept. While block
  //     3's forward runs w1, w2, w3 are gathered: 3 x 2,000,000 = 6,000,000 B (were w2 not counted, this walk would
  //     take w0 too: 8,000,000 B).
  //   pos 4: no budget; block 3 released (2e6). pos 5: budget 0.5e6: passes w1, takes w0. pos 6, 7: nothing.
  //   -> 5 calls + 1 = 6, payload 6 weights x 2,000,000 B + the biases 4 x 1,000 x 2 B = 12,008,000 B (releasing
  //   block 2 at pos 2 and block 3 at pos 3 would gather both again: 8 calls).
  const TinyModel m;
  auto z = zero_config(3);
  z.stage3_max_reuse_distance = 0;
  const auto r = walk(generate(make_workload(m), z, 4));
  REQUIRE_FALSE(r.deadlock);
  CHECK(r.stats(1, CollectiveKind::ALL_GATHER).calls == 3);
  z.stage3_max_live_parameters = 2'500'000;
  const auto rl = walk(generate(make_workload(m), z, 4));
  REQUIRE_FALSE(rl.deadlock);
  CHECK(rl.stats(1, CollectiveKind::ALL_GATHER).calls == 6);
  CHECK(rl.stats(1, CollectiveKind::ALL_GATHER).payload == Approx(12'008'000).epsilon(kTol));
  const auto* fwd3 = find_nth_op(rl, 1, "fwd block.3", 0);
  REQUIRE(fwd3 != nullptr);
  CHECK(fwd3->tag(MemTag::GATHER_BUFFER) == Approx(6'000'000).epsilon(kTol));
}

TEST_CASE("Stage3Generator: a checkpointed layer's re-run forward creates each submodule's tensors when its part runs",
          "[zero][unit]") {
  // two_submodule_layer with full checkpointing: the 1e6 B input kept, 8e6 B re-materialised as 5e6 (blk.a) and
  // 3e6 (blk.b). Stage 3 re-runs the forward per submodule, each part after its fetch (the recompute's
  // pre-forward hooks): during blk.a's recompute only its 5e6 B exist, during blk.b's the 8e6 B. At the end of the
  // program nothing of the layer is live.
  auto wl = two_submodule_layer();
  auto& l = wl.layers.front();
  l.activation_tensors = {Bytes(1e6)};
  l.activation_modules = {""};
  l.saved_activations = Bytes(1e6);
  l.recompute_tensors = {Bytes(5e6), Bytes(3e6)};
  l.recompute_modules = {"blk.a", "blk.b"};
  l.recompute_activations = Bytes(8e6);
  l.recompute_flops = l.fwd_flops;
  l.recompute_bytes = l.fwd_bytes;
  const auto r = walk(generate(wl, no_persistence(), 2));
  REQUIRE_FALSE(r.deadlock);
  const Sample* re_a = &op_at(r, 1, "recompute blk.a");
  const Sample* re_b = &op_at(r, 1, "recompute blk.b");
  CHECK(re_a < re_b);
  CHECK(re_a->tag(MemTag::WORKING) == Approx(5e6).epsilon(kTol));
  CHECK(re_b->tag(MemTag::WORKING) == Approx(8e6).epsilon(kTol));
  for (const auto& [id, tag] : r.live_at_end)
    CHECK((tag != MemTag::ACTIVATIONS && tag != MemTag::WORKING));
}

TEST_CASE("Stage3Generator: a layer's forward creates each submodule's saved tensors when that part runs",
          "[zero][unit]") {
  // two_submodule_layer: blk.a saves 4e6 B, blk.b two tensors of 2e6 B. Stage 3 runs the forward per submodule,
  // each part after its fetch: during blk.a's kernels only its own 4e6 B exist (blk.b's ops have not run), during
  // blk.b's all 8e6 B. (Allocated at the layer's start, both parts would see 8e6 B.)
  const auto r = walk(generate(two_submodule_layer(), no_persistence(), 2));
  REQUIRE_FALSE(r.deadlock);
  const Sample* fwd_a = &op_at(r, 1, "fwd blk.a");
  const Sample* fwd_b = &op_at(r, 1, "fwd blk.b");
  CHECK(fwd_a < fwd_b);
  CHECK(fwd_a->tag(MemTag::ACTIVATIONS) == Approx(4e6).epsilon(kTol));
  CHECK(fwd_b->tag(MemTag::ACTIVATIONS) == Approx(8e6).epsilon(kTol));
}

namespace {

/// Sum of the bytes of the Collective ops labelled `label` in `p` (every step).
double collective_bytes(const program::StepProgram& p, const std::string& label) {
  double sum = 0;
  for (const auto& st : p.streams)
    for (const auto& op : st.ops)
      if (p.labels[op.label] == label)
        if (const auto* c = std::get_if<program::Collective>(&op.body))
          sum += c->bytes.value();
  return sum;
}

/// Sum of the bytes of the Alloc ops labelled `label` in `p`.
double alloc_bytes(const program::StepProgram& p, const std::string& label) {
  double sum = 0;
  for (const auto& st : p.streams)
    for (const auto& op : st.ops)
      if (p.labels[op.label] == label)
        if (const auto* a = std::get_if<program::Alloc>(&op.body))
          sum += a->bytes.value();
  return sum;
}

/// One layer per tensor: layer i is the module "blk.i" with the single parameter "blk.i.weight" of numel[i].
workload::Workload one_param_layers(const std::vector<Elements>& numel) {
  workload::Workload w;
  w.bytes_per_lp = 2.0;
  for (std::size_t i = 0; i < numel.size(); ++i) {
    workload::Layer l;
    l.name = "blk." + std::to_string(i);
    l.params.push_back({l.name + ".weight", numel[i], true});
    l.param_count = numel[i];
    l.fwd_flops = Flops(1e6);
    l.bwd_flops = Flops(2e6);
    l.param_grad_bytes_lp = Bytes(2.0 * static_cast<double>(numel[i]));
    w.total_params += numel[i];
    w.largest_tensor_numel = std::max(w.largest_tensor_numel, numel[i]);
    w.largest_layer_params = w.largest_tensor_numel;
    w.layers.push_back(l);
  }
  w.trainable_params = w.total_params;
  return w;
}

} // namespace

TEST_CASE(
    "Stage3Generator: stage3_model_persistence_threshold caps the persistent numel in one greedy pass that skips, "
    "not stops (parameter_offload.py mark_persistent_parameters)",
    "[zero][validation]") {
  // Tensors in registration order 600, 1500, 900, 500, 100 elements; param threshold 2000 (all small enough), model
  // threshold 2000, N_d = 4 (every numel divisible by 4: no padding). DeepSpeed's pass:
  //   600: 0 + 600 <= 2000, persist (total 600); 1500: 600 + 1500 = 2100 > 2000, skipped (continue);
  //   900: 1500, persist; 500: 2000 (not > 2000), persist; 100: 2100 > 2000, skipped.
  // Persistent: 600 + 900 + 500 = 2000 elements -> 4,000 B of full lp params on every rank and a post-step
  // all-gather of 4,000 B. (A `break` at 1500 would keep 600 only; no cap keeps all 3,600 -> 7,200 B.)
  const auto wl = one_param_layers({600, 1500, 900, 500, 100});
  auto z = zero_config(3);
  z.stage3_param_persistence_threshold = 2000;
  z.stage3_model_persistence_threshold = 2000;
  const auto p = generate(wl, z, 4, 1);
  CHECK(alloc_bytes(p, "persistent params") == Approx(4000).epsilon(kTol));
  CHECK(collective_bytes(p, "allgather persistent params") == Approx(4000).epsilon(kTol));
  // Only the skipped tensors are gathered as ordinary params at their fetch; the persistent ones ride their first
  // fetch alone ("allgather persistent <module>").
  CHECK(collective_bytes(p, "allgather persistent blk.0") == Approx(2 * 600).epsilon(kTol));
  CHECK(collective_bytes(p, "allgather persistent blk.2") == Approx(2 * 900).epsilon(kTol));
  CHECK(collective_bytes(p, "allgather persistent blk.3") == Approx(2 * 500).epsilon(kTol));
  CHECK(collective_bytes(p, "allgather persistent blk.1") == 0);
  CHECK(collective_bytes(p, "allgather blk.1") > 0);
  CHECK(collective_bytes(p, "allgather blk.4") > 0);
  // The default (sys.maxsize) caps nothing.
  z.stage3_model_persistence_threshold = scenario::ZeroConfig::kNoPersistenceCap;
  CHECK(alloc_bytes(generate(wl, z, 4, 1), "persistent params") == Approx(2 * 3600).epsilon(kTol));
}

TEST_CASE(
    "Stage3Generator: stage3_model_persistence_threshold walks Hugging Face's registration order, LLaMA norms after "
    "the projections, OPT's final norm before the layers (parameter_offload.py named_parameters)",
    "[zero][validation]") {
  scenario::TrainingSpec t;
  t.seq_len = 16;
  auto z = zero_config(3);
  z.stage3_param_persistence_threshold = 100;
  SECTION("Qwen2-style LLaMA block: q/k/v biases are registered before input_layernorm") {
    // h = 64, 4 heads of 16, 1 KV head: q bias 64, k and v biases 16 each, norms 64. LlamaDecoderLayer registers
    // self_attn (q.b 64, k.b 16, v.b 16), mlp, then input_layernorm 64, post_attention_layernorm 64. Cap 150:
    //   layer 0: q.b 64, k.b 80, v.b 96; input_layernorm 160 > 150 skip; post 160 skip;
    //   layer 1: q.b 160 skip; k.b 112, v.b 128; norms 192 skip; final norm 192 skip.
    // Persistent 128 elements (the forward order would keep input_layernorm 0, q.b 0, k.b 0: 144). N_d = 4, no
    // padding: post-step all-gather 2 x 128 = 256 B; layer 0's input_layernorm is gathered as an ordinary param.
    scenario::ModelSpec m;
    m.family = scenario::ModelFamily::LLAMA;
    m.hidden = 64;
    m.layers = 2;
    m.heads = 4;
    m.kv_heads = 1;
    m.intermediate = 128;
    m.vocab = 256;
    m.attention_bias = scenario::AttentionBias::QKV;
    z.stage3_model_persistence_threshold = 150;
    const auto p = generate(workload::build_workload(m, t), z, 4, 1);
    CHECK(collective_bytes(p, "allgather persistent params") == Approx(256).epsilon(kTol));
    CHECK(collective_bytes(p, "allgather layers.0.input_layernorm") > 0);
    CHECK(collective_bytes(p, "allgather persistent layers.0.input_layernorm") == 0);
  }
  SECTION("OPT: the decoder's final_layer_norm is registered before its layers") {
    // OPTDecoder registers embed_tokens, embed_positions, final_layer_norm, layers. h = 64: the final norm's weight
    // and bias (64 each) come first among the small tensors; cap 128 keeps exactly those two, so it is the one
    // module gathered as "persistent", and layer 0's q_proj bias (first in forward order) is not persistent.
    scenario::ModelSpec m;
    m.family = scenario::ModelFamily::OPT;
    m.hidden = 64;
    m.layers = 2;
    m.heads = 4;
    m.kv_heads = 4;
    m.intermediate = 256;
    m.vocab = 256;
    m.max_positions = 64;
    z.stage3_model_persistence_threshold = 128;
    const auto p = generate(workload::build_workload(m, t), z, 4, 1);
    CHECK(collective_bytes(p, "allgather persistent params") == Approx(2 * 128).epsilon(kTol));
    CHECK(collective_bytes(p, "allgather persistent ln_f") == Approx(2 * 128).epsilon(kTol));
    CHECK(collective_bytes(p, "allgather persistent layers.0.self_attn.q_proj") == 0);
  }
}

TEST_CASE(
    "Stage3Generator: stage3_use_all_reduce_for_fetch_params all-reduces a zeroed flat buffer that the params view, "
    "instead of all-gathering and copying (partition_parameters.py _all_gather_coalesced)",
    "[zero][validation]") {
  // No persistence, reuse distance 0 and no prefetch (every use gathers), N_d = 4: each block's fetch is weight + bias, 1,001,000
  // elements (no padding) = 2,002,000 B. All-gather (default): a flat buffer plus the per-param cat copies, 2 x
  // 2,002,000 B while one block is fetched in step 0; all-reduce: the flat buffer only, 2,002,000 B. Per step 8
  // block gathers (4 forward, 4 backward) = 16,016,000 B of payload either way, but an all-reduce puts 2(N-1)/N of
  // it on the wire: 24,024,000 B against the all-gather's 12,012,000 B; the gradient reduce-scatter adds 3/4 x 2Ψ =
  // 6,006,000 B to both. Calls in step 1: one per fetch, 8 all-reduces (the next test has a prefetch's one call).
  const TinyModel m;
  const int n = 4;
  auto z = no_persistence();
  z.stage3_max_reuse_distance = 0;
  z.stage3_prefetch_bucket_size = 0;
  const auto base = walk(generate(make_workload(m), z, n));
  z.stage3_use_all_reduce_for_fetch_params = true;
  const auto r = walk(generate(make_workload(m), z, n));
  auto gathered = [](const Sample& s) { return s.tag(MemTag::GATHER_BUFFER); };
  CHECK(base.peak(gathered, 0) == Approx(4'004'000).epsilon(kTol));
  CHECK(r.peak(gathered, 0) == Approx(2'002'000).epsilon(kTol));
  CHECK(r.stats(1, CollectiveKind::ALL_GATHER).calls == 0);
  CHECK(r.stats(1, CollectiveKind::ALL_REDUCE).calls == 8);
  CHECK(r.stats(1, CollectiveKind::ALL_REDUCE).payload == Approx(16'016'000).epsilon(kTol));
  CHECK(base.stats(1, CollectiveKind::ALL_GATHER).payload == Approx(16'016'000).epsilon(kTol));
  CHECK(r.wire_bytes(1, n) == Approx(24'024'000 + 6'006'000).epsilon(kTol));
  CHECK(base.wire_bytes(1, n) == Approx(12'012'000 + 6'006'000).epsilon(kTol));
}

TEST_CASE(
    "Stage3Generator: with stage3_use_all_reduce_for_fetch_params a single-param fetch still all-gathers, a "
    "prefetch of several is one all-reduce freed with its last param, and persistent params riding a first fetch "
    "keep its flat buffer until the step (partition_parameters.py)",
    "[zero][validation]") {
  // Default persistence (the 1,000-element biases persist), N_d = 4. Step 0 forward: each block's first fetch is
  // weight + bias, two params -> all-reduce of a 1,001,000-element flat buffer (2,002,000 B); the bias keeps viewing
  // it after the weight is released, until the step's release_and_reset_all: 4 x 2,002,000 = 8,008,000 B at the end
  // of the forward. Step 0 backward (trace incomplete) re-fetches each weight alone: one param, _all_gather_sequential
  // into its own 2,000,000 B buffer: peak 10,008,000 B. From step 1 every fetch is the weight alone (the biases are
  // AVAILABLE): block 0's fetch all-gathers 2,000,000 B, but the prefetch that follows takes blocks 1-3 in one call
  // (__all_gather_params), three params: one all-reduce of 6,000,000 B whose buffer all three weights view, kept
  // (default reuse distance) until the backward releases blocks 3, 2 and then 1, when it is freed and only block 0's
  // 2,000,000 B remain. The post-step persistent all-gather adds 4 x 2,000 B.
  const TinyModel m;
  auto z = zero_config(3);
  z.stage3_use_all_reduce_for_fetch_params = true;
  const auto r = walk(generate(make_workload(m), z, 4));
  auto gathered = [](const Sample& s) { return s.tag(MemTag::GATHER_BUFFER); };
  CHECK(r.stats(0, CollectiveKind::ALL_REDUCE).payload == Approx(8'008'000).epsilon(kTol));
  CHECK(r.peak(gathered, 0) == Approx(10'008'000).epsilon(kTol));
  CHECK(last_of(r, 0)->tag(MemTag::GATHER_BUFFER) == 0);
  CHECK(r.stats(1, CollectiveKind::ALL_REDUCE).calls == 1);
  CHECK(r.stats(1, CollectiveKind::ALL_REDUCE).payload == Approx(6'000'000).epsilon(kTol));
  CHECK(r.stats(1, CollectiveKind::ALL_GATHER).payload == Approx(2'008'000).epsilon(kTol));
  CHECK(r.peak(gathered, 1) == Approx(8'000'000).epsilon(kTol));
  const Sample* freed = r.find(1, "allreduce flat block.1 +2", true);
  REQUIRE(freed != nullptr);
  CHECK(freed->tag(MemTag::GATHER_BUFFER) == Approx(2'000'000).epsilon(kTol));
}

TEST_CASE(
    "Stage3Generator: stage3_allgather_sequential gathers each param into its own buffer and prefetches one param "
    "(partition_parameters.py _all_gather_sequential, engine.py prefetch_bucket_size = 1)",
    "[zero][validation]") {
  // No persistence, reuse distance 0, N_d = 4; each block is weight w (1,000,000 -> 2,000,000 B) + bias b (1,000 ->
  // 2,000 B), no padding; trace positions: forward 0-3 = blocks 0-3, backward 4-7 = blocks 3, 2, 1, 0. Step 0 (no
  // prefetch): one block gathered at a time, 2,002,000 B, without the coalesced path's flat buffer (4,004,000 B).
  // Step 1: the prefetch budget is 1 element, so each fetch's walk takes the next param not yet gathered, one
  // all-gather each: pos 0: w0, b0, then w1 (3); pos 1: b1, w2 (2); pos 2: b2, w3 (2); pos 3: b3, then the walk
  // passes block 3's backward use (pos 4) while block 3 is gathered and takes w2 for pos 5 (2), so block 3 is kept
  // (partitioned_param_coordinator.py l.642-651); pos 4: nothing to fetch, the walk takes b2 (1); pos 5: w1 (1);
  // pos 6: b1, w0 (2); pos 7: b0 (1): 14 all-gathers of 7 blocks, 14,014,000 B. The peak is at pos 4: block 3
  // and block 2, 2 x 2,002,000 = 4,004,000 B. The coalesced path (the default 5e7 budget): block 0 on demand, then
  // one prefetch of blocks 1-3 whose walk passes every backward use, so nothing is gathered again: 2 calls.
  const TinyModel m;
  const int n = 4;
  auto z = no_persistence();
  z.stage3_max_reuse_distance = 0;
  const auto base = walk(generate(make_workload(m), z, n));
  z.stage3_allgather_sequential = true;
  const auto r = walk(generate(make_workload(m), z, n));
  auto gathered = [](const Sample& s) { return s.tag(MemTag::GATHER_BUFFER); };
  CHECK(r.stats(1, CollectiveKind::ALL_GATHER).calls == 14);
  CHECK(base.stats(1, CollectiveKind::ALL_GATHER).calls == 2);
  CHECK(r.stats(1, CollectiveKind::ALL_GATHER).payload == Approx(14'014'000).epsilon(kTol));
  CHECK(r.peak(gathered, 0) == Approx(2'002'000).epsilon(kTol));
  CHECK(base.peak(gathered, 0) == Approx(4'004'000).epsilon(kTol));
  CHECK(r.peak(gathered, 1) == Approx(4'004'000).epsilon(kTol));
  CHECK(base.peak(gathered, 1) > 4'004'000);
  // use_all_reduce_for_fetch_params does not apply: _all_gather_sequential is taken first (l.1570).
  z.stage3_use_all_reduce_for_fetch_params = true;
  CHECK(walk(generate(make_workload(m), z, n)).stats(1, CollectiveKind::ALL_REDUCE).calls == 0);
}

TEST_CASE(
    "Stage3Generator: with stage3_allgather_sequential the post-step gather of persistent params is one all-gather "
    "per param (partition_parameters.py _allgather_params_sequential)",
    "[zero][validation]") {
  // Default persistence: the four 1,000-element biases persist. Step 1 with the default reuse distance: the four
  // weights are gathered once each in the forward (kept to the backward), then _post_step gathers the biases:
  // sequential 4 + 4 = 8 all-gathers; coalesced 2 + 1 = 3 (w0 on demand, then w1-w3 in the one prefetch call that
  // follows it); payload 4 x 2,000,000 + 4 x 2,000 = 8,008,000 B either way.
  const TinyModel m;
  auto z = zero_config(3);
  const auto base = walk(generate(make_workload(m), z, 4));
  z.stage3_allgather_sequential = true;
  const auto r = walk(generate(make_workload(m), z, 4));
  CHECK(r.stats(1, CollectiveKind::ALL_GATHER).calls == 8);
  CHECK(base.stats(1, CollectiveKind::ALL_GATHER).calls == 3);
  CHECK(r.stats(1, CollectiveKind::ALL_GATHER).payload == Approx(8'008'000).epsilon(kTol));
  CHECK(base.stats(1, CollectiveKind::ALL_GATHER).payload == Approx(8'008'000).epsilon(kTol));
}

TEST_CASE(
    "Stage3Generator: without contiguous_gradients there is no IPG bucket and the grads wait in their own "
    "tensors for the bucket's reduce-scatter (stage3.py l.731, l.1548, l.1595)",
    "[zero][validation]") {
  // TinyModel at N = 2, reduce_bucket_size 1.5e6: the weights (1e6 elements each) go one per bucket. With
  // contiguous_gradients the bucket is allocated at init (2 B x 1.5e6 = 3,000,000 B) and each grad is copied into
  // it and dropped; without, no bucket exists, and a weight's 2 x 1e6 = 2,000,000 B lp grad stays allocated until
  // its bucket is reduce-scattered, so lp grads peak at >= one weight's grad, and the run reduce-scatters the same
  // bytes (same buckets, reduce_scatter_coalesced both ways).
  const TinyModel m;
  auto on = no_persistence();
  on.reduce_bucket_size = 1'500'000;
  auto off = on;
  off.contiguous_gradients = false;
  const auto r_on = walk(generate(make_workload(m), on, 2));
  const auto r_off = walk(generate(make_workload(m), off, 2));
  REQUIRE(find_nth_alloc(r_on, -1, "ipg bucket", 0) != nullptr);
  CHECK(find_nth_alloc(r_off, -1, "ipg bucket", 0) == nullptr);
  CHECK(r_off.peak([](const Sample& s) { return s.tag(MemTag::IPG_BUCKET); }, 1) == 0);
  CHECK(r_off.peak([](const Sample& s) { return s.tag(MemTag::LP_GRADS); }, 1) >= 2'000'000.0 * (1 - kTol));
  CHECK(r_off.stats(1, CollectiveKind::REDUCE_SCATTER).payload ==
        Approx(r_on.stats(1, CollectiveKind::REDUCE_SCATTER).payload).epsilon(kTol));
  // Every grad is freed by the end of the step.
  CHECK(last_of(r_off, 1)->tag(MemTag::LP_GRADS) == 0);
}

TEST_CASE(
    "Stage3Generator: a prefetch of several submodules is ONE coalesced all-gather whose first wait makes every "
    "param's full tensor and whose flat output lives until the last of them is waited for "
    "(partitioned_param_coordinator.py __all_gather_params, partition_parameters.py AllGatherCoalescedHandle)",
    "[zero][validation]") {
  // TinyModel, no persistence, default reuse distance (everything stays gathered from forward to backward), N_d = 4,
  // no padding; one block = w + b = 1,001,000 elements = 2,002,000 B. Step 1 (trace complete):
  //  - block 0's fetch: on-demand coalesced call of w0 + b0: flat 2,002,000 B at the issue, the full tensors
  //    (torch.cat at the wait) 2,002,000 B, the flat freed as the fetch pops both params -> 2,002,000 B;
  //  - then the prefetch (budget min(1e9 - 1,001,000, 5e7)) takes w1 b1 w2 b2 w3 b3: ONE all-gather of
  //    3 x 2,002,000 = 6,006,000 B into one flat buffer allocated now; no full tensor yet -> 8,008,000 B;
  //  - block 1's fetch is the call's first wait: it unpacks ALL six params (blocks 1, 2 and 3: +6,006,000 B, one
  //    cat kernel reading and writing 3,003,000 x 2 B = 12,012,000 B on the all-gather stream) while the flat is
  //    still held -> 14,014,000 B, the step's peak (one block on demand + 3 blocks twice);
  //  - block 3's fetch pops the call's last params: the flat is freed -> 4 x 2,002,000 = 8,008,000 B.
  // The old per-submodule model (a flat + full tensors per prefetched block at the issue) issued 3 calls and held
  // 14,014,000 B already before block 1's fetch.
  const TinyModel m;
  const auto p = generate(make_workload(m), no_persistence(), 4);
  const auto r = walk(p);
  REQUIRE_FALSE(r.deadlock);
  CHECK(r.stats(1, CollectiveKind::ALL_GATHER).calls == 2);
  CHECK(collective_bytes(p, "allgather block.1 +2") == Approx(6'006'000).epsilon(kTol));
  auto gathered = [](const Sample& s) { return s.tag(MemTag::GATHER_BUFFER); };
  const Sample* flat = r.find(1, "allgather flat block.1 +2", false);
  REQUIRE(flat != nullptr);
  CHECK(flat->tag(MemTag::GATHER_BUFFER) == Approx(8'008'000).epsilon(kTol));
  // Block 3's full tensor is made at block 1's fetch, before block 1's forward kernel.
  const Sample* full3 = find_nth_alloc(r, 1, "gathered block.3", 0);
  REQUIRE(full3 != nullptr);
  CHECK(full3->tag(MemTag::GATHER_BUFFER) == Approx(14'014'000).epsilon(kTol));
  const auto index = [&](const Sample& s) { return &s - r.timeline.data(); };
  CHECK(index(*full3) < index(op_at(r, 1, "fwd block.1")));
  CHECK(r.peak(gathered, 1) == Approx(14'014'000).epsilon(kTol));
  // The flat buffer is freed at block 3's fetch (the host's, here the compute stream's, tensor free; its block was
  // record_stream'd on the all-gather stream): after block 2's forward kernel, before block 3's.
  const Sample* freed = nullptr;
  for (const auto& s : r.timeline)
    if (s.step == 1 && s.is_free && s.label == "allgather flat block.1 +2" && r.stream_names[s.stream] == "compute")
      freed = &s;
  REQUIRE(freed != nullptr);
  CHECK(freed->tag(MemTag::GATHER_BUFFER) == Approx(8'008'000).epsilon(kTol));
  CHECK(index(op_at(r, 1, "fwd block.2")) < index(*freed));
  CHECK(index(*freed) < index(op_at(r, 1, "fwd block.3")));
  // One unpack kernel for the whole call.
  double unflatten = 0;
  int kernels = 0;
  for (const auto& st : p.streams)
    for (const auto& op : st.ops)
      if (p.labels[op.label] == "unflatten block.1 +2")
        if (const auto* c = std::get_if<program::Compute>(&op.body)) {
          unflatten += c->bytes.value();
          ++kernels;
        }
  CHECK(kernels == 1);
  CHECK(unflatten == Approx(12'012'000).epsilon(kTol));
}

TEST_CASE(
    "Stage3Generator: the prefetch budget is counted per param, so a prefetch can split a submodule and the rest "
    "comes with the next prefetch (partitioned_param_coordinator.py l.452-484)",
    "[zero][validation]") {
  // TinyModel, no persistence, default reuse distance, N_d = 4, stage3_prefetch_bucket_size 1.5e6. Step 1:
  //  - block 0's fetch gathers w0 + b0 (1,001,000) on demand; its prefetch budget is min(1e9 - 1,001,000, 1.5e6) =
  //    1.5e6: the queue gives w1 (1,000,000 taken), b1 (1,001,000 < 1.5e6, taken), w2 (2,001,000: taken, over the
  //    budget, which is checked before each param) -> ONE call of 2,001,000 elements = 4,002,000 B, labelled by its
  //    first submodule (block.1, +1 more);
  //  - block 1's fetch: budget min(1e9 - 3,002,000, 1.5e6) = 1.5e6: b2 (block 2's rest), w3, b3 -> 1,002,000
  //    elements = 2,004,000 B ("block.2 +1"); nothing else is NOT_AVAILABLE (the backward reuses what is kept);
  //  - block 2's fetch waits for both calls.
  // 3 all-gathers, 2,002,000 + 4,002,000 + 2,004,000 = 8,008,000 B = 2Ψ B, as with one call per block.
  const TinyModel m;
  auto z = no_persistence();
  z.stage3_prefetch_bucket_size = 1'500'000;
  const auto p = generate(make_workload(m), z, 4);
  const auto r = walk(p);
  REQUIRE_FALSE(r.deadlock);
  CHECK(r.stats(1, CollectiveKind::ALL_GATHER).calls == 3);
  CHECK(r.stats(1, CollectiveKind::ALL_GATHER).payload == Approx(8'008'000).epsilon(kTol));
  CHECK(collective_bytes(p, "allgather block.1 +1") == Approx(4'002'000).epsilon(kTol));
  CHECK(collective_bytes(p, "allgather block.2 +1") == Approx(2'004'000).epsilon(kTol));
  // Block 2's weight's full tensor is made by block 1's wait, its bias's by block 2's.
  const Sample* w2 = find_nth_alloc(r, 1, "gathered block.2", 0);
  const Sample* b2 = find_nth_alloc(r, 1, "gathered block.2", 1);
  REQUIRE(w2 != nullptr);
  REQUIRE(b2 != nullptr);
  const auto index = [&](const Sample& s) { return &s - r.timeline.data(); };
  CHECK(index(*w2) < index(op_at(r, 1, "fwd block.1")));
  CHECK(index(op_at(r, 1, "fwd block.1")) < index(*b2));
  CHECK(index(*b2) < index(op_at(r, 1, "fwd block.2")));
}

TEST_CASE(
    "Stage3Generator: the next step's first all-gather waits for the step's last fp32 -> lp copy through _post_step's "
    "device synchronize when params persist (partition_parameters.py l.2097-2098)",
    "[zero][unit]") {
  // DeepSpeed v0.19.6: the host issues a fetch's all-gather on the all-gather stream with no wait_stream on the
  // compute stream (partitioned_param_coordinator.py l.606-608), and the stream reads the lp partitions that the
  // step's copy_ wrote on the compute stream (stage3.py l.2585-2590). What orders them is the host: _post_step
  // all-gathers the persistent params (stage3.py l.2571-2572) with a blocking call that ends in
  // get_accelerator().synchronize() (coalesced l.2097-2098, stage3_allgather_sequential l.2157-2158). TinyModel's
  // biases (1,000 elements <= 1e5) persist. GA = 2, so the trace check at the second forward (reset_step) falls in
  // step 0 and cannot be what orders the step boundary, and the loop reads no loss (training.loss_sync false), so
  // its .item() after engine.step() cannot either.
  TinyModel m;
  m.grad_accum = 2;
  auto wl = make_workload(m);
  wl.training.loss_sync = false;
  for (const bool sequential : {false, true}) {
    INFO("stage3_allgather_sequential " << sequential);
    auto z = zero_config(3);
    z.stage3_allgather_sequential = sequential;
    const auto p = generate_with_host(wl, z, 2);
    REQUIRE(program::validate(p).empty());
    REQUIRE_FALSE(walk(p).deadlock);
    CHECK(first_gather_after_last_copy(p));
  }
}

TEST_CASE(
    "Stage3Generator: without persistent params DeepSpeed orders the step boundary only by reset_step's rank-0 check "
    "at the second forward (GA = 1), at GA = 2 only the training loop's loss read does "
    "(partitioned_param_coordinator.py "
    "l.258-267)",
    "[zero][unit]") {
  // stage3_param_persistence_threshold 0: _post_step gathers nothing and does not synchronize (stage3.py l.2571).
  // reset_step (the top module's forward pre-hook) compares the recorded orders with rank 0's while the trace is not
  // complete, at forwards 1 and 2, reading a broadcast back with .cpu() / .item() (zero/utils.py l.72-120): the host
  // waits for the compute stream. GA = 1: forward 2 is step 1's first, so step 1's first all-gather comes after
  // step 0's copies. GA = 2: forward 2 is step 0's second micro-step, and in DeepSpeed nothing between step 0's
  // copies and step 1's first fetch synchronizes (bf16: no overflow check, stage3.py l.2550; the throughput timer
  // synchronizes only from global step 2, utils/timer.py l.236-238), so with a loop that reads no loss
  // (training.loss_sync false) the all-gather stream may read the lp partitions while the compute stream writes them.
  for (const int ga : {1, 2}) {
    INFO("GA " << ga << ", training.loss_sync false");
    TinyModel m;
    m.grad_accum = ga;
    auto wl = make_workload(m);
    wl.training.loss_sync = false;
    const auto p = generate_with_host(wl, no_persistence(), 2);
    REQUIRE(program::validate(p).empty());
    REQUIRE_FALSE(walk(p).deadlock);
    CHECK(first_gather_after_last_copy(p) == (ga == 1));
  }
  // The default loop reads the loss after engine.step() (training.loss_sync: HF Trainer's logging_nan_inf_filter,
  // loss.item()): the host waits for the compute stream, which has run the fp32 -> lp copies, before step 1's
  // forward, so at GA = 2 the first all-gather follows them too.
  TinyModel m;
  m.grad_accum = 2;
  {
    INFO("GA 2, training.loss_sync true");
    const auto p = generate_with_host(make_workload(m), no_persistence(), 2);
    REQUIRE(program::validate(p).empty());
    CHECK(first_gather_after_last_copy(p));
  }
  // Without a host model the compute stream issues the all-gathers (join before each), so they always follow.
  auto wl = make_workload(m);
  wl.training.loss_sync = false;
  CHECK(first_gather_after_last_copy(generate(wl, no_persistence(), 2)));
}

TEST_CASE(
    "Stage3Generator: with offload_param the next step's first H2D param copy follows the step's D2H of the updated "
    "lp partitions (_reassign_or_swap_out_partitioned_parameters)",
    "[zero][unit]") {
  // offload_param=cpu, GPU optimizer: each sub-group's updated lp partition goes D2H into the pinned host partition
  // (stage3.py l.2589-2590, a blocking copy_ across devices), and a fetch first copies this rank's partitions H2D
  // (partition_parameters.py l.1331-1333, ds_tensor.to(device)). No persistent params, GA = 2 and no loss read
  // (training.loss_sync false), so no synchronize covers the step boundary (previous test): the copy stream's order
  // alone must keep the H2D after the D2H.
  TinyModel m;
  m.grad_accum = 2;
  auto wl = make_workload(m);
  wl.training.loss_sync = false;
  auto z = no_persistence();
  z.offload_param = scenario::OffloadDevice::CPU;
  const auto p = generate_with_host(wl, z, 2);
  REQUIRE(program::validate(p).empty());
  REQUIRE_FALSE(walk(p).deadlock);
  CHECK(ordered_after(p, find_op(p, "copy", 0, "d2h lp params", true), find_op(p, "copy", 1, "h2d params", false)));
  CHECK(ordered_after(p, find_op(p, "compute", 0, "fp32->lp", true), find_op(p, "copy", 0, "d2h lp params", true)));
}

TEST_CASE(
    "Stage3Generator: reduce_scatter false all-reduces the contiguous bucket only from DeepSpeed 0.9.4 and sends "
    "a param larger than the bucket to the reduce-scatter from 0.10.0 (stage3.py l.1084 @v0.9.5, l.1122 @v0.10.0)",
    "[zero][validation]") {
  // TinyModel, bf16, N = 4, reduce_bucket_size 5e8 > Ψ: the whole model is one bucket, Ψ = 4,004,000 elements.
  // v0.9.4 on (PR #3622): `contiguous_gradients and not reduce_scatter` -> __avg_scatter_contiguous_grads, one
  // all_reduce of the bucket, 2Ψ = 8,008,000 B, no reduce-scatter. v0.6.0-v0.9.3: __reduce_and_partition_ipg_grads
  // has no such branch (self.reduce_scatter only guards a dtype assert, stage3.py l.210-212 @v0.9.0), so
  // reduce_scatter_coalesced of the interleaved bucket: N x ceil(numel/N) per param = 2Ψ = 8,008,000 B (1e6 and 1e3
  // divide by 4), no all-reduce.
  const TinyModel m;
  const int n = 4;
  auto z = zero_config(3);
  z.reduce_scatter = false;
  for (const std::array<int, 3> v : {std::array<int, 3>{0, 9, 4}, {0, 10, 0}, {0, 19, 5}}) {
    INFO("DeepSpeed " << v[0] << "." << v[1] << "." << v[2]);
    z.deepspeed_version = v;
    const auto r = walk(generate(make_workload(m), z, n));
    CHECK(r.stats(1, CollectiveKind::ALL_REDUCE).payload == Approx(2 * psi(m)).epsilon(kTol));
    CHECK(r.stats(1, CollectiveKind::REDUCE_SCATTER).calls == 0);
  }
  for (const std::array<int, 3> v : {std::array<int, 3>{0, 6, 0}, {0, 9, 0}, {0, 9, 3}}) {
    INFO("DeepSpeed " << v[0] << "." << v[1] << "." << v[2]);
    z.deepspeed_version = v;
    const auto r = walk(generate(make_workload(m), z, n));
    CHECK(r.stats(1, CollectiveKind::REDUCE_SCATTER).payload == Approx(2 * psi(m)).epsilon(kTol));
    CHECK(r.stats(1, CollectiveKind::ALL_REDUCE).calls == 0);
  }
  // reduce_bucket_size 500,000 < the 1e6-element weights: each weight is never copied into the bucket and is a
  // bucket alone, bucket.elements = 1e6 > reduce_bucket_size, so from v0.10.0 (PR #3832) __avg_scatter_grads:
  // 4 weights x 2 B x 1e6 = 8,000,000 B reduce-scattered; the biases (4 x 1,000 elements, 2 B) still all-reduced:
  // 8,000 B in all. In v0.9.4-v0.9.x the narrow(0, 0, 1e6) of the 500,000-element bucket raises: an Error.
  z.reduce_bucket_size = 500'000;
  z.deepspeed_version = {0, 10, 0};
  const auto big = walk(generate(make_workload(m), z, n));
  CHECK(big.stats(1, CollectiveKind::REDUCE_SCATTER).payload == Approx(8'000'000).epsilon(kTol));
  CHECK(big.stats(1, CollectiveKind::ALL_REDUCE).payload == Approx(8'000).epsilon(kTol));
  z.deepspeed_version = {0, 9, 5};
  CHECK_THROWS_WITH(generate(make_workload(m), z, n), Catch::Contains("fails in DeepSpeed 0.9.4-0.9.x"));
}

TEST_CASE(
    "Stage3Generator: before DeepSpeed 0.6.0 reduce_scatter false all-reduces the whole IPG buffer of each bucket "
    "in place, then multiplies it by 1/N_d (stage3.py average_tensor, l.1943-1947 and 2169-2173 @v0.5.10)",
    "[zero][validation]") {
  // TinyModel, fp16 (no bf16 ZeRO-3 before v0.6.0: config.py l.902 @v0.5.10), N = 4, reduce_bucket_size
  // B = 2,500,000. Bucketing (flush when elements + numel > B): two
  // blocks of 1,001,000 fit (2,002,000), a third does not, so two buckets. Before v0.6.0 reduce_ipg_grads hands
  // average_tensor reduction_list = [ipg_buffer[ipg_index]], the whole torch.empty(reduce_bucket_size) buffer
  // (stage3.py l.2930-2941 @v0.5.10), and gradient_reduction_w_predivide all-reduces it (l.1929): 2 x 2.5e6 B =
  // 5,000,000 B per bucket, 10,000,000 B per step (v0.9.4+ sends the filled 2 x 2,002,000 x 2 = 8,008,000 B). No
  // reduce-scatter. Default postscale_gradients with gradient_predivide_factor 1.0 != 4: mul_(1/4) in place after
  // the all-reduce (l.1932-1933): read + write 5e6 B = 1e7 B per bucket, 6.25 us at the test GPU's 1.6e12 B/s.
  // Buffers: ipg_buffer x 2 (overlap_comm), 2 x 5e6 = 1e7 B of IPG_BUCKET during backward; no out-of-place copy.
  const TinyModel m;
  const int n = 4;
  auto z = zero_config(3);
  z.reduce_scatter = false;
  z.reduce_bucket_size = 2'500'000;
  auto wl = make_workload(m);
  wl.training.precision = scenario::Precision::FP16;
  for (const std::array<int, 3> v : {std::array<int, 3>{0, 3, 16}, {0, 5, 10}}) {
    INFO("DeepSpeed " << v[0] << "." << v[1] << "." << v[2]);
    z.deepspeed_version = v;
    const auto p = generate(wl, z, n);
    const auto r = walk(p);
    CHECK(r.stats(1, CollectiveKind::ALL_REDUCE).calls == 2);
    CHECK(r.stats(1, CollectiveKind::ALL_REDUCE).payload == Approx(10'000'000).epsilon(kTol));
    CHECK(r.stats(1, CollectiveKind::REDUCE_SCATTER).calls == 0);
    CHECK(r.peak([](const Sample& s) { return s.tag(program::MemTag::IPG_BUCKET); }, 1) ==
          Approx(10'000'000).epsilon(kTol));
    CHECK(r.peak([](const Sample& s) { return s.tag(program::MemTag::FLATTEN_TEMP); }, 1) == 0);
    // The averaging follows its all-reduce on the reduce stream: "average <label>" right after "<label>".
    const auto ar = find_op(p, "reduce", 1, "ipg_buffer", false, true);
    const auto avg = find_op(p, "reduce", 1, "average ", false);
    CHECK(avg.second == ar.second + 1);
    const auto& op = p.streams[avg.first].ops[avg.second];
    CHECK(p.labels[op.label] == "average " + p.labels[p.streams[ar.first].ops[ar.second].label]);
    CHECK(std::get<program::Compute>(op.body).bytes.value() == Approx(10'000'000).epsilon(kTol));
  }
  // communication_data_type fp32: the `.to(float32)` copy of the whole buffer (4 x 2.5e6 = 1e7 B of FLATTEN_TEMP)
  // is what goes on the wire: 2 x 1e7 = 2e7 B per step.
  z.deepspeed_version = {0, 5, 10};
  z.communication_data_type = scenario::CommDataType::FP32;
  const auto fp32 = walk(generate(wl, z, n));
  CHECK(fp32.stats(1, CollectiveKind::ALL_REDUCE).payload == Approx(20'000'000).epsilon(kTol));
  CHECK(fp32.peak([](const Sample& s) { return s.tag(program::MemTag::FLATTEN_TEMP); }, 1) ==
        Approx(10'000'000).epsilon(kTol));
  z.communication_data_type = scenario::CommDataType::MODEL;
  // A param larger than the bucket (B = 500,000 < the 1e6-element weights) is extra_large_param_to_reduce: its grad
  // joins reduction_list after the (stale) IPG buffer (l.2171-2172), so each weight costs 2 x 5e5 + 2 x 1e6 B and
  // each bias bucket 2 x 5e5 B: 4 x (1e6 + 2e6) + 4 x 1e6 = 16,000,000 B in 12 all-reduces.
  z.reduce_bucket_size = 500'000;
  const auto big = walk(generate(wl, z, n));
  CHECK(big.stats(1, CollectiveKind::ALL_REDUCE).calls == 12);
  CHECK(big.stats(1, CollectiveKind::ALL_REDUCE).payload == Approx(16'000'000).epsilon(kTol));
  CHECK(big.stats(1, CollectiveKind::REDUCE_SCATTER).calls == 0);
}

TEST_CASE(
    "Stage3Generator: before DeepSpeed 0.6.0 without contiguous gradients the bucket is flattened and all-reduced "
    "whatever reduce_scatter says (stage3.py buffered_reduce_fallback, l.2175-2178 and 2263-2300 @v0.5.10)",
    "[zero][validation]") {
  // TinyModel, fp16 (no bf16 ZeRO-3 before v0.6.0: config.py l.902 @v0.5.10), N = 4, one bucket of
  // Ψ = 4,004,000 elements. allreduce_bucket: flatten (a new 8,008,000 B tensor), div_(4), one all_reduce of
  // 2 B x Ψ = 8,008,000 B, no reduce-scatter. From v0.5.8 it `.to(float16)`-casts the flat tensor (its default
  // communication_data_type), which returns an fp16 tensor itself (no copy); before v0.5.8 (allreduce_always_fp32 False)
  // no cast at all.
  const TinyModel m;
  const int n = 4;
  auto z = zero_config(3);
  z.contiguous_gradients = false;
  auto wl = make_workload(m);
  wl.training.precision = scenario::Precision::FP16;
  for (const bool rs : {true, false})
    for (const std::array<int, 3> v : {std::array<int, 3>{0, 5, 4}, {0, 5, 10}}) {
      INFO("reduce_scatter " << rs << ", DeepSpeed " << v[0] << "." << v[1] << "." << v[2]);
      z.reduce_scatter = rs;
      z.deepspeed_version = v;
      const auto r = walk(generate(wl, z, n));
      CHECK(r.stats(1, CollectiveKind::ALL_REDUCE).calls == 1);
      CHECK(r.stats(1, CollectiveKind::ALL_REDUCE).payload == Approx(2 * psi(m)).epsilon(kTol));
      CHECK(r.stats(1, CollectiveKind::REDUCE_SCATTER).calls == 0);
      CHECK(r.peak([](const Sample& s) { return s.tag(program::MemTag::FLATTEN_TEMP); }, 1) ==
            Approx(2 * psi(m)).epsilon(kTol));
    }
  // fp32 training (4 B per element), the one case the v0.5.8+ cast changes: the flat tensor is 4 Ψ = 16,016,000 B,
  // its fp16 copy 2 Ψ = 8,008,000 B is what is all-reduced; both live at once: 6 Ψ = 24,024,000 B of FLATTEN_TEMP.
  // Before v0.5.8 the fp32 flat tensor itself goes on the wire: 4 Ψ.
  wl.training.precision = scenario::Precision::FP32;
  wl.bytes_per_lp = 4.0;
  z.reduce_scatter = false;
  z.deepspeed_version = {0, 5, 10};
  const auto fp32 = walk(generate(wl, z, n));
  CHECK(fp32.stats(1, CollectiveKind::ALL_REDUCE).payload == Approx(2 * psi(m)).epsilon(kTol));
  CHECK(fp32.peak([](const Sample& s) { return s.tag(program::MemTag::FLATTEN_TEMP); }, 1) ==
        Approx(6 * psi(m)).epsilon(kTol));
  z.deepspeed_version = {0, 5, 4};
  const auto fp32_old = walk(generate(wl, z, n));
  CHECK(fp32_old.stats(1, CollectiveKind::ALL_REDUCE).payload == Approx(4 * psi(m)).epsilon(kTol));
  CHECK(fp32_old.peak([](const Sample& s) { return s.tag(program::MemTag::FLATTEN_TEMP); }, 1) ==
        Approx(4 * psi(m)).epsilon(kTol));
}

TEST_CASE(
    "Stage3Generator: before DeepSpeed 0.6.0 each parameter of a bucket is reduce-scattered on its own "
    "(partition_parameters.py _reduce_scatter_gradients, l.1050-1119 @v0.5.10)",
    "[zero][validation]") {
  // TinyModel, fp16 (no bf16 ZeRO-3 before v0.6.0: config.py l.902 @v0.5.10), N = 3 (so chunks are padded), default
  // reduce_bucket_size 5e8: one bucket holds all 8 params. v0.5.10: reduce_gradients_at_owner loops over the
  // bucket's params, one torch.distributed.reduce_scatter each (l.1055-1059, 1114-1117): 8 calls per step, on
  // zero.Init's group, in the grad's 2 B dtype. Hand count, part = ceil(numel / 3):
  //   weight 1,000,000: part 333,334, flat 3 x 333,334 = 1,000,002 elements = 2,000,004 B on the wire;
  //     chunks inside the grad: floor(1e6 / 333,334) = 2, so one torch.zeros chunk of 333,334 elements (666,668 B).
  //   bias 1,000: part 334, flat 1,002 elements = 2,004 B; one zero chunk of 334 elements (668 B).
  //   wire: 4 x 2,000,004 + 4 x 2,004 = 8,008,032 B in 8 calls.
  //   FLATTEN_TEMP while the bucket's reduce-scatters are in flight: every flat and zero chunk at once,
  //   4 x (2,000,004 + 666,668) + 4 x (2,004 + 668) = 10,677,376 B.
  // v0.6.0's reduce_scatter_coalesced sends the same 8,008,032 B as ONE call (l.99-102 @v0.6.0).
  const TinyModel m;
  const int n = 3;
  auto z = zero_config(3);
  auto wl = make_workload(m);
  wl.training.precision = scenario::Precision::FP16;
  for (const std::array<int, 3> v : {std::array<int, 3>{0, 3, 16}, {0, 5, 10}}) {
    INFO("DeepSpeed " << v[0] << "." << v[1] << "." << v[2]);
    z.deepspeed_version = v;
    const auto p = generate(wl, z, n);
    const auto r = walk(p);
    CHECK(r.stats(1, CollectiveKind::REDUCE_SCATTER).calls == 8);
    CHECK(r.stats(1, CollectiveKind::REDUCE_SCATTER).payload == Approx(8'008'032).epsilon(kTol));
    CHECK(r.stats(1, CollectiveKind::ALL_REDUCE).calls == 0);
    CHECK(r.peak([](const Sample& s) { return s.tag(MemTag::FLATTEN_TEMP); }, 1) == Approx(10'677'376).epsilon(kTol));
    // zero.Init's ds_process_group (l.470-473 @v0.5.10), the group the parameters are all-gathered on.
    std::optional<std::uint16_t> gather_group;
    std::vector<std::uint16_t> rs_groups;
    for (const auto& s : p.streams)
      for (const auto& op : s.ops)
        if (const auto* c = std::get_if<program::Collective>(&op.body)) {
          if (c->kind == CollectiveKind::ALL_GATHER)
            gather_group = c->group;
          if (c->kind == CollectiveKind::REDUCE_SCATTER)
            rs_groups.push_back(c->group);
        }
    REQUIRE(gather_group.has_value());
    REQUIRE(!rs_groups.empty());
    for (const std::uint16_t g : rs_groups)
      CHECK(g == *gather_group);
  }
  // Two buckets (reduce_bucket_size 2,500,000: two blocks of 1,001,000 fit, a third does not) still make one
  // reduce-scatter per param: 8 calls.
  z.deepspeed_version = {0, 5, 10};
  z.reduce_bucket_size = 2'500'000;
  CHECK(walk(generate(wl, z, n)).stats(1, CollectiveKind::REDUCE_SCATTER).calls == 8);
  z.reduce_bucket_size = 500'000'000;
  z.deepspeed_version = {0, 6, 0};
  const auto coalesced = walk(generate(wl, z, n));
  CHECK(coalesced.stats(1, CollectiveKind::REDUCE_SCATTER).calls == 1);
  CHECK(coalesced.stats(1, CollectiveKind::REDUCE_SCATTER).payload == Approx(8'008'032).epsilon(kTol));
}
