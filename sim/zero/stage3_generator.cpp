#include "sim/zero/stage3_generator.hpp"

#include "sim/error.hpp"
#include "sim/zero/generator_common.hpp"
#include "sim/zero/offload_cpu.hpp"
#include "sim/zero/offload_nvme.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace zerosim::zero {

using program::BufferId;
using program::CollectiveKind;
using program::EventId;
using program::MemTag;
using program::Phase;
using program::StreamId;

namespace {

/// Back-pressure of partitioned_param_coordinator (__max_ongoing_fetch_events = 2) and of the stage-3 reduce path
/// (max_param_reduce_events = 2): with more than 2 events outstanding the host syncs on the oldest
/// (Event.synchronize), so at most 3 operations are in flight. With the host model the host stream waits
/// (GeneratorContext::host_wait); without it, the compute stream. The fetch events are recorded when a param is
/// waited for (one per param of the fetched submodule), not when its all-gather is issued (_fetch_sub_module_impl);
/// a program cannot query an event, so every recorded event counts as outstanding: waiting for one that already
/// completed costs nothing, as in DeepSpeed.
constexpr std::size_t kMaxOutstanding = 2;

/// Eager ops the host dispatches to issue one submodule's all-gather (partition_parameters.py
/// _all_gather_sequential / _all_gather_coalesced: allocate the output (empty), narrow this rank's slot, copy the
/// partition in, all_gather_into_tensor) and to consume it at the wait (narrow, view/cat): 6, each
/// HostSpec::op_launch of host time.
constexpr double kGatherHostOps = 6;
/// Eager ops per released param (partition -> free_param: record_stream, param.data = empty(0)).
constexpr double kReleaseHostOps = 2;

/// Sub-groups (stage3.py _create_fp16_sub_groups), as indices into ctx.params(): the trainable params, in order,
/// packed until a group's partitions (ceil(numel / N_d) elements each) hold at least `sub_group_size` elements; the
/// rest is the last group. DeepSpeed's fp16_groups is this list: step() loops over it, and so does _get_norm_groups.
/// sub_group_size 0 (accepted by DeepSpeed's config, ge=0) closes a group after every param: one sub-group per
/// trainable param, as `local_sub_group_size >= sub_group_size` is then always true in _create_fp16_sub_groups.
std::vector<std::vector<std::size_t>> sub_group_members(const GeneratorContext& ctx, Elements sub_group_size) {
  const Elements n = ctx.n();
  std::vector<std::vector<std::size_t>> groups;
  std::vector<std::size_t> cur;
  Elements acc = 0;
  for (std::size_t p = 0; p < ctx.params().size(); ++p) {
    const auto& pr = ctx.params()[p];
    if (!pr.trainable)
      continue;
    cur.push_back(p);
    acc += (pr.numel + n - 1) / n;
    if (acc >= sub_group_size) {
      groups.push_back(std::move(cur));
      cur.clear();
      acc = 0;
    }
  }
  if (!cur.empty())
    groups.push_back(std::move(cur));
  return groups;
}

/// offload_param=nvme: per param of ctx.params(), whether its lp partition is kept in stage3.py's pinned CPU flat
/// buffer (param_groups_fp16_flat_cpu_memory) rather than on NVMe; `buffer` gets that buffer's elements.
/// _create_param_groups_fp16_flat_cpu_memory (l.808-831 @v0.19.5, the same at v0.3.15 l.1040-1060) sizes it
/// min(Σ this rank's trainable partitions, offload_param.max_in_cpu) elements: a per-rank budget of partition
/// elements (ceil(numel / N) each, padding included). _create_fp16_partitions_with_defragmentation (l.897-923) then
/// walks the sub-groups in order, flat_offset counting every sub-group's elements, and gives a sub-group a slice iff
/// flat_offset + its elements <= the buffer's numel; _move_to_flat_buffer (l.776-806) swaps such a sub-group's
/// partitions in for good (final_location 'not-nvme'). So the in-CPU sub-groups are the leading ones that fit whole:
/// a sub-group that crosses the budget goes to NVMe, and so does every later one. A zero-size buffer is
/// `torch.empty(1)` (numel 1). zerosim's trainable params form one param group (the optimizer's groups are not
/// modelled); frozen params are not in it, so they stay on NVMe.
std::vector<bool> params_in_cpu_buffer(const GeneratorContext& ctx, Elements sub_group_size, Elements max_in_cpu,
                                       Elements& buffer) {
  const Elements n = ctx.n();
  std::vector<bool> in_cpu(ctx.params().size(), false);
  const auto members = sub_group_members(ctx, sub_group_size);
  std::vector<Elements> sizes;
  Elements total = 0;
  for (const auto& g : members) {
    Elements acc = 0;
    for (const std::size_t p : g)
      acc += (ctx.params()[p].numel + n - 1) / n;
    sizes.push_back(acc);
    total += acc;
  }
  buffer = std::min(total, max_in_cpu);
  const Elements numel = buffer > 0 ? buffer : 1; // torch.empty(1, dtype) when flat_buffer_size is 0
  Elements offset = 0;
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (offset + sizes[i] <= numel)
      for (const std::size_t p : members[i])
        in_cpu[p] = true;
    offset += sizes[i];
  }
  return in_cpu;
}

/// offload_param=nvme: lp elements of the pinned host buffer stage3.py reserves for swapping the updated lp
/// partitions of the sub-groups on NVMe out after the step; 0 when every sub-group is in the CPU flat buffer
/// (`in_cpu`, params_in_cpu_buffer), when no buffer is made (`fp16_partitioned_groups_flat` has no None entry).
/// From v0.4.0 reserve_partitioned_swap_space (stage3.py l.925-938 @v0.19.5, l.615-626 @v0.9.0,
/// partitioned_param_swapper.py l.393-398 @v0.19.5): for the sub-group with the most partition elements (the first
/// such), Σ of its params' FULL numels (ds_numel, not the partitions), each rounded up to the aio alignment of
/// 1024 B x aio.intra_op_parallelism / lp element bytes (_io_aligned_numel l.386-388, numel_alignment l.101-102); a
/// pinned (new_cpu_locked_tensor) lp tensor. Before v0.4.0 param_group_fp16_flat_reuse_buffer (stage3.py
/// l.1170-1177 @v0.3.16, l.1171-1175 @v0.3.15): pinned, of the largest partition elements among the sub-groups up to
/// the first one on NVMe (max(fp16_partitioned_groups_flat_numel) when that sub-group is flattened).
Elements nvme_param_swap_out_buffer(const GeneratorContext& ctx, Elements sub_group_size,
                                    const std::vector<bool>& in_cpu) {
  const Elements n = ctx.n();
  const auto members = sub_group_members(ctx, sub_group_size);
  bool any_on_nvme = false;
  Elements largest = 0; // partition elements of the largest sub-group so far
  std::size_t largest_at = 0;
  Elements before_first_nvme = 0; // pre-0.4.0: the largest up to the first sub-group on NVMe
  for (std::size_t i = 0; i < members.size(); ++i) {
    Elements part = 0;
    for (const std::size_t p : members[i])
      part += (ctx.params()[p].numel + n - 1) / n;
    if (part > largest) {
      largest = part;
      largest_at = i;
    }
    const bool on_nvme = !members[i].empty() && !in_cpu[members[i].front()];
    if (on_nvme && !any_on_nvme)
      before_first_nvme = largest;
    any_on_nvme = any_on_nvme || on_nvme;
  }
  if (!any_on_nvme)
    return 0;
  if (ctx.cfg().deepspeed_before(0, 4, 0))
    return before_first_nvme;
  const double lp_bytes = ctx.wl().bytes_per_lp;
  const auto align = static_cast<Elements>(1024.0 * static_cast<double>(ctx.cfg().aio.intra_op_parallelism) / lp_bytes);
  Elements total = 0;
  for (const std::size_t p : members[largest_at]) {
    const Elements numel = ctx.params()[p].numel;
    total += align > 0 ? (numel + align - 1) / align * align : numel;
  }
  return total;
}

/// Elements of each sub-group (sub_group_members). With `on_nvme`, each group's elements of partitions that
/// offload_param=nvme keeps on NVMe (nvme_swappable: lp bytes of the partition at least the swap minimum, and not in
/// the CPU flat buffer, `in_cpu` from params_in_cpu_buffer) go there, one entry per group.
std::vector<Elements> pack_sub_groups(const GeneratorContext& ctx, Elements sub_group_size,
                                      std::vector<Elements>* on_nvme = nullptr, const std::vector<bool>& in_cpu = {}) {
  const Elements n = ctx.n();
  std::vector<Elements> groups;
  for (const auto& members : sub_group_members(ctx, sub_group_size)) {
    Elements acc = 0;
    Elements acc_nvme = 0;
    for (const std::size_t p : members) {
      const Elements part = (ctx.params()[p].numel + n - 1) / n;
      acc += part;
      if (on_nvme != nullptr && nvme_swappable(ctx.lp(part), ctx.cfg()) && (in_cpu.empty() || !in_cpu[p]))
        acc_nvme += part;
    }
    groups.push_back(acc);
    if (on_nvme != nullptr)
      on_nvme->push_back(acc_nvme);
  }
  return groups;
}

/// The order of module.named_parameters(), which DeepSpeed's mark_persistent_parameters walks: Hugging Face's module
/// registration order, as indices into ctx.params(). It is the forward order (ctx.params()) except where a model
/// registers a module before or after where it runs: LlamaDecoderLayer (and Mistral's, Qwen2's) registers self_attn,
/// mlp, input_layernorm, post_attention_layernorm, so a LLaMA block's norms come after its projections; OPTDecoder
/// registers final_layer_norm before its layers, so OPT's final norm (ln_f, in the head layer) comes right after the
/// embeddings. GPT-2 registers in forward order. A tied LM head is listed once, with the embeddings (named_parameters
/// skips the shared tensor).
std::vector<std::size_t> registration_order(const GeneratorContext& ctx) {
  const auto family = ctx.wl().model.family;
  const auto& layers = ctx.wl().layers;
  const auto is_norm = [](const std::string& name) {
    return name.find("input_layernorm.") != std::string::npos ||
           name.find("post_attention_layernorm.") != std::string::npos;
  };
  std::vector<std::size_t> order;
  order.reserve(ctx.params().size());
  const auto add_layer = [&](std::size_t l, const auto& keep) {
    for (std::size_t p : ctx.layer_params(l))
      if (keep(ctx.params()[p].name))
        order.push_back(p);
  };
  const auto all = [](const std::string&) { return true; };
  const auto is_final_norm = [](const std::string& name) { return name.rfind("ln_f.", 0) == 0; };
  const bool opt = family == scenario::ModelFamily::OPT;
  for (std::size_t l = 0; l < layers.size(); ++l)
    if (layers[l].kind == workload::LayerKind::EMBEDDING)
      add_layer(l, all);
  if (opt)
    for (std::size_t l = 0; l < layers.size(); ++l)
      if (layers[l].kind == workload::LayerKind::HEAD)
        add_layer(l, is_final_norm);
  for (std::size_t l = 0; l < layers.size(); ++l) {
    if (layers[l].kind != workload::LayerKind::BLOCK)
      continue;
    if (family == scenario::ModelFamily::LLAMA) {
      add_layer(l, [&](const std::string& n) { return !is_norm(n); });
      add_layer(l, is_norm);
    } else {
      add_layer(l, all);
    }
  }
  for (std::size_t l = 0; l < layers.size(); ++l)
    if (layers[l].kind == workload::LayerKind::HEAD)
      add_layer(l, [&](const std::string& n) { return !(opt && is_final_norm(n)); });
  return order;
}

/// ds_persist per entry of ctx.params(): parameter_offload.py mark_persistent_parameters (v0.19.5 l.311-329): one
/// pass in registration order; a param whose numel would take the running total past model_threshold is skipped
/// (`continue`: a later, smaller one may still fit), else it persists if numel <= param_threshold, and its numel
/// (the full, unpartitioned ds_numel) is added to the total.
std::vector<bool> mark_persistent(const GeneratorContext& ctx) {
  const auto& cfg = ctx.cfg();
  std::vector<bool> persist(ctx.params().size(), false);
  Elements total = 0;
  for (std::size_t p : registration_order(ctx)) {
    const Elements numel = ctx.params()[p].numel;
    if (numel > cfg.stage3_model_persistence_threshold - total) // numel + total > model_threshold, without overflow
      continue;
    if (numel <= cfg.stage3_param_persistence_threshold) {
      persist[p] = true;
      total += numel;
    }
  }
  return persist;
}

/// Records indexed by slot whose released slots are reused first, so the vector holds at most the records alive at
/// once rather than one per use over the run (stage 3's in-flight gather calls and shared all-reduce buffers).
template <class T>
class Slots {
 public:
  /// Stores `v` in a free slot (a released one first) and returns its index.
  std::size_t take(T v) {
    if (free_.empty()) {
      items_.push_back(std::move(v));
      return items_.size() - 1;
    }
    const std::size_t i = free_.back();
    free_.pop_back();
    items_[i] = std::move(v);
    return i;
  }
  /// Slot i may be reused by the next take().
  void release(std::size_t i) { free_.push_back(i); }
  T& operator[](std::size_t i) { return items_[i]; }
  [[nodiscard]] auto begin() { return items_.begin(); }
  [[nodiscard]] auto end() { return items_.end(); }
  void clear() {
    items_.clear();
    free_.clear();
  }

 private:
  std::vector<T> items_;
  std::vector<std::size_t> free_;
};

class Stage3Generator {
 public:
  explicit Stage3Generator(const GeneratorInput& in)
      : ctx_(in), cfg_(ctx_.cfg()), n_(ctx_.n()), b_(ctx_.b()), c_(ctx_.compute()) {
    const bool overlap = cfg_.overlap_comm_effective();
    gather_ = overlap ? ctx_.add_stream("gather", program::StreamKind::COMM) : c_;
    reduce_ = overlap ? ctx_.add_stream("reduce", program::StreamKind::COMM) : c_;
    // offload_optimizer=cpu (§3.5 "Offload in stage 3"): fp32 master, Adam, fp32 grads and the lp grad
    // partitions live in pinned host memory; CPU Adam per sub-group.
    opt_offload_ = cfg_.offload_optimizer != scenario::OffloadDevice::NONE;
    // offload_param=cpu (ZeRO-Infinity, §3.5): the lp partitions live in pinned host memory; a fetch first copies
    // this rank's partitions H2D, then all-gathers them. Without optimizer offload the fp32 master, Adam and the
    // grad partitions stay on the GPU, and the step writes each updated lp sub-group back D2H.
    offload_param_ = cfg_.offload_param != scenario::OffloadDevice::NONE;
    if (opt_offload_)
      offload_ = add_offload_streams(ctx_);
    else if (offload_param_)
      offload_ = add_param_offload_streams(ctx_);
    // device nvme (ZeRO-Infinity, offload_nvme.hpp): the fp32 master + Adam and/or the lp partitions live on the
    // node's NVMe and are swapped through pinned host buffers.
    const bool nvme_opt = cfg_.offload_optimizer == scenario::OffloadDevice::NVME;
    const bool nvme_param = offload_param_ && cfg_.offload_param == scenario::OffloadDevice::NVME;
    if (nvme_opt || nvme_param)
      nvme_ = add_nvme_swap(ctx_, nvme_opt, nvme_param);
    // Units of fetch/release: the layers' submodules in forward order (§3.5 "Parameter fetch / release": hooks per
    // submodule, one coalesced all-gather of the submodule's params).
    persist_ = mark_persistent(ctx_);
    if (nvme_param)
      in_cpu_ = params_in_cpu_buffer(ctx_, cfg_.sub_group_size, cfg_.param_max_in_cpu, lp_cpu_buffer_);
    const std::size_t num_layers = ctx_.wl().layers.size();
    layer_units_.resize(num_layers);
    for (std::size_t l = 0; l < num_layers; ++l) {
      layer_units_[l].first = units_.size();
      for (const auto& sub : ctx_.submodules(l))
        units_.push_back(make_unit(l, sub));
      layer_units_[l].second = units_.size();
    }
    num_units_ = units_.size();
    build_trace();
    sub_groups_ = pack_sub_groups(ctx_, cfg_.sub_group_size, &sub_groups_on_nvme_, in_cpu_);
    sub_group_params_ = sub_group_members(ctx_, cfg_.sub_group_size);
    if (const std::string why = check_optimizer_swap_buffers(cfg_, sub_groups_.size()); !why.empty())
      throw Error("zero.offload_optimizer.buffer_count: " + why);
  }

