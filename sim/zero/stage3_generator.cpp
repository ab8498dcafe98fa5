#include "sim/zero/stage3_generator.hpp"

#include "sim/zero/generator_common.hpp"
#include "sim/zero/offload_cpu.hpp"
#include "sim/zero/offload_nvme.hpp"

#include <algorithm>
#include <deque>
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
/// (max_param_reduce_events = 2): with more than 2 events outstanding the host syncs on the oldest, so at most 3
/// operations are in flight. The host sync is modelled as the compute stream waiting for that event.
constexpr std::size_t kMaxOutstanding = 2;

class Stage3Generator {
public:
  explicit Stage3Generator(const GeneratorInput& in)
      : ctx_(in), cfg_(ctx_.cfg()), n_(ctx_.n()), b_(ctx_.b()), c_(ctx_.compute()) {
    const bool overlap = cfg_.overlap_comm_effective();
    gather_ = overlap ? ctx_.add_stream("gather", program::StreamKind::COMM) : c_;
    reduce_ = overlap ? ctx_.add_stream("reduce", program::StreamKind::COMM) : c_;
    // offload_optimizer=cpu (§3.5 "Offload in stage 3"): fp32 master, Adam, fp32 grads and the lp grad
    // partitions live in pinned host memory; CPU Adam per sub-group.
    if (cfg_.offload_optimizer != scenario::OffloadDevice::NONE)
      offload_ = add_offload_streams(ctx_);
    // offload_param=cpu (ZeRO-Infinity, §3.5): the lp partitions live in pinned host memory; a fetch first copies
    // this rank's partitions H2D, then all-gathers them. generate_program admits it only with offload_optimizer.
    offload_param_ = cfg_.offload_param != scenario::OffloadDevice::NONE && offload_.has_value();
    // device nvme (ZeRO-Infinity, offload_nvme.hpp): the fp32 master + Adam and/or the lp partitions live on the
    // node's NVMe and are swapped through pinned host buffers.
    const bool nvme_opt = cfg_.offload_optimizer == scenario::OffloadDevice::NVME;
    const bool nvme_param = offload_param_ && cfg_.offload_param == scenario::OffloadDevice::NVME;
    if (nvme_opt || nvme_param)
      nvme_ = add_nvme_swap(ctx_, nvme_opt, nvme_param);
    num_layers_ = ctx_.wl().layers.size();
    layers_.resize(num_layers_);
    for (std::size_t l = 0; l < num_layers_; ++l) {
      for (std::size_t p : ctx_.layer_params(l)) {
        const auto& pr = ctx_.params()[p];
        const Elements part = partition_numel(pr.numel);
        layers_[l].all += pr.numel;
        if (!pr.trainable) {
          // Frozen weights (LoRA/QLoRA base): "frozen model will not be split" (InternLM/xtuner#88, maintainer;
          // reference/calibration.md §4.4: Z2 ~= Z3 memory with LoRA) -> full lp copy on every GPU, never gathered,
          // never offloaded.
          frozen_full_ += pr.numel;
          continue;
        }
        lp_partition_ += part;
        if (pr.trainable)
          grad_partition_ += part;
        if (persistent(pr.numel)) {
          persistent_full_ += pr.numel;
          persistent_padded_ += part * n_;
          layers_[l].persist_padded += part * n_;
        } else {
          layers_[l].full += pr.numel;
          layers_[l].padded += part * n_;
          ++layers_[l].count;
        }
      }
    }
    // Sub-groups (stage3.py _create_fp16_sub_groups): params packed greedily until a group holds at least
    // sub_group_size partition elements.
    Elements acc = 0;
    for (const auto& pr : ctx_.params()) {
      if (!pr.trainable)
        continue;
      acc += partition_numel(pr.numel);
      if (acc >= cfg_.sub_group_size) {
        sub_groups_.push_back(acc);
        acc = 0;
      }
    }
    if (acc > 0)
      sub_groups_.push_back(acc);
  }

