// Host-thread model and ZeRO-3 per-submodule fetch (generator_common.hpp "Host thread", stage3_generator.cpp):
// program structure checked against hand counts from DeepSpeed's hook and fetch rules (reference/zero_semantics.md
// §3.5 "Parameter fetch / release"; partitioned_param_coordinator.py fetch_sub_module).
#include "sim/workload/workload.hpp"
#include "sim/zero/generator_common.hpp"
#include "sim/zero/zero_program.hpp"
#include "tests/support/stage3_host.hpp"
#include "tests/zero/program_walker.hpp"
#include "tests/zero/test_model.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace zerosim;
using namespace zerosim::zero;
using namespace zerosim::zero::testing;
using program::CollectiveKind;
using program::StepProgram;
using program::StreamKind;
using zerosim::test::distinct_host_costs;
using zerosim::test::stage3_host_program;

namespace {

constexpr double kTol = 1e-9;

/// `blocks` GPT-2-style blocks with Hugging Face tensor names (modeling_gpt2.py): ln_1, attn.c_attn, attn.c_proj,
/// ln_2, mlp.c_fc, mlp.c_proj, each a weight + bias. h = 512: weights 3h^2 = 786,432, h^2 = 262,144, 4h^2 =
/// 1,048,576 elements are above the default persistence threshold (1e5); biases (<= 4h = 2,048) and layer norms (h)
/// are below it, so every block has 4 gathered submodules and 2 persistent-only ones (ln_1, ln_2).
workload::Workload gpt2_like(int blocks) {
  const Elements h = 512;
  workload::Workload w;
  w.bytes_per_lp = 2.0;
  w.training.grad_accum = 1;
  for (int i = 0; i < blocks; ++i) {
    workload::Layer l;
    l.name = "block." + std::to_string(i);
    const std::string p = "h." + std::to_string(i) + ".";
    const auto add = [&](const std::string& n, Elements numel) {
      l.params.push_back({p + n, numel, true});
      l.param_count += numel;
    };
    add("ln_1.weight", h);
    add("ln_1.bias", h);
    add("attn.c_attn.weight", 3 * h * h);
    add("attn.c_attn.bias", 3 * h);
    add("attn.c_proj.weight", h * h);
    add("attn.c_proj.bias", h);
    add("ln_2.weight", h);
    add("ln_2.bias", h);
    add("mlp.c_fc.weight", 4 * h * h);
    add("mlp.c_fc.bias", 4 * h);
    add("mlp.c_proj.weight", 4 * h * h);
    add("mlp.c_proj.bias", h);
    l.fwd_flops = Flops(1e9);
    l.bwd_flops = Flops(2e9);
    l.fwd_bytes = Bytes(1e6);
    l.bwd_bytes = Bytes(2e6);
    l.saved_activations = Bytes(1e6);
    w.total_params += l.param_count;
    w.layers.push_back(l);
  }
  w.trainable_params = w.total_params;
  return w;
}

StepProgram generate_with_host(const workload::Workload& wl, const scenario::ZeroConfig& z, int n, int steps,
                               const scenario::HostSpec& host) {
  GeneratorInput in{wl, z, n, steps, 0.0, host};
  return generate_program(in);
}

/// Index of the stream named `name`, or streams.size().
std::size_t stream_named(const StepProgram& p, const std::string& name) {
  for (std::size_t s = 0; s < p.streams.size(); ++s)
    if (p.streams[s].name == name)
      return s;
  return p.streams.size();
}

/// Events recorded on stream `s`.
std::set<program::EventId> recorded_on(const StepProgram& p, std::size_t s) {
  std::set<program::EventId> e;
  for (const auto& op : p.streams[s].ops)
    if (const auto* r = std::get_if<program::Record>(&op.body))
      e.insert(r->event);
  return e;
}

/// Wait ops on stream `s` for one of `events`.
int waits_on(const StepProgram& p, std::size_t s, const std::set<program::EventId>& events) {
  int k = 0;
  for (const auto& op : p.streams[s].ops)
    if (const auto* w = std::get_if<program::Wait>(&op.body); w != nullptr && events.count(w->event) > 0)
      ++k;
  return k;
}

double host_seconds(const StepProgram& p) {
  const std::size_t h = stream_named(p, "host");
  double t = 0;
  for (const auto& op : p.streams.at(h).ops)
    if (const auto* c = std::get_if<program::CpuCompute>(&op.body))
      t += c->duration.value();
  return t;
}

} // namespace