  program::StepProgram run() {
    init();
    for (int step = 0; step < ctx_.in().steps; ++step) {
      step_ = step;
      ctx_.begin_step(step);
      for (int micro = 0; micro < ctx_.grad_accum(); ++micro) {
        micro_ = micro;
        // Fetch and release per submodule, around its part of the layer's kernels (pre-/post-forward and
        // -backward hooks of every module, parameter_offload.py); the layer's container modules' hooks around it.
        PassHooks fwd;
        fwd.before_layer = [&](std::size_t l) { container_hooks(l, true, false, true); };
        fwd.before_submodule = [&](std::size_t l, std::size_t i, bool) { fetch_unit(l, i, true, false); };
        fwd.after_submodule = [&](std::size_t l, std::size_t i, bool) { release_unit(l, i, true, false); };
        fwd.after_layer = [&](std::size_t l) { container_hooks(l, true, false, false); };
        // reset_step, the top module's forward pre-hook (parameter_offload.py l.297-300), checks the recorded orders
        // against rank 0's while the trace is not COMPLETE, i.e. at the first two forwards
        // (partitioned_param_coordinator.py l.258-267: assert_ints_same_as_other_ranks, zero/utils.py l.72-120, a
        // broadcast read back with .cpu() / .item()): the host waits for the compute stream. With GA = 1 this orders
        // step 1's first all-gathers after step 0's last fp32 -> lp copy even without persistent params
        // (post_step_gather). The tiny broadcasts' own time is not modelled.
        ctx_.begin_micro_step(step); // engine.forward: tput_timer.start(), before the module's hooks
        if (step_ * ctx_.grad_accum() + micro_ <= 1) {
          ctx_.host_read(c_);
        }
        // reset_step also resets __most_recent_step_id_param_fetched_for (l.284): no use is marked yet.
        fetched_for_.assign(num_units_, 0);
        head_ = {0, 0}; // and the param queue (l.283)
        auto acts = ctx_.forward(fwd);
        PassHooks bwd;
        bwd.before_layer = [&](std::size_t l) {
          container_hooks(l, false, false, true);
          reduce_synced_ = false;
        };
        // __add_grad_to_ipg_bucket makes the reduce stream wait for the compute stream at every gradient; nothing
        // runs on compute between the gradients of one submodule's part, so once per part is the same.
        bwd.before_submodule = [&](std::size_t l, std::size_t i, bool recompute) {
          fetch_unit(l, i, false, recompute);
          if (!recompute)
            reduce_synced_ = false;
        };
        bwd.after_submodule = [&](std::size_t l, std::size_t i, bool recompute) {
          release_unit(l, i, false, recompute);
        };
        bwd.after_layer = [&](std::size_t l) { container_hooks(l, false, false, false); };
        // Activation checkpointing re-runs a block's forward inside its backward (torch.utils.checkpoint): its
        // submodules' forward hooks fetch and release again (parameter_offload.py pre/post-forward hooks); what
        // the forward released is gathered again here (every release in the first step, when the trace is
        // incomplete; afterwards release keeps params whose next use, the block's backward, is near). The
        // recompute has its own trace positions (build_trace), which before_submodule / after_submodule pick with
        // their `recompute` flag.
        bwd.before_recompute = [&](std::size_t l) { container_hooks(l, false, true, true); };
        bwd.after_recompute = [&](std::size_t l) { container_hooks(l, false, true, false); };
        bwd.on_grad = [&](std::size_t p) { on_grad(p); };
        // Before v0.6.0 (stage3.py backward, read at v0.3.15 and v0.5.10) the IPG buffers are not kept from init:
        // each backward allocates ipg_buffer, one tensor of reduce_bucket_size elements of the model dtype, two with
        // overlap_comm ("double buffers"), and ipg_epilogue's _release_ipg_buffers drops them.
        std::vector<BufferId> ipg;
        if (cfg_.contiguous_gradients && cfg_.deepspeed_before(0, 6, 0))
          for (int k = 0; k < (cfg_.overlap_comm_effective() ? 2 : 1); ++k)
            ipg.push_back(b_.alloc(c_, Phase::BACKWARD, "ipg_buffer " + std::to_string(k), MemTag::IPG_BUCKET,
                                   ctx_.lp(cfg_.reduce_bucket_size)));
        ctx_.backward(acts, bwd);
        // independent_gradient_partition_epilogue: reduce what is left in the bucket and wait for the reductions.
        // stage3.py l.1363: reduce_and_partition_stream.synchronize() on the host.
        flush();
        ctx_.host_sync(reduce_);
        b_.join(c_, reduce_);
        reduce_inflight_.clear();
        for (BufferId buf : ipg)
          b_.free(c_, Phase::BACKWARD, buf);
        if (micro + 1 < ctx_.grad_accum())
          ctx_.end_micro_step(step); // engine.step() off the boundary, then the loop reads the loss
      }
      optimizer_step();
      ctx_.end_micro_step(step); // engine.step() after the optimizer step, then the loop reads the loss
      ctx_.end_step(step);
    }
    for (const auto& mv : kept_mv_) // the pipelined swapper's m, v still waiting for a next swap-in
      if (mv)
        b_.keep(*mv);
    return ctx_.build();
  }

 private:
  /// One submodule's fetch/release state.
  struct UnitState {
    std::size_t layer = 0;
    std::string name;
    int params = 0; // parameter tensors of the submodule (host bookkeeping per param)
    Elements all = 0; // numel of all the submodule's params (what the reuse-distance walk counts)
    Elements full = 0; // numel of the non-persistent params (gathered per fetch)
    int count = 0; // number of non-persistent params
    Elements persist_padded = 0; // Σ ceil(n_i/N)·N over the persistent params
    int persist_count = 0; // number of persistent params
    bool persist_gathered = false; // persistent params are gathered at their first fetch, then never released
    std::vector<Elements> numel; // each non-persistent param's numel, in order
    std::vector<Elements> persist_sizes; // each persistent param's ceil(n_i/N)·N
    /// offload_param=nvme: per non-persistent param, whether its partition lives on NVMe (nvme_swappable; else in
    /// host memory, never read from NVMe); all false without NVMe params.
    std::vector<bool> on_nvme;
    std::vector<bool> persist_nvme; // per persistent param (persist_sizes order), whether its partition is on NVMe
    Elements persist_on_nvme = 0; // Σ ceil(n_i/N)·N over the persistent params whose partition lives on NVMe
    std::vector<BufferId> buffers; // gathered params while resident
    bool resident = false; // some params gathered or in flight
    int issued = 0; // non-persistent params gathered or in flight (stage3_allgather_sequential: may be < count)
    Elements issued_numel = 0; // their numel
    Elements pending = 0; // numel issued but not yet waited for (its entries in __inflight_param_registry)
    /// offload_param=nvme: the params after the issued ones whose partitions __prefetch_nvme_param_partitions has
    /// swapped in (status INFLIGHT/AVAILABLE, each in a swap buffer), not yet gathered; the rest are on NVMe.
    int swapped = 0;
    /// Indices into calls_: the calls holding some of its params that it has not yet waited for.
    std::vector<std::size_t> calls;
    /// stage3_allgather_sequential with offload_param: the H2D copies of this rank's partitions, freed at its wait.
    std::vector<BufferId> transients;
    std::vector<std::size_t> shared; // indices into shared_: prefetched all-reduce buffers this submodule views
  };

  /// Some params of one submodule in a fetch: the next `count` of its non-persistent params not yet issued (in
  /// UnitState::numel order), `numel` elements in all, `padded` = Σ ceil(n_i/N)·N of them.
  struct Part {
    std::size_t unit = 0;
    int count = 0;
    Elements numel = 0;
    Elements padded = 0;
    Elements nvme_padded = 0; // offload_param=nvme: the padded numel of those still on NVMe (read at the issue)
    bool nvme_any = false; // offload_param=nvme: some of them live on NVMe (read here or swapped in ahead)
  };

  /// One all_gather_coalesced call (partition_parameters.py l.1507-1573) and its handle, which
  /// __all_gather_params_ registers in __inflight_param_registry for each of its params (partitioned_param_coordinator
  /// .py l.609-613); a submodule's fetch pops and waits for its own params' entries (l.398-406).
  struct GatherCall {
    std::string name;
    std::vector<std::pair<std::size_t, Elements>> parts; // (unit, numel of its params in the call)
    /// The coalesced all-gather's flat output (_all_gather_dtype's flat_tensor). The handle keeps views of it
    /// (AllGatherCoalescedHandle.partitions), so it lives until the last registry entry of the call is popped: the
    /// wait of the last of its submodules.
    std::optional<BufferId> flat;
    std::vector<BufferId> transients; // offload_param: the device copies of this rank's partitions, freed at 1st wait
    EventId ready = 0; // what a waiting compute stream waits for: the collective's end, or once unpacked the cat's
    bool unpack = false; // coalesced: the full tensors are made at the first wait (AllGatherCoalescedHandle.wait)
    bool waited = false; // some submodule has waited for it
    int waiting = 0; // submodules with params in it that have not yet waited
  };

  /// A flat all-reduce buffer that several prefetched submodules view, and how many of them still hold it.
  struct SharedFlat {
    BufferId buf = 0;
    int live = 0;
  };

  /// The recorded module order of one micro-step (partitioned_param_coordinator.py __submodule_order), as unit
  /// indices: the forward visits units 0..U-1; then, from the last layer to the first, a layer that recomputes
  /// (activation checkpointing) visits its units again in forward order (the re-run forward's hooks), and every
  /// layer its units in reverse order (backward). pos_fwd_ / pos_rec_ / pos_bwd_ give each unit's positions
  /// (pos_rec_ = npos without a recompute).
  void build_trace() {
    trace_.clear();
    pos_fwd_.assign(num_units_, 0);
    pos_rec_.assign(num_units_, kNoPos);
    pos_bwd_.assign(num_units_, 0);
    for (std::size_t u = 0; u < num_units_; ++u) {
      pos_fwd_[u] = trace_.size();
      trace_.push_back(u);
    }
    for (std::size_t l = layer_units_.size(); l-- > 0;) {
      const auto [first, last] = layer_units_[l];
      const auto& layer = ctx_.wl().layers[l];
      if (layer.recompute_flops.value() > 0 || layer.recompute_bytes.value() > 0)
        for (std::size_t u = first; u < last; ++u) {
          pos_rec_[u] = trace_.size();
          trace_.push_back(u);
        }
      for (std::size_t u = last; u-- > first;) {
        pos_bwd_[u] = trace_.size();
        trace_.push_back(u);
      }
    }
  }

  /// A submodule's fetch state; adds its params to the rank's partition, grad and persistent totals.
  UnitState make_unit(std::size_t l, const Submodule& sub) {
    UnitState u;
    u.layer = l;
    u.name = sub.name;
    u.params = static_cast<int>(sub.params.size());
    for (std::size_t p : sub.params) {
      const auto& pr = ctx_.params()[p];
      const Elements part = partition_numel(pr.numel);
      u.all += pr.numel;
      // Frozen weights (the LoRA base) are partitioned and gathered like the others: zero.Init and
      // _convert_to_zero_parameters convert every parameter whatever its requires_grad (partition_parameters.py,
      // parameter_offload.py; zero_quantized_nontrainable_weights quantizes exactly these partitions). They get no
      // grad partition and no optimizer state. (QLoRA's 4-bit bitsandbytes weights are a different case, "not
      // split" in InternLM/xtuner#88, reference/calibration.md §4.4; zerosim does not model 4-bit weights.)
      lp_partition_ += part;
      if (pr.trainable)
        grad_partition_ += part;
      // offload_param=nvme: a partition under max(1 MiB, aio block_size) is not swapped (nvme_swappable): in host
      // memory, or on the GPU when persistent (partition_parameters.py l.1792-1806). A trainable param of a
      // sub-group within offload_param.max_in_cpu (in_cpu_) is swapped in at init for good into the pinned CPU flat
      // buffer (stage3.py _move_to_flat_buffer), whatever its size.
      const bool kept_in_cpu = nvme_params() && in_cpu_[p];
      const bool swappable = nvme_params() && nvme_swappable(ctx_.lp(part), cfg_);
      const bool on_nvme = swappable && !kept_in_cpu;
      if (on_nvme)
        lp_on_nvme_ += part;
      else if (kept_in_cpu && swappable)
        lp_cpu_swappable_ += part;
      else if (nvme_params() && !persist_[p] && !kept_in_cpu)
        lp_in_host_ += part;
      if (persist_[p]) {
        if (on_nvme)
          u.persist_on_nvme += part * n_;
        persistent_full_ += pr.numel;
        persistent_padded_ += part * n_;
        u.persist_padded += part * n_;
        ++u.persist_count;
        u.persist_sizes.push_back(part * n_);
        u.persist_nvme.push_back(on_nvme);
        persistent_sizes_.push_back(part * n_);
      } else {
        u.full += pr.numel;
        ++u.count;
        u.numel.push_back(pr.numel);
        u.on_nvme.push_back(on_nvme);
      }
    }
    return u;
  }

  /// offload_param=nvme: some trainable param is outside the CPU flat buffer (its sub-group's flat slice is None).
  [[nodiscard]] bool some_sub_group_on_nvme() const {
    for (std::size_t p = 0; p < ctx_.params().size(); ++p)
      if (ctx_.params()[p].trainable && !in_cpu_[p])
        return true;
    return false;
  }

  [[nodiscard]] Elements largest_sub_group() const {
    return sub_groups_.empty() ? 0 : *std::max_element(sub_groups_.begin(), sub_groups_.end());
  }

