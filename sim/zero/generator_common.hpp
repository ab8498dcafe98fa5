// Shared parts of the ZeRO program generators: the per-rank build context (streams, group, parameter table),
// forward/backward emission with per-layer hooks, step marks and the memory-bound "kernels" DeepSpeed runs
// around its collectives and optimizer (reference/zero_semantics.md §3).
#pragma once

#include "sim/program/program.hpp"
#include "sim/zero/zero_program.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace zerosim::zero {

/// One parameter tensor in forward order, with its offset in DeepSpeed's flat lp buffer (stage 1/2 flatten all
/// params of the group in model order, stage_1_and_2.py `bit16_groups_flat`).
struct ParamRef {
  std::size_t layer = 0; ///< index into Workload::layers
  std::size_t index = 0; ///< index into Layer::params
  std::string name;
  Elements numel = 0;
  bool trainable = true;
  Elements flat_offset = 0; ///< offset (elements) in the flat buffer of trainable params
};

/// A leaf-ish submodule of a layer: the parameter tensors that share a module path (the tensor name without its last
/// component, e.g. "h.3.attn.c_attn" for "h.3.attn.c_attn.weight" / ".bias"; a trainable_fraction ".adapter" belongs
/// to its base tensor's module; training.lora_rank's PEFT adapters are modules of their own, e.g.
/// "layers.3.self_attn.q_proj.lora_A.default" beside "...q_proj.base_layer"). ZeRO-3 fetches and releases parameters per submodule (partitioned_param_coordinator.py
/// fetch_sub_module / release_sub_module, reference/zero_semantics.md §3.5 "Parameter fetch / release").
struct Submodule {
  std::string name;
  std::vector<std::size_t> params; ///< indices into GeneratorContext::params(), forward order
  /// Share of the layer's kernels that run in this submodule's forward (and backward) when a pass splits the layer
  /// per submodule (PassHooks::before_submodule): its parameters' numel over the layer's. A linear layer's GEMMs
  /// are 2 FLOPs per weight element per token each way, so the weights carry the layer's time; the parameter-free
  /// work (attention core, element-wise kernels) is spread by the same shares [simplification: it runs between
  /// particular submodules]. The shares of a layer sum to 1.
  double share = 0;
};

/// Per-layer callbacks of a forward or backward pass. Any may be empty.
struct PassHooks {
  /// Before the layer's kernels (stage 3 fetch).
  std::function<void(std::size_t layer)> before_layer;
  /// After the layer's kernels (stage 3 release).
  std::function<void(std::size_t layer)> after_layer;
  /// Backward only, for a layer that recomputes its forward (activation checkpointing): the forward hooks of the
  /// re-run forward, before and after its kernels (stage 3 fetch / release: torch.utils.checkpoint re-enters the
  /// modules, so every submodule's pre- and post-forward hook runs again). When set, `before_layer` follows the
  /// recompute instead of preceding it, as the backward hooks do.
  std::function<void(std::size_t layer)> before_recompute;
  std::function<void(std::size_t layer)> after_recompute;
  /// Per submodule (GeneratorContext::submodules) of a layer, around its share of the layer's kernels (Submodule::
  /// share): forward order in the forward and in a recompute (`recompute` true), reverse order in the backward.
  /// When set, a layer with submodules runs its kernels in one part per submodule instead of one piece, and in the
  /// backward the gradient hooks and on_grad of a submodule's parameters follow its part; before_layer /
  /// after_layer (before_recompute / after_recompute) still run around the whole layer. ZeRO-3 fetches and releases
  /// parameters here: DeepSpeed's pre-/post-forward and -backward hooks run per submodule (parameter_offload.py
  /// _register_hooks_recursively; partitioned_param_coordinator.py fetch_sub_module / release_sub_module).
  std::function<void(std::size_t layer, std::size_t submodule, bool recompute)> before_submodule;
  std::function<void(std::size_t layer, std::size_t submodule, bool recompute)> after_submodule;
  /// Backward only: a trainable parameter's lp gradient was just produced by the layer's backward kernels (called
  /// in reverse parameter order, like autograd's AccumulateGrad hooks; in a split layer per submodule in reverse
  /// submodule order, reverse within each). `param` indexes GeneratorContext::params().
  std::function<void(std::size_t param)> on_grad;