TEST_CASE("GeneratorContext: tensors are grouped into submodules by module path", "[zero][unit]") {
  const auto wl = gpt2_like(2);
  const auto z = zero_config(3);
  GeneratorInput in{wl, z, 2, 1};
  GeneratorContext ctx(in);
  const auto& subs = ctx.submodules(1);
  REQUIRE(subs.size() == 6);
  CHECK(subs[0].name == "h.1.ln_1");
  CHECK(subs[1].name == "h.1.attn.c_attn");
  CHECK(subs[2].name == "h.1.attn.c_proj");
  CHECK(subs[3].name == "h.1.ln_2");
  CHECK(subs[4].name == "h.1.mlp.c_fc");
  CHECK(subs[5].name == "h.1.mlp.c_proj");
  for (const auto& s : subs)
    CHECK(s.params.size() == 2); // weight + bias
  // Hooked modules: h.1, h.1.ln_1, h.1.attn, h.1.attn.c_attn, h.1.attn.c_proj, h.1.ln_2, h.1.mlp, h.1.mlp.c_fc,
  // h.1.mlp.c_proj = 9.
  CHECK(ctx.module_count(1) == 9);
  // No host model in a hand-built input: no host stream.
  CHECK_FALSE(ctx.host_enabled());
}

TEST_CASE("GeneratorInput: without host costs the program has no host stream", "[zero][unit]") {
  const auto wl = make_workload();
  for (int stage = 0; stage <= 3; ++stage) {
    const auto p = generate(wl, zero_config(stage), 2, 1);
    CHECK(stream_named(p, "host") == p.streams.size());
  }
}

TEST_CASE("Stage3Generator: one all-gather per submodule fetch and one per prefetch at N_d = 2", "[zero][unit]") {
  // max_reuse_distance 0: in step 0 every submodule is released after use, so backward gathers again (§3.5
  // "Release"). L = 3 blocks, per block 4 gathered submodules (c_attn, c_proj, c_fc, mlp.c_proj) and 2 persistent-only ones.
  //  step 0 (no trace): forward fetches 6 submodules per block, each ONE coalesced all-gather (the 4 gathered ones
  //    carry their persistent biases along; ln_1 / ln_2 gather their persistent weight + bias once) = 6L; backward
  //    re-gathers the 4 released ones = 4L; _post_step all-gathers the persistent params = 1 -> 10L + 1 = 31.
  //  step 1 (trace complete, prefetch; persistent params resident): the first fetch, h.0.ln_1 (nothing to gather),
  //    prefetches all 4L = 12 weights (12h² x L = 9.4e6 numel < the 5e7 budget) in ONE all_gather_coalesced call.
  //    That walk goes on to the end of the trace (nothing more to take), past every weight's backward use while
  //    the weight is in flight, and marks it with that use (partitioned_param_coordinator.py l.470-472): no weight
  //    is released before its backward (l.642-651), which gathers nothing. 1 + _post_step 1 = 2.
  const int L = 3;
  const auto wl = gpt2_like(L);
  auto z = zero_config(3);
  z.stage3_max_reuse_distance = 0;
  const auto r = walk(generate(wl, z, 2, 2));
  REQUIRE_FALSE(r.deadlock);
  CHECK(r.stats(0, CollectiveKind::ALL_GATHER).calls == 10 * L + 1);
  CHECK(r.stats(1, CollectiveKind::ALL_GATHER).calls == 2);
}