  // partition_parameters.py: each param is partitioned on its own, ceil(numel / N) elements per rank.
  [[nodiscard]] Elements partition_numel(Elements numel) const { return (numel + n_ - 1) / n_; }
  /// Elements of the largest trainable param's partition (the params of the sub-groups, sub_group_members).
  [[nodiscard]] Elements largest_param_partition() const {
    Elements m = 0;
    for (const auto& pr : ctx_.params())
      if (pr.trainable)
        m = std::max(m, partition_numel(pr.numel));
    return m;
  }
  // partitioned_param_coordinator: the first forward+backward (step 0, micro-step 0) records the module trace;
  // reset_step at the next forward marks it COMPLETE, so micro-steps count, not optimizer steps.
  [[nodiscard]] bool trace_complete() const { return step_ > 0 || micro_ > 0; }
  void init() {
    // stage3.py __init__ (§3.5 "Persistent GPU buffers").
    if (nvme_ && nvme_->params) {
      emit_nvme_param_init(ctx_, *nvme_, offload_->cpu, lp_on_nvme_, lp_in_host_, lp_cpu_buffer_, lp_cpu_swappable_);
      // The pinned lp buffer for the step's swap-out of the sub-groups on NVMe (nvme_param_swap_out_buffer).
      if (const Elements reuse = nvme_param_swap_out_buffer(ctx_, cfg_.sub_group_size, in_cpu_); reuse > 0)
        b_.alloc_persistent(offload_->cpu, Phase::INIT, "lp swap-out buffer of the largest sub-group (pinned host)",
                            MemTag::LP_PARAMS, ctx_.lp(reuse), program::Device::HOST, true);
    } else if (offload_param_)
      // param_groups_fp16_flat_cpu_memory: pinned whatever offload_param.pin_memory says (stage3.py).
      b_.alloc_persistent(offload_->cpu, Phase::INIT, "lp partitions (pinned host)", MemTag::LP_PARAMS,
                          ctx_.lp(lp_partition_), program::Device::HOST, true);
    else
      b_.alloc_persistent(c_, Phase::INIT, "lp partitions (lp_param_buffer)", MemTag::LP_PARAMS,
                          ctx_.lp(lp_partition_));
    if ((n_ > 1 || offload_param_) && persistent_full_ > 0)
      b_.alloc_persistent(c_, Phase::INIT, "persistent params", MemTag::LP_PARAMS, ctx_.lp(persistent_full_));
    if (opt_offload_) {
      (void)emit_cpu_adam_tile_buffers(ctx_, offload_->cpu); // DeepSpeedCPUAdam's, before the ZeRO optimizer's
      // Offload: grad_partitions_flat_buffer, the fp32 master and the fp32 grads in host memory. Pinned iff
      // offload_optimizer.pin_memory (default false before v0.19.5; stage3.py): grad_partitions_flat_buffer
      // (_setup_for_real_optimizer, allocated whatever GA) and the per-sub-group fp32 grad buffers
      // (initialize_optimizer_states); the fp32 master is `.to(cpu).clone()` in _create_fp32_partitions: pageable.
      const auto h = program::Device::HOST;
      const bool pin = cfg_.pin_optimizer_effective();
      if (!legacy_offload_grads())
        b_.alloc_persistent(offload_->cpu, Phase::INIT, "grad partitions", MemTag::GRAD_PARTITION,
                            ctx_.accum(grad_partition_), h, pin);
      if (nvme_ && nvme_->optimizer) {
        // The constructor returns once the fp32 master is on NVMe (emit_nvme_optimizer_init waits on `cpu`): the
        // GPU work after it (step 0's forward) starts no earlier, in every release.
        // With offload_param=nvme a sub-group in the CPU flat buffer (max_in_cpu) gives its pinned lp slice, one on
        // NVMe an fp32 host buffer it is swapped into (_create_fp32_partitions, l.1045-1063 @v0.19.5); zerosim takes
        // the source of the whole partition: HOST_FP32 as soon as one sub-group is on NVMe.
        emit_nvme_optimizer_init(ctx_, *nvme_, offload_->cpu, c_, grad_partition_, largest_sub_group(),
                                 nvme_->params && some_sub_group_on_nvme() ? MasterInitSource::HOST_FP32
                                 : offload_param_                          ? MasterInitSource::HOST_PINNED_LP
                                                                           : MasterInitSource::GPU_LP);
        b_.join(c_, offload_->cpu);
      } else
        b_.alloc_persistent(offload_->cpu, Phase::INIT, "fp32 master partitions", MemTag::FP32_MASTER,
                            GeneratorContext::fp32(grad_partition_), h);
      if (nvme_ && nvme_->optimizer)
        // Swappable sub-groups share one fp32 grad buffer of the largest sub-group (initialize_optimizer_states:
        // torch.zeros on the CPU, not pinned); their gradients live on NVMe between backward and step.
        b_.alloc_persistent(offload_->cpu, Phase::INIT, "fp32 grad buffer (largest sub-group)", MemTag::FP32_GRADS,
                            GeneratorContext::fp32(largest_sub_group()), h);
      else
        b_.alloc_persistent(offload_->cpu, Phase::INIT, "fp32 grad partitions", MemTag::FP32_GRADS,
                            GeneratorContext::fp32(grad_partition_), h, pin);
      if (adam_state_at_init(cfg_))
        offload_init_step();
      if (cfg_.contiguous_gradients && !cfg_.deepspeed_before(0, 6, 0))
        b_.alloc_persistent(c_, Phase::INIT, "ipg bucket", MemTag::IPG_BUCKET, bucket_bytes(cfg_.reduce_bucket_size));
      if (legacy_offload_grads()) {
        // Before v0.6.0 (stage3.py __init__, "CPU Offload initialization"): temp_grad_buffer_for_gpu_offload and
        // temp_grad_gpu_buffer, two GPU tensors of the model dtype of largest_partitioned_param_numel elements, kept
        // for the whole run. Up to v0.4.0 that is max(fp16_partitioned_groups_flat_numel), the largest sub-group's
        // partition elements (stage3.py l.858 @v0.3.15, l.855 @v0.4.0); from v0.4.1 (PR #1150) the largest single
        // param's partition, max over the sub-groups' partitioned tensors (l.855-858 @v0.4.1, l.851-854 @v0.5.10).
        const Elements temp = cfg_.deepspeed_before(0, 4, 1) ? largest_sub_group() : largest_param_partition();
        for (const char* name : {"temp_grad_buffer_for_gpu_offload", "temp_grad_gpu_buffer"})
          b_.alloc_persistent(c_, Phase::INIT, name, MemTag::FLATTEN_TEMP, ctx_.lp(temp));
      }
      return;
    }
    // In _setup_for_real_optimizer's order (stage3.py): the fp32 master partitions (_create_fp32_partitions), the
    // optimizer-state init's zero fp32 grad of the largest sub-group, dropped at its end (no Adam state yet: created
    // lazily at the first step), the IPG bucket, and only then grad_partitions_flat_buffer.
    // fp32 (training.precision) with the partitions on the GPU: _create_fp32_partitions appends the fp16 flat
    // partition itself when its dtype and device already match the master's (stage3.py, the branch written for
    // torch autocast): no fp32 copy (fp32_master_aliases_params).
    // Otherwise one fp32 tensor per sub-group, made from its lp flat partition: `.clone().float()` until v0.18.2
    // (l.725-726 @v0.9.0: an lp clone, transient), `.to(device, dtype=fp32)` then `.clone()` from v0.18.3 (PR #7700:
    // an fp32 cast, transient).
    if (!fp32_master_aliases_params()) {
      const MasterCast how =
          cfg_.deepspeed_before(0, 18, 3) ? MasterCast::CLONE_THEN_CAST : MasterCast::CAST_THEN_CLONE;
      for (std::size_t i = 0; i < sub_groups_.size(); ++i)
        (void)emit_fp32_master_from_lp(ctx_, c_, "fp32 master partition sub-group " + std::to_string(i), sub_groups_[i],
                                       how);
    }
    // Before v0.13.2 (adam_state_at_init) the loop over sub-groups runs _optimizer_step(i) with that zero grad, which
    // creates sub-group i's m and v while the grad buffer is live (stage3.py initialize_optimizer_states, l.~865
    // @v0.9.0; removed by PR #5104).
    if (!sub_groups_.empty()) {
      const Elements largest = *std::max_element(sub_groups_.begin(), sub_groups_.end());
      BufferId z = b_.alloc(c_, Phase::INIT, "init fp32 grad", MemTag::FP32_GRADS, GeneratorContext::fp32(largest));
      if (adam_state_at_init(cfg_))
        for (std::size_t i = 0; i < sub_groups_.size(); ++i) {
          const std::string l = "sub-group " + std::to_string(i);
          b_.alloc_persistent(c_, Phase::INIT, "adam m,v " + l, MemTag::OPTIMIZER_STATES,
                              GeneratorContext::fp32(sub_groups_[i]) * 2.0);
          emit_gpu_adam_init_step(ctx_, c_, "adam at init " + l, sub_groups_[i]);
        }
      b_.free(c_, Phase::INIT, z);
    }
    // ONE IPG bucket of reduce_bucket_size elements (bucket_bytes: the model dtype before 0.17.2, the comm dtype
    // from it), kept for the whole run, not doubled by overlap_comm (stage3.py l.731-735, §7 #11); only with
    // contiguous_gradients (without, the grads stay in their own tensors until reduced).
    if (cfg_.contiguous_gradients && !cfg_.deepspeed_before(0, 6, 0))
      b_.alloc_persistent(c_, Phase::INIT, "ipg bucket", MemTag::IPG_BUCKET, bucket_bytes(cfg_.reduce_bucket_size));
    // grad_partitions_flat_buffer in the grad-accumulation dtype (= model dtype by default).
    b_.alloc_persistent(c_, Phase::INIT, "grad partitions", MemTag::GRAD_PARTITION, ctx_.accum(grad_partition_));
  }

  // The host issues a fetch's H2D copy or all-gather at this point of its program (the compute stream without a host
  // model): the side stream waits for the issuer. DeepSpeed's all-gather stream does not wait for the compute stream.
  void issue_on(StreamId s) { b_.join(s, ctx_.issuer()); }

  /// offload_param's H2D copy of a fetch's partitions, issued by the host. Without overlap_comm DeepSpeed's
  /// all-gather stream is the default stream (gather_pool), so the copy also follows the compute stream's queue,
  /// after the allocation of its target there.
  void issue_copy(StreamId copy) {
    issue_on(copy);
    if (gather_pool() == c_)
      b_.join(copy, c_);
  }

  /// The stream whose cache the gathered-parameter buffers come from. DeepSpeed allocates them inside `with
  /// get_accelerator().stream(self.__allgather_stream)` (partitioned_param_coordinator.py l.606-609, around
  /// all_gather_coalesced), and that stream is the default (compute) stream unless overlap_comm
  /// (parameter_offload.py l.189-190). With its own all-gather stream: the host thread (the issuer, below). Without:
  /// the compute stream, in its stream order; free_param's record_stream then names the allocating stream, which
  /// PyTorch ignores (CUDACachingAllocator.cpp recordStream: uses on the allocation stream need no event), so the
  /// block is reusable at once: an ordinary free on the compute stream (release_gathered).
  [[nodiscard]] StreamId gather_pool() const { return gather_ == c_ ? c_ : ctx_.issuer(); }

  /// free_param of one gathered buffer (partition_parameters.py l.308-325): record_stream for the compute stream,
  /// then param.data = empty; an ordinary free when the buffer came from the compute stream's cache (gather_pool).
  void release_gathered(BufferId buf) {
    if (gather_pool() == c_)
      b_.free(c_, Phase::PARAM_GATHER, buf);
    else
      b_.free_record_streamed(ctx_.issuer(), c_, Phase::PARAM_GATHER, buf);
  }

  // Gathered-parameter buffers are allocated and freed by the host thread (the issuer): PyTorch's caching
  // allocator counts a tensor from the host's allocation to the host's release (torch.cuda.memory_allocated drops
  // at free_param), while free_param's record_stream holds the block until the compute stream reaches that point
  // (reserved memory); a cudaMalloc that fails meanwhile waits for those blocks (the engine's synchronize_events).
  // The GPU streams only run the copies, collectives and kernels. Without a host model the issuer is the compute
  // stream; without overlap_comm the buffers come from the compute stream (gather_pool).
  //
  // One call (partition_parameters.py all_gather_coalesced) for the params of `parts`: a submodule's on-demand fetch
  // (one part) or a prefetch (every prefetched param, possibly of several submodules). Its memory follows
  // DeepSpeed's tensors: a single param is gathered into its own padded buffer that param.data views
  // (_all_gather_sequential, allocated here); several are gathered into one flat buffer (_all_gather_dtype,
  // allocated here) whose handle makes every param's full tensor by torch.cat at its first wait (wait_call).
  void issue_gather(const std::vector<Part>& parts) {
    const StreamId pool = gather_pool();
    const std::string& head = units_[parts.front().unit].name;
    const std::string name = parts.size() == 1 ? head : head + " +" + std::to_string(parts.size() - 1);
    if (offload_param_ && n_ == 1) {
      // _no_gather_coalesced: each param's data becomes the device copy of its (full-size) partition.
      for (const Part& p : parts) {
        const std::string& un = units_[p.unit].name;
        ctx_.host_work(Phase::PARAM_GATHER, "issue allgather " + un, ctx_.in().host.op_launch * kGatherHostOps);
        const auto copy = offload_->copy;
        if (nvme_params())
          // offload_param=nvme: the partitions are first read from NVMe into a pinned swap buffer, unless
          // __prefetch_nvme_param_partitions has already.
          nvme_read(p.nvme_padded, un, p.nvme_any);
        units_[p.unit].buffers.push_back(
            b_.alloc(pool, Phase::PARAM_GATHER, "fetched " + un, MemTag::GATHER_BUFFER, ctx_.lp(p.numel)));
        issue_copy(copy);
        b_.copy(copy, Phase::OFFLOAD, "h2d params " + un, program::CopyDir::H2D, ctx_.lp(p.numel));
        const std::size_t c = new_call(un);
        calls_[c].ready = b_.record(copy);
        register_call(c, {p});
      }
      return;
    }
    // At a submodule's first fetch its persistent params are NOT_AVAILABLE too and ride in the same call (they land
    // in their full tensors, allocated at INIT); afterwards only _post_step refreshes them. They count among the
    // call's params, which decide the path (partition_parameters.py all_gather_coalesced, l.1570): one param is
    // gathered on its own (_all_gather_sequential), several are coalesced.
    Elements persist_padded = 0;
    int fetch_params = 0;
    Elements padded = 0;
    for (const Part& p : parts) {
      auto& st = units_[p.unit];
      if (!st.persist_gathered && st.persist_padded > 0 && n_ > 1) {
        st.persist_gathered = true;
        persist_padded += st.persist_padded;
        fetch_params += st.persist_count;
      }
      fetch_params += p.count;
      padded += p.padded;
    }
    // stage3_use_all_reduce_for_fetch_params (_all_gather_coalesced l.1419-1435, not for a single param).
    const bool all_reduce =
        cfg_.stage3_use_all_reduce_for_fetch_params && !cfg_.stage3_allgather_sequential && fetch_params > 1;
    // Host ops as for one issue per submodule (the call's per-param narrow / copy work grows with its params).
    ctx_.host_work(Phase::PARAM_GATHER, (all_reduce ? "issue allreduce " : "issue allgather ") + name,
                   ctx_.in().host.op_launch * (kGatherHostOps * static_cast<double>(parts.size())));
    const std::size_t c = new_call(name);
    if (offload_param_) {
      // offload_param: this rank's partitions are copied H2D first (Ψ_submodule/N lp bytes over PCIe per fetch),
      // into a device temporary (`ds_tensor.to(device)`), or with all_reduce straight into its slot of the flat
      // buffer (`flat.narrow(...).copy_(ds_tensor)`).
      const auto copy = offload_->copy;
      if (nvme_params()) {
        Elements on_nvme = 0;
        bool touch = false;
        for (const Part& p : parts) {
          on_nvme += p.nvme_padded;
          touch = touch || p.nvme_any;
        }
        nvme_read(on_nvme, name, touch);
      }
      const Bytes part = ctx_.lp(padded / n_);
      if (!all_reduce)
        calls_[c].transients.push_back(
            b_.alloc(pool, Phase::PARAM_GATHER, "fetched partition " + name, MemTag::GATHER_BUFFER, part));
      issue_copy(copy);
      b_.copy(copy, Phase::OFFLOAD, "h2d params " + name, program::CopyDir::H2D, part);
      b_.join(gather_, copy);
    } else {
      issue_on(gather_);
    }
    const Bytes persist = ctx_.lp(persist_padded);
    const Bytes flat = ctx_.lp(padded);
    if (all_reduce) {
      // A zero-filled flat buffer of Σ ds_numel_aligned (the all-gather's output size), this rank's partitions copied
      // into their slots, one all_reduce of the whole buffer (2(N-1)/N of it on the wire against the all-gather's
      // (N-1)/N), and every param's data a view of it: no send-side cat and no per-param cat after the wait, but the
      // buffer lives until the last of its params is released. Persistent params riding along keep it until the step
      // releases them (release_and_reset_all).
      const BufferId buf =
          b_.alloc(pool, Phase::PARAM_GATHER, "allreduce flat " + name, MemTag::GATHER_BUFFER, flat + persist);
      if (persist_padded > 0)
        retained_.push_back(buf);
      else if (parts.size() == 1)
        units_[parts.front().unit].buffers.push_back(buf);
      else
        share(buf, parts);
      ctx_.mem_kernel(gather_, Phase::PARAM_GATHER, "zero flat and copy partitions " + name,
                      flat + persist + ctx_.lp((padded + persist_padded) / n_) * 2.0);
      b_.collective(gather_, Phase::PARAM_GATHER, "allreduce params " + name, CollectiveKind::ALL_REDUCE,
                    flat + persist, ctx_.param_group());
    } else if (fetch_params == 1) {
      // A single param is gathered into its own padded buffer and viewed (1x), allocated at the issue.
      units_[parts.front().unit].buffers.push_back(
          b_.alloc(pool, Phase::PARAM_GATHER, "gathered " + name, MemTag::GATHER_BUFFER, flat));
      b_.collective(gather_, Phase::PARAM_GATHER, "allgather " + name, CollectiveKind::ALL_GATHER, flat,
                    ctx_.param_group());
    } else {
      // Coalesced all-gather (_all_gather_dtype, l.1301-1343): only the flat output (persistent params included) is
      // allocated at the issue; the params' full tensors come at the first wait (wait_call).
      calls_[c].flat =
          b_.alloc(pool, Phase::PARAM_GATHER, "allgather flat " + name, MemTag::GATHER_BUFFER, flat + persist);
      calls_[c].unpack = true;
      b_.collective(gather_, Phase::PARAM_GATHER, "allgather " + name, CollectiveKind::ALL_GATHER, flat + persist,
                    ctx_.param_group());
    }
    calls_[c].ready = b_.record(gather_);
    register_call(c, parts);
  }