  /// Runs a layer's backward per submodule with nothing to do around each part (stages 0-2): its gradient hooks and
  /// on_grad then fire as each submodule's part ends, as DeepSpeed's per-parameter hooks do during the layer
  /// (stage_1_and_2.py reduce_ready_partitions_and_remove_grads), instead of all at the layer's end.
  void split_per_submodule() {
    if (!before_submodule)
      before_submodule = [](std::size_t, std::size_t, bool) {};
  }
};

/// Build state shared by the stage generators. Streams are created by the stage generator; `compute` always exists.
class GeneratorContext {
 public:
  /// Validates the input (throws zerosim::Error on dp_degree < 1, steps < 1, grad_accum < 1, empty workload) and
  /// creates the "compute" stream and the "dp" group.
  explicit GeneratorContext(const GeneratorInput& in);

  [[nodiscard]] const GeneratorInput& in() const { return in_; }
  [[nodiscard]] const workload::Workload& wl() const { return in_.workload; }
  [[nodiscard]] const scenario::ZeroConfig& cfg() const { return in_.zero; }
  [[nodiscard]] int n() const { return in_.dp_degree; }
  [[nodiscard]] int grad_accum() const { return static_cast<int>(in_.workload.training.grad_accum); }
  /// True when step `step` (0-based) overflows and its optimizer step is skipped (training.skipped_steps).
  [[nodiscard]] bool overflow_skipped(int step) const { return step < in_.workload.training.skipped_steps; }
  /// The first step whose optimizer step runs (where lazily created Adam state appears): training.skipped_steps.
  [[nodiscard]] int first_applied_step() const { return static_cast<int>(in_.workload.training.skipped_steps); }
  [[nodiscard]] program::ProgramBuilder& b() { return b_; }
  [[nodiscard]] program::StreamId compute() const { return compute_; }
  /// The engine's data-parallel group (DeepSpeedEngine.data_parallel_group: the mpu's, or else a clone of the world
  /// group, utils/groups.py _get_data_parallel_group): stages 0-2 run every collective on it, stage 3 its gradient
  /// reduction and gradient-norm all-reduce before DeepSpeed 0.19.3 and its overflow-flag all-reduce in every
  /// release (stage3.py has_overflow, l.2684 @v0.19.3) (scenario::ProcessGroups).
  [[nodiscard]] std::uint16_t dp_group() const { return dp_group_; }
  /// zero.Init's group (param.ds_process_group), which stage 3 gathers the parameters on, and from DeepSpeed 0.19.3
  /// reduces their gradients and all-reduces the gradient norm on (stage3.py l.2207/2236, l.1785/1798 @v0.19.3): the world group, a communicator apart from dp_group(), or dp_group() itself with
  /// training.process_groups: mpu (scenario::ProcessGroups). Added to the program on first use.
  [[nodiscard]] std::uint16_t param_group();
  /// Adds a side stream ("comm", "gather", "reduce"); end_step joins it into compute. `cuda` = false for a stream
  /// that stands for work outside CUDA (the NVMe swapper's async I/O, a COPY stream in the program), which
  /// device_sync does not wait for.
  program::StreamId add_stream(const std::string& name, program::StreamKind kind, bool cuda = true);

  /// Parameters in forward order (all layers).
  [[nodiscard]] const std::vector<ParamRef>& params() const { return params_; }
  /// Indices into params() of layer `l`'s tensors.
  [[nodiscard]] const std::vector<std::size_t>& layer_params(std::size_t l) const { return layer_params_.at(l); }
  /// Ψ: sum of numel over all tensors.
  [[nodiscard]] Elements total_params() const { return total_; }
  /// Sum of numel over trainable tensors (what the optimizer partitions).
  [[nodiscard]] Elements trainable_params() const { return trainable_; }
  /// Layer `l`'s submodules in forward order (tensors grouped by module path, first appearance order).
  [[nodiscard]] const std::vector<Submodule>& submodules(std::size_t l) const { return submodules_.at(l); }
  /// Index in submodules(l) of the submodule named `module`; 0 (the first, whose backward part is the layer's last)
  /// when the layer has none of that name (an empty name included).
  [[nodiscard]] std::size_t submodule_index(std::size_t l, const std::string& module) const;
  /// Modules of layer `l` whose DeepSpeed hooks run: the submodules plus their container modules inside the layer
  /// (every distinct proper prefix of a submodule path below the layer's own path, and the layer's module itself), e.g.
  /// GPT-2 block: h.3, h.3.ln_1, h.3.attn, h.3.attn.c_attn, h.3.attn.c_proj, h.3.ln_2, h.3.mlp, h.3.mlp.c_fc,
  /// h.3.mlp.c_proj = 9. Parameter-free leaves (dropout, activation) are not counted: the workload does not name them.
  [[nodiscard]] int module_count(std::size_t l) const { return module_count_.at(l); }