TEST_CASE("Stage3Generator: the host waits on fetch back-pressure, the compute stream on every gather",
          "[zero][unit]") {
  // A fetch that waits for a gathered submodule records one event (one non-persistent param per submodule); with
  // more than 2 outstanding the host synchronises the oldest (the queue is cleared at the optimizer step). Step 0
  // (max_reuse_distance 0, no trace): the 8L = 24 fetches of a gathered submodule all wait: fetches 4..24 -> 21 host
  // waits. Step 1: the first fetch's prefetch walks the whole trace and keeps every weight until its backward (see
  // the previous test), so only the 4L = 12 forward fetches wait: 4..12 -> 9. The compute stream waits for each
  // waited all-gather (wait_stream): 24 in step 0 plus the 2L = 6 persistent-only submodules, 12 in step 1, plus
  // the join of the gather stream into compute before each STEP_END (1 per step): 31 + 13 = 44. The host also
  // waits for the gather stream once per step in _post_step's get_accelerator().synchronize() (the persistent
  // params' all-gather, partition_parameters.py l.2097-2098): 21 + 9 + 2 = 32.
  const int L = 3;
  const auto wl = gpt2_like(L);
  auto z = zero_config(3);
  z.stage3_max_reuse_distance = 0;
  const auto p = generate_with_host(wl, z, 2, 2, scenario::HostSpec{});
  REQUIRE(program::validate(p).empty());
  const std::size_t host = stream_named(p, "host");
  const std::size_t gather = stream_named(p, "gather");
  REQUIRE(host < p.streams.size());
  REQUIRE(gather < p.streams.size());
  CHECK(p.streams[host].kind == StreamKind::HOST);
  const auto gathered = recorded_on(p, gather);
  CHECK(waits_on(p, host, gathered) == (8 * L - 3) + (4 * L - 3) + 2);
  CHECK(waits_on(p, 0, gathered) == 8 * L + 2 * L + 4 * L + 2);
  REQUIRE_FALSE(walk(p).deadlock);
}

TEST_CASE("Stage3Generator: at N_d = 1 hooks cost host time but no all-gather is issued", "[zero][unit]") {
  // TinyModel: 4 blocks, tensors "block.i.weight" / "block.i.bias" -> one submodule per block, 1 hooked module.
  // Per block and step with op = 1e-5 s, hook = 1e-3 s, param = 1e-4 s (distinct magnitudes):
  //  forward: fetch (hook + 2 params) + launch 43 ops (GPT-2 block, eager attention) + post hooks (1 hook +
  //    2 params) = 2e-3 + 4e-4 + 43e-5;
  //  backward: fetch (hook + 2 params) + launch 86 ops + 2 grad hooks + post hooks (hook + 2 params)
  //    = 2e-3 + 6e-4 + 86e-5.
  // Per block: 4e-3 + 1e-3 + 129e-5 = 6.29e-3 s; 4 blocks = 25.16e-3 s per step; no fp16 sync (bf16 default).
  // (43 ops: a Hugging Face GPT-2 block, whose gelu_new is eight ops.)
  auto wl = make_workload();
  wl.model.activation = scenario::Activation::GELU_NEW;
  const scenario::HostSpec host = distinct_host_costs();
  const auto p = generate_with_host(wl, zero_config(3), 1, 2, host);
  REQUIRE(program::validate(p).empty());
  CHECK(host_seconds(p) == Approx(2 * 4 * 6.29e-3).epsilon(kTol));
  const auto r = walk(p);
  REQUIRE_FALSE(r.deadlock);
  CHECK(r.stats(0, CollectiveKind::ALL_GATHER).calls == 0);
  CHECK(r.stats(1, CollectiveKind::ALL_GATHER).calls == 0);
}