  /// The next params of unit u not yet issued, in order, at most `max_count` of them, taken while fewer than `limit`
  /// numel are taken (partitioned_param_coordinator.py l.457: the param that crosses the limit is still taken).
  [[nodiscard]] Part make_part(std::size_t u, Elements limit, int max_count = std::numeric_limits<int>::max()) const {
    const auto& st = units_[u];
    Part p{u, 0, 0, 0, 0, false};
    for (int i = st.issued; i < st.count && p.numel < limit && p.count < max_count; ++i) {
      const Elements numel = st.numel[static_cast<std::size_t>(i)];
      ++p.count;
      p.numel += numel;
      p.padded += (numel + n_ - 1) / n_ * n_;
      if (st.on_nvme[static_cast<std::size_t>(i)]) {
        p.nvme_any = true;
        if (i >= st.issued + st.swapped)
          p.nvme_padded += (numel + n_ - 1) / n_ * n_;
      }
    }
    return p;
  }

  /// offload_param=nvme: how many of unit u's params from the next one not issued are available to an all-gather
  /// without a read: the ones swapped in ahead, then those in host memory (on_nvme false: AVAILABLE, which the
  /// prefetch walk takes, partitioned_param_coordinator.py l.444-463 _is_currently_on_nvme), up to the first one
  /// still on NVMe.
  [[nodiscard]] int available_run(const UnitState& st) const {
    int i = st.issued + st.swapped;
    while (i < st.count && !st.on_nvme[static_cast<std::size_t>(i)])
      ++i;
    return i - st.issued;
  }

  /// offload_param=nvme: swap buffers held by unit u's params, those on NVMe that are issued or swapped in ahead.
  [[nodiscard]] static int buffers_held(const UnitState& st) {
    int held = 0;
    for (int i = 0; i < st.issued + st.swapped && i < st.count; ++i)
      held += st.on_nvme[static_cast<std::size_t>(i)] ? 1 : 0;
    return held;
  }

  [[nodiscard]] bool nvme_params() const { return nvme_ && nvme_->params; }

  /// offload_param=nvme: the host reads `padded / N` lp elements of partitions still on NVMe into swap buffers
  /// (_ensure_availability_of_partitioned_params, partition_parameters.py l.1662-1676 @v0.19.5: a blocking
  /// swap_in); then, when some of the call's params live on NVMe (`touch`: read here or swapped in ahead, status
  /// NOT_AVAILABLE or INFLIGHT), the H2D copy follows every NVMe read issued so far (swap_in / synchronize_reads
  /// wait for the prefetched ones too). A call of params in host memory only (AVAILABLE) waits for nothing.
  void nvme_read(Elements padded, const std::string& label, bool touch) {
    if (padded > 0)
      emit_nvme_param_read(ctx_, *nvme_, ctx_.issuer(), ctx_.lp(padded / n_), label);
    if (touch || padded > 0)
      b_.join(offload_->copy, nvme_->nvme);
  }

  /// A fresh slot of calls_ (a free one first, so calls_ holds at most the calls in flight at once).
  std::size_t new_call(const std::string& name) {
    GatherCall call;
    call.name = name;
    return calls_.take(std::move(call));
  }

  /// Call c holds `parts`: each submodule's params are INFLIGHT (issued), counted available
  /// (__n_available_params += ds_numel at the issue, l.593), and the submodule will wait for c.
  void register_call(std::size_t c, const std::vector<Part>& parts) {
    auto& call = calls_[c];
    call.waiting = static_cast<int>(parts.size());
    for (const Part& p : parts) {
      auto& st = units_[p.unit];
      call.parts.emplace_back(p.unit, p.numel);
      st.calls.push_back(c);
      st.resident = true;
      st.issued += p.count;
      st.issued_numel += p.numel;
      st.pending += p.numel;
      st.swapped = std::max(0, st.swapped - p.count); // the swapped-in ones come first
      available_ += p.numel;
    }
  }

  /// A prefetched all-reduce buffer that every param of `parts` views: freed when the last of them is released.
  void share(BufferId buf, const std::vector<Part>& parts) {
    const std::size_t slot = shared_.take(SharedFlat{buf, static_cast<int>(parts.size())});
    for (const Part& p : parts)
      units_[p.unit].shared.push_back(slot);
  }

  /// A submodule waits for call c (_fetch_sub_module_impl l.398-406: __inflight_param_registry.pop(param).wait(),
  /// inside the all-gather stream's context) and returns what its compute waits for. The call's first wait unpacks
  /// it whole (AllGatherCoalescedHandle.wait, partition_parameters.py l.749-795): every param of the call, of this
  /// submodule or of later prefetched ones, gets a new full tensor from torch.cat of its N slices, on the all-gather
  /// stream (read + write of its numel); later waits find it complete. The flat output goes when the last submodule
  /// of the call has popped its entries (the handle's last reference). Its slices were record_stream'd on the
  /// all-gather stream, which in DeepSpeed runs only the cats by then (NCCL runs the collectives on its own stream and
  /// stashes their tensors until the wait instead of record_stream'ing them, PyTorch >= 2.x); zerosim's gather stream
  /// also carries the later prefetches' collectives, so holding the block for its queue would keep it far too long:
  /// it is freed plainly (the cats are queued, at the first wait, before any later submodule's wait).
  EventId wait_call(std::size_t c) {
    const StreamId pool = gather_pool();
    auto& call = calls_[c];
    if (!call.waited) {
      call.waited = true;
      if (call.unpack) {
        Elements numel = 0;
        for (const auto& [m, k] : call.parts) {
          units_[m].buffers.push_back(
              b_.alloc(pool, Phase::PARAM_GATHER, "gathered " + units_[m].name, MemTag::GATHER_BUFFER, ctx_.lp(k)));
          numel += k;
        }
        issue_on(gather_); // the host queues the cats when it gets here
        ctx_.mem_kernel(gather_, Phase::PARAM_GATHER, "unflatten " + call.name, ctx_.lp(numel) * 2.0);
        call.ready = b_.record(gather_);
      }
      for (BufferId t : call.transients)
        b_.free(pool, Phase::PARAM_GATHER, t);
      call.transients.clear();
    }
    b_.wait(c_, call.ready);
    const EventId ready = call.ready;
    if (--call.waiting == 0) {
      if (call.flat)
        b_.free(pool, Phase::PARAM_GATHER, *call.flat);
      call.flat.reset();
      calls_.release(c);
    }
    return ready;
  }

  /// stage3_allgather_sequential (partition_parameters.py l.1570 -> _all_gather_sequential, l.1345-1416): one
  /// all-gather per param, each into its own buffer of ceil(numel/N)·N elements that param.data views (no flat
  /// buffer, no copies). Issues unit u's next params in order until `limit` numel are issued (a prefetch of
  /// prefetch_bucket_size = 1 takes one param) or all are; at its first fetch its persistent params go first, one
  /// all-gather each, into their full tensors (INIT). Returns the numel issued.
  Elements issue_sequential(std::size_t u, Elements limit) {
    auto& st = units_[u];
    const StreamId pool = gather_pool();
    const bool with_persist = !st.persist_gathered && st.persist_padded > 0;
    if (with_persist) {
      st.persist_gathered = true;
      for (std::size_t k = 0; k < st.persist_sizes.size(); ++k)
        gather_one(st, st.persist_sizes[k], "allgather persistent " + st.name, nvme_params() && st.persist_nvme[k],
                   nvme_params() && st.persist_nvme[k]);
    }
    Elements done = 0;
    while (st.issued < st.count && done < limit) {
      const auto i = static_cast<std::size_t>(st.issued);
      const Elements padded = (st.numel[i] + n_ - 1) / n_ * n_;
      const BufferId buf =
          b_.alloc(pool, Phase::PARAM_GATHER, "gathered " + st.name, MemTag::GATHER_BUFFER, ctx_.lp(padded));
      st.buffers.push_back(buf);
      const bool swapped = st.swapped > 0; // offload_param=nvme: this param's partition is already swapped in
      if (swapped)
        --st.swapped;
      gather_one(st, padded, "allgather " + st.name, !swapped && st.on_nvme[i], st.on_nvme[i]);
      ++st.issued;
      st.issued_numel += st.numel[i];
      st.pending += st.numel[i];
      available_ += st.numel[i];
      done += st.numel[i];
    }
    if (done > 0) {
      // One handle per param (MultipleAllGatherHandles); the submodule's wait covers them all.
      const std::size_t c = new_call(st.name);
      calls_[c].ready = b_.record(gather_);
      calls_[c].waiting = 1;
      st.calls.push_back(c);
      st.resident = true;
    }
    return done;
  }

  /// One param's all-gather of `padded` elements in _all_gather_sequential: the host's issue ops; with offload_param
  /// the H2D copy of its partition into a device temporary (`ds_tensor.to(device)`, a transient of the unit).
  /// `on_nvme`: with offload_param=nvme the partition is read first (else it was swapped in ahead, or lives in host
  /// memory); `touch`: it lives on NVMe (nvme_read).
  void gather_one(UnitState& st, Elements padded, const std::string& label, bool on_nvme, bool touch) {
    ctx_.host_work(Phase::PARAM_GATHER, "issue " + label, ctx_.in().host.op_launch * kGatherHostOps);
    const Bytes part = ctx_.lp(padded / n_);
    if (offload_param_) {
      const auto copy = offload_->copy;
      if (nvme_params())
        nvme_read(on_nvme ? padded : 0, st.name, touch);
      st.transients.push_back(
          b_.alloc(gather_pool(), Phase::PARAM_GATHER, "fetched partition " + st.name, MemTag::GATHER_BUFFER, part));
      issue_copy(copy);
      b_.copy(copy, Phase::OFFLOAD, "h2d params " + st.name, program::CopyDir::H2D, part);
      b_.join(gather_, copy);
    } else {
      issue_on(gather_);
    }
    b_.collective(gather_, Phase::PARAM_GATHER, label, CollectiveKind::ALL_GATHER, ctx_.lp(padded), ctx_.param_group());
  }

  /// Whether _all_gather_sequential serves unit fetches: stage3_allgather_sequential with more than one rank (at
  /// N == 1 _no_gather_coalesced comes first).
  [[nodiscard]] bool sequential() const { return cfg_.stage3_allgather_sequential && n_ > 1; }

  /// The hooks of layer l's container modules (the layer's own module and those grouping its submodules, e.g.
  /// GPT-2 h.3, h.3.attn, h.3.mlp): `pre` the pre-forward (pre-backward) hooks before the layer's first
  /// submodule, else the post hooks after its last. `recompute`: those of the forward re-run in backward.
  void container_hooks(std::size_t l, bool forward, bool recompute, bool pre) {
    const auto [first, last] = layer_units_[l];
    const int containers = ctx_.module_count(l) - static_cast<int>(last - first);
    const std::string what = std::string(recompute ? "recompute " : "") + (pre ? "pre hooks " : "post hooks ");
    ctx_.host_work(forward ? Phase::FORWARD : Phase::BACKWARD, what + ctx_.wl().layers[l].name,
                   ctx_.in().host.module_hook * static_cast<double>(std::max(containers, 0)));
  }

  /// Unit u's trace position in the forward, in its layer's recompute or in the backward.
  [[nodiscard]] std::size_t trace_pos(std::size_t u, bool forward, bool recompute) const {
    return forward ? pos_fwd_[u] : recompute ? pos_rec_[u] : pos_bwd_[u];
  }

  /// The pre hook of submodule i of layer l (fetch_sub_module) in the forward, a recompute or the backward.
  void fetch_unit(std::size_t l, std::size_t i, bool forward, bool recompute) {
    const std::size_t u = layer_units_[l].first + i;
    fetch(u, trace_pos(u, forward, recompute));
  }

  /// The post hook of submodule i of layer l: the module hook, the per-param bookkeeping, release_sub_module
  /// (released unless the reuse distance from this trace position keeps it).
  void release_unit(std::size_t l, std::size_t i, bool forward, bool recompute) {
    const std::size_t u = layer_units_[l].first + i;
    ctx_.host_work(forward ? Phase::FORWARD : Phase::BACKWARD, "post hook " + units_[u].name,
                   ctx_.in().host.module_hook + ctx_.in().host.param_hook * static_cast<double>(units_[u].params));
    release(u, trace_pos(u, forward, recompute));
  }

  void fetch(std::size_t u, std::size_t pos) {
    auto& st = units_[u];
    const Phase hook_phase = pos < num_units_ ? Phase::FORWARD : Phase::BACKWARD; // forward: 0..U-1
    // fetch_sub_module's Python: the hook, then per param status checks / registry bookkeeping.
    ctx_.host_work(hook_phase, "fetch " + st.name,
                   ctx_.in().host.module_hook + ctx_.in().host.param_hook * static_cast<double>(st.params));
    // N == 1: all_gather_coalesced short-circuits to _no_gather_coalesced: no comm, no buffer (§3.6); with
    // offload_param the partition still has to come from host memory.
    if (n_ == 1 && !offload_param_)
      return;
    if (n_ == 1 && !st.persist_gathered && st.persist_padded > 0) {
      if (nvme_ && nvme_->params) {
        if (st.persist_on_nvme > 0) {
          emit_nvme_param_read(ctx_, *nvme_, ctx_.issuer(), ctx_.lp(st.persist_on_nvme), "persistent " + st.name);
          b_.join(offload_->copy, nvme_->nvme);
        }
      }
      issue_on(offload_->copy);
      b_.copy(offload_->copy, Phase::OFFLOAD, "h2d persistent " + st.name, program::CopyDir::H2D,
              ctx_.lp(st.persist_padded));
      b_.wait(c_, b_.record(offload_->copy));
      st.persist_gathered = true;
    }
    if (!st.persist_gathered && st.persist_padded > 0 && st.full == 0) {
      // A submodule with only persistent params (layer norms, biases): gathered once at its first fetch into their
      // full tensors (allocated at INIT), never released. With stage3_use_all_reduce_for_fetch_params and more than
      // one of them, all-reduced in a zeroed flat buffer that their data views until the step (issue_gather); with
      // stage3_allgather_sequential one all-gather each.
      if (sequential()) {
        issue_sequential(u, 0);
        st.resident = false;
      } else if (cfg_.stage3_use_all_reduce_for_fetch_params && st.persist_count > 1) {
        issue_on(gather_);
        const Bytes flat = ctx_.lp(st.persist_padded);
        retained_.push_back(b_.alloc(gather_pool(), Phase::PARAM_GATHER, "allreduce flat persistent " + st.name,
                                     MemTag::GATHER_BUFFER, flat));
        ctx_.mem_kernel(gather_, Phase::PARAM_GATHER, "zero flat and copy partitions persistent " + st.name,
                        flat + ctx_.lp(st.persist_padded / n_) * 2.0);
        b_.collective(gather_, Phase::PARAM_GATHER, "allreduce persistent " + st.name, CollectiveKind::ALL_REDUCE, flat,
                      ctx_.param_group());
      } else {
        issue_on(gather_);
        b_.collective(gather_, Phase::PARAM_GATHER, "allgather persistent " + st.name, CollectiveKind::ALL_GATHER,
                      ctx_.lp(st.persist_padded), ctx_.param_group());
      }
      b_.wait(c_, b_.record(gather_));
      for (BufferId t : st.transients)
        b_.free(gather_pool(), Phase::PARAM_GATHER, t);
      st.transients.clear();
      st.persist_gathered = true;
    }
    if (st.full > 0) {
      if (st.issued < st.count) {
        if (sequential())
          issue_sequential(u, std::numeric_limits<Elements>::max());
        else
          // _fetch_sub_module_impl: the params not already inflight from a prefetch (NOT_AVAILABLE) in one call
          // (partitioned_param_coordinator.py l.364-381, __all_gather_params_ l.587-590), issued before any wait.
          issue_gather({make_part(u, std::numeric_limits<Elements>::max())});
      }
      if (!st.calls.empty()) {
        // Wait for the submodule's params: back-pressure on the oldest fetch events (host), then the compute
        // stream waits for the all-gather stream (wait_stream) and one event per waited param is recorded.
        while (fetch_inflight_.size() > kMaxOutstanding) {
          ctx_.host_wait(fetch_inflight_.front());
          fetch_inflight_.pop_front();
        }
        EventId last = 0;
        for (std::size_t c : st.calls)
          last = wait_call(c);
        st.calls.clear();
        st.pending = 0;
        for (int i = 0; i < st.count; ++i)
          fetch_inflight_.push_back(last);
        for (BufferId t : st.transients)
          b_.free(gather_pool(), Phase::PARAM_GATHER, t);
        st.transients.clear();
      }
    }
    // Prefetch only with a COMPLETE trace, i.e. from the second forward on (reset_step; §7 #23).
    if (!trace_complete())
      return;
    // stage3_allgather_sequential: the engine sets prefetch_bucket_size to 1 (engine.py l.2471-2473), so the
    // prefetch takes the next param not yet gathered: `while numel_prefetching < 1` stops after one.
    const Elements bucket = cfg_.stage3_allgather_sequential ? 1 : cfg_.stage3_prefetch_bucket_size;
    const Elements budget = std::min(cfg_.stage3_max_live_parameters - available_, bucket);
    // The param queue (l.452-484) is walked param by param: a NOT_AVAILABLE param is taken (and its full numel
    // counted) while fewer than `budget` numel are taken, so the last submodule may be split, its other params left
    // for a later prefetch or its own fetch; params already AVAILABLE (persistent ones) or INFLIGHT are skipped.
    //
    // zerosim's walk starts at pos + 1 rather than at the queue's head (head_); the entries in between were popped by
    // earlier walks and are all still gathered (a popped param is kept until that use, release()), so the walk
    // stops where DeepSpeed's does. head_ follows DeepSpeed's head: the fetch pops the submodule's own entries first
    // (l.424-441), the walk every entry it passes or takes.
    head_ = std::max(head_, QueuePos{pos + 1, 0});
    const bool nvme = nvme_params();
    Elements prefetching = 0;
    std::vector<Part> group; // every prefetched param, in one call
    for (std::size_t q = pos + 1; q < trace_.size() && prefetching < budget; ++q) {
      const std::size_t m = trace_[q];
      auto& um = units_[m];
      // Every param the walk pops is marked with the step id of this use (l.470-472), taken or skipped: a submodule
      // still gathered (AVAILABLE or INFLIGHT) is walked past, and release() then keeps it until this use.
      if (um.full == 0 || um.issued >= um.count ||
          std::any_of(group.begin(), group.end(), [m](const Part& p) { return p.unit == m; })) {
        fetched_for_[m] = std::max(fetched_for_[m], q);
        head_ = std::max(head_, QueuePos{q + 1, 0});
        continue;
      }
      // offload_param=nvme (l.444-463): a param whose partition is still on NVMe (_is_currently_on_nvme: not yet
      // swapped in by __prefetch_nvme_param_partitions) is put back at the head and the walk stops there, "to
      // preserve fetch order"; the swapper reads it ahead instead (prefetch_nvme). In zerosim a partition is swapped
      // in either by that read ahead (UnitState::swapped) or at its gather's issue; a param in host memory (the CPU
      // flat buffer of max_in_cpu, or under the swap minimum) is AVAILABLE and is taken (available_run).
      if (nvme && available_run(um) == 0) {
        head_ = std::max(head_, QueuePos{q, um.issued});
        break;
      }
      fetched_for_[m] = std::max(fetched_for_[m], q);
      if (sequential()) {
        prefetching += issue_sequential(m, budget - prefetching);
        head_ = std::max(head_, um.issued < um.count ? QueuePos{q, um.issued} : QueuePos{q + 1, 0});
      } else {
        group.push_back(make_part(m, budget - prefetching, nvme ? available_run(um) : std::numeric_limits<int>::max()));
        prefetching += group.back().numel;
        const int next = um.issued + group.back().count;
        head_ = std::max(head_, next < um.count ? QueuePos{q, next} : QueuePos{q + 1, 0});
        if (nvme && next < um.count && prefetching < budget)
          break; // its next param is on NVMe
      }
    }
    // __all_gather_params: ONE all_gather_coalesced call for all of them (one per dtype; zerosim's params share
    // the lp dtype); with stage3_use_all_reduce_for_fetch_params one all-reduce.
    if (!group.empty())
      issue_gather(group);
    // __prefetch_nvme_param_partitions, inside the `prefetch_bucket_size > 0` branch (l.487-488).
    if (nvme && bucket > 0)
      prefetch_nvme();
  }