  // ---- Host thread -----------------------------------------------------------------------------------------------
  /// The host dispatches `passes` times the eager ops of layer `l`'s forward (a backward is 2 passes, 3 when the
  /// layer recomputes: autograd's ~2 ops per forward op; op_launch each; counted in generator_common.cpp
  /// eager_launches), which launch as many times its kernels on the compute stream; the compute stream then waits
  /// for the host (host_issue). With a bounded launch queue (in().host.launch_queue > 0) the host first blocks until
  /// the compute stream has finished enough earlier layer work (layer_done marks) that at most launch_queue of the
  /// kernels issued so far are pending; a layer with more kernels than the queue holds waits for all earlier work.
  /// No-op without a host model.
  /// `from`, `to` (0 <= from <= to <= 1): issue only that part of the layer's ops and kernels (a submodule's part,
  /// PassHooks::before_submodule); the parts of a layer add up to the whole (kernels rounded at the cumulative share).
  void host_launch(program::Phase p, const std::string& label, std::size_t l, int passes, double from = 0,
                   double to = 1);
  /// Marks the end of the layer work issued so far on the compute stream (the kernels host_launch counted): an event
  /// the host can block on when the launch queue is full.
  void layer_done();
  // The Python thread that issues a rank's GPU work is a "host" stream (StreamKind::CPU) when in().host is enabled.
  // Its CpuCompute ops are host time (PyTorch eager per-op overhead x ops of the layer pass, DeepSpeed hooks); the
  // GPU compute stream waits for the host's event before each layer's kernels (host_issue), so the host runs ahead
  // of the GPU and its cost is hidden when the GPU is the bottleneck, exposed when the host is. The host blocks only
  // at DeepSpeed's synchronisation points (host_sync / host_wait): stage-3 fetch back-pressure, stage-3 reduce
  // back-pressure and epilogue stream synchronize, the fp16 overflow check's .item(). Without a host model every
  // host_* call is a no-op, except host_wait which falls back to the compute stream waiting (the GPU-only program).

  /// True when in().host has a cost > 0 (a "host" stream exists).
  [[nodiscard]] bool host_enabled() const { return host_.has_value(); }
  /// The stream that issues work at this point: the host stream, else compute.
  [[nodiscard]] program::StreamId issuer() const { return host_ ? *host_ : compute_; }
  /// Host time `t` on the host stream (no-op without host model or for t <= 0).
  void host_work(program::Phase p, const std::string& label, Seconds t);
  /// The host issues the next ops of GPU stream `s`: `s` waits until the host reaches this point.
  void host_issue(program::StreamId s);
  /// The host blocks until everything queued so far on `s` completed (cudaStreamSynchronize, `.item()`).
  void host_sync(program::StreamId s);
  /// A host read of a value computed on `s` (`.item()`, `float()`, `.cpu()`): the host blocks until `s` is done
  /// (host_sync), then issues what follows on `s` (host_issue).
  void host_read(program::StreamId s) {
    host_sync(s);
    host_issue(s);
  }
  /// The host blocks on event `e` (cudaEventSynchronize); without a host model the compute stream waits for `e`.
  void host_wait(program::EventId e);
  /// Host time of one optimizer step's fp16 overflow check: with fp16 (dynamic loss scaling) the step reads the
  /// overflow flag with `.item()` (stage_1_and_2.py has_overflow, stage3.py has_overflow, engine.py
  /// check_grad_overflow = True for fp16; off by default for bf16): the host waits for the compute stream, then
  /// issues the step's kernels. No-op with bf16 or without a host model.
  void step_sync();
  /// get_accelerator().synchronize() (torch.cuda.synchronize): the host blocks until every GPU stream of the rank
  /// (compute, comm and copy streams; not the NVMe I/O stream, which is no CUDA stream) has finished what was queued
  /// on it, then issues the compute stream's next ops.
  /// No-op without a host model (the GPU-only program has no host to block).
  void device_sync();
  /// Where a micro-step begins: engine.forward calls DeepSpeed's ThroughputTimer.start() (deepspeed/utils/timer.py,
  /// engine.py l.2764), a device_sync() from optimizer step 2 on (start_step=2; as DeepSpeed numbers steps, steps 0
  /// and 1 run without it, so the host may run ahead across their boundaries, and max_memory_allocated, a maximum
  /// over the whole run, includes what that allows). No-op with zero.throughput_timer_sync false (ds_config
  /// timers.throughput) or without a host model.
  void begin_micro_step(int step);
  /// Where a micro-step ends, after its last GPU work (the optimizer step at the GA boundary): engine.step() calls
  /// ThroughputTimer.stop() (engine.py l.3475), a device_sync() from step 2 on (only after a start() that synced),
  /// then the training loop reads the loss on the host (training.loss_sync: HF Trainer's logging_nan_inf_filter,
  /// default true, evaluates `torch.isnan(loss) or torch.isinf(loss)` in Python after every training_step,
  /// transformers trainer.py; a per-step loss.item() does the same): the host waits for the compute stream, from
  /// step 0. No-op without a host model.
  void end_micro_step(int step);