TEST_CASE("GeneratorContext: stage 0-2 charge eager launches, stages 1-2 also one hook per gradient", "[zero][unit]") {
  // TinyModel (GPT-2 family, eager attention), 4 blocks of 2 tensors, op = 1e-5 s, param hook = 1e-4 s, one step of
  // 3 passes (forward, backward = 2): a block is 43 eager ops with gelu_new's 8 (eager_launches), 36 with a
  // one-kernel GELU (model.activation gelu, TinyModel's).
  //  stage 0: 4 x 3 x 36 ops x 1e-5 = 4.32e-3 s; stage 1/2: + 4 x 2 x 1e-4 = 0.8e-3 s (stage 2's gradient hooks,
  //  stage 1's reduce_gradients loop) -> 5.12e-3 s.
  //  gelu_new: 4 x 129 ops x 1e-5 = 5.16e-3 s.
  auto wl = make_workload();
  const scenario::HostSpec host = distinct_host_costs();
  CHECK(host_seconds(generate_with_host(wl, zero_config(0), 2, 1, host)) == Approx(4.32e-3).epsilon(kTol));
  CHECK(host_seconds(generate_with_host(wl, zero_config(1), 2, 1, host)) == Approx(5.12e-3).epsilon(kTol));
  CHECK(host_seconds(generate_with_host(wl, zero_config(2), 2, 1, host)) == Approx(5.12e-3).epsilon(kTol));
  wl.model.activation = scenario::Activation::GELU_NEW;
  CHECK(host_seconds(generate_with_host(wl, zero_config(0), 2, 1, host)) == Approx(5.16e-3).epsilon(kTol));
  // ... unless the kernels are fused (training.kernel_impl fused: one GELU kernel).
  wl.training.kernel_impl = scenario::KernelImpl::FUSED;
  CHECK(host_seconds(generate_with_host(wl, zero_config(0), 2, 1, host)) == Approx(4.32e-3).epsilon(kTol));
}

TEST_CASE(
    "Stage1Generator: without overlap_comm the per-param reduce work is host time of reduce_gradients' loop at "
    "the GA boundary, in DeepSpeed 0.9.0 too",
    "[zero][unit]") {
  // TinyModel, 8 trainable tensors, param hook 1e-4 s, one step at GA 1. Stage 1 without overlap_comm calls
  // reduce_ready_partitions_and_remove_grads per param from reduce_gradients' loop after backward (stage_1_and_2.py
  // l.636-641 @v0.9.0, l.874-879 @v0.19.6): 8 x 1e-4 = 0.8e-3 s labelled "reduce_gradients"; its gradient hooks
  // (0.19.5: registered, as contiguous_gradients is on) only set up buckets, so no "grad hooks" time. DeepSpeed
  // 0.9.0 registers no hooks for stage 1 and runs the same loop. With overlap_comm the hooks do the reduce work and
  // the loop does not run.
  const auto wl = make_workload();
  const scenario::HostSpec host{Seconds(1e-5), Seconds(1e-3), Seconds(1e-4)};
  const auto labelled = [](const StepProgram& p, const std::string& what) {
    const std::size_t h = stream_named(p, "host");
    double t = 0;
    for (const auto& op : p.streams.at(h).ops)
      if (const auto* c = std::get_if<program::CpuCompute>(&op.body);
          c != nullptr && p.labels[op.label].rfind(what, 0) == 0)
        t += c->duration.value();
    return t;
  };
  for (const auto& version : {std::array<int, 3>{0, 9, 0}, std::array<int, 3>{0, 19, 5}}) {
    INFO("DeepSpeed " << version[0] << "." << version[1] << "." << version[2]);
    auto z = zero_config(1);
    z.deepspeed_version = version;
    if (z.deepspeed_before(0, 13, 0))
      z.contiguous_gradients = false; // as the loader forces it for stage 1
    const auto p = generate_with_host(wl, z, 2, 1, host);
    CHECK(labelled(p, "reduce_gradients") == Approx(0.8e-3).epsilon(kTol));
    CHECK(labelled(p, "grad hooks") == 0.0);
  }
  auto z = zero_config(1);
  z.overlap_comm = true;
  const auto p = generate_with_host(wl, z, 2, 1, host);
  CHECK(labelled(p, "reduce_gradients") == 0.0);
  CHECK(labelled(p, "grad hooks") == Approx(0.8e-3).epsilon(kTol));
}