  program::StepProgram run() {
    init();
    for (int step = 0; step < ctx_.in().steps; ++step) {
      step_ = step;
      ctx_.begin_step(step);
      for (int micro = 0; micro < ctx_.grad_accum(); ++micro) {
        micro_ = micro;
        PassHooks fwd;
        fwd.before_layer = [&](std::size_t l) { fetch(l, l); };
        fwd.after_layer = [&](std::size_t l) { release(l, l); };
        auto acts = ctx_.forward(fwd);
        PassHooks bwd;
        bwd.before_layer = [&](std::size_t l) {
          fetch(l, trace_pos_bwd(l));
          reduce_synced_ = false;
        };
        bwd.after_layer = [&](std::size_t l) { release(l, trace_pos_bwd(l)); };
        bwd.on_grad = [&](std::size_t p) { on_grad(p); };
        ctx_.backward(acts, bwd);
        // independent_gradient_partition_epilogue: reduce what is left in the bucket and wait for the reductions.
        flush();
        b_.join(c_, reduce_);
        reduce_inflight_.clear();
      }
      optimizer_step();
      ctx_.end_step(step);
    }
    return ctx_.build();
  }

private:
  struct LayerState {
    Elements all = 0;      // numel of all the layer's params (what the reuse-distance walk counts)
    Elements full = 0;     // numel of the non-persistent params (gathered per fetch)
    Elements padded = 0;   // Σ ceil(n_i/N)·N: the gathered flat size
    int count = 0;         // number of non-persistent params
    Elements persist_padded = 0;   // Σ ceil(n_i/N)·N over the persistent params
    bool persist_gathered = false; // persistent params are gathered at their first fetch, then never released
    std::vector<BufferId> buffers;  // gathered params while resident
    bool resident = false;
    std::optional<EventId> pending;  // gather completion not yet waited by compute
  };

  [[nodiscard]] Elements largest_sub_group() const {
    return sub_groups_.empty() ? 0 : *std::max_element(sub_groups_.begin(), sub_groups_.end());
  }

  // partition_parameters.py: each param is partitioned on its own, ceil(numel / N) elements per rank.
  [[nodiscard]] Elements partition_numel(Elements numel) const { return (numel + n_ - 1) / n_; }
  [[nodiscard]] bool persistent(Elements numel) const { return numel <= cfg_.stage3_param_persistence_threshold; }
  [[nodiscard]] std::size_t trace_pos_bwd(std::size_t l) const { return 2 * num_layers_ - 1 - l; }
  // partitioned_param_coordinator: the first forward+backward (step 0, micro-step 0) records the module trace;
  // reset_step at the next forward marks it COMPLETE, so micro-steps count, not optimizer steps.
  [[nodiscard]] bool trace_complete() const { return step_ > 0 || micro_ > 0; }
  [[nodiscard]] std::size_t trace_layer(std::size_t pos) const {
    return pos < num_layers_ ? pos : 2 * num_layers_ - 1 - pos;
  }