  /// Bytes of `n` elements of the model's dtype: lp (fp16/bf16), or fp32 with training.precision fp32.
  [[nodiscard]] Bytes lp(Elements count) const { return bytes_of(count, in_.workload.bytes_per_lp); }
  /// Bytes of `count` elements in the gradient-accumulation dtype (zero.grad_accum_dtype; the model's lp dtype when
  /// unset).
  [[nodiscard]] Bytes accum(Elements count) const {
    return bytes_of(count, cfg().grad_accum_element_bytes(in_.workload.bytes_per_lp));
  }
  /// Bytes of `n` fp32 elements.
  [[nodiscard]] static Bytes fp32(Elements count) { return bytes_of(count, 4.0); }
  /// Bytes of `count` elements in the gradient reductions' dtype (zero.communication_data_type; the model's lp dtype
  /// when unset).
  [[nodiscard]] Bytes comm(Elements count) const {
    return bytes_of(count, cfg().comm_element_bytes(in_.workload.bytes_per_lp));
  }
  /// True when zero.communication_data_type differs from the model's dtype: DeepSpeed `.to()`s the gradients into a
  /// new tensor of that dtype for their reduction (stage_1_and_2.py / engine.py allreduce_bucket).
  [[nodiscard]] bool comm_cast() const { return cfg().comm_differs(in_.workload.training.precision); }
  /// When comm_cast(): the `.to(communication_data_type)` copy of `count` lp gradient elements that the reduction
  /// runs on (a new FLATTEN_TEMP tensor of comm(count) bytes on stream `s`) and its cast kernel; nullopt otherwise.
  /// DeepSpeed allreduce_bucket (engine.py for stage 0; stage_1_and_2.py l.1850-1851, and
  /// gradient_reduction_w_predivide l.1267-1268, for stages 1 and 2).
  std::optional<program::BufferId> cast_for_comm(program::StreamId s, Elements count, const std::string& label);
  /// Undoes cast_for_comm: `tensor.copy_()` of the reduced copy back into the lp tensor, then the copy is dropped
  /// (before allreduce_bucket's per-grad copy back). No-op for nullopt.
  void uncast_from_comm(program::StreamId s, const std::optional<program::BufferId>& cast, Elements count,
                        const std::string& label);

  /// A copy of `bytes` between the GPU and host memory (`dir` H2D or D2H) on stream `s`. From or to pageable host
  /// memory (`pageable`) the driver stages it (program::Copy::pageable) and cudaMemcpyAsync returns only when the
  /// copy is done (CUDA Runtime API, "API synchronization behavior"); a `blocking` copy (torch copy_ without
  /// non_blocking) also waits for it. In both cases the host thread blocks until `s` has finished the copy
  /// (host_sync) and issues what follows on `s` (host_issue).
  void host_copy(program::StreamId s, program::Phase p, const std::string& label, program::CopyDir dir, Bytes bytes,
                 bool pageable, bool blocking = false);

  /// A memory-bound kernel: Compute{0 FLOP, `traffic` bytes read + written}.
  void mem_kernel(program::StreamId s, program::Phase p, const std::string& label, Bytes traffic);

  /// Fused GPU Adam on `elements` fp32 master elements plus the fp32 -> lp copy-back (FusedAdam,
  /// deepspeed/ops/adam/fused_adam.py). Traffic per element: read p32, g32, m, v (16 B) + write p32, m, v (12 B)
  /// = 28 B, then the copy-back reads p32 (4 B) and writes the lp param (2 B; 4 B in fp32). `copy_back` false: the
  /// optimizer updates the model's own params (fp32 stage 0, whose basic optimizer runs unwrapped; fp32 stage 3,
  /// whose fp32 partition aliases the params), no copy.
  void gpu_adam(program::StreamId s, const std::string& label, Elements elements, bool copy_back = true);