TEST_CASE("GeneratorContext: fused kernels launch fewer host ops for a LLaMA model (RMSNorm, rotary)", "[zero][unit]") {
  // A LLaMA-family workload of 2 blocks with FlashAttention, stage 0, op = 1e-5 s, no hooks, one step of 3 passes:
  // eager_launches: embedding 1, block 54 (hf) or 28 (fused), head 18 or 11 ops.
  //  hf: 3 x (1 + 2 x 54 + 18) = 381 ops; fused: 3 x (1 + 2 x 28 + 11) = 204 ops.
  scenario::ModelSpec m;
  m.family = scenario::ModelFamily::LLAMA;
  m.hidden = 256;
  m.layers = 2;
  m.heads = 4;
  m.kv_heads = 4;
  m.intermediate = 512;
  m.vocab = 1000;
  scenario::TrainingSpec t;
  t.seq_len = 128;
  t.flash_attention = true;
  scenario::HostSpec host{Seconds(1e-5), Seconds(0), Seconds(0)};
  CHECK(host_seconds(generate_with_host(workload::build_workload(m, t), zero_config(0), 1, 1, host)) ==
        Approx(381 * 1e-5).epsilon(kTol));
  t.kernel_impl = scenario::KernelImpl::FUSED;
  CHECK(host_seconds(generate_with_host(workload::build_workload(m, t), zero_config(0), 1, 1, host)) ==
        Approx(204 * 1e-5).epsilon(kTol));
}

TEST_CASE(
    "Stage3Generator: a released gathered parameter leaves allocated on the host and its block after the compute "
    "stream's use (free_param: record_stream, then param.data = empty)",
    "[zero][unit]") {
  // TinyModel: 4 one-block submodules; with max_reuse_distance 0 step 0 (no trace) releases every submodule after
  // its forward and after its backward: 8 gathered buffers. Step 1: block 0 on demand, then one prefetch of blocks
  // 1-3 whose walk passes every block's backward use while it is gathered, so each is kept until then
  // (partitioned_param_coordinator.py l.642-651): 4 buffers, 12 in all, each freed in two parts: the TENSOR part on
  // the host stream (the Python thread that runs free_param) and the BLOCK part on the compute stream.
  const auto run = stage3_host_program(make_workload(), zero_config(3));
  REQUIRE(program::validate(run.program).empty());
  REQUIRE(run.host < run.program.streams.size());
  CHECK(run.gathered.size() == 12);
  for (const auto& [b, s] : run.gathered) {
    INFO("buffer " << b);
    const auto& f = run.frees.at(b);
    REQUIRE(f.size() == 2);
    CHECK(std::count(f.begin(), f.end(), std::make_pair(run.host, program::FreeKind::TENSOR)) == 1);
    CHECK(std::count(f.begin(), f.end(), std::make_pair(run.compute, program::FreeKind::BLOCK)) == 1);
  }
}

TEST_CASE(
    "Stage3Generator: without overlap_comm a gathered parameter comes from the compute stream's cache and is freed "
    "there at once (the all-gather stream is the default stream, record_stream on it holds nothing)",
    "[zero][unit]") {
  // As above, with overlap_comm false: DeepSpeed's all-gather stream is default_stream() (parameter_offload.py
  // l.189-190), so the buffers are allocated on the compute stream, and free_param's record_stream names the
  // allocating stream, which PyTorch ignores. The same 8 + 4 = 12 gathered buffers, each allocated on the compute
  // stream and freed once there (TENSOR_AND_BLOCK), none on the host stream.
  auto z = zero_config(3);
  z.overlap_comm = false;
  const auto run = stage3_host_program(make_workload(), z);
  REQUIRE(program::validate(run.program).empty());
  REQUIRE(run.host < run.program.streams.size());
  CHECK(run.gathered.size() == 12);
  for (const auto& [b, s] : run.gathered) {
    INFO("buffer " << b);
    CHECK(s == run.compute);
    const auto& f = run.frees.at(b);
    REQUIRE(f.size() == 1);
    CHECK(f.front() == std::make_pair(run.compute, program::FreeKind::TENSOR_AND_BLOCK));
  }
}