  void init() {
    // stage3.py __init__ (§3.5 "Persistent GPU buffers").
    if (frozen_full_ > 0)
      b_.alloc(c_, Phase::INIT, "frozen lp params (not partitioned)", MemTag::LP_PARAMS, ctx_.lp(frozen_full_));
    if (nvme_ && nvme_->params)
      emit_nvme_param_init(ctx_, *nvme_, offload_->cpu, lp_partition_);
    else if (offload_param_)
      b_.alloc(offload_->cpu, Phase::INIT, "lp partitions (pinned host)", MemTag::LP_PARAMS, ctx_.lp(lp_partition_),
               program::Device::HOST);
    else
      b_.alloc(c_, Phase::INIT, "lp partitions (lp_param_buffer)", MemTag::LP_PARAMS, ctx_.lp(lp_partition_));
    if ((n_ > 1 || offload_param_) && persistent_full_ > 0)
      b_.alloc(c_, Phase::INIT, "persistent params", MemTag::LP_PARAMS, ctx_.lp(persistent_full_));
    if (offload_) {
      // Offload: grad_partitions_flat_buffer, the fp32 master and the fp32 grads on pinned host memory.
      const auto h = program::Device::HOST;
      b_.alloc(offload_->cpu, Phase::INIT, "grad partitions", MemTag::GRAD_PARTITION, ctx_.lp(grad_partition_), h);
      if (nvme_ && nvme_->optimizer)
        emit_nvme_optimizer_init(ctx_, *nvme_, offload_->cpu, grad_partition_, largest_sub_group());
      else
        b_.alloc(offload_->cpu, Phase::INIT, "fp32 master partitions", MemTag::FP32_MASTER,
                 GeneratorContext::fp32(grad_partition_), h);
      b_.alloc(offload_->cpu, Phase::INIT, "fp32 grad partitions", MemTag::FP32_GRADS,
               GeneratorContext::fp32(grad_partition_), h);
      b_.alloc(c_, Phase::INIT, "ipg bucket", MemTag::IPG_BUCKET, ctx_.lp(cfg_.reduce_bucket_size));
      return;
    }
    // grad_partitions_flat_buffer in the grad-accumulation dtype (= model dtype by default).
    b_.alloc(c_, Phase::INIT, "grad partitions", MemTag::GRAD_PARTITION, ctx_.lp(grad_partition_));
    b_.alloc(c_, Phase::INIT, "fp32 master partitions", MemTag::FP32_MASTER, GeneratorContext::fp32(grad_partition_));
    // Optimizer-state init uses a zero fp32 grad of the largest sub-group, then drops it (no Adam state yet:
    // created lazily at the first step).
    if (!sub_groups_.empty()) {
      const Elements largest = *std::max_element(sub_groups_.begin(), sub_groups_.end());
      BufferId z = b_.alloc(c_, Phase::INIT, "init fp32 grad", MemTag::FP32_GRADS, GeneratorContext::fp32(largest));
      b_.free(c_, Phase::INIT, z);
    }
    // ONE IPG bucket of reduce_bucket_size elements of the comm dtype, kept for the whole run, not doubled by
    // overlap_comm (stage3.py l.731-735, §7 #11).
    b_.alloc(c_, Phase::INIT, "ipg bucket", MemTag::IPG_BUCKET, ctx_.lp(cfg_.reduce_bucket_size));
  }