  /// STEP_BEGIN mark on compute.
  void begin_step(int step);
  /// Joins every other stream into compute (the step's work is complete), then STEP_END on compute.
  void end_step(int step);

  /// The saved-activation buffers of one forward pass, per layer: on the GPU one buffer per saved tensor; with
  /// training.cpu_checkpointing a checkpointed block's instead in host memory (`host`; its `gpu` list is empty).
  struct Activations {
    std::vector<std::vector<program::BufferId>> gpu;
    std::vector<std::vector<program::BufferId>> host;
  };

  /// Emits one forward pass (one micro-step): per layer before_layer, Alloc ACTIVATIONS: one buffer per
  /// Layer::activation_tensors entry (one block of saved_activations when the list is empty); fwd_working_bytes as
  /// WORKING around the layer's kernels: the host's eager launches (host_launch; the compute stream waits for the
  /// host), then Compute{fwd_flops, fwd_bytes}; with PassHooks::before_submodule, per submodule before_submodule,
  /// its share of the launches and of the Compute, after_submodule; then after_layer. With
  /// training.cpu_checkpointing a block that recomputes copies its checkpoint (saved_activations) to a pageable
  /// host buffer before its kernels (host_copy, the host waits) and frees the GPU tensors after them. Returns the
  /// activation buffers.
  Activations forward(const PassHooks& hooks);

  /// Emits one backward pass in reverse layer order: before_layer; the host's launches (2 forward passes' ops, 3
  /// when the layer recomputes; compute waits for the host); Alloc WORKING recompute_activations (one buffer per
  /// Layer::recompute_tensors entry) and
  /// Compute{recompute_flops, recompute_bytes} when the workload checkpoints the layer (Layer::bwd_* exclude
  /// recomputation); bwd_working_bytes as WORKING around Compute{bwd_flops, bwd_bytes}; Free the recompute buffer
  /// and the layer's saved activations; with ZeRO stage >= 1 one host gradient hook (param_hook) per trainable
  /// tensor; on_grad for each trainable tensor in reverse order; after_layer. With PassHooks::before_submodule the
  /// backward kernels run per submodule (see PassHooks), and the recompute too when before_recompute is set (stage
  /// 3; stages 0-2 re-run the forward in one piece, launched and marked on its own), each backward part holding
  /// bwd_working_bytes around its own Compute and followed by its submodule's gradient hooks and on_grad calls;
  /// before those, the saved and recomputed tensors that the submodule frees (Layer::activation_modules /
  /// recompute_modules; last saved first), and after the last part every tensor left. A checkpoint in
  /// host memory (cpu_checkpointing) is copied back into new GPU buffers before the recompute (host_copy, the host
  /// waits) and its host buffer freed.
  void backward(const Activations& activations, const PassHooks& hooks);

  /// Finishes the program.
  [[nodiscard]] program::StepProgram build() { return b_.build(in_.steps); }

 private:
  void build_submodules();
  /// True when `hooks` split layer `l`'s kernels per submodule (PassHooks::before_submodule and a submodule with
  /// parameters).
  [[nodiscard]] bool split_layer(const PassHooks& hooks, std::size_t l) const;
  /// Layer `l`'s kernels in one part per submodule (forward order, or reverse): before_submodule, the part's
  /// launches (host_launch `passes`, from..to), `before_part(i)` if set, `emit(share, label)` on compute,
  /// layer_done, `after_part(i)` if set, after_submodule. `what` prefixes the labels ("fwd", "recompute", "bwd").
  void layer_kernels(const PassHooks& hooks, std::size_t l, program::Phase p, const std::string& what, int passes,
                     bool recompute, bool reverse, const std::function<void(double, const std::string&)>& emit,
                     const std::function<void(std::size_t)>& after_part,
                     const std::function<void(std::size_t)>& before_part = {});
  /// The gradient hooks' host time for the trainable tensors `idx` of layer `layer`, then on_grad for each, in
  /// reverse order.
  void layer_grads(const PassHooks& hooks, std::size_t layer, const std::vector<std::size_t>& idx);