TEST_CASE(
    "OffloadCpu: a copy from or to pageable host memory blocks the host thread until it is done (CUDA Runtime API, "
    "API synchronization behavior)",
    "[zero][unit]") {
  // Stage 2, CPU optimizer offload, N_d = 1, GA = 1, overlap_comm (gradients reduce on the "comm" stream), one step,
  // DeepSpeed 0.19.5. With pin_memory false the 12 params' fp32 grads go D2H into pageable memory, one copy each on
  // "comm", and the updated lp partition comes back H2D from the pageable staging buffer on "copy": the host
  // synchronises each of them, 12 more waits on "comm" and 1 more on "copy" than with pin_memory true.
  const auto wl = gpt2_like(1);
  const auto waits = [&](bool pin) {
    auto z = zero_config(2);
    z.offload_optimizer = scenario::OffloadDevice::CPU;
    z.offload_optimizer_pin_memory = pin;
    z.overlap_comm = true;
    z.deepspeed_version = {0, 19, 5};
    GeneratorInput in{wl, z, 1, 1, 2.2e-10, scenario::HostSpec{}};
    const auto p = generate_program(in);
    REQUIRE(program::validate(p).empty());
    REQUIRE_FALSE(walk(p).deadlock);
    const std::size_t host = stream_named(p, "host");
    REQUIRE(host < p.streams.size());
    return std::pair{waits_on(p, host, recorded_on(p, stream_named(p, "comm"))),
                     waits_on(p, host, recorded_on(p, stream_named(p, "copy")))};
  };
  const auto pinned = waits(true);
  const auto pageable = waits(false);
  CHECK(pageable.first - pinned.first == 12);
  CHECK(pageable.second - pinned.second == 1);
}

TEST_CASE(
    "GeneratorContext: DeepSpeed's throughput timer syncs the device at every forward and step() from step 2 on "
    "(deepspeed/utils/timer.py ThroughputTimer)",
    "[zero][unit]") {
  // ThroughputTimer(start_step=2): engine.forward calls start() and engine.step() stop() in every micro-step; both
  // run get_accelerator().synchronize() once two optimizer steps are done (timers.throughput.synchronized, default
  // true). 4 steps of GA 2: steps 2 and 3 x 2 micro-steps x (start + stop) = 8 more host waits on the compute stream
  // than with the timer unsynchronized, at every stage; over 2 steps none.
  auto wl = make_workload();
  wl.training.grad_accum = 2;
  for (int stage = 0; stage <= 3; ++stage) {
    CAPTURE(stage);
    auto z = zero_config(stage);
    const auto host_waits_on_compute = [&](bool sync, int steps) {
      z.throughput_timer_sync = sync;
      const auto p = generate_with_host(wl, z, 2, steps, scenario::HostSpec{});
      REQUIRE(program::validate(p).empty());
      REQUIRE_FALSE(walk(p).deadlock);
      return waits_on(p, stream_named(p, "host"), recorded_on(p, 0));
    };
    CHECK(host_waits_on_compute(true, 4) - host_waits_on_compute(false, 4) == 8);
    CHECK(host_waits_on_compute(true, 2) == host_waits_on_compute(false, 2));
  }
}