  void issue_gather(std::size_t l) {
    auto& st = layers_[l];
    if (fetch_inflight_.size() > kMaxOutstanding) {
      b_.wait(c_, fetch_inflight_.front());
      fetch_inflight_.pop_front();
    }
    const std::string name = ctx_.wl().layers[l].name;
    std::optional<BufferId> fetched_partition;
    if (offload_param_) {
      // offload_param: this rank's partitions are copied H2D first (Ψ_layer/N lp bytes over PCIe per fetch).
      const auto copy = offload_->copy;
      if (nvme_ && nvme_->params) {
        // offload_param=nvme: the partitions are first read from NVMe into a pinned swap buffer.
        emit_nvme_param_read(ctx_, *nvme_, c_, ctx_.lp(n_ == 1 ? st.full : st.padded / n_), name);
        b_.join(copy, nvme_->nvme);
      }
      b_.join(copy, c_);
      if (n_ == 1) {
        // _no_gather_coalesced: param.data becomes the device copy of the (full-size) partition.
        st.buffers.push_back(
            b_.alloc(copy, Phase::PARAM_GATHER, "fetched " + name, MemTag::GATHER_BUFFER, ctx_.lp(st.full)));
        b_.copy(copy, Phase::OFFLOAD, "h2d params " + name, program::CopyDir::H2D, ctx_.lp(st.full));
        finish_fetch(l, b_.record(copy));
        return;
      }
      const Bytes part = ctx_.lp(st.padded / n_);
      fetched_partition =
          b_.alloc(copy, Phase::PARAM_GATHER, "fetched partition " + name, MemTag::GATHER_BUFFER, part);
      b_.copy(copy, Phase::OFFLOAD, "h2d params " + name, program::CopyDir::H2D, part);
      b_.join(gather_, copy);
    } else {
      // The fetch is issued by the host at this point of the compute stream.
      b_.join(gather_, c_);
    }
    const Bytes flat = ctx_.lp(st.padded);
    if (st.count == 1) {
      // A single param is gathered into its own padded buffer and viewed (1x).
      st.buffers.push_back(b_.alloc(gather_, Phase::PARAM_GATHER, "gathered " + name, MemTag::GATHER_BUFFER, flat));
      b_.collective(gather_, Phase::PARAM_GATHER, "allgather " + name, CollectiveKind::ALL_GATHER, flat,
                    ctx_.dp_group());
    } else {
      // Coalesced all-gather (partition_parameters.py all_gather_coalesced): one flat buffer, then each param's
      // full tensor is a NEW tensor built from its N slices -> 2x transient until the flat buffer is freed.
      BufferId f = b_.alloc(gather_, Phase::PARAM_GATHER, "allgather flat " + name, MemTag::GATHER_BUFFER, flat);
      b_.collective(gather_, Phase::PARAM_GATHER, "allgather " + name, CollectiveKind::ALL_GATHER, flat,
                    ctx_.dp_group());
      st.buffers.push_back(b_.alloc(gather_, Phase::PARAM_GATHER, "gathered " + name, MemTag::GATHER_BUFFER,
                                    ctx_.lp(st.full)));
      ctx_.mem_kernel(gather_, Phase::PARAM_GATHER, "unflatten " + name, ctx_.lp(st.full) * 2.0);
      b_.free(gather_, Phase::PARAM_GATHER, f);
    }
    if (fetched_partition)
      b_.free(gather_, Phase::PARAM_GATHER, *fetched_partition);
    finish_fetch(l, b_.record(gather_));
  }

  void finish_fetch(std::size_t l, EventId e) {
    auto& st = layers_[l];
    st.pending = e;
    st.resident = true;
    available_ += st.full;
    fetch_inflight_.push_back(e);
  }

  void fetch(std::size_t l, std::size_t pos) {
    // N == 1: all_gather_coalesced short-circuits to _no_gather_coalesced: no comm, no buffer (§3.6); with
    // offload_param the partition still has to come from host memory.
    if (n_ == 1 && !offload_param_)
      return;
    auto& st = layers_[l];
    if (n_ == 1 && !st.persist_gathered && st.persist_padded > 0) {
      if (nvme_ && nvme_->params) {
        emit_nvme_param_read(ctx_, *nvme_, c_, ctx_.lp(st.persist_padded), "persistent " + ctx_.wl().layers[l].name);
        b_.join(offload_->copy, nvme_->nvme);
      }
      b_.join(offload_->copy, c_);
      b_.copy(offload_->copy, Phase::OFFLOAD, "h2d persistent " + ctx_.wl().layers[l].name, program::CopyDir::H2D,
              ctx_.lp(st.persist_padded));
      b_.wait(c_, b_.record(offload_->copy));
      st.persist_gathered = true;
    }
    if (!st.persist_gathered && st.persist_padded > 0) {
      // First fetch of the persistent params (ds_persist): gathered once into their full tensors (allocated at
      // INIT here), never released; afterwards only _post_step refreshes them.
      b_.join(gather_, c_);
      b_.collective(gather_, Phase::PARAM_GATHER, "allgather persistent " + ctx_.wl().layers[l].name,
                    CollectiveKind::ALL_GATHER, ctx_.lp(st.persist_padded), ctx_.dp_group());
      b_.wait(c_, b_.record(gather_));
      st.persist_gathered = true;
    }
    if (st.full > 0) {
      if (!st.resident)
        issue_gather(l);
      if (st.pending) {
        b_.wait(c_, *st.pending);
        auto it = std::find(fetch_inflight_.begin(), fetch_inflight_.end(), *st.pending);
        if (it != fetch_inflight_.end())
          fetch_inflight_.erase(it);
        st.pending.reset();
      }
    }
    // Prefetch only with a COMPLETE trace, i.e. from the second forward on (reset_step; §7 #23).
    if (!trace_complete())
      return;
    const Elements budget = std::min(cfg_.stage3_max_live_parameters - available_, cfg_.stage3_prefetch_bucket_size);
    Elements prefetching = 0;
    for (std::size_t q = pos + 1; q < 2 * num_layers_ && prefetching < budget; ++q) {
      const std::size_t m = trace_layer(q);
      if (layers_[m].full == 0 || layers_[m].resident)
        continue;
      issue_gather(m);
      prefetching += layers_[m].full;
    }
  }