  const GeneratorInput& in_;
  program::ProgramBuilder b_;
  program::StreamId compute_ = 0;
  std::vector<program::StreamId> streams_;
  std::vector<program::StreamKind> stream_kinds_; // kind of each of streams_
  std::vector<bool> stream_cuda_; // each of streams_ is a CUDA stream (add_stream's `cuda`)
  std::uint16_t dp_group_ = 0;
  std::optional<std::uint16_t> param_group_; // param_group(), once added
  std::vector<ParamRef> params_;
  std::vector<std::vector<std::size_t>> layer_params_;
  /// Per layer: gemm_utilization of its forward, recompute and backward GEMMs.
  std::vector<workload::LayerGemmUtilization> gemm_util_;
  /// Time per executed attention FLOP of training.flash_attention_kernel against FlashAttention-2.
  workload::AttentionKernelTime attention_time_;
  std::vector<std::vector<Submodule>> submodules_;
  std::vector<int> module_count_;
  /// Per layer, submodule_index() of each Layer::activation_modules / recompute_modules entry (the backward part
  /// that frees the tensor), resolved once in build_submodules; empty when the layer names no modules.
  std::vector<std::vector<std::size_t>> activation_part_;
  std::vector<std::vector<std::size_t>> recompute_part_;
  std::optional<program::StreamId> host_;
  /// Kernels of layer work the host has issued to compute (host_launch), and the layer_done marks not yet waited
  /// past: (kernels issued when compute reaches the mark, the mark's event).
  std::int64_t kernels_issued_ = 0;
  std::deque<std::pair<std::int64_t, program::EventId>> launch_marks_;
  Elements total_ = 0;
  Elements trainable_ = 0;
};

/// Gradients accumulated in `param.grad` across micro-steps (stage 0 FP16_Optimizer and stage 1 hooks that do not
/// reduce; zero_semantics.md §3.3, §3.4 "Stage 1 gradient lifetime"). Micro-step 0 allocates each tensor's lp
/// grad (LP_GRADS); later micro-steps produce a fresh grad (WORKING) that AccumulateGrad adds in place
/// (read 2 + write 1 lp tensors) and then frees.
class AccumulatedGrads {
 public:
  explicit AccumulatedGrads(GeneratorContext& ctx);
  /// Called from PassHooks::on_grad.
  void on_grad(std::size_t param);
  /// The buffer holding param's accumulated grad, or nullptr if none is live.
  [[nodiscard]] const program::BufferId* buffer(std::size_t param) const;
  /// Stops tracking param's grad without freeing it (ownership moves to the caller, e.g. the IPG bucket).
  std::optional<program::BufferId> release(std::size_t param);
  /// Frees param's grad on stream `s` (no-op if none is live).
  void free(std::size_t param, program::StreamId s, program::Phase p);
  /// Frees every live grad on stream `s`.
  void free_all(program::StreamId s, program::Phase p);

 private:
  GeneratorContext& ctx_;
  std::vector<program::BufferId> buf_;
  std::vector<bool> live_;
};

/// The micro-steps of optimizer step `step` when autograd accumulates the gradients in param.grad (stage 0, and
/// stage 1's BF16_Optimizer path): each runs forward and backward with `grads` taking every gradient, then
/// `after_backward()` if given, then, off the accumulation boundary, end_micro_step (engine.step() off the
/// boundary, then the loop reads the loss). The boundary's end_micro_step, after the optimizer step, is the caller's.
void emit_accumulating_micro_steps(GeneratorContext& ctx, int step, AccumulatedGrads& grads,
                                   const std::function<void()>& after_backward = {});

/// One GPU Adam(W) step on `elements` fp32 master elements, as training.optimizer_impl runs it, on stream `s`
/// (phase OPTIMIZER). FUSED: GeneratorContext::gpu_adam only (FusedAdam allocates nothing). TORCH_FOREACH (PyTorch
/// >= 2.0, torch/optim/adamw.py _multi_tensor_adamw): exp_avg_sq_sqrt = _foreach_sqrt(v), then in-place div_/add_/
/// addcdiv_: one 4 B/element FLATTEN_TEMP for the update. TORCH_SINGLE_TENSOR (PyTorch <= 1.13 default,
/// _single_tensor_adamw): denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps): sqrt and quotient live at
/// once, 8 B/element, then 4 B/element (denom) through addcdiv_. The torch paths also run one kernel per op instead
/// of one fused kernel (extra HBM traffic, derived per op in the .cpp).
/// `copy_back` as GeneratorContext::gpu_adam.
void emit_gpu_adam_step(GeneratorContext& ctx, program::StreamId s, const std::string& label, Elements elements,
                        bool copy_back = true);