TEST_CASE(
    "Stage2Generator: the step's overflow check and grad norm wait for the GPU once per partition slice before "
    "DeepSpeed 0.13.3 and 0.13.2 (PRs #5115, #4974), once in all from then on",
    "[zero][unit]") {
  // gpt2_like(1) at N_d = 2: Ψ = 12h^2 + 13h = 3,152,384 (h = 512), P = Ψ/2 = 1,576,192. In flat order ln_1.w (512),
  // ln_1.b (512), c_attn.w (786,432), c_attn.b (1,536), c_proj.w (262,144), c_proj.b, ln_2.w, ln_2.b (512 each)
  // end at 1,052,672 < P, and c_fc.w starts there: 9 slices in rank 0's partition (averaged_gradients).
  //  0.13.1: _has_inf_or_nan's float(x.float().sum()) per slice 9 + has_overflow's .item() 1 + the norm's .item()
  //          per slice 9 + the all-reduced norm's .item() 1 = 20 host waits on compute.
  //  0.13.2: the norms stay on the device: 9 + 1 = 10.   0.13.3: the overflow flags too: 1.
  // Differences, as nothing else in the program changes between these releases: 10, 9.
  // Precision (0.18.0): bf16 skips the check (check_grad_overflow False), fp16 pays its one .item(): 1 apart; so at
  // 0.16.0 (step() checks only `if self.dtype == torch.float16`, PR #4512, v0.11.2-v0.17.0); at 0.19.5 (bf16
  // check_grad_overflow True by default, PR #8035) and 0.11.1 (always checked) they are equal.
  auto wl = gpt2_like(1);
  const auto host_waits_on_compute = [&](std::array<int, 3> version, scenario::Precision precision) {
    wl.training.precision = precision;
    auto z = zero_config(2);
    z.deepspeed_version = version;
    z.use_multi_rank_bucket_allreduce = !z.deepspeed_before(0, 12, 4);
    const auto p = generate_with_host(wl, z, 2, 1, scenario::HostSpec{});
    REQUIRE(program::validate(p).empty());
    REQUIRE_FALSE(walk(p).deadlock);
    return waits_on(p, stream_named(p, "host"), recorded_on(p, 0));
  };
  using scenario::Precision;
  CHECK(host_waits_on_compute({0, 13, 1}, Precision::FP16) - host_waits_on_compute({0, 13, 2}, Precision::FP16) == 10);
  CHECK(host_waits_on_compute({0, 13, 2}, Precision::FP16) - host_waits_on_compute({0, 13, 3}, Precision::FP16) == 9);
  CHECK(host_waits_on_compute({0, 18, 0}, Precision::FP16) - host_waits_on_compute({0, 18, 0}, Precision::BF16) == 1);
  CHECK(host_waits_on_compute({0, 19, 5}, Precision::FP16) == host_waits_on_compute({0, 19, 5}, Precision::BF16));
  CHECK(host_waits_on_compute({0, 16, 0}, Precision::FP16) - host_waits_on_compute({0, 16, 0}, Precision::BF16) == 1);
  CHECK(host_waits_on_compute({0, 11, 1}, Precision::FP16) == host_waits_on_compute({0, 11, 1}, Precision::BF16));
}

TEST_CASE(
    "Stage1/2 step: the overflow check, fp64 grad norm and unscale move lp + 26, lp + 16 and 8 B per partition "
    "element (lp + 8 for the check before 0.13.3), on the compute stream",
    "[zero][unit]") {
  // gpt2_like(1), N_d = 2, lp 2 B: P = 1,576,192 (above). Per element of rank 0's partition:
  //  overflow check, 0.19.5: read lp 2, write fp32 4; isnan, isinf read 4 write 1 each; logical_or read 2 write 1;
  //    .float() read 1 write 4; max read 4 = 28 B. 0.9.0: float(x.float().sum()): 2 + 4 + 4 = 10 B.
  //  fp64 norm: read lp 2, write fp64 8, read 8 = 18 B.   unscale: fp32 mul_ in place, read 4 + write 4 = 8 B.
  //  fp16 0.19.5: 54 B x P; fp16 0.9.0: 36 B x P; bf16 0.18.0 (no overflow check): 26 B x P.
  auto wl = gpt2_like(1);
  const double p_elems = 1'576'192.0;
  const auto run = [&](int stage, std::array<int, 3> version, scenario::Precision precision) {
    wl.training.precision = precision;
    auto z = zero_config(stage);
    z.deepspeed_version = version;
    z.use_multi_rank_bucket_allreduce = !z.deepspeed_before(0, 12, 4);
    if (stage == 1 && z.deepspeed_before(0, 13, 0))
      z.contiguous_gradients = false; // as the loader forces it for stage 1
    const auto p = generate(wl, z, 2, 1);
    REQUIRE(program::validate(p).empty());
    double bytes = 0;
    for (const auto& op : p.streams.at(0).ops) {
      const std::string& l = p.labels[op.label];
      if (const auto* c = std::get_if<program::Compute>(&op.body);
          c != nullptr &&
          (l.rfind("overflow check ", 0) == 0 || l.rfind("grad norm: ", 0) == 0 || l == "unscale and clip fp32 grads"))
        bytes += c->bytes.value();
    }
    return bytes;
  };
  using scenario::Precision;
  for (int stage : {1, 2}) {
    CAPTURE(stage);
    CHECK(run(stage, {0, 19, 5}, Precision::FP16) == Approx(54.0 * p_elems).epsilon(kTol));
    CHECK(run(stage, {0, 9, 0}, Precision::FP16) == Approx(36.0 * p_elems).epsilon(kTol));
    CHECK(run(stage, {0, 18, 0}, Precision::BF16) == Approx(26.0 * p_elems).epsilon(kTol));
  }
}