  /// __prefetch_nvme_param_partitions (partitioned_param_coordinator.py l.666-690): from the queue's head, the
  /// partitions of params still on NVMe are swapped in (one async read) while the numel considered so far (every
  /// queued param's full numel, whatever its state) is at most twice the numel in flight (issued, not yet waited for:
  /// __inflight_param_registry) and a swap buffer is free (zero.param_swap_buffer_count buffers of one param each; a
  /// param holds its buffer from its swap-in to its release, partition_parameters.py l.1779-1781). With nothing in
  /// flight that is one param. Persistent params count as considered (zerosim keeps them off NVMe: they are
  /// gathered once and their swap buffers released, l.615-620).
  void prefetch_nvme() {
    Elements in_flight = 0;
    int held = 0;
    for (const auto& st : units_) {
      in_flight += st.pending;
      held += buffers_held(st);
    }
    const int free_buffers = cfg_.param_swap_buffer_count - held;
    const auto full = [&](Elements considered, int taken) {
      return considered > 2 * in_flight || taken >= free_buffers;
    };
    Elements considered = 0;
    Elements padded = 0;
    int taken = 0;
    std::string first;
    for (std::size_t q = head_.first; q < trace_.size() && !full(considered, taken); ++q) {
      auto& st = units_[trace_[q]];
      for (int i = q == head_.first ? head_.second : 0; i < st.count && !full(considered, taken); ++i) {
        const Elements numel = st.numel[static_cast<std::size_t>(i)];
        if (i == st.issued + st.swapped) {
          // Counted as available: a partition in host memory is AVAILABLE (skipped by the swapper, no buffer);
          // one on NVMe (NOT_AVAILABLE) is read into a swap buffer.
          ++st.swapped;
          if (st.on_nvme[static_cast<std::size_t>(i)]) {
            ++taken;
            padded += (numel + n_ - 1) / n_ * n_;
            if (first.empty())
              first = st.name;
          }
        }
        considered += numel;
      }
      if (!full(considered, taken))
        considered += st.all - st.full; // its persistent params
    }
    if (padded > 0)
      emit_nvme_param_read(ctx_, *nvme_, ctx_.issuer(), ctx_.lp(padded / n_), "ahead " + first);
  }

  void release(std::size_t u, std::size_t pos) {
    auto& st = units_[u];
    if (!st.resident)
      return;
    if (trace_complete()) {
      // __params_to_release (partitioned_param_coordinator.py l.642-651): a param the prefetcher walked past while it
      // was gathered was marked with that later use's step id (fetch); it is not released before that use, so it
      // stays gathered (its buffers held, its numel still counted in available_, DeepSpeed's __n_available_params)
      // instead of being released here and gathered again. DeepSpeed caches __params_to_release per (submodule,
      // step id) (functools.lru_cache, l.633) from the first micro-step with a complete trace; zerosim evaluates it
      // at every release, which is the same while every micro-step walks the same way.
      if (fetched_for_[u] > pos)
        return;
      // __params_to_release: walking the recorded module order from the next module, params of every module
      // reached while fewer than max_reuse_distance numel have been traversed are kept. After a forward that is the
      // unit's recompute (activation checkpointing) or its backward; after a recompute, its backward; after the
      // backward nothing in this micro-step. Modules in between count with all their params.
      Elements distance = 0;
      for (std::size_t q = pos + 1; q < trace_.size() && distance < cfg_.stage3_max_reuse_distance; ++q) {
        if (trace_[q] == u)
          return;
        distance += units_[trace_[q]].all;
      }
    }
    ctx_.host_work(Phase::PARAM_GATHER, "release " + st.name,
                   ctx_.in().host.op_launch * (kReleaseHostOps * static_cast<double>(st.count)));
    // free_param (partition_parameters.py): param.data.record_stream(current stream), then param.data = empty. The
    // allocated counter drops on the host; the block returns to the cache only once the compute stream has run
    // what the host queued on it so far (the BLOCK part on the compute stream, here).
    for (BufferId buf : st.buffers)
      release_gathered(buf);
    st.buffers.clear();
    release_shared(st);
    st.resident = false;
    available_ -= st.issued_numel;
    st.issued = 0;
    st.issued_numel = 0;
    st.pending = 0;
    st.swapped = 0; // remove_partition_and_release_buffers: back on NVMe (partition_parameters.py l.1779-1781)
  }

  /// Drops a submodule's references to the shared all-reduce buffers it views (issue_gather); returns those it was
  /// the last to hold (their slots of shared_ are then free for the next ones).
  std::vector<BufferId> drop_shared(UnitState& st) {
    std::vector<BufferId> last;
    for (const std::size_t slot : st.shared)
      if (--shared_[slot].live == 0) {
        shared_.release(slot);
        last.push_back(shared_[slot].buf);
      }
    st.shared.clear();
    return last;
  }

  /// A submodule of shared all-reduce buffers (issue_gather) is released: the last one of a buffer frees it.
  void release_shared(UnitState& st) {
    for (const BufferId buf : drop_shared(st))
      release_gathered(buf);
  }

  void on_grad(std::size_t p) {
    const auto& pr = ctx_.params()[p];
    BufferId g = b_.alloc(c_, Phase::BACKWARD, "grad " + pr.name, MemTag::LP_GRADS, ctx_.lp(pr.numel));
    if (!reduce_synced_) {
      // The grad hooks run on reduce_and_partition_stream after it waits for the compute stream.
      b_.join(reduce_, c_);
      reduce_synced_ = true;
    }
    if (pr.numel > cfg_.reduce_bucket_size) {
      // Does not fit the bucket: reduced from its own grad.
      flush();
      bucket_.push_back(p);
      bucket_elems_ += pr.numel;
      reduce_bucket("reduce_scatter " + pr.name, true);
      // partition_grads drops param.grad on the host right after queueing the reduction (record_stream): the
      // tensor is uncounted now, the block held until the reduce stream is done with it.
      b_.free_record_streamed(c_, reduce_, Phase::GRAD_REDUCE, g);
      return;
    }
    if (bucket_elems_ + pr.numel > cfg_.reduce_bucket_size)
      flush();
    if (!cfg_.contiguous_gradients) {
      // contiguous_gradients off (__add_grad_to_ipg_bucket, stage3.py l.1548): no copy; param.grad stays in its own
      // tensor until its bucket is reduce-scattered from the grads (__avg_scatter_grads) and partition_grads drops it.
      bucket_grads_.push_back(g);
      bucket_.push_back(p);
      bucket_elems_ += pr.numel;
      return;
    }
    // The copy converts to the bucket's dtype (bucket_bytes): read lp, write the bucket's dtype. Before v0.6.0 the
    // ipg_buffer is of the model dtype too (stage3.py l.1905-1910 and its torch.empty in backward @v0.5.10).
    const Bytes in_bucket = cfg_.deepspeed_before(0, 6, 0) ? ctx_.lp(pr.numel) : bucket_bytes(pr.numel);
    ctx_.mem_kernel(reduce_, Phase::BACKWARD, "copy grad to bucket " + pr.name, ctx_.lp(pr.numel) + in_bucket);
    // __add_grad_to_ipg_bucket: the copy is queued on the reduce stream, param.grad.record_stream(...), and
    // param.grad is re-pointed at the bucket: the full grad's tensor is freed at the hook (the allocated counter drops
    // as its backward kernel is issued), its block only after the copy has run on the reduce stream.
    b_.free_record_streamed(c_, reduce_, Phase::BACKWARD, g);
    bucket_.push_back(p);
    bucket_elems_ += pr.numel;
  }

  void flush() {
    if (bucket_.empty())
      return;
    reduce_bucket("reduce_scatter bucket " + std::to_string(flushes_++), !cfg_.contiguous_gradients);
  }

  /// Bytes of `count` elements of the IPG bucket's dtype (from v0.6.0). From v0.17.2 one bucket per communication
  /// dtype (`ipg_buckets: Dict[torch.dtype, IPGBucketZ3]`, stage3.py l.402 and its torch.empty(..., dtype=dtype)
  /// l.559-561 @v0.17.2): the comm dtype. From v0.6.0 to v0.17.1 `torch.empty(self.reduce_bucket_size,
  /// dtype=self.dtype)` (l.370-372 @v0.9.0, l.538-540 @v0.17.1): the model dtype, cast per gradient at the reduction.
  [[nodiscard]] Bytes bucket_bytes(Elements count) const {
    return cfg_.deepspeed_before(0, 17, 2) ? ctx_.lp(count) : ctx_.comm(count);
  }