/// How a gradient reduction pass (norm or overflow sum) reads each tensor, per element.
enum class NormCast {
  LP_TO_DOUBLE, ///< `g.double()`: read lp, write and read a new 8 B tensor (ZeRO 1-3 get_grad_norm_direct)
  LP_TO_FLOAT, ///< `g.float()` of an fp16/bf16 tensor: read lp, write and read a new 4 B tensor
  FP32_AS_IS, ///< `g.float()` of an fp32 tensor returns the tensor itself: read 4 B, no copy
};

/// The L2 gradient norm DeepSpeedZeroOptimizer (stage 1/2, stage_1_and_2.py get_grad_norm_direct) and
/// DeepSpeedZeroOptimizer_Stage3 (stage3.py get_grad_norm_direct) compute on the GPU at every step() with the grads
/// on the GPU, whatever gradient_clipping says (step() needs it for the clip coefficient and _global_grad_norm):
/// per gradient tensor of this rank's partition (`pieces`, elements), `g.double()` (read lp, write a new 8 B/element
/// tensor, a WORKING transient of the piece) and its norm (read 8 B/element). Stream `s`, phase OPTIMIZER, labels
/// "<what>: <cast>() copy", "<what>: cast to <cast>", "<what>: <reduce>". Other `cast`s price the same pattern for
/// FP16_Optimizer (stage 0, fused_optimizer.py step): CheckOverflow.has_overflow_serial sums `g.float()` per lp grad
/// (LP_TO_FLOAT, runtime/utils.py _has_inf_or_nan) and get_flattened_grad_norm takes `.float().norm()` of the flat
/// fp32 grad (FP32_AS_IS). The callers add the scalar all-reduce over the data-parallel group
/// (emit_scalar_allreduce) and the release's host reads. Not modelled: the stack of the per-tensor results (a few
/// scalar kernels) and the host reads per tensor (`.item()`, `float()`) of CheckOverflow / get_flattened_grad_norm.
void emit_grad_norm(GeneratorContext& ctx, program::StreamId s, const std::vector<Elements>& pieces,
                    NormCast cast = NormCast::LP_TO_DOUBLE, const std::string& what = "grad norm",
                    const std::string& reduce = "vector_norm");

/// One scalar all-reduce of DeepSpeed's optimizer step over process group `group` (GeneratorContext::dp_group() or
/// param_group()), on stream `s` (phase OPTIMIZER, label `label`): the overflow flag (1 B, ReduceOp.MAX; stage_1_and_2.py / stage3.py has_overflow) or the squared
/// gradient norm (4 B float in stages 1/2 and stage 3 with offload, 8 B double in stage 3: get_grad_norm_direct /
/// complete_grad_norm_calculation_for_cpu_offload's dist.all_reduce of the total). The collective runner prices it
/// as any all-reduce of `bytes`, so what it costs is the latency of an all-reduce over N_d ranks. None at N_d == 1.
void emit_scalar_allreduce(GeneratorContext& ctx, program::StreamId s, const std::string& label, Bytes bytes,
                           std::uint16_t group);

/// The GPU cost of DeepSpeed's _has_inf_or_nan (runtime/utils.py) over `n` gradient elements of the model's dtype.
/// From v0.13.3 (`masks`, PR #5115): x.float(), isnan, isinf, logical_or, .float(), max on the device: lp + 4 (the
/// fp32 copy) + 4+1 + 4+1 + 3 + 1+4 + 4 = lp + 26 B per element moved, 4+1+1+1+4 = 11 B per element of temporaries.
/// Before: `float(x.float().sum())`: lp + 4 + 4 B moved, the 4 B copy. In fp32 (training.precision) x.float() is x
/// itself (no copy, no kernel): 22 B moved and 7 B of temporaries, or the sum's 4 B read and none.
struct InfNanCheckCost {
  Bytes traffic;
  Bytes temporaries;
};
[[nodiscard]] InfNanCheckCost inf_nan_check_cost(const GeneratorContext& ctx, Elements n, bool masks);

/// True when the simulated DeepSpeed release creates Adam's exp_avg / exp_avg_sq of the ZeRO 1-3 optimizers (and of
/// BF16_Optimizer) at initialisation: before v0.13.2 initialize_optimizer_states runs one optimizer step with zero
/// fp32 gradients (stage_1_and_2.py, all param groups at once; stage3.py, per sub-group; bf16_optimizer.py), so the
/// state exists before step 0. PR #5104 (commit 18179807f, v0.13.2) removed that step: the first real step creates
/// it (zero_semantics.md §3.4, §7 item 17). FP16_Optimizer (stage 0) keeps its init step in every release.
[[nodiscard]] inline bool adam_state_at_init(const scenario::ZeroConfig& cfg) { return cfg.deepspeed_before(0, 13, 2); }