TEST_CASE(
    "IpgBucket: before torch 2.8 the host allocates each gradient flatten and its block returns after the "
    "all-reduce, unless TORCH_NCCL_AVOID_RECORD_STREAMS is set",
    "[zero][unit]") {
  // Stage 2 with overlap_comm at N_d = 2, host costs on, DeepSpeed's defaults (use_multi_rank_bucket_allreduce):
  // average_tensor flattens each bucket chunk into a new tensor inside `with stream(reduction_stream)` and
  // all-reduces it (stage_1_and_2.py allreduce_and_copy -> allreduce_bucket, l.1826-1865 @v0.19.5). The Python
  // thread runs the caching allocator, so the Alloc is the host's, from the comm stream's cache. Before torch 2.8
  // ProcessGroupNCCL record_stream()s the input (pytorch#148590 removed it, in 2.8): the host drops the tensor (TENSOR
  // free on the host), the block comes back once the comm stream has run the all-reduce (BLOCK free on comm). From 2.8
  // the comm stream allocates and frees it as before (one plain Free): stream-ordered reuse. So does 2.6 with
  // TORCH_NCCL_AVOID_RECORD_STREAMS=1: ProcessGroupNCCL stashes the input instead and the synchronous all_reduce's
  // work.wait() drops the stash right after making the current (reduction) stream wait for the NCCL stream
  // (ProcessGroupNCCL.cpp WorkNCCL::synchronizeStreams, later renamed synchronizeStream).
  const TinyModel m; // 4 weights of 1e6 elements + 4 biases of 1e3, bucket 5e8: one flatten per step
  struct Case {
    std::array<int, 2> torch;
    bool avoid_record_streams;
    bool old_torch; // the block is held until the all-reduce ran
  };
  for (const Case& k : {Case{{2, 6}, false, true}, Case{{2, 8}, false, false}, Case{{2, 6}, true, false}}) {
    const bool old_torch = k.old_torch;
    INFO("torch " << k.torch[0] << "." << k.torch[1] << (k.avoid_record_streams ? " avoid_record_streams" : ""));
    auto wl = make_workload(m);
    wl.training.torch_version = k.torch;
    wl.training.torch_nccl_avoid_record_streams = k.avoid_record_streams;
    auto z = zero_config(2);
    z.overlap_comm = true;
    const GeneratorInput in{wl, z, 2, 2, 0.0, distinct_host_costs()};
    const StepProgram p = generate_program(in);
    const std::size_t host = stream_named(p, "host");
    const std::size_t comm = stream_named(p, "comm");
    std::map<program::BufferId, std::size_t> flattens; // buffer -> its Alloc's stream
    for (std::size_t s = 0; s < p.streams.size(); ++s)
      for (const auto& op : p.streams[s].ops)
        if (const auto* a = std::get_if<program::Alloc>(&op.body);
            a != nullptr && p.labels[op.label].rfind("flatten allreduce bucket", 0) == 0) {
          flattens[a->buffer] = s;
          CHECK(a->pool == (old_torch ? comm : program::kOwnPool));
        }
    REQUIRE(flattens.size() == 2); // one per step
    for (const auto& [buf, s] : flattens) {
      CHECK(s == (old_torch ? host : comm));
      std::vector<std::pair<std::size_t, program::FreeKind>> frees;
      for (std::size_t t = 0; t < p.streams.size(); ++t)
        for (const auto& op : p.streams[t].ops)
          if (const auto* f = std::get_if<program::Free>(&op.body); f != nullptr && f->buffer == buf)
            frees.emplace_back(t, f->kind);
      if (old_torch) {
        std::sort(frees.begin(), frees.end());
        std::vector<std::pair<std::size_t, program::FreeKind>> want{{host, program::FreeKind::TENSOR},
                                                                    {comm, program::FreeKind::BLOCK}};
        std::sort(want.begin(), want.end());
        CHECK(frees == want);
      } else {
        REQUIRE(frees.size() == 1);
        CHECK(frees[0] == std::make_pair(comm, program::FreeKind::TENSOR_AND_BLOCK));
      }
    }
  }
}