  /// Reduces the pending bucket. `own_grad`: a param bigger than the bucket, reduced from its own lp grad tensor.
  /// Everything runs in the communication dtype (zero.communication_data_type, ctx_.comm). From v0.17.2 the bucket
  /// already holds it (the grads were cast on their copy in); a param reduced from its own grad, and before v0.17.2
  /// the model-dtype bucket's grads, are `.to()`-cast first (__avg_scatter_grads: `[g.to(communication_data_type)
  /// ...]`, l.1081-1082 @v0.9.0, l.1798-1799 @v0.19.5; __avg_scatter_contiguous_grads l.1288-1289 @v0.14.0); the
  /// interleave copy and the collective run in it, and this rank's partitions are cast back to the grad-accumulation
  /// (model) dtype (l.1825-1826) before partition_grads.
  void reduce_bucket(const std::string& label, bool own_grad = false) {
    if (reduce_inflight_.size() > kMaxOutstanding) {
      ctx_.host_wait(reduce_inflight_.front()); // param_reduce_events.popleft().synchronize() (host)
      reduce_inflight_.pop_front();
    }
    Elements part = 0;
    for (std::size_t p : bucket_)
      part += partition_numel(ctx_.params()[p].numel);
    const Bytes padded = ctx_.comm(part * n_);
    const bool cast = ctx_.comm_cast();
    std::optional<BufferId> cast_back; // this rank's reduced partitions in the model dtype
    std::optional<BufferId> averaged; // __avg_scatter_contiguous_grads' out-of-place postscale product
    if (cfg_.deepspeed_before(0, 6, 0) && !cfg_.contiguous_gradients) {
      legacy_fallback_all_reduce(label);
    } else if (cfg_.deepspeed_before(0, 6, 0) && !cfg_.reduce_scatter) {
      legacy_all_reduce(label, own_grad);
    } else if (cfg_.deepspeed_before(0, 6, 0)) {
      legacy_reduce_scatter(label, own_grad);
    } else if (!all_reduces_bucket(own_grad, label)) {
      // reduce_scatter_coalesced (comm/coalesced_collectives.py): an interleaved, padded flat copy of the bucket
      // (except for a single evenly divisible tensor), pre-divided, then one reduce_scatter; issued at N == 1 too.
      std::optional<BufferId> upcast;
      if (cast && (own_grad || cfg_.deepspeed_before(0, 17, 2))) {
        upcast = b_.alloc(reduce_, Phase::GRAD_REDUCE, "cast " + label, MemTag::FLATTEN_TEMP, ctx_.comm(bucket_elems_));
        ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, "cast " + label,
                        ctx_.lp(bucket_elems_) + ctx_.comm(bucket_elems_));
      }
      const bool single_even = bucket_.size() == 1 && ctx_.params()[bucket_[0]].numel % n_ == 0;
      std::optional<BufferId> tmp;
      if (!single_even) {
        tmp = b_.alloc(reduce_, Phase::GRAD_REDUCE, "interleave " + label, MemTag::FLATTEN_TEMP, padded);
        ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, "interleave " + label, padded * 2.0);
      }
      // From v0.6.0 reduce_scatter_coalesced pre-divides the flat buffer it reduce-scatters -- the interleaved
      // padded copy, or the single evenly divisible tensor itself -- in the communication dtype, at any N_d
      // (coalesced_collectives.py l.94 @v0.6.0, l.201 @v0.19.5); __avg_scatter_grads' postscale multiply runs
      // only with gradient_predivide_factor != 1.0 (stage3.py l.1784-1786 @v0.19.5).
      emit_grad_average(ctx_, reduce_, padded, label);
      b_.collective(reduce_, Phase::GRAD_REDUCE, label, CollectiveKind::REDUCE_SCATTER, padded, grad_group());
      if (cast) {
        cast_back = b_.alloc(reduce_, Phase::GRAD_REDUCE, "cast back " + label, MemTag::FLATTEN_TEMP, ctx_.lp(part));
        ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, "cast back " + label, ctx_.comm(part) + ctx_.lp(part));
      }
      if (tmp)
        b_.free(reduce_, Phase::GRAD_REDUCE, *tmp);
      if (upcast)
        b_.free(reduce_, Phase::GRAD_REDUCE, *upcast);
    } else {
      // reduce_scatter=False with contiguous grads: all_reduce of the bucket, then slice (2x traffic); with a
      // differing communication dtype the whole reduced bucket is cast back (__avg_scatter_contiguous_grads).
      // The bucket is divided in place by N_d before the all-reduce; after it, postscale_gradients' test
      // `gradient_predivide_factor != world size` holds at N_d > 1 with the default factor 1.0, and
      // `buffer.mul(factor)` writes a new tensor of the bucket's size that the partitions are sliced from
      // (stage3.py l.1147-1152 @v0.10.0, l.1725-1730 @v0.19.5).
      // Before v0.17.2 the model-dtype bucket is `.to()`-cast into a comm-dtype copy first (l.1288-1289 @v0.14.0),
      // live until the cast back.
      std::optional<BufferId> upcast;
      if (cast && cfg_.deepspeed_before(0, 17, 2)) {
        upcast = b_.alloc(reduce_, Phase::GRAD_REDUCE, "cast " + label, MemTag::FLATTEN_TEMP, ctx_.comm(bucket_elems_));
        ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, "cast " + label,
                        ctx_.lp(bucket_elems_) + ctx_.comm(bucket_elems_));
      }
      emit_grad_average(ctx_, reduce_, ctx_.comm(bucket_elems_), label);
      b_.collective(reduce_, Phase::GRAD_REDUCE, label, CollectiveKind::ALL_REDUCE, ctx_.comm(bucket_elems_),
                    grad_group());
      if (n_ > 1) {
        averaged = b_.alloc(reduce_, Phase::GRAD_REDUCE, "average copy " + label, MemTag::FLATTEN_TEMP,
                            ctx_.comm(bucket_elems_));
        emit_grad_average(ctx_, reduce_, ctx_.comm(bucket_elems_), "copy " + label);
      }
      if (cast) {
        cast_back =
            b_.alloc(reduce_, Phase::GRAD_REDUCE, "cast back " + label, MemTag::FLATTEN_TEMP, ctx_.lp(bucket_elems_));
        ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, "cast back " + label,
                        ctx_.comm(bucket_elems_) + ctx_.lp(bucket_elems_));
      }
      if (upcast)
        b_.free(reduce_, Phase::GRAD_REDUCE, *upcast);
    }
    if (opt_offload_) {
      offload_partition(part, label);
    } else {
      // partition_grads: this rank's slice is copied (micro-step 0) or added (later micro-steps) into
      // grad_partitions_flat_buffer.
      ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, micro_ == 0 ? "copy grad partition" : "accumulate grad partition",
                      ctx_.lp(part) * (micro_ == 0 ? 2.0 : 3.0));
    }
    if (cfg_.deepspeed_before(0, 9, 4) && stage3_checks_overflow(cfg_, ctx_.wl().training.precision)) {
      // Before v0.9.4 (PR #3622) partition_grads or-ed every partition into __inf_or_nan_tracker on the GPU, at
      // every micro-step: isinf(grad_buffer).any() and isnan(grad_buffer).any(), each reading the partition and
      // writing then reading a 1 B/element bool tensor (one live at a time).
      BufferId t = b_.alloc(reduce_, Phase::GRAD_REDUCE, "overflow check temporaries " + label, MemTag::WORKING,
                            bytes_of(part, 1.0));
      ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, "overflow check " + label,
                      ctx_.accum(part) * 2.0 + bytes_of(part, 4.0));
      b_.free(reduce_, Phase::GRAD_REDUCE, t);
    }
    if (cast_back)
      b_.free(reduce_, Phase::GRAD_REDUCE, *cast_back);
    if (averaged)
      b_.free(reduce_, Phase::GRAD_REDUCE, *averaged);
    reduce_inflight_.push_back(b_.record(reduce_));
    // partition_grads drops each param.grad kept without contiguous_gradients (record_stream: the block waits for
    // the reduce stream).
    for (BufferId g : bucket_grads_)
      b_.free_record_streamed(c_, reduce_, Phase::GRAD_REDUCE, g);
    bucket_grads_.clear();
    bucket_.clear();
    bucket_elems_ = 0;
  }

  /// The group the bucket's gradients are reduced on (v0.6.0+ paths): the engine's dp group before DeepSpeed 0.19.3
  /// (__avg_scatter_grads and __avg_scatter_contiguous_grads on self.dp_process_group, stage3.py l.1637 @v0.19.2);
  /// from 0.19.3 the parameters' own group, zero.Init's (_get_param_partition_group, l.595-596, 1760-1782;
  /// bucket.process_group, l.1534 @v0.19.5).
  std::uint16_t grad_group() { return cfg_.deepspeed_before(0, 19, 3) ? ctx_.dp_group() : ctx_.param_group(); }

  /// The group the squared gradient norm is all-reduced on: the engine's dp group before DeepSpeed 0.19.3
  /// (get_grad_norm_direct l.2119, complete_grad_norm_calculation_for_cpu_offload l.1696 @v0.19.2); from 0.19.3
  /// the first parameter's group (_get_param_partition_group(params[0]), l.2207/2236 and l.1785/1798 @v0.19.3).
  std::uint16_t norm_group() { return cfg_.deepspeed_before(0, 19, 3) ? ctx_.dp_group() : ctx_.param_group(); }

  /// Before v0.6.0, contiguous gradients and zero.reduce_scatter false: average_tensor hands each tensor of
  /// reduction_list -- the whole IPG buffer (reduce_bucket_size elements of the model dtype, however few the bucket
  /// holds) and the grad of a param larger than the bucket (`own_grad`) -- to gradient_reduction_w_predivide: a
  /// `.to(communication_data_type)` copy when the dtypes differ, an in-place all_reduce, then (postscale_gradients
  /// and gradient_predivide_factor 1.0 by default, != N_d when N_d > 1) an in-place mul_(1 / N_d), and the copy
  /// back (stage3.py l.1918-1941, 1943-1947, 2169-2173 @v0.5.10; the same code from v0.3.12, l.1950-1955 @v0.3.15).
  /// No pre-division and no out-of-place product, unlike the v0.9.4+ path. Called with the bucket still pending.
  void legacy_all_reduce(const std::string& label, bool own_grad) {
    std::vector<std::pair<std::string, Elements>> list{{label + " ipg_buffer", cfg_.reduce_bucket_size}};
    if (own_grad)
      list.emplace_back(label, bucket_elems_);
    for (const auto& [what, count] : list) {
      const auto cast = ctx_.cast_for_comm(reduce_, count, what);
      b_.collective(reduce_, Phase::GRAD_REDUCE, what, CollectiveKind::ALL_REDUCE, ctx_.comm(count), ctx_.dp_group());
      if (n_ > 1)
        emit_grad_average(ctx_, reduce_, ctx_.comm(count), what);
      ctx_.uncast_from_comm(reduce_, cast, count, what);
    }
  }

  /// Before v0.6.0, contiguous gradients and zero.reduce_scatter (the defaults): no bucketed collective.
  /// average_tensor first divides each tensor of reduction_list in place, div_(N_d) in the model's dtype at any N_d
  /// (stage3.py l.1950-1951 @v0.5.10, l.1953-1954 @v0.3.15); that list is the whole IPG buffer --
  /// reduce_bucket_size elements however few the bucket holds -- plus the grad of a param larger than the bucket
  /// (reduce_ipg_grads, l.2169-2173 @v0.5.10). Then reduce_gradients_at_owner (l.1958-1960) hands the bucket's
  /// params to zero.Init's _reduce_scatter_gradients (partition_parameters.py l.1050-1119 @v0.5.10, l.934-1002
  /// @v0.5.0): ONE async torch.distributed.reduce_scatter PER PARAMETER on the Init's ds_process_group
  /// (param_group()), all issued before any is waited on, each on the param's own grad in its dtype (the model's:
  /// communication_data_type is not read on this path). Its input list holds N_d views of ceil(numel/N_d) elements;
  /// a chunk that runs past the grad's end is a torch.zeros tensor of that size (the one straddling the end also gets
  /// the grad's last elements copied in). ProcessGroupNCCL::reduce_scatter then copies the list into one flat tensor
  /// of N_d x ceil(numel/N_d) elements on its NCCL stream (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp
  /// reduce_scatter, "Copy the input tensors to the flattened inputs") and reduce-scatters that. The flat tensors
  /// and zero chunks of all the bucket's params are live until the last reduce-scatter has run. This rank's output
  /// is a view of its grad (rank 0's chunk never runs past the end, so the copy back of a padded partition,
  /// l.1068-1079, is another rank's).
  void legacy_reduce_scatter(const std::string& label, bool own_grad) {
    emit_grad_average(ctx_, reduce_, ctx_.lp(cfg_.reduce_bucket_size), label + " ipg_buffer");
    if (own_grad)
      emit_grad_average(ctx_, reduce_, ctx_.lp(bucket_elems_), label);
    std::vector<BufferId> temps;
    for (const std::size_t p : bucket_) {
      const auto& pr = ctx_.params()[p];
      const Elements part = partition_numel(pr.numel);
      const std::string l = label + " " + pr.name;
      const Elements whole = pr.numel / part; // chunks that lie inside the grad
      if (whole < n_) {
        const Elements zeros = (n_ - whole) * part;
        temps.push_back(
            b_.alloc(reduce_, Phase::GRAD_REDUCE, "padded chunks " + l, MemTag::FLATTEN_TEMP, ctx_.lp(zeros)));
        const Elements tail = pr.numel - whole * part;
        ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, "padded chunks " + l, ctx_.lp(zeros) + ctx_.lp(tail) * 2.0);
      }
      const Bytes flat = ctx_.lp(part * n_);
      temps.push_back(b_.alloc(reduce_, Phase::GRAD_REDUCE, "flatten " + l, MemTag::FLATTEN_TEMP, flat));
      ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, "flatten " + l, flat * 2.0);
      b_.collective(reduce_, Phase::GRAD_REDUCE, l, CollectiveKind::REDUCE_SCATTER, flat, ctx_.param_group());
    }
    for (const BufferId t : temps)
      b_.free(reduce_, Phase::GRAD_REDUCE, t);
  }

  /// Before v0.6.0 without contiguous gradients, whatever zero.reduce_scatter: reduce_ipg_grads calls
  /// buffered_reduce_fallback (stage3.py l.2175-2178 @v0.5.10) on the bucket's grads with elements_per_buffer =
  /// the bucket's elements, so allreduce_no_retain makes one allreduce_and_copy of them all: allreduce_bucket
  /// flattens them into a new tensor, divides it in place by N_d, all-reduces it, and each grad copies its slice
  /// back (l.2263-2300 @v0.5.10; the same from v0.3.12, l.1785 on). From v0.5.8 allreduce_bucket first `.to()`-casts
  /// the flat tensor to its own default communication_data_type, fp16 (the caller passes none; l.2332 @v0.5.8), and
  /// copies it back; before, its allreduce_always_fp32 defaults to False: no cast. Called with the bucket pending.
  void legacy_fallback_all_reduce(const std::string& label) {
    const Elements e = bucket_elems_;
    const bool cast_fp16 = !cfg_.deepspeed_before(0, 5, 8) && ctx_.wl().training.precision != scenario::Precision::FP16;
    const Bytes wire = cast_fp16 ? bytes_of(e, 2.0) : ctx_.lp(e);
    const BufferId flat = b_.alloc(reduce_, Phase::GRAD_REDUCE, "flatten " + label, MemTag::FLATTEN_TEMP, ctx_.lp(e));
    ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, "flatten " + label, ctx_.lp(e) * 2.0);
    std::optional<BufferId> cast;
    if (cast_fp16) {
      cast = b_.alloc(reduce_, Phase::GRAD_REDUCE, "cast " + label, MemTag::FLATTEN_TEMP, wire);
      ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, "cast " + label, ctx_.lp(e) + wire);
    }
    emit_grad_average(ctx_, reduce_, wire, label);
    b_.collective(reduce_, Phase::GRAD_REDUCE, label, CollectiveKind::ALL_REDUCE, wire, ctx_.dp_group());
    if (cast) {
      ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, "copy back cast " + label, wire + ctx_.lp(e));
      b_.free(reduce_, Phase::GRAD_REDUCE, *cast);
    }
    ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, "unflatten " + label, ctx_.lp(e) * 2.0);
    b_.free(reduce_, Phase::GRAD_REDUCE, flat);
  }

  /// True when the bucket is all-reduced and sliced (__avg_scatter_contiguous_grads) instead of reduce-scattered
  /// (__avg_scatter_grads). zero.reduce_scatter = false has that effect only with contiguous gradients (without,
  /// DeepSpeed takes __avg_scatter_grads: stage3.py l.1564 @v0.19.5) and only in the releases that read the flag
  /// there: from v0.6.0 (reduce_scatter_coalesced) to v0.9.3, __reduce_and_partition_ipg_grads always calls
  /// __avg_scatter_grads and self.reduce_scatter only guards a dtype assert (stage3.py l.210-212 @v0.9.0); v0.9.4
  /// (PR #3622) added the `contiguous_gradients and not reduce_scatter` branch (l.1084 @v0.9.5), and v0.10.0 (PR
  /// #3832) the test `elements_in_ipg_bucket <= reduce_bucket_size` (l.1122 @v0.10.0), which sends a param larger
  /// than the bucket (`own_grad`, never copied into it: l.1050 @v0.9.5) to the reduce-scatter. In v0.9.4-v0.9.x
  /// that param makes the all-reduce path narrow the bucket past its end, a RuntimeError: thrown as an Error.
  /// Releases before v0.6.0 take legacy_all_reduce or legacy_fallback_all_reduce instead (reduce_bucket).
  [[nodiscard]] bool all_reduces_bucket(bool own_grad, const std::string& label) const {
    if (cfg_.reduce_scatter || !cfg_.contiguous_gradients)
      return false;
    if (!cfg_.deepspeed_before(0, 6, 0) && cfg_.deepspeed_before(0, 9, 4))
      return false;
    if (own_grad && !cfg_.deepspeed_before(0, 10, 0))
      return false;
    if (own_grad && !cfg_.deepspeed_before(0, 9, 4))
      throw Error("zero.reduce_scatter: false with a parameter larger than zero.reduce_bucket_size (" + label +
                  ") fails in DeepSpeed 0.9.4-0.9.x (stage3.py narrows the IPG bucket past its end; fixed in 0.10.0, "
                  "PR #3832): set reduce_scatter true, a larger reduce_bucket_size, or deepspeed_version 0.10.0");
    return true;
  }

  /// True when the "fp16" partitions are the fp32 master (stage3.py _create_fp32_partitions): fp32 training without
  /// optimizer offload and with the param partitions on the GPU (offload_param puts them on the host: cloned).
  [[nodiscard]] bool fp32_master_aliases_params() const {
    return ctx_.wl().training.precision == scenario::Precision::FP32 && !opt_offload_ && !offload_param_;
  }

  void optimizer_step() {
    // _partition_all_parameters at the start of step(): anything still gathered is released, persistent params too
    // (release_and_reset_all), which frees the all-reduce flat buffers they viewed.
    for (BufferId buf : retained_)
      b_.free(gather_pool(), Phase::OPTIMIZER, buf);
    retained_.clear();
    for (auto& st : units_) {
      for (BufferId t : st.transients)
        b_.free(gather_pool(), Phase::OPTIMIZER, t);
      st.transients.clear();
      for (BufferId buf : st.buffers)
        b_.free(gather_pool(), Phase::OPTIMIZER, buf);
      st.buffers.clear();
      for (const BufferId buf : drop_shared(st))
        b_.free(gather_pool(), Phase::OPTIMIZER, buf);
      st.calls.clear();
      st.resident = false;
      st.issued = 0;
      st.issued_numel = 0;
      st.pending = 0;
      st.swapped = 0;
    }
    // Every call has been waited for by now (each prefetched submodule is fetched later in the same pass); a call
    // left would be released here with its params (_clean_inflight_param_registry).
    for (auto& call : calls_)
      if (call.waiting > 0) {
        if (call.flat)
          b_.free(gather_pool(), Phase::OPTIMIZER, *call.flat);
        for (BufferId t : call.transients)
          b_.free(gather_pool(), Phase::OPTIMIZER, t);
      }
    calls_.clear();
    available_ = 0;
    fetch_inflight_.clear();
    overflow_check();
    // fp16 overflow (training.skipped_steps): _overflow_check_and_loss_scale_update halves the loss scale and
    // _overflow_clean_up runs zero_grad(set_to_none=True) (the grads are views of the persistent
    // grad_partitions_flat_buffer) and clears averaged_gradients; step() returns before the norm, the sub-group
    // updates and _post_step, so the persistent params are not all-gathered (stage3.py step, l.1687-1700 @v0.9.0).
    if (ctx_.overflow_skipped(step_))
      return;
    // _get_norm_groups: one norm per sub-group (fp16_groups), each all-reduced (SUM) over norm_group() on its own,
    // then combined into the global norm (get_global_norm before v0.14.5, torch.linalg.norm of the stacked norms
    // from v0.14.5, PR #5504). Host reads by release: before v0.13.0 each sub-group's total is read with `.item()`;
    // v0.13.0 (PR #4436) keeps the sub-group norms on the device, so only get_global_norm's math.sqrt reads (once);
    // from v0.14.5 nothing is read on the GPU path. The clip test (unscale_and_clip_grads) sees a Python float
    // before v0.14.5 and is a torch.clamp after: no read, clipping or not.
    const bool item_per_group = cfg_.deepspeed_before(0, 13, 0);
    const bool sqrt_reads = !item_per_group && cfg_.deepspeed_before(0, 14, 5);
    const Elements n = ctx_.n();
    if (opt_offload_) {
      // complete_grad_norm_calculation_for_cpu_offload per sub-group: the per-param norms found while the grads
      // were copied out (device tensors) are summed: before v0.13.0 each read with `.item()` (a host wait per
      // param of the sub-group), from v0.13.0 on the device and read once by `float()`; the total goes up in a 4 B
      // FloatTensor, is all-reduced (SUM) and comes back by `.item()` before v0.13.0, by `.cpu()` from v0.14.5 (a
      // host wait each), as a device tensor in between (read by get_global_norm's math.sqrt after the loop).
      for (const auto& members : sub_group_params_) {
        const std::size_t reads = item_per_group ? members.size() : 1;
        for (std::size_t r = 0; r < reads; ++r)
          host_read();
        emit_scalar_allreduce(ctx_, c_, "allreduce grad norm", Bytes(4), norm_group());
        if (!sqrt_reads)
          host_read();
      }
      if (sqrt_reads)
        host_read();
      offload_step();
      return;
    }
    // get_grad_norm_direct per sub-group: `g.double().norm(2)` of this rank's lp grad partition of each of its
    // params (emit_grad_norm), the sum of their squares (an 8 B double) all-reduced (SUM) over norm_group().
    for (const auto& members : sub_group_params_) {
      std::vector<Elements> pieces;
      pieces.reserve(members.size());
      for (const std::size_t p : members)
        pieces.push_back((ctx_.params()[p].numel + n - 1) / n);
      emit_grad_norm(ctx_, c_, pieces);
      emit_scalar_allreduce(ctx_, c_, "allreduce grad norm", Bytes(8), norm_group());
      if (item_per_group)
        host_read();
    }
    if (sqrt_reads)
      host_read();
    // Per sub-group (stage3.py step): flatten + cast the sub-group's grads to fp32 (transient
    // 4·min(sub_group_size, Ψ/N) B, §7 #20), Adam (lazy m, v at step 0, §7 #17), copy fp32 -> lp partition.
    for (std::size_t i = 0; i < sub_groups_.size(); ++i) {
      const Elements sg = sub_groups_[i];
      const std::string l = "sub-group " + std::to_string(i);
      BufferId g32 = b_.alloc(c_, Phase::OPTIMIZER, "fp32 grad " + l, MemTag::FP32_GRADS, GeneratorContext::fp32(sg));
      ctx_.mem_kernel(c_, Phase::OPTIMIZER, "cast grads to fp32 " + l, ctx_.lp(sg) + GeneratorContext::fp32(sg));
      emit_unscale_and_clip(ctx_, c_, sg, " " + l);
      if (step_ == ctx_.first_applied_step() && !adam_state_at_init(cfg_))
        b_.alloc_persistent(c_, Phase::OPTIMIZER, "adam m,v " + l, MemTag::OPTIMIZER_STATES,
                            GeneratorContext::fp32(sg) * 2.0);
      // FusedAdam, or torch.optim (training.optimizer_impl); _reassign_or_swap_out_partitioned_parameters' copy_ of
      // an aliased fp32 partition into itself moves nothing (ATen copy_ returns early for the same data).
      emit_gpu_adam_step(ctx_, c_, "adam " + l, sg, !fp32_master_aliases_params());
      b_.free(c_, Phase::OPTIMIZER, g32);
      if (offload_param_) {
        // _reassign_or_swap_out_partitioned_parameters: the lp sub-group in pinned host memory is updated from the
        // GPU's fp32 partition (a D2H copy of the lp-cast values); with offload_param=nvme it is then swapped out.
        b_.join(offload_->copy, c_);
        b_.copy(offload_->copy, Phase::OFFLOAD, "d2h lp params " + l, program::CopyDir::D2H, ctx_.lp(sg));
        if (nvme_)
          emit_nvme_swap_out(ctx_, *nvme_, offload_->copy, sg, sub_groups_on_nvme_[i], l);
      }
    }
    if (offload_param_) {
      b_.join(c_, offload_->copy);
      if (nvme_)
        b_.join(c_, nvme_->nvme);
    }
    post_step_gather();
  }

  /// The host reads a value computed on compute (GeneratorContext::host_read).
  void host_read() { ctx_.host_read(c_); }

  // _overflow_check_and_loss_scale_update when stage3_checks_overflow -> has_overflow(partition_gradients=True):
  // from v0.9.4 (PR #3622), on the reduce stream, isinf(grad_partitions_flat_buffer).any() and isnan(...).any(),
  // each reading the buffer (grad-accumulation dtype) and writing then reading a 1 B/element bool tensor; compute
  // then waits for the reduce stream. With offload_optimizer the buffer is in host memory, so the two passes run on
  // the CPU. Before v0.9.4 partition_grads had or-ed the partitions (reduce_bucket) and has_overflow reads the
  // tracker with `.item()` on the reduce stream (a host wait) and sends the flag up in a ByteTensor. Either way the
  // 1 B flag is all-reduced (MAX) over the dp group and read with `.item()` (a host wait).
  void overflow_check() {
    if (!stage3_checks_overflow(cfg_, ctx_.wl().training.precision))
      return;
    if (cfg_.deepspeed_before(0, 9, 4)) {
      ctx_.host_sync(reduce_);
      ctx_.host_issue(c_);
    } else if (opt_offload_) {
      const auto& os = *offload_;
      b_.join(os.cpu, os.copy);
      emit_host_overflow_scan(ctx_, os.cpu, grad_partition_,
                              cfg_.grad_accum_element_bytes(ctx_.in().workload.bytes_per_lp),
                              cfg_.pin_optimizer_effective(), "overflow check grad partitions (cpu)");
      b_.join(c_, os.cpu);
    } else {
      BufferId t = b_.alloc(reduce_, Phase::OPTIMIZER, "overflow check temporaries", MemTag::WORKING,
                            bytes_of(grad_partition_, 1.0));
      ctx_.mem_kernel(reduce_, Phase::OPTIMIZER, "overflow check grad partitions",
                      ctx_.accum(grad_partition_) * 2.0 + bytes_of(grad_partition_, 4.0));
      b_.free(reduce_, Phase::OPTIMIZER, t);
      b_.join(c_, reduce_);
    }
    emit_scalar_allreduce(ctx_, c_, "allreduce overflow flag", Bytes(1), ctx_.dp_group());
    host_read();
  }

  // partition_grads with offload_optimizer=cpu (stage3.py l.1886-1934, §3.5): micro-step 0 copies the reduced lp
  // partition D2H into the pinned grad buffer and straight back H2D into a GPU temp; later micro-steps bring the
  // accumulated partition H2D, add, and send it back D2H; at the GA boundary the GPU-side partition is cast to
  // fp32 and written D2H into the CPU fp32 grad (with offload_optimizer=nvme: then to NVMe). GA = 1: 2 B D2H + 2 B
  // H2D + 4 B D2H per partition element.
  //
  // The lp copies are non_blocking and the host waits for them only when grad_partitions_flat_buffer is pageable
  // (pin_memory false); the fp32 copy is a blocking copy_ before v0.19.5 (PR #8207 made it non_blocking), into the
  // fp32 grad partition (pinned iff pin_memory) or, with NVMe, the swapper's pinned buffer (GeneratorContext::
  // host_copy).
  void offload_partition(Elements part, const std::string& label) {
    if (legacy_offload_grads()) {
      offload_partition_before_0_6(part, label);
      return;
    }
    const auto copy = offload_->copy;
    using program::CopyDir;
    const bool pageable = !cfg_.pin_optimizer_effective();
    const bool nvme_grads = nvme_ && nvme_->optimizer;
    b_.join(copy, reduce_);
    BufferId tmp = b_.alloc(copy, Phase::OFFLOAD, "grad partition temp " + label, MemTag::FLATTEN_TEMP, ctx_.lp(part));
    if (micro_ == 0) {
      ctx_.host_copy(copy, Phase::OFFLOAD, "d2h lp grad partition", CopyDir::D2H, ctx_.lp(part), pageable);
      ctx_.host_copy(copy, Phase::OFFLOAD, "h2d lp grad partition", CopyDir::H2D, ctx_.lp(part), pageable);
    } else {
      ctx_.host_copy(copy, Phase::OFFLOAD, "h2d lp grad partition", CopyDir::H2D, ctx_.lp(part), pageable);
      ctx_.host_copy(copy, Phase::OFFLOAD, "d2h lp grad partition", CopyDir::D2H, ctx_.lp(part), pageable);
    }
    if (micro_ == ctx_.grad_accum() - 1) {
      BufferId f32 = b_.alloc(copy, Phase::OFFLOAD, "fp32 grad partition temp " + label, MemTag::FLATTEN_TEMP,
                              GeneratorContext::fp32(part));
      ctx_.host_copy(copy, Phase::OFFLOAD, "d2h fp32 grad partition", CopyDir::D2H, GeneratorContext::fp32(part),
                     pageable && !nvme_grads, cfg_.deepspeed_before(0, 19, 5));
      b_.free(copy, Phase::OFFLOAD, f32);
      if (nvme_ && nvme_->optimizer) // the fp32 grads go on to NVMe (swap_out_gradients)
        emit_nvme_grad_swap_out(ctx_, *nvme_, copy, part, label);
    }
    b_.free(copy, Phase::OFFLOAD, tmp);
  }

  /// Stage 3 with offload_optimizer before DeepSpeed v0.6.0: no grad_partitions_flat_buffer (PR #1453 added it).
  [[nodiscard]] bool legacy_offload_grads() const { return opt_offload_ && cfg_.deepspeed_before(0, 6, 0); }

  // partition_previous_reduced_grads with offload_optimizer before v0.6.0 (read at v0.3.15, v0.3.16, v0.5.10
  // stage3.py): the reduced partition lands in the GPU's temp_grad_gpu_buffer. Host lp gradients exist only with
  // gradient_accumulation_steps > 1: grads_in_partition, one CPU tensor of the model dtype per sub-group (its
  // partitions' elements), created at the first reduction, pinned iff offload_param.pin_memory (torch.zeros, then
  // .pin_memory(): a pageable copy lives until the pinned one exists). Before the boundary micro-step the partition
  // goes D2H into it (async_accumulate_grad_in_cpu_via_gpu; from micro-step 1 on after an H2D of the accumulated
  // one and an add on the GPU); at the boundary (after that H2D and add) the partition is cast to fp32 on the GPU
  // and copied D2H: non_blocking into the fp32 grad partition (pinned iff offload_optimizer.pin_memory) with
  // offload_optimizer=cpu, by the gradient swapper's copy_ into its pinned buffer and on to NVMe with nvme. So GA 1
  // moves 4 B per partition element D2H and keeps no lp gradient in host memory.
  void offload_partition_before_0_6(Elements part, const std::string& label) {
    const auto copy = offload_->copy;
    using program::CopyDir;
    const bool nvme_grads = nvme_ && nvme_->optimizer;
    const int ga = ctx_.grad_accum();
    const bool boundary = micro_ == ga - 1;
    b_.join(copy, reduce_);
    if (ga > 1) {
      if (!grads_in_partition_) {
        grads_in_partition_ = true;
        const bool pin = offload_param_ && cfg_.pin_param_effective();
        for (std::size_t i = 0; i < sub_groups_.size(); ++i) {
          const std::string l = "grads_in_partition sub-group " + std::to_string(i);
          const Bytes bytes = ctx_.lp(sub_groups_[i]);
          if (pin) {
            BufferId z = b_.alloc(copy, Phase::OFFLOAD, l + " (pageable zeros)", MemTag::GRAD_PARTITION, bytes,
                                  program::Device::HOST);
            b_.alloc_persistent(copy, Phase::OFFLOAD, l, MemTag::GRAD_PARTITION, bytes, program::Device::HOST, true);
            b_.free(copy, Phase::OFFLOAD, z);
          } else {
            b_.alloc_persistent(copy, Phase::OFFLOAD, l, MemTag::GRAD_PARTITION, bytes, program::Device::HOST);
          }
        }
      }
      const bool pageable = !(offload_param_ && cfg_.pin_param_effective());
      if (micro_ > 0)
        ctx_.host_copy(copy, Phase::OFFLOAD, "h2d lp grad partition", CopyDir::H2D, ctx_.lp(part), pageable);
      if (!boundary)
        ctx_.host_copy(copy, Phase::OFFLOAD, "d2h lp grad partition", CopyDir::D2H, ctx_.lp(part), pageable);
    }
    if (boundary) {
      BufferId f32 = b_.alloc(copy, Phase::OFFLOAD, "fp32 grad partition temp " + label, MemTag::FLATTEN_TEMP,
                              GeneratorContext::fp32(part));
      ctx_.host_copy(copy, Phase::OFFLOAD, "d2h fp32 grad partition", CopyDir::D2H, GeneratorContext::fp32(part),
                     !nvme_grads && !cfg_.pin_optimizer_effective(), nvme_grads);
      b_.free(copy, Phase::OFFLOAD, f32);
      if (nvme_grads)
        emit_nvme_grad_swap_out(ctx_, *nvme_, copy, part, label);
    }
  }

  // initialize_optimizer_states' optimizer step before v0.13.2 (adam_state_at_init) with offload_optimizer, per
  // sub-group in order (stage3.py l.~835-880 @v0.9.0): DeepSpeedCPUAdam on the host creates the sub-group's m, v
  // (torch.zeros_like, pageable) and steps with the zero fp32 grad. With NVMe the sub-group's fp32 master is first
  // swapped in from NVMe into the pinned swap buffers, and after the step the master and the new m, v are swapped out
  // (3 x 4 B per element; the unpinned m, v through the pinned buffers), the host m, v then released
  // (partitioned_optimizer_swapper.py swap_out_optimizer_state: t.data = torch.Tensor()). The constructor returns
  // when it is done: compute waits for the host and NVMe streams before step 0.
  // The fp32 master's initial swap-out (emit_nvme_optimizer_init) is synchronous, so the init's first swap-in reads
  // the swap files only once they are written. The init step swaps through the same
  // swap_in_optimizer_state / swap_out_optimizer_state calls as the step (_optimizer_states_and_gradient_swap_in /
  // _swap_out, with next_swappable_fp32_partitioned_groups already built: stage3.py _setup_for_real_optimizer), so
  // pipeline_read reads the next sub-group's master ahead and pipeline_write leaves this one's write running, as in
  // offload_step. The new m, v are pageable (torch.zeros_like of the pinned master): the pipelined swapper copies them
  // into swap buffers to write them and keeps the originals until step 0's swap-in (keep_or_release_fresh_mv).
  void offload_init_step() {
    const auto& os = *offload_;
    const bool nvme_opt = nvme_ && nvme_->optimizer;
    const bool pipelined = nvme_opt && nvme_->pipelined();
    bool read_ahead = false; // this sub-group's read was started by the previous one (pipeline_read)
    const auto swap_in = [&](std::size_t i) {
      b_.join(nvme_->nvme, os.cpu);
      b_.copy(nvme_->nvme, Phase::INIT, "swap in fp32 master at init sub-group " + std::to_string(i),
              program::CopyDir::NVME_READ, GeneratorContext::fp32(sub_groups_[i]));
    };
    for (std::size_t i = 0; i < sub_groups_.size(); ++i) {
      const Elements sg = sub_groups_[i];
      const std::string l = " sub-group " + std::to_string(i);
      const Bytes mv = GeneratorContext::fp32(sg) * 2.0;
      const bool has_next = i + 1 < sub_groups_.size();
      if (nvme_opt) {
        if (!read_ahead)
          swap_in(i);
        b_.join(os.cpu, nvme_->nvme);
        read_ahead = nvme_->pipeline_read && has_next;
        if (read_ahead)
          swap_in(i + 1);
        const BufferId t =
            b_.alloc(os.cpu, Phase::INIT, "adam m,v at init" + l, MemTag::OPTIMIZER_STATES, mv, program::Device::HOST);
        emit_host_adam_init_step(ctx_, os.cpu, sg, l, {.fp32_master = true});
        if (pipelined)
          b_.join(os.cpu, nvme_->write); // _complete_swap_out of the previous sub-group's pending write
        emit_nvme_optimizer_swap_out(ctx_, *nvme_, os.cpu, sg, true, Phase::INIT, "swap out optimizer at init" + l);
        if (!(nvme_->pipeline_write && has_next))
          b_.join(os.cpu, nvme_->write);
        keep_or_release_fresh_mv(i, t, Phase::INIT);
      } else {
        b_.alloc_persistent(os.cpu, Phase::INIT, "adam m,v" + l, MemTag::OPTIMIZER_STATES, mv, program::Device::HOST);
        emit_host_adam_init_step(ctx_, os.cpu, sg, l, {.fp32_grads = cfg_.pin_optimizer_effective()});
      }
    }
    b_.join(c_, os.cpu);
  }

  // Step with offload_optimizer=cpu: per sub-group, DeepSpeedCPUAdam on the host partition (m, v created at the
  // first step in host memory, §7 #17), then the updated lp sub-group is copied H2D into the lp partition; then
  // _post_step all-gathers the persistent params.
  //
  // With offload_optimizer=nvme the sub-group's fp32 master, grads (and m, v) are swapped in before its update and
  // out after it (stage3.py _prepare_sub_group / _release_sub_group). PartitionedOptimizerSwapper (no pipelining)
  // does both synchronously on one aio handle. PipelinedOptimizerSwapper (pipeline_read or pipeline_write;
  // pipelined_optimizer_swapper.py swap_in_optimizer_state / swap_out_optimizer_state, with stage3.py passing the
  // next swappable sub-group as async_parameter and async_swap = "a next one exists"): pipeline_read waits for this
  // sub-group's read (started one sub-group earlier, or now for the first) and starts the next one's on the read
  // handle; pipeline_write waits for the previous sub-group's write at this one's swap-out, then starts this one's
  // write on the write handle and returns (the last sub-group's write is waited for at once). The first swap-in
  // flushes the gradient swapper (the fp32 grads written at the GA boundary on the write handle).
  void offload_step() {
    const auto& os = *offload_;
    b_.join(os.cpu, os.copy);
    const bool nvme_opt = nvme_ && nvme_->optimizer;
    const bool pipelined = nvme_opt && nvme_->pipelined();
    bool read_ahead = false; // this sub-group's read was started by the previous one (pipeline_read)
    for (std::size_t i = 0; i < sub_groups_.size(); ++i) {
      const Elements sg = sub_groups_[i];
      const std::string l = "sub-group " + std::to_string(i);
      const bool has_next = i + 1 < sub_groups_.size();
      std::optional<BufferId> fresh_mv; // m, v created by this step (NVMe from v0.13.2: step 0)
      if (nvme_opt) { // fp32 master (and m, v from the 2nd step) come from NVMe into the swap buffers
        if (pipelined && i == 0)
          b_.join(nvme_->nvme, nvme_->write); // _flush_gradient_swapper
        if (read_ahead) {
          b_.join(os.cpu, nvme_->nvme);
        } else {
          release_kept_mv(i);
          emit_nvme_swap_in(ctx_, *nvme_, os.cpu, sg, step_, l);
        }
        read_ahead = nvme_->pipeline_read && has_next;
        if (read_ahead) {
          release_kept_mv(i + 1);
          emit_nvme_swap_in(ctx_, *nvme_, os.cpu, sub_groups_[i + 1], step_,
                            "sub-group " + std::to_string(i + 1) + " (read ahead)", false);
        }
        // DeepSpeedCPUAdam creates m, v (pageable) in its first step: the first not skipped on an fp16 overflow.
        if (step_ == ctx_.first_applied_step() && !adam_state_at_init(cfg_)) {
          fresh_mv = b_.alloc(os.cpu, Phase::OPTIMIZER, "adam m,v " + l, MemTag::OPTIMIZER_STATES,
                              GeneratorContext::fp32(sg) * 2.0, program::Device::HOST);
          emit_host_adam_state_init(ctx_, os.cpu, sg, " " + l);
        }
      } else if (step_ == ctx_.first_applied_step() && !adam_state_at_init(cfg_)) {
        b_.alloc_persistent(os.cpu, Phase::OPTIMIZER, "adam m,v " + l, MemTag::OPTIMIZER_STATES,
                            GeneratorContext::fp32(sg) * 2.0, program::Device::HOST);
        emit_host_adam_state_init(ctx_, os.cpu, sg, " " + l);
      }
      // unscale_and_clip_grads: `fp32 grad.mul_(1. / combined_scale)` on the host, whatever the scale (4 B read +
      // 4 B written per element); DeepSpeedCPUAdam; then _reassign_or_swap_out_partitioned_parameters copies the
      // fp32 sub-group into the lp one: a blocking copy across dtypes, which PyTorch casts on the host (4 B read + 2 B
      // written per element) before any H2D (copy_kernel_cuda converts on the CPU for blocking copies).
      // Page-locked host tensors (offload_cpu.hpp HostPlacement): with NVMe the sub-group's fp32 master, grads and
      // m, v sit in the pinned optimizer swap buffers; otherwise only the fp32 grads follow pin_memory (the master
      // is `.to(cpu).clone()`, m and v torch.zeros_like). The cast writes into the pinned lp partition with
      // offload_param, else into a pageable temporary.
      const bool pin_grads = nvme_opt || cfg_.pin_optimizer_effective();
      emit_host_unscale_and_adam(ctx_, os.cpu, sg, " " + l,
                                 {.fp32_grads = pin_grads,
                                  .fp32_master = nvme_opt,
                                  .adam_states = nvme_opt && !fresh_mv});
      emit_host_cast(ctx_, os.cpu, sg, "cast fp32 -> lp sub-group (cpu) " + l,
                     {.fp32_master = nvme_opt, .lp_target = offload_param_, .lp_target_fresh = !offload_param_});
      if (nvme_) { // updated fp32 master + m, v (and the lp params with offload_param=nvme) go back to NVMe
        if (pipelined)
          b_.join(os.cpu, nvme_->write); // _complete_swap_out of the previous sub-group's pending write
        emit_nvme_swap_out(ctx_, *nvme_, os.cpu, sg, sub_groups_on_nvme_[i], l, fresh_mv.has_value());
        // A synchronous swap-out: the step goes on when the write is done (PartitionedOptimizerSwapper always;
        // the pipelined one without pipeline_write, and for the last sub-group).
        if (!(nvme_->pipeline_write && has_next))
          b_.join(os.cpu, nvme_->write);
        if (fresh_mv)
          keep_or_release_fresh_mv(i, *fresh_mv, Phase::OPTIMIZER);
      }
      if (!offload_param_) {
        // The updated lp sub-group goes back to the GPU partition, from the pageable cast temporary, blocking; with
        // offload_param it stays in host memory.
        b_.join(os.copy, os.cpu);
        ctx_.host_copy(os.copy, Phase::OFFLOAD, "h2d lp params " + l, program::CopyDir::H2D, ctx_.lp(sg), true, true);
      }
    }
    b_.join(os.copy, os.cpu);
    b_.join(c_, os.copy);
    if (nvme_) {
      b_.join(c_, nvme_->nvme);
      b_.join(c_, nvme_->write);
    }
    post_step_gather();
  }

  // Host m, v that DeepSpeedCPUAdam has just created for sub-group `i` (pageable, `torch.zeros_like`), after the
  // sub-group's swap-out. PartitionedOptimizerSwapper frees them there: swap_out_optimizer_state ->
  // release_swap_buffers -> OptimizerStateSwapInfo.release_memory sets each tensor's .data to an empty tensor.
  // PipelinedOptimizerSwapper does not: _swap_out_optimizer_state copies the unpinned tensors into swap buffers for
  // the write and _complete_swap_out returns those buffers, but the pageable m, v stay referenced by the swap info
  // and optimizer.state (its `buffer = torch.Tensor()` loop rebinds a local only). They are dropped at the sub-group's
  // next _swap_in_optimizer_state, whose set_swap_buffers points each tensor's .data at a swap buffer
  // (pipelined_optimizer_swapper.py, swap_tensor/optimizer_utils.py; v0.9.0 to v0.19.6). So up to 8 B per partition
  // element stays on the host from the step that created them (init before v0.13.2, step 0 from it) to the next.
  void keep_or_release_fresh_mv(std::size_t i, BufferId mv, Phase phase) {
    if (!nvme_->pipelined()) {
      b_.free(offload_->cpu, phase, mv);
      return;
    }
    kept_mv_.resize(sub_groups_.size());
    kept_mv_[i] = mv;
  }

  /// Before sub-group `i`'s swap-in: frees the pageable m, v the pipelined swapper kept (keep_or_release_fresh_mv).
  void release_kept_mv(std::size_t i) {
    if (i >= kept_mv_.size() || !kept_mv_[i])
      return;
    b_.free(offload_->cpu, Phase::OPTIMIZER, *kept_mv_[i]);
    kept_mv_[i].reset();
  }

  // _post_step (stage3.py l.2566-2573): the persistent params are all-gathered into their (already allocated) full
  // tensors, in one call (_allgather_params_coalesced), or with stage3_allgather_sequential one blocking all-gather
  // per param (_all_gather -> _allgather_params_sequential, partition_parameters.py l.1716, l.2102).
  //
  // Both calls end with the host waiting for the whole device: get_accelerator().synchronize() "to guarantee the
  // communication to be completed" (v0.19.6 partition_parameters.py l.2097-2098, l.2157-2158); at N_d = 1 the coalesced call
  // returns through _no_gather_coalesced, whose wait() synchronizes the current stream (l.2003-2005, l.103-108). That
  // is what orders the next step's first all-gathers, which the host issues on the all-gather stream without a
  // wait_stream on the compute stream (partitioned_param_coordinator.py l.606-608; partition_parameters.py
  // l.1331-1333 reads ds_tensor there), after the step's last fp32 -> lp copy (_reassign_or_swap_out_partitioned_
  // parameters on the compute stream, stage3.py l.2585-2590). Without persistent params step() has no such sync.
  void post_step_gather() {
    if (persistent_full_ <= 0) // `if len(self.persistent_parameters) > 0`
      return;
    if (n_ > 1 && !cfg_.stage3_allgather_sequential) {
      b_.collective(c_, Phase::PARAM_GATHER, "allgather persistent params", CollectiveKind::ALL_GATHER,
                    ctx_.lp(persistent_padded_), ctx_.param_group());
    } else if (n_ > 1) {
      for (const Elements padded : persistent_sizes_)
        b_.collective(c_, Phase::PARAM_GATHER, "allgather persistent params", CollectiveKind::ALL_GATHER,
                      ctx_.lp(padded), ctx_.param_group());
    }
    ctx_.device_sync();
  }

  GeneratorContext ctx_;
  const scenario::ZeroConfig& cfg_;
  Elements n_;
  program::ProgramBuilder& b_;
  StreamId c_;
  StreamId gather_ = 0;
  StreamId reduce_ = 0;
  std::size_t num_units_ = 0;
  static constexpr std::size_t kNoPos = static_cast<std::size_t>(-1);
  std::vector<std::size_t> trace_; // unit per trace position (build_trace)
  std::vector<std::size_t> pos_fwd_, pos_rec_, pos_bwd_;
  std::vector<UnitState> units_;
  std::vector<std::pair<std::size_t, std::size_t>> layer_units_; // [first, last) unit of each layer
  std::vector<Elements> sub_groups_;
  std::vector<std::vector<std::size_t>> sub_group_params_; ///< params of each sub-group (sub_group_members)
  std::vector<Elements> sub_groups_on_nvme_; // per sub-group, the lp elements whose partitions live on NVMe
  /// Pipelined optimizer swapper: per sub-group, the host m, v kept after the swap-out that followed their creation,
  /// until the sub-group's next swap-in (keep_or_release_fresh_mv).
  std::vector<std::optional<BufferId>> kept_mv_;
  std::vector<bool> persist_; // ds_persist per param (mark_persistent)
  /// stage3_use_all_reduce_for_fetch_params: flat buffers that persistent params view (their first fetch), kept
  /// until the optimizer step releases every param.
  std::vector<BufferId> retained_;
  Slots<SharedFlat> shared_; // prefetched all-reduce buffers (issue_gather); a slot is released by drop_shared
  Slots<GatherCall> calls_; // in-flight calls (new_call); a slot is released when every submodule has waited
  Elements lp_partition_ = 0;
  Elements lp_on_nvme_ = 0; // offload_param=nvme: of lp_partition_, the partitions on NVMe (nvme_swappable)
  Elements lp_in_host_ = 0; // and the non-persistent ones under the swap minimum outside in_cpu_, in host memory
  /// offload_param=nvme: per param of ctx.params(), whether its partition is in the pinned CPU flat buffer
  /// (params_in_cpu_buffer, offload_param.max_in_cpu); empty otherwise.
  std::vector<bool> in_cpu_;
  Elements lp_cpu_buffer_ = 0; // that buffer's lp elements: min(trainable partition elements, max_in_cpu)
  Elements lp_cpu_swappable_ = 0; // of in_cpu_'s partitions, those written to NVMe at zero.Init, read back at init
  Elements grad_partition_ = 0;
  bool grads_in_partition_ = false; ///< before v0.6.0 with offload_optimizer and GA > 1: allocated (lazily)
  Elements persistent_full_ = 0;
  Elements persistent_padded_ = 0;
  std::vector<Elements> persistent_sizes_; // each persistent param's ceil(n_i/N)·N
  Elements available_ = 0;
  /// Per unit, the furthest trace position at which the prefetch walk of this micro-step popped it
  /// (__most_recent_step_id_param_fetched_for, per submodule; 0 = none, as position 0 is no later use of anything).
  std::vector<std::size_t> fetched_for_;
  /// DeepSpeed's param queue head (__param_queue) in this micro-step: (trace position, index of the next of that
  /// unit's non-persistent params); everything before it has been popped.
  using QueuePos = std::pair<std::size_t, int>;
  QueuePos head_{0, 0};
  std::deque<EventId> fetch_inflight_;
  std::deque<EventId> reduce_inflight_;
  std::vector<std::size_t> bucket_;
  Elements bucket_elems_ = 0;
  std::vector<BufferId> bucket_grads_; // without contiguous_gradients: the bucket's params' own grads, until reduced
  int flushes_ = 0;
  int step_ = 0;
  int micro_ = 0;
  bool reduce_synced_ = false;
  std::optional<OffloadStreams> offload_;
  std::optional<NvmeSwap> nvme_;
  bool offload_param_ = false;
  bool opt_offload_ = false; ///< offload_optimizer cpu|nvme: the step runs on the CPU (offload_step)
};

} // namespace

bool stage3_checks_overflow(const scenario::ZeroConfig& cfg, scenario::Precision precision) {
  // stage3.py _overflow_check_and_loss_scale_update: `if self.dtype == torch.float16: self.check_overflow()` from
  // v0.11.2 (PR #4512); unconditional before.
  return precision == scenario::Precision::FP16 || cfg.deepspeed_before(0, 11, 2);
}

program::StepProgram generate_stage3(const GeneratorInput& in) { return Stage3Generator(in).run(); }

Elements stage3_largest_sub_group(const GeneratorInput& in, Elements sub_group_size) {
  const std::vector<Elements> groups = pack_sub_groups(GeneratorContext(in), sub_group_size);
  return groups.empty() ? 0 : *std::max_element(groups.begin(), groups.end());
}

std::size_t stage3_sub_group_count(const GeneratorInput& in, Elements sub_group_size) {
  return pack_sub_groups(GeneratorContext(in), sub_group_size).size();
}

} // namespace zerosim::zero