  void release(std::size_t l, std::size_t pos) {
    auto& st = layers_[l];
    if (!st.resident)
      return;
    if (trace_complete() && pos < num_layers_) {
      // __params_to_release: walking the recorded module order from the next module, params of every module
      // reached while fewer than max_reuse_distance numel have been traversed are kept. The next use of a forward
      // layer is its backward (trace position 2L-1-l); the modules in between count with all their params.
      Elements distance = 0;
      for (std::size_t q = pos + 1; q < trace_pos_bwd(l); ++q)
        distance += layers_[trace_layer(q)].all;
      if (distance < cfg_.stage3_max_reuse_distance)
        return;
    }
    for (BufferId buf : st.buffers)
      b_.free(c_, Phase::PARAM_GATHER, buf);
    st.buffers.clear();
    st.resident = false;
    available_ -= st.full;
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
      reduce_bucket("reduce_scatter " + pr.name);
      b_.free(reduce_, Phase::GRAD_REDUCE, g);
      return;
    }
    if (bucket_elems_ + pr.numel > cfg_.reduce_bucket_size)
      flush();
    ctx_.mem_kernel(reduce_, Phase::BACKWARD, "copy grad to bucket " + pr.name, ctx_.lp(pr.numel) * 2.0);
    b_.free(reduce_, Phase::BACKWARD, g);  // the full param.grad is freed after the copy
    bucket_.push_back(p);
    bucket_elems_ += pr.numel;
  }

  void flush() {
    if (bucket_.empty())
      return;
    reduce_bucket("reduce_scatter bucket " + std::to_string(flushes_++));
  }

  void reduce_bucket(const std::string& label) {
    if (reduce_inflight_.size() > kMaxOutstanding) {
      b_.wait(c_, reduce_inflight_.front());
      reduce_inflight_.pop_front();
    }
    Elements part = 0;
    for (std::size_t p : bucket_)
      part += partition_numel(ctx_.params()[p].numel);
    const Bytes padded = ctx_.lp(part * n_);
    if (cfg_.reduce_scatter) {
      // reduce_scatter_coalesced (comm/coalesced_collectives.py): an interleaved, padded flat copy of the bucket
      // (except for a single evenly divisible tensor), pre-divided, then one reduce_scatter; issued at N == 1 too.
      const bool single_even = bucket_.size() == 1 && ctx_.params()[bucket_[0]].numel % n_ == 0;
      std::optional<BufferId> tmp;
      if (!single_even) {
        tmp = b_.alloc(reduce_, Phase::GRAD_REDUCE, "interleave " + label, MemTag::FLATTEN_TEMP, padded);
        ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, "interleave " + label, padded * 2.0);
      }
      b_.collective(reduce_, Phase::GRAD_REDUCE, label, CollectiveKind::REDUCE_SCATTER, padded, ctx_.dp_group());
      if (tmp)
        b_.free(reduce_, Phase::GRAD_REDUCE, *tmp);
    } else {
      // reduce_scatter=False with contiguous grads: all_reduce of the bucket, then slice (2x traffic).
      b_.collective(reduce_, Phase::GRAD_REDUCE, label, CollectiveKind::ALL_REDUCE, ctx_.lp(bucket_elems_),
                    ctx_.dp_group());
    }
    if (offload_) {
      offload_partition(part, label);
    } else {
      // partition_grads: this rank's slice is copied (micro-step 0) or added (later micro-steps) into
      // grad_partitions_flat_buffer.
      ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, micro_ == 0 ? "copy grad partition" : "accumulate grad partition",
                      ctx_.lp(part) * (micro_ == 0 ? 2.0 : 3.0));
    }
    reduce_inflight_.push_back(b_.record(reduce_));
    bucket_.clear();
    bucket_elems_ = 0;
  }

  void optimizer_step() {
    // _partition_all_parameters at the start of step(): anything still gathered is released.
    for (auto& st : layers_) {
      for (BufferId buf : st.buffers)
        b_.free(c_, Phase::OPTIMIZER, buf);
      st.buffers.clear();
      st.resident = false;
    }
    available_ = 0;
    fetch_inflight_.clear();
    if (offload_) {
      offload_step();
      return;
    }
    // Per sub-group (stage3.py step): flatten + cast the sub-group's grads to fp32 (transient
    // 4·min(sub_group_size, Ψ/N) B, §7 #20), Adam (lazy m, v at step 0, §7 #17), copy fp32 -> lp partition.
    for (std::size_t i = 0; i < sub_groups_.size(); ++i) {
      const Elements sg = sub_groups_[i];
      const std::string l = "sub-group " + std::to_string(i);
      BufferId g32 = b_.alloc(c_, Phase::OPTIMIZER, "fp32 grad " + l, MemTag::FP32_GRADS, GeneratorContext::fp32(sg));
      ctx_.mem_kernel(c_, Phase::OPTIMIZER, "cast grads to fp32 " + l, ctx_.lp(sg) + GeneratorContext::fp32(sg));
      if (step_ == 0)
        b_.alloc(c_, Phase::OPTIMIZER, "adam m,v " + l, MemTag::OPTIMIZER_STATES, GeneratorContext::fp32(sg) * 2.0);
      ctx_.gpu_adam(c_, "adam " + l, sg);
      b_.free(c_, Phase::OPTIMIZER, g32);
    }
    // _post_step: persistent params are all-gathered into their (already allocated) full tensors.
    if (n_ > 1 && persistent_full_ > 0)
      b_.collective(c_, Phase::PARAM_GATHER, "allgather persistent params", CollectiveKind::ALL_GATHER,
                    ctx_.lp(persistent_padded_), ctx_.dp_group());
  }

  // partition_grads with offload_optimizer=cpu (stage3.py l.1886-1934, §3.5): micro-step 0 copies the reduced lp
  // partition D2H into the pinned grad buffer and straight back H2D into a GPU temp; later micro-steps bring the
  // accumulated partition H2D, add, and send it back D2H; at the GA boundary the GPU-side partition is cast to
  // fp32 and written D2H into the CPU fp32 grad. GA = 1: 2 B D2H + 2 B H2D + 4 B D2H per partition element.
  void offload_partition(Elements part, const std::string& label) {
    const auto copy = offload_->copy;
    using program::CopyDir;
    b_.join(copy, reduce_);
    BufferId tmp = b_.alloc(copy, Phase::OFFLOAD, "grad partition temp " + label, MemTag::FLATTEN_TEMP, ctx_.lp(part));
    if (micro_ == 0) {
      b_.copy(copy, Phase::OFFLOAD, "d2h lp grad partition", CopyDir::D2H, ctx_.lp(part));
      b_.copy(copy, Phase::OFFLOAD, "h2d lp grad partition", CopyDir::H2D, ctx_.lp(part));
    } else {
      b_.copy(copy, Phase::OFFLOAD, "h2d lp grad partition", CopyDir::H2D, ctx_.lp(part));
      b_.copy(copy, Phase::OFFLOAD, "d2h lp grad partition", CopyDir::D2H, ctx_.lp(part));
    }
    if (micro_ == ctx_.grad_accum() - 1) {
      BufferId f32 = b_.alloc(copy, Phase::OFFLOAD, "fp32 grad partition temp " + label, MemTag::FLATTEN_TEMP,
                              GeneratorContext::fp32(part));
      b_.copy(copy, Phase::OFFLOAD, "d2h fp32 grad partition", CopyDir::D2H, GeneratorContext::fp32(part));
      b_.free(copy, Phase::OFFLOAD, f32);
    }
    b_.free(copy, Phase::OFFLOAD, tmp);
  }

  // Step with offload_optimizer=cpu: per sub-group, DeepSpeedCPUAdam on the host partition (m, v created at the
  // first step in host memory, §7 #17), then the updated lp sub-group is copied H2D into the lp partition; then
  // _post_step all-gathers the persistent params.
  void offload_step() {
    const auto& os = *offload_;
    b_.join(os.cpu, os.copy);
    for (std::size_t i = 0; i < sub_groups_.size(); ++i) {
      const Elements sg = sub_groups_[i];
      const std::string l = "sub-group " + std::to_string(i);
      const bool nvme_opt = nvme_ && nvme_->optimizer;
      if (nvme_opt)  // fp32 master (and m, v from the 2nd step) come from NVMe into the swap buffers
        emit_nvme_swap_in(ctx_, *nvme_, os.cpu, sg, step_, l);
      else if (step_ == 0)
        b_.alloc(os.cpu, Phase::OPTIMIZER, "adam m,v " + l, MemTag::OPTIMIZER_STATES, GeneratorContext::fp32(sg) * 2.0,
                 program::Device::HOST);
      b_.cpu(os.cpu, Phase::OPTIMIZER, "cpu adam " + l,
             Seconds(ctx_.in().cpu_adam_seconds_per_param * static_cast<double>(sg)));
      if (nvme_)  // updated fp32 master + m, v (and the lp params with offload_param=nvme) go back to NVMe
        emit_nvme_swap_out(ctx_, *nvme_, os.cpu, sg, l);
      if (!offload_param_) {
        // The updated lp sub-group goes back to the GPU partition; with offload_param it stays in host memory.
        b_.join(os.copy, os.cpu);
        b_.copy(os.copy, Phase::OFFLOAD, "h2d lp params " + l, program::CopyDir::H2D, ctx_.lp(sg));
      }
    }
    b_.join(os.copy, os.cpu);
    b_.join(c_, os.copy);
    if (nvme_)
      b_.join(c_, nvme_->nvme);
    if (n_ > 1 && persistent_full_ > 0)
      b_.collective(c_, Phase::PARAM_GATHER, "allgather persistent params", CollectiveKind::ALL_GATHER,
                    ctx_.lp(persistent_padded_), ctx_.dp_group());
  }

  GeneratorContext ctx_;
  const scenario::ZeroConfig& cfg_;
  Elements n_;
  program::ProgramBuilder& b_;
  StreamId c_;
  StreamId gather_ = 0;
  StreamId reduce_ = 0;
  std::size_t num_layers_ = 0;
  std::vector<LayerState> layers_;
  std::vector<Elements> sub_groups_;
  Elements lp_partition_ = 0;
  Elements grad_partition_ = 0;
  Elements persistent_full_ = 0;
  Elements frozen_full_ = 0;  // frozen (non-trainable) params: not partitioned, resident on every GPU
  Elements persistent_padded_ = 0;
  Elements available_ = 0;
  std::deque<EventId> fetch_inflight_;
  std::deque<EventId> reduce_inflight_;
  std::vector<std::size_t> bucket_;
  Elements bucket_elems_ = 0;
  int flushes_ = 0;
  int step_ = 0;
  int micro_ = 0;
  bool reduce_synced_ = false;
  std::optional<OffloadStreams> offload_;
  std::optional<NvmeSwap> nvme_;
  bool offload_param_ = false;
};

} // namespace

program::StepProgram generate_stage3(const GeneratorInput& in) { return Stage3Generator(in).run(); }

} // namespace zerosim::zero