/// initialize_optimizer_states' optimizer step on `elements` zero-gradient fp32 elements (before v0.13.2,
/// adam_state_at_init), as training.optimizer_impl runs it (emit_gpu_adam_step: the same code path, with the same
/// temporaries -- torch single-tensor AdamW's sqrt and denom, foreach's sqrt -- which the caching allocator then
/// keeps): the FusedAdam pass, read p32, g32, m, v + write p32, m, v = 28 B per element, plus the torch ops' extra
/// traffic; no copy into the lp params (the step runs on the fp32 partition only). The caller allocates m and v.
/// Stream `s`, phase INIT, label `label`.
void emit_gpu_adam_init_step(GeneratorContext& ctx, program::StreamId s, const std::string& label, Elements elements);

/// How a ZeRO optimizer makes its fp32 master partition from the lp partition on the GPU at initialisation.
enum class MasterCast : std::uint8_t {
  /// `lp.clone().float()`: an lp-dtype clone, live while the fp32 copy is made from it, then dropped
  /// (stage_1_and_2.py __init__, l.346-347 @v0.9.0, `.detach().clone().to(dtype)` from v0.18.3, the same order;
  /// stage3.py _create_fp32_partitions l.725-726 @v0.9.0 until v0.18.2; bf16_optimizer.py l.117 @v0.9.0).
  CLONE_THEN_CAST,
  /// `lp.to(device, dtype=fp32)` then `.clone()`: an fp32 cast, live while its clone (the master) is made, then
  /// dropped (stage3.py _create_fp32_partitions from v0.18.3, PR #7700).
  CAST_THEN_CLONE,
};

/// The fp32 master copy of `elements` lp elements made on the GPU at initialisation (stream `s`, phase INIT,
/// label `label`; the master is persistent, tag FP32_MASTER), with the transient its expression leaves: `how`
/// says which. In lp (fp16/bf16) the transient is an lp clone (CLONE_THEN_CAST, 2 B per element) or an fp32 cast
/// (CAST_THEN_CLONE, 4 B per element), tag FLATTEN_TEMP, freed once the master exists, so PyTorch's caching
/// allocator keeps its block (reserved, not allocated). In fp32 (training.precision) `.float()` / `.to(fp32)` of
/// an fp32 tensor returns the tensor itself: the clone is the master, no transient. Traffic (one memory-bound
/// kernel): a clone reads and writes its dtype, a cast reads lp and writes 4 B: lp x 3 + 4 B per element
/// (CLONE_THEN_CAST), lp + 4 + 8 B (CAST_THEN_CLONE), 8 B in fp32. Returns the master's buffer.
program::BufferId emit_fp32_master_from_lp(GeneratorContext& ctx, program::StreamId s, const std::string& label,
                                           Elements elements, MasterCast how);

/// DeepSpeed's gradient averaging over the data-parallel group: one in-place elementwise pass (`div_(world_size)`, or
/// postscale_gradients' `mul_(gradient_predivide_factor / world_size)`) over a gradient tensor of `bytes` in its own
/// dtype, read + write (2 x `bytes` of traffic, priced like any memory-bound kernel). Stream `s`, phase GRAD_REDUCE,
/// label "average <label>". The callers say where each release runs it (before or after the collective, on which
/// tensor, at which N_d): engine.py allreduce_bucket, stage_1_and_2.py average_tensor / allreduce_bucket /
/// gradient_reduction_w_predivide, comm/coalesced_collectives.py reduce_scatter_coalesced, stage3.py
/// __avg_scatter_contiguous_grads.
void emit_grad_average(GeneratorContext& ctx, program::StreamId s, Bytes bytes, const std::string& label);

/// unscale_and_clip_grads (stage_1_and_2.py, stage3.py, fp16/fused_optimizer.py): `grad.mul_(1. / combined_scale)`
/// over the fp32 gradient partition or flat group (`elements`), run at every step whatever the scale and the clip
/// (read 4 + write 4 B/element). Stream `s`, phase OPTIMIZER, label "unscale and clip fp32 grads<suffix>".
void emit_unscale_and_clip(GeneratorContext& ctx, program::StreamId s, Elements elements, const std::string& suffix);

} // namespace zerosim::zero
