#include "sim/zero/generator_common.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>

namespace zerosim::zero {

using program::BufferId;
using program::MemTag;
using program::Phase;
using program::StreamId;

GeneratorContext::GeneratorContext(const GeneratorInput& in) : in_(in) {
  if (in.dp_degree < 1)
    throw Error("zero: dp_degree must be >= 1, got " + std::to_string(in.dp_degree));
  if (in.steps < 1)
    throw Error("zero: simulation.steps must be >= 1, got " + std::to_string(in.steps));
  if (in.workload.training.grad_accum < 1)
    throw Error("zero: training.grad_accum must be >= 1, got " + std::to_string(in.workload.training.grad_accum));
  if (in.workload.layers.empty())
    throw Error("zero: the workload has no layers");
  const double f = in.workload.training.trainable_fraction;
  if (!(f > 0 && f <= 1))
    throw Error("training.trainable_fraction: expected a fraction in (0, 1], got " + std::to_string(f));
  const std::int64_t skipped = in.workload.training.skipped_steps;
  if (skipped < 0)
    throw Error("training.skipped_steps: expected a count >= 0, got " + std::to_string(skipped));
  if (skipped > 0 && in.workload.training.precision != scenario::Precision::FP16)
    throw Error("training.skipped_steps: overflow-skipped steps need fp16 (dynamic loss scaling)");
  compute_ = b_.add_stream("compute", program::StreamKind::COMPUTE);
  dp_group_ = b_.add_group("dp");
  gemm_util_ = workload::gemm_utilizations(in.workload, in.gemm); // per layer, on this GPU
  attention_time_ = workload::attention_kernel_time(in.workload.training.flash_attention_kernel);
  layer_params_.resize(in.workload.layers.size());
  const auto add = [&](std::size_t l, std::size_t i, std::string name, Elements numel, bool trainable) {
    ParamRef r{l, i, std::move(name), numel, trainable, trainable_};
    layer_params_[l].push_back(params_.size());
    params_.push_back(std::move(r));
    total_ += numel;
    if (trainable)
      trainable_ += numel;
  };
  for (std::size_t l = 0; l < in.workload.layers.size(); ++l) {
    const auto& layer = in.workload.layers[l];
    for (std::size_t i = 0; i < layer.params.size(); ++i) {
      const auto& t = layer.params[i];
      if (f >= 1 || !t.trainable) {
        add(l, i, t.name, t.numel, t.trainable);
        continue;
      }
      // trainable_fraction < 1 (LoRA/PEFT): the tensor's frozen base and a trainable adapter of round(f x numel)
      // elements right after it (its own tensor, like lora_A/lora_B), so Ψ is unchanged and Σ adapters = f·Ψ.
      const Elements adapter = workload::adapter_numel(t.numel, f);
      if (t.numel - adapter > 0)
        add(l, i, t.name, t.numel - adapter, false);
      if (adapter > 0)
        add(l, i, t.name + ".adapter", adapter, true);
    }
  }
  if (total_ <= 0)
    throw Error("zero: the workload has no parameters");
  build_submodules();
  if (in.host.enabled())
    host_ = add_stream("host", program::StreamKind::HOST);
}

namespace {

/// The module path of a tensor: its name without the last component; a LoRA adapter belongs to its base tensor.
std::string module_path(const std::string& name) {
  std::string n = name;
  const std::string adapter = ".adapter";
  if (n.size() > adapter.size() && n.compare(n.size() - adapter.size(), adapter.size(), adapter) == 0)
    n.resize(n.size() - adapter.size());
  const auto dot = n.rfind('.');
  return dot == std::string::npos ? n : n.substr(0, dot);
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    parts.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos)
      break;
    start = dot + 1;
  }
  return parts;
}

} // namespace

void GeneratorContext::build_submodules() {
  submodules_.assign(layer_params_.size(), {});
  module_count_.assign(layer_params_.size(), 0);
  for (std::size_t l = 0; l < layer_params_.size(); ++l) {
    auto& subs = submodules_[l];
    for (std::size_t p : layer_params_[l]) {
      const std::string path = module_path(params_[p].name);
      auto it = std::find_if(subs.begin(), subs.end(), [&](const Submodule& m) { return m.name == path; });
      if (it == subs.end())
        subs.push_back(Submodule{path, {p}});
      else
        it->params.push_back(p);
    }
    // Hooked modules: every prefix of a submodule path that is at least as long as the layer's own path (the
    // longest common prefix of its submodule paths); the root counts only when it names a module.
    std::vector<std::vector<std::string>> paths;
    for (const auto& m : subs)
      paths.push_back(split_path(m.name));
    std::size_t root = paths.empty() ? 0 : paths.front().size();
    for (const auto& pp : paths) {
      std::size_t k = 0;
      while (k < root && k < pp.size() && pp[k] == paths.front()[k])
        ++k;
      root = k;
    }
    std::vector<std::string> modules; // sorted, unique
    for (const auto& pp : paths) {
      std::string prefix;
      for (std::size_t k = 0; k < pp.size(); ++k) {
        prefix += (k ? "." : "") + pp[k];
        if (k + 1 < std::max<std::size_t>(root, 1))
          continue;
        auto pos = std::lower_bound(modules.begin(), modules.end(), prefix);
        if (pos == modules.end() || *pos != prefix)
          modules.insert(pos, prefix);
      }
    }
    module_count_[l] = static_cast<int>(modules.size());
    Elements layer_numel = 0;
    for (std::size_t p : layer_params_[l])
      layer_numel += params_[p].numel;
    for (auto& m : subs) {
      Elements numel = 0;
      for (std::size_t p : m.params)
        numel += params_[p].numel;
      m.share = layer_numel > 0 ? static_cast<double>(numel) / static_cast<double>(layer_numel) : 0.0;
    }
  }
  // The backward part that frees each saved / recomputed tensor (GeneratorContext::backward), once per layer.
  activation_part_.assign(layer_params_.size(), {});
  recompute_part_.assign(layer_params_.size(), {});
  for (std::size_t l = 0; l < layer_params_.size(); ++l) {
    const auto& layer = in_.workload.layers.at(l);
    for (const std::string& m : layer.activation_modules)
      activation_part_[l].push_back(submodule_index(l, m));
    for (const std::string& m : layer.recompute_modules)
      recompute_part_[l].push_back(submodule_index(l, m));
  }
}

namespace {

/// One eager forward of a layer: the ATen ops the host dispatches and the GPU kernels among them.
struct EagerLaunches {
  int ops = 0;
  int kernels = 0;
};

EagerLaunches eager_block_launches(const workload::Workload& w, workload::LayerKind kind);

EagerLaunches eager_launches(const workload::Workload& w, std::size_t l) {
  // ATen ops dispatched by one eager forward of the Hugging Face module (each costs in().host.op_launch of host time,
  // views included: they go through the dispatcher and autograd too), counted from transformers' modeling_gpt2.py /
  // modeling_llama.py / modeling_opt.py forward code; kernels: those that launch one (views, permutes, transposes,
  // splits and slices do not).
  //  - GPT-2 embeddings: wte lookup, wpe lookup, add, dropout = 4 ops, 4 kernels. LLaMA: embed_tokens = 1, 1.
  //  - GPT-2 block (GPT2Block): ln_1 1; c_attn (Conv1D: view, addmm, view) 3; split 1; 3 x split_heads (view,
  //    permute) 6; attention: SDPA 1 (flash_attention) or eager matmul, div, causal-mask slice, where, softmax,
  //    dropout, matmul 7; merge_heads (permute, contiguous, view) 3; c_proj 3; resid dropout 1; residual add 1; ln_2 1;
  //    c_fc 3; gelu_new (pow, mul, add, mul, tanh, add, mul, mul) 8; c_proj 3; dropout 1; add 1 = 37 ops (43 eager).
  //    Kernels: ln_1, c_attn addmm, attention (1; eager 6), merge_heads contiguous, c_proj addmm, resid dropout, add,
  //    ln_2, c_fc addmm, gelu_new 8, c_proj addmm, dropout, add = 20 (25 eager).
  //  - LLaMA block (LlamaDecoderLayer): 2 x RMSNorm (to, pow, mean, add, rsqrt, mul, to, mul) 16; q/k/v linear 3;
  //    3 x (view, transpose) 6; rotary (cos, sin, 2 x unsqueeze, 2 x (mul, rotate_half = 2 slices + neg + cat, mul,
  //    add)) 18; SDPA 1 (eager: matmul, mul, add mask, softmax, dropout, matmul 6); transpose, reshape 2; o_proj 1;
  //    residual add 1; gate, up, silu, mul, down 5; residual add 1 = 54 ops (59 eager). Kernels: RMSNorms 16, q/k/v 3,
  //    rotary 2 x (mul, neg, cat, mul, add) 10, attention (1; eager 6), the reshape copy 1, o_proj, add, gate, up,
  //    silu, mul, down, add 8 = 39 (44 eager).
  //  - OPT block (OPTDecoderLayer): self_attn_layer_norm 1; q_proj 1, scaling mul 1, k_proj 1, v_proj 1;
  //    3 x _shape (view, transpose, contiguous) 9; q view 1; attention: SDPA 1 (eager: bmm, view, mask add, max,
  //    view, softmax, to, dropout, bmm 9); view, transpose, reshape 3; out_proj 1; dropout 1; add 1;
  //    final_layer_norm 1; fc1 1; relu 1; fc2 1; dropout 1; add 1 = 30 ops (38 eager). Kernels: the norm, q_proj,
  //    scaling, k_proj, v_proj, 3 contiguous copies, attention (1; eager: bmm, mask add, max, softmax, to, bmm 6), the
  //    output reshape copy, out_proj, dropout, add, final_layer_norm, fc1, relu, fc2, dropout, add = 19 (24 eager).
  //  - head: final norm (GPT-2 and OPT 1, LLaMA 8), lm_head 1, loss: 2 x (slice, contiguous, view) 6, float 1,
  //    cross_entropy (log_softmax, nll_loss) 2 = 11 ops (LLaMA 18); kernels: the norm, lm_head, 2 contiguous, float,
  //    log_softmax, nll_loss = 7 (LLaMA 14).
  //  - training.kernel_impl fused (one kernel per module, workload.cpp): each RMSNorm is 1 op and 1 kernel instead of
  //    8 and 8, the rotary embedding 1 op and kernel per q and k (cos, sin and the unsqueezes stay: 6 ops, 2
  //    kernels instead of 18 and 10); a one-kernel GELU (model.activation gelu, or gelu_new fused) is 1 and 1
  //    instead of 8 and 8. So a fused LLaMA block is 28 ops, 17 kernels (33, 22 eager), its head 11 and 7; a GPT-2
  //    block with one GELU kernel 30 and 13 (36, 18 eager).
  //  - LoRA (training.lora_rank), per targeted linear (peft/tuners/lora/layer.py Linear.forward, after the base
  //    layer's op counted above): lora_dropout (nn.Dropout 1 op and kernel when p > 0; nn.Identity none), lora_A 1,
  //    lora_B 1, the alpha / r scaling 1, the add onto the result 1: 4 ops and kernels, 5 with dropout.
  const auto& layer = w.layers.at(l);
  int adapters = 0;
  for (const auto& t : layer.params)
    adapters += t.name.find(".lora_A.") != std::string::npos ? 1 : 0;
  const int per_adapter = w.training.lora_dropout > 0 ? 5 : 4;
  const EagerLaunches base = eager_block_launches(w, layer.kind);
  return {base.ops + adapters * per_adapter, base.kernels + adapters * per_adapter};
}

/// eager_launches() of a layer of kind `kind` without LoRA adapters.
EagerLaunches eager_block_launches(const workload::Workload& w, workload::LayerKind kind) {
  const auto family = w.model.family;
  const bool gpt2 = scenario::learned_positions(family); // GPT-2 or OPT embeddings and head
  const bool flash = w.training.flash_attention;
  const bool hf = w.training.kernel_impl == scenario::KernelImpl::HF;
  const bool gelu_ops = hf && w.model.activation == scenario::Activation::GELU_NEW; // 8 ops, else 1
  const int gelu_saved = gelu_ops ? 0 : 7;
  switch (kind) {
  case workload::LayerKind::EMBEDDING:
    return gpt2 ? EagerLaunches{4, 4} : EagerLaunches{1, 1};
  case workload::LayerKind::BLOCK:
    if (family == scenario::ModelFamily::OPT)
      return flash ? EagerLaunches{30, 19} : EagerLaunches{38, 24};
    if (gpt2)
      return flash ? EagerLaunches{37 - gelu_saved, 20 - gelu_saved} : EagerLaunches{43 - gelu_saved, 25 - gelu_saved};
    if (!hf)
      return flash ? EagerLaunches{28, 17} : EagerLaunches{33, 22};
    return flash ? EagerLaunches{54, 39} : EagerLaunches{59, 44};
  case workload::LayerKind::HEAD:
    return gpt2 ? EagerLaunches{11, 7} : hf ? EagerLaunches{18, 14} : EagerLaunches{11, 7};
  }
  return {};
}

} // namespace

void GeneratorContext::host_launch(Phase p, const std::string& label, std::size_t l, int passes, double from,
                                   double to) {
  if (!host_)
    return;
  const EagerLaunches one = eager_launches(wl(), l);
  const double all_kernels = static_cast<double>(one.kernels * passes);
  const auto kernels = std::llround(all_kernels * to) - std::llround(all_kernels * from);
  host_work(p, label, in_.host.op_launch * (static_cast<double>(one.ops * passes) * (to - from)));
  const std::int64_t before = kernels_issued_;
  kernels_issued_ += kernels;
  if (in_.host.launch_queue > 0) {
    // cudaLaunchKernel returns once the queue has room: compute must have finished at least `done` kernels. Never
    // more than all earlier work, which this layer's own launches do not depend on (else a layer larger than the
    // queue would wait for itself).
    const std::int64_t done = std::min(kernels_issued_ - in_.host.launch_queue, before);
    while (!launch_marks_.empty() && launch_marks_.front().first < done)
      launch_marks_.pop_front();
    if (done > 0 && !launch_marks_.empty())
      b_.wait(*host_, launch_marks_.front().second);
  }
  host_issue(compute_);
}

void GeneratorContext::layer_done() {
  if (host_ && in_.host.launch_queue > 0)
    launch_marks_.emplace_back(kernels_issued_, b_.record(compute_));
}

void GeneratorContext::host_work(Phase p, const std::string& label, Seconds t) {
  if (host_ && t.value() > 0)
    b_.cpu(*host_, p, label, t);
}

void GeneratorContext::host_issue(StreamId s) {
  if (host_)
    b_.wait(s, b_.record(*host_));
}

void GeneratorContext::host_sync(StreamId s) {
  if (host_)
    b_.join(*host_, s);
}

void GeneratorContext::host_copy(StreamId s, Phase p, const std::string& label, program::CopyDir dir, Bytes bytes,
                                 bool pageable, bool blocking) {
  if (dir != program::CopyDir::H2D && dir != program::CopyDir::D2H)
    throw Error("host_copy: '" + label + "' is not an H2D or D2H copy");
  b_.copy(s, p, label, dir, bytes, pageable);
  if (pageable || blocking) {
    host_read(s);
  }
}

void GeneratorContext::host_wait(program::EventId e) { b_.wait(host_ ? *host_ : compute_, e); }

void GeneratorContext::step_sync() {
  if (!host_ || wl().training.precision != scenario::Precision::FP16)
    return;
  host_read(compute_);
}

void GeneratorContext::device_sync() {
  if (!host_)
    return;
  host_sync(compute_);
  for (std::size_t i = 0; i < streams_.size(); ++i)
    if (stream_cuda_[i] &&
        (stream_kinds_[i] == program::StreamKind::COMM || stream_kinds_[i] == program::StreamKind::COPY))
      host_sync(streams_[i]);
  host_issue(compute_);
}

void GeneratorContext::begin_micro_step(int step) {
  if (step >= scenario::ZeroConfig::kThroughputTimerStartStep && cfg().throughput_timer_sync)
    device_sync();
}

void GeneratorContext::end_micro_step(int step) {
  if (step >= scenario::ZeroConfig::kThroughputTimerStartStep && cfg().throughput_timer_sync)
    device_sync();
  if (wl().training.loss_sync) {
    host_read(compute_);
  }
}

std::uint16_t GeneratorContext::param_group() {
  if (!param_group_)
    param_group_ =
        in_.workload.training.process_groups == scenario::ProcessGroups::MPU ? dp_group_ : b_.add_group("world");
  return *param_group_;
}

StreamId GeneratorContext::add_stream(const std::string& name, program::StreamKind kind, bool cuda) {
  StreamId s = b_.add_stream(name, kind);
  streams_.push_back(s);
  stream_kinds_.push_back(kind);
  stream_cuda_.push_back(cuda);
  return s;
}

void GeneratorContext::mem_kernel(StreamId s, Phase p, const std::string& label, Bytes traffic) {
  b_.compute(s, p, label, Flops(0), traffic);
}

std::optional<BufferId> GeneratorContext::cast_for_comm(StreamId s, Elements count, const std::string& label) {
  if (!comm_cast())
    return std::nullopt;
  // A new tensor in the communication dtype (fp32: 2x the lp bytes): read lp, write the comm dtype.
  const BufferId cast = b_.alloc(s, Phase::GRAD_REDUCE, "cast " + label, MemTag::FLATTEN_TEMP, comm(count));
  mem_kernel(s, Phase::GRAD_REDUCE, "cast " + label, lp(count) + comm(count));
  return cast;
}

void GeneratorContext::uncast_from_comm(StreamId s, const std::optional<BufferId>& cast, Elements count,
                                        const std::string& label) {
  if (!cast)
    return;
  mem_kernel(s, Phase::GRAD_REDUCE, "copy back cast " + label, comm(count) + lp(count));
  b_.free(s, Phase::GRAD_REDUCE, *cast);
}

void GeneratorContext::gpu_adam(StreamId s, const std::string& label, Elements elements, bool copy_back) {
  // FusedAdam (multi-tensor apply): per element read p32 + g32 + m + v = 16 B, write p32 + m + v = 12 B.
  mem_kernel(s, Phase::OPTIMIZER, label, fp32(elements) * 7.0);
  // Copy of the updated fp32 master into the lp params: read 4 B, write lp.
  if (copy_back)
    mem_kernel(s, Phase::OPTIMIZER, label + " fp32->lp", fp32(elements) + lp(elements));
}

void GeneratorContext::begin_step(int step) { b_.mark(compute_, program::MarkKind::STEP_BEGIN, step); }

void GeneratorContext::end_step(int step) {
  // "finally join every stream into compute": STEP_END closes the step only when all its work is done.
  for (StreamId s : streams_)
    b_.join(compute_, s);
  b_.mark(compute_, program::MarkKind::STEP_END, step);
}

namespace {
/// Allocates `tensors` one buffer each (labels "<label>", "<label> #1", ...), or `total` as one buffer when the
/// list is empty (hand-built workloads).
std::vector<BufferId> alloc_tensors(program::ProgramBuilder& b, StreamId s, Phase p, const std::string& label,
                                    MemTag tag, const std::vector<Bytes>& tensors, Bytes total) {
  if (tensors.empty())
    return {b.alloc(s, p, label, tag, total)};
  std::vector<BufferId> ids;
  ids.reserve(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i)
    ids.push_back(b.alloc(s, p, i == 0 ? label : label + " #" + std::to_string(i), tag, tensors[i]));
  return ids;
}

/// A tensor slot PartAllocator has not filled yet (buffer ids count from 0).
constexpr BufferId kNoBuffer = std::numeric_limits<BufferId>::max();

/// The tensors of a layer split into submodule parts, allocated part by part: `start(i)` allocates (into `ids`, at
/// their index, labelled as alloc_tensors labels them) the tensors whose part (Layer::activation_modules resolved
/// to a submodule index) is `i`. A tensor comes to exist when its submodule's forward runs, not at the layer's
/// start: a stage-3 layer whose submodules are fetched one by one then holds only the tensors of the parts run so
/// far [simplification: a tensor of a parameter-free op, which counts as the module before it, is allocated at the
/// start of that module's part, one module early].
struct PartAllocator {
  program::ProgramBuilder& b;
  StreamId s;
  Phase p;
  std::string label;
  MemTag tag;
  const std::vector<Bytes>& tensors;
  const std::vector<std::size_t>& parts;
  std::vector<BufferId>& ids;

  void start(std::size_t part) {
    for (std::size_t i = 0; i < tensors.size(); ++i)
      if (parts[i] == part)
        ids[i] = b.alloc(s, p, i == 0 ? label : label + " #" + std::to_string(i), tag, tensors[i]);
  }
};
} // namespace

std::size_t GeneratorContext::submodule_index(std::size_t l, const std::string& module) const {
  const auto& subs = submodules_.at(l);
  const auto it = std::find_if(subs.begin(), subs.end(), [&](const Submodule& m) { return m.name == module; });
  return it == subs.end() ? 0 : static_cast<std::size_t>(it - subs.begin());
}

bool GeneratorContext::split_layer(const PassHooks& hooks, std::size_t l) const {
  if (!hooks.before_submodule)
    return false;
  const auto& subs = submodules_.at(l);
  return std::any_of(subs.begin(), subs.end(), [](const Submodule& m) { return m.share > 0; });
}

void GeneratorContext::layer_kernels(const PassHooks& hooks, std::size_t l, Phase p, const std::string& what,
                                     int passes, bool recompute, bool reverse,
                                     const std::function<void(double, const std::string&)>& emit,
                                     const std::function<void(std::size_t)>& after_part,
                                     const std::function<void(std::size_t)>& before_part) {
  const auto& subs = submodules_.at(l);
  double from = 0; // the share already issued, in execution order
  for (std::size_t j = 0; j < subs.size(); ++j) {
    const std::size_t i = reverse ? subs.size() - 1 - j : j;
    const double to = j + 1 == subs.size() ? 1.0 : from + subs[i].share;
    hooks.before_submodule(l, i, recompute);
    host_launch(p, "launch " + what + " " + subs[i].name, l, passes, from, to);
    if (before_part)
      before_part(i);
    emit(to - from, what + " " + subs[i].name);
    layer_done();
    if (after_part)
      after_part(i);
    if (hooks.after_submodule)
      hooks.after_submodule(l, i, recompute);
    from = to;
  }
}

namespace {
/// training.cpu_checkpointing applies to `layer`: a block whose whole forward re-runs in backward (full
/// checkpointing keeps only its input).
bool checkpoint_in_cpu(const workload::Workload& w, const workload::Layer& layer) {
  return w.training.cpu_checkpointing && layer.kind == workload::LayerKind::BLOCK &&
         layer.recompute_flops.value() > 0 && layer.saved_activations.value() > 0;
}
} // namespace

GeneratorContext::Activations GeneratorContext::forward(const PassHooks& hooks) {
  Activations acts;
  acts.gpu.resize(wl().layers.size());
  acts.host.resize(wl().layers.size());
  for (std::size_t l = 0; l < wl().layers.size(); ++l) {
    const auto& layer = wl().layers[l];
    const bool to_cpu = checkpoint_in_cpu(wl(), layer);
    if (to_cpu) {
      // CheckpointFunction.forward: `inputs = copy_to_device(args, cpu)`, a `.to('cpu')` of the block's input into a
      // new pageable tensor, before the block's module (and its hooks) runs.
      host_issue(compute_);
      acts.host[l].push_back(b_.alloc(compute_, Phase::FORWARD, "checkpoint in cpu " + layer.name, MemTag::ACTIVATIONS,
                                      layer.saved_activations, program::Device::HOST));
      host_copy(compute_, Phase::FORWARD, "checkpoint to cpu " + layer.name, program::CopyDir::D2H,
                layer.saved_activations, true);
    }
    if (hooks.before_layer)
      hooks.before_layer(l);
    const bool split = split_layer(hooks, l);
    // The host dispatches the layer's ops; the GPU runs them once the host has issued them.
    if (!split)
      host_launch(Phase::FORWARD, "launch fwd " + layer.name, l, 1);
    // What autograd keeps, tensor by tensor (full checkpointing: only the layer input); split, each part's as it
    // runs.
    const bool by_part =
        split && !layer.activation_tensors.empty() && activation_part_[l].size() == layer.activation_tensors.size();
    std::optional<PartAllocator> saved; // by_part only
    if (by_part) {
      acts.gpu[l].assign(layer.activation_tensors.size(), kNoBuffer);
      saved.emplace(PartAllocator{b_, compute_, Phase::FORWARD, "act " + layer.name, MemTag::ACTIVATIONS,
                                  layer.activation_tensors, activation_part_[l], acts.gpu[l]});
    } else {
      acts.gpu[l] = alloc_tensors(b_, compute_, Phase::FORWARD, "act " + layer.name, MemTag::ACTIVATIONS,
                                  layer.activation_tensors, layer.saved_activations);
    }
    // Transients that live only inside the layer's forward (e.g. the head's fp32 logits).
    std::optional<BufferId> work;
    if (layer.fwd_working_bytes.value() > 0)
      work = b_.alloc(compute_, Phase::FORWARD, "fwd working " + layer.name, MemTag::WORKING, layer.fwd_working_bytes);
    auto kernels = [&](double share, const std::string& label) {
      b_.compute(compute_, Phase::FORWARD, label, layer.fwd_flops * share, layer.fwd_bytes * share,
                 layer.fwd_attention_flops * share, gemm_util_[l].forward,
                 layer.fwd_attention_work * attention_time_.forward);
    };
    if (split) {
      layer_kernels(hooks, l, Phase::FORWARD, "fwd", 1, false, false, kernels, {}, [&](std::size_t i) {
        if (saved)
          saved->start(i);
      });
    } else {
      kernels(1.0, "fwd " + layer.name);
      layer_done();
    }
    if (work)
      b_.free(compute_, Phase::FORWARD, *work);
    if (to_cpu) {
      // get_cpu_activations_for_backward: the GPU input's storage is replaced by an empty tensor.
      for (BufferId a : acts.gpu[l])
        b_.free(compute_, Phase::FORWARD, a);
      acts.gpu[l].clear();
    }
    if (hooks.after_layer)
      hooks.after_layer(l);
  }
  return acts;
}

void GeneratorContext::layer_grads(const PassHooks& hooks, std::size_t layer, const std::vector<std::size_t>& idx) {
  // ZeRO 1-3 register a Python gradient hook per trainable tensor (stage_1_and_2.py
  // reduce_ready_partitions_and_remove_grads, stage3.py reduce_partition_and_remove_grads): host time each. Stage 1
  // has them only with overlap_comm or contiguous_gradients (create_gradient_handling_hooks' condition; both are
  // off in DeepSpeed < 0.13, whose engine forces them off for stage 1), and without overlap_comm its hook reduces
  // nothing (process_gradients l.1764-1765 @v0.19.6: setup_buckets only): reduce_gradients' loop at the GA boundary
  // does that work, charged there (stage1_generator.cpp).
  const bool grad_hooks = cfg().stage >= 2 || (cfg().stage == 1 && cfg().overlap_comm_effective());
  if (grad_hooks) {
    const auto hooked = std::count_if(idx.begin(), idx.end(), [&](std::size_t p) { return params_[p].trainable; });
    if (hooked > 0 && in_.host.param_hook.value() > 0) {
      host_work(Phase::BACKWARD, "grad hooks " + wl().layers[layer].name,
                in_.host.param_hook * static_cast<double>(hooked));
      host_issue(compute_);
    }
  }
  if (hooks.on_grad)
    for (std::size_t j = idx.size(); j-- > 0;)
      if (params_[idx[j]].trainable)
        hooks.on_grad(idx[j]);
}

void GeneratorContext::backward(const Activations& acts, const PassHooks& hooks) {
  for (std::size_t k = wl().layers.size(); k-- > 0;) {
    const auto& layer = wl().layers[k];
    const bool split = split_layer(hooks, k);
    // The autograd engine dispatches ~2 ops per forward op (a backward node per differentiable op, two GEMMs per
    // matmul node, none for some views) plus the re-run forward when the layer is checkpointed.
    const bool recomputes = layer.recompute_flops.value() > 0 || layer.recompute_bytes.value() > 0;
    const bool recompute_hooks = recomputes && hooks.before_recompute;
    // cpu_checkpointing: CheckpointFunction.backward moves the checkpoint back (`move_to_device`, a `.to(cuda)` of
    // the pageable host tensor) before the recompute, whose module hooks run inside run_function after it.
    std::vector<BufferId> restored;
    if (!acts.host.at(k).empty()) {
      restored = alloc_tensors(b_, compute_, Phase::BACKWARD, "act " + layer.name, MemTag::ACTIVATIONS,
                               layer.activation_tensors, layer.saved_activations);
      host_issue(compute_);
      host_copy(compute_, Phase::BACKWARD, "checkpoint from cpu " + layer.name, program::CopyDir::H2D,
                layer.saved_activations, true);
      for (BufferId h : acts.host.at(k))
        b_.free(compute_, Phase::BACKWARD, h);
    }
    if (recompute_hooks) {
      // Host order: the re-run forward's pre-forward hooks, its ops, its post-forward hooks, then the backward's.
      hooks.before_recompute(k);
      if (!split)
        host_launch(Phase::BACKWARD, "launch recompute " + layer.name, k, 1);
    } else {
      if (hooks.before_layer)
        hooks.before_layer(k);
      if (!split)
        host_launch(Phase::BACKWARD, "launch bwd " + layer.name, k, recomputes ? 3 : 2);
      else if (recomputes)
        host_launch(Phase::BACKWARD, "launch recompute " + layer.name, k, 1);
    }
    // Activation checkpointing (the workload sets these per layer): the layer's forward re-runs inside its
    // backward and the recomputed activations live only around the layer's backward kernels.
    // Split by its own hooks, the re-run forward creates them part by part, as the forward did.
    std::vector<BufferId> recompute;
    const bool recompute_by_part = split && recompute_hooks && !layer.recompute_tensors.empty() &&
                                   recompute_part_[k].size() == layer.recompute_tensors.size();
    std::optional<PartAllocator> recomputed; // recompute_by_part only
    if (recompute_by_part) {
      recompute.assign(layer.recompute_tensors.size(), kNoBuffer);
      recomputed.emplace(PartAllocator{b_, compute_, Phase::BACKWARD, "recompute " + layer.name, MemTag::WORKING,
                                       layer.recompute_tensors, recompute_part_[k], recompute});
    } else if (layer.recompute_activations.value() > 0) {
      recompute = alloc_tensors(b_, compute_, Phase::BACKWARD, "recompute " + layer.name, MemTag::WORKING,
                                layer.recompute_tensors, layer.recompute_activations);
    }
    if (recomputes) {
      auto kernels = [&](double share, const std::string& label) {
        b_.compute(compute_, Phase::BACKWARD, label, layer.recompute_flops * share, layer.recompute_bytes * share,
                   layer.recompute_attention_flops * share, gemm_util_[k].recompute,
                   layer.fwd_attention_work * attention_time_.forward);
      };
      if (split && recompute_hooks) {
        layer_kernels(hooks, k, Phase::BACKWARD, "recompute", 1, true, false, kernels, {}, [&](std::size_t i) {
          if (recomputed)
            recomputed->start(i);
        });
      } else {
        kernels(1.0, "recompute " + layer.name);
        if (split && !recompute_hooks) // launched on its own above ("launch recompute"): its launch-queue mark
          layer_done();
      }
    }
    if (recompute_hooks) {
      if (!split)
        layer_done();
      if (hooks.after_recompute)
        hooks.after_recompute(k);
      if (hooks.before_layer)
        hooks.before_layer(k);
      if (!split)
        host_launch(Phase::BACKWARD, "launch bwd " + layer.name, k, 2);
    }
    // The backward's op temporaries (bwd_working_bytes: the layer's largest op, e.g. the head's loss and
    // log-softmax gradients, a block's MLP activation gradient). Unsplit they span the layer's kernels. Split, each
    // part holds them around its own kernels [simplification, an upper bound: which op runs in which part is not
    // modelled, so a layer norm's part holds them too]; autograd frees an op's temporaries before the
    // AccumulateGrad that fires a parameter's hook runs, so the hooks between parts never see them.
    const bool working = layer.bwd_working_bytes.value() > 0;
    std::optional<BufferId> work;
    if (working && !split)
      work = b_.alloc(compute_, Phase::BACKWARD, "bwd working " + layer.name, MemTag::WORKING, layer.bwd_working_bytes);
    auto kernels = [&](double share, const std::string& label) {
      std::optional<BufferId> part;
      if (working && split)
        part =
            b_.alloc(compute_, Phase::BACKWARD, "bwd working " + layer.name, MemTag::WORKING, layer.bwd_working_bytes);
      b_.compute(compute_, Phase::BACKWARD, label, layer.bwd_flops * share, layer.bwd_bytes * share,
                 layer.bwd_attention_flops * share, gemm_util_[k].backward,
                 layer.bwd_attention_work * attention_time_.backward);
      if (part)
        b_.free(compute_, Phase::BACKWARD, *part);
    };
    // The layer's saved and recomputed tensors, last saved first: autograd releases what a backward node saved once
    // the node has run, so they die during the layer's backward. Unsplit, all before the layer's gradient hooks run;
    // split, each after the part of the submodule that frees it (Layer::activation_modules), before that part's
    // hooks; a tensor without one after the last part (the first submodule's), before its hooks.
    struct Held {
      BufferId id;
      std::size_t part; ///< submodule index whose backward part frees it (0: the last part)
      bool freed = false;
    };
    std::vector<Held> held;
    const auto hold = [&](const std::vector<BufferId>& ids, const std::vector<std::size_t>& parts) {
      assert(parts.empty() || parts.size() == ids.size()); // Layer: one module per tensor, or none
      for (std::size_t j = 0; j < ids.size(); ++j) {
        assert(ids[j] != kNoBuffer); // every part ran in forward, so every tensor was allocated
        held.push_back({ids[j], parts.empty() ? 0 : parts[j]});
      }
    };
    hold(acts.gpu.at(k), activation_part_[k]);
    hold(restored, activation_part_[k]);
    hold(recompute, recompute_part_[k]);
    std::reverse(held.begin(), held.end());
    const auto release_from = [&](std::size_t part) {
      for (Held& h : held)
        if (!h.freed && h.part >= part) {
          b_.free(compute_, Phase::BACKWARD, h.id);
          h.freed = true;
        }
    };
    if (split) {
      // Backward runs the submodules in reverse: the first submodule's part is the layer's last.
      layer_kernels(hooks, k, Phase::BACKWARD, "bwd", 2, false, true, kernels, [&](std::size_t i) {
        release_from(i);
        layer_grads(hooks, k, submodules_[k][i].params);
      });
    } else {
      kernels(1.0, "bwd " + layer.name);
      layer_done();
      if (work)
        b_.free(compute_, Phase::BACKWARD, *work);
      release_from(0);
      layer_grads(hooks, k, layer_params_[k]);
    }
    if (hooks.after_layer)
      hooks.after_layer(k);
  }
}

AccumulatedGrads::AccumulatedGrads(GeneratorContext& ctx)
    : ctx_(ctx), buf_(ctx.params().size(), 0), live_(ctx.params().size(), false) {}

void AccumulatedGrads::on_grad(std::size_t param) {
  const auto& p = ctx_.params()[param];
  auto& b = ctx_.b();
  const Bytes bytes = ctx_.lp(p.numel);
  if (!live_[param]) {
    buf_[param] = b.alloc(ctx_.compute(), Phase::BACKWARD, "grad " + p.name, MemTag::LP_GRADS, bytes);
    live_[param] = true;
    return;
  }
  // AccumulateGrad: a fresh grad tensor, then param.grad += grad (read 2 tensors, write 1).
  BufferId fresh = b.alloc(ctx_.compute(), Phase::BACKWARD, "grad " + p.name, MemTag::WORKING, bytes);
  ctx_.mem_kernel(ctx_.compute(), Phase::BACKWARD, "accumulate grad " + p.name, bytes * 3.0);
  b.free(ctx_.compute(), Phase::BACKWARD, fresh);
}

const BufferId* AccumulatedGrads::buffer(std::size_t param) const { return live_[param] ? &buf_[param] : nullptr; }

std::optional<BufferId> AccumulatedGrads::release(std::size_t param) {
  if (!live_[param])
    return std::nullopt;
  live_[param] = false;
  return buf_[param];
}

void AccumulatedGrads::free(std::size_t param, StreamId s, Phase p) {
  if (!live_[param])
    return;
  ctx_.b().free(s, p, buf_[param]);
  live_[param] = false;
}

void AccumulatedGrads::free_all(StreamId s, Phase p) {
  for (std::size_t i = 0; i < live_.size(); ++i)
    free(i, s, p);
}

void emit_accumulating_micro_steps(GeneratorContext& ctx, int step, AccumulatedGrads& grads,
                                   const std::function<void()>& after_backward) {
  for (int micro = 0; micro < ctx.grad_accum(); ++micro) {
    PassHooks hooks;
    hooks.on_grad = [&](std::size_t p) { grads.on_grad(p); };
    hooks.split_per_submodule();
    ctx.begin_micro_step(step); // engine.forward: tput_timer.start()
    auto acts = ctx.forward({});
    ctx.backward(acts, hooks);
    if (after_backward)
      after_backward();
    if (micro + 1 < ctx.grad_accum())
      ctx.end_micro_step(step); // engine.step() off the boundary, then the loop reads the loss
  }
}

void emit_grad_norm(GeneratorContext& ctx, program::StreamId s, const std::vector<Elements>& pieces, NormCast cast,
                    const std::string& what, const std::string& reduce) {
  auto& b = ctx.b();
  const char* name = cast == NormCast::LP_TO_DOUBLE ? "double" : "float";
  for (const Elements e : pieces) {
    if (e <= 0)
      continue;
    if (cast == NormCast::FP32_AS_IS) {
      ctx.mem_kernel(s, Phase::OPTIMIZER, what + ": " + reduce, GeneratorContext::fp32(e));
      continue;
    }
    const Bytes copy = GeneratorContext::fp32(e) * (cast == NormCast::LP_TO_DOUBLE ? 2.0 : 1.0);
    BufferId t = b.alloc(s, Phase::OPTIMIZER, what + ": " + name + "() copy", MemTag::WORKING, copy);
    ctx.mem_kernel(s, Phase::OPTIMIZER, what + ": cast to " + name, ctx.lp(e) + copy);
    ctx.mem_kernel(s, Phase::OPTIMIZER, what + ": " + reduce, copy);
    b.free(s, Phase::OPTIMIZER, t);
  }
}

void emit_scalar_allreduce(GeneratorContext& ctx, program::StreamId s, const std::string& label, Bytes bytes,
                           std::uint16_t group) {
  if (ctx.n() > 1)
    ctx.b().collective(s, Phase::OPTIMIZER, label, program::CollectiveKind::ALL_REDUCE, bytes, group);
}

InfNanCheckCost inf_nan_check_cost(const GeneratorContext& ctx, Elements n, bool masks) {
  if (ctx.wl().training.precision == scenario::Precision::FP32)
    return {bytes_of(n, masks ? 22.0 : 4.0), bytes_of(n, masks ? 7.0 : 0.0)};
  return {ctx.lp(n) + bytes_of(n, masks ? 26.0 : 8.0), bytes_of(n, masks ? 11.0 : 4.0)};
}

void emit_grad_average(GeneratorContext& ctx, program::StreamId s, Bytes bytes, const std::string& label) {
  ctx.mem_kernel(s, Phase::GRAD_REDUCE, "average " + label, bytes * 2.0);
}

void emit_unscale_and_clip(GeneratorContext& ctx, program::StreamId s, Elements elements, const std::string& suffix) {
  const Bytes e32 = GeneratorContext::fp32(elements);
  ctx.mem_kernel(s, Phase::OPTIMIZER, "unscale and clip fp32 grads" + suffix, e32 * 2.0);
}

namespace {
/// One GPU Adam(W) pass as training.optimizer_impl runs it, in phase `phase`: the torch temporaries and extra
/// per-op traffic, then `fused_pass()` (the 28 B/element FusedAdam pass, with or without the copy-back).
void emit_gpu_adam_ops(GeneratorContext& ctx, program::StreamId s, Phase phase, const std::string& label,
                       Elements elements, const std::function<void()>& fused_pass) {
  auto& b = ctx.b();
  const Bytes e32 = GeneratorContext::fp32(elements);
  switch (ctx.wl().training.optimizer_impl) {
  case scenario::OptimizerImpl::FUSED:
    fused_pass();
    return;
  case scenario::OptimizerImpl::TORCH_FOREACH: {
    // Per element, fp32: weight decay mul_ (r+w 8), lerp_ of m (r m, g + w m: 12), mul_ of v (8), addcmul_ of v
    // (r v, g + w v: 12), sqrt into the temp (8), div_ (8), add_ eps (8), addcdiv_ of p (r p, m, t + w p: 16) = 80 B
    // against FusedAdam's 28 B counted by gpu_adam: 52 B more.
    BufferId t = b.alloc(s, phase, label + ": sqrt(v) temp (torch foreach)", MemTag::FLATTEN_TEMP, e32);
    ctx.mem_kernel(s, phase, label + ": torch foreach ops", e32 * 13.0);
    fused_pass();
    b.free(s, phase, t);
    return;
  }
  case scenario::OptimizerImpl::TORCH_SINGLE_TENSOR: {
    // Per element, fp32: weight decay mul_ (8), m.mul_().add_() (8 + 12), v.mul_().addcmul_() (8 + 12), sqrt (8),
    // div (8), add_ (8), addcdiv_ (16) = 88 B against FusedAdam's 28 B: 60 B more.
    BufferId sq = b.alloc(s, phase, label + ": v.sqrt() temp (torch single-tensor)", MemTag::FLATTEN_TEMP, e32);
    BufferId denom = b.alloc(s, phase, label + ": denom temp (torch single-tensor)", MemTag::FLATTEN_TEMP, e32);
    b.free(s, phase, sq);
    ctx.mem_kernel(s, phase, label + ": torch single-tensor ops", e32 * 15.0);
    fused_pass();
    b.free(s, phase, denom);
    return;
  }
  }
}
} // namespace

void emit_gpu_adam_init_step(GeneratorContext& ctx, program::StreamId s, const std::string& label, Elements elements) {
  emit_gpu_adam_ops(ctx, s, Phase::INIT, label, elements, [&] {
    ctx.mem_kernel(s, Phase::INIT, label, GeneratorContext::fp32(elements) * 7.0); // 28 B per element
  });
}

BufferId emit_fp32_master_from_lp(GeneratorContext& ctx, StreamId s, const std::string& label, Elements elements,
                                  MasterCast how) {
  auto& b = ctx.b();
  const Bytes lp = ctx.lp(elements);
  const Bytes f32 = GeneratorContext::fp32(elements);
  if (ctx.wl().training.precision == scenario::Precision::FP32) {
    const BufferId master = b.alloc_persistent(s, Phase::INIT, label, MemTag::FP32_MASTER, f32);
    ctx.mem_kernel(s, Phase::INIT, label, f32 * 2.0);
    return master;
  }
  const bool clone_first = how == MasterCast::CLONE_THEN_CAST;
  const BufferId tmp = b.alloc(s, Phase::INIT, label + (clone_first ? " (lp clone)" : " (fp32 cast)"),
                               MemTag::FLATTEN_TEMP, clone_first ? lp : f32);
  const BufferId master = b.alloc_persistent(s, Phase::INIT, label, MemTag::FP32_MASTER, f32);
  ctx.mem_kernel(s, Phase::INIT, label, clone_first ? lp * 3.0 + f32 : lp + f32 * 3.0);
  b.free(s, Phase::INIT, tmp);
  return master;
}

void emit_gpu_adam_step(GeneratorContext& ctx, program::StreamId s, const std::string& label, Elements elements,
                        bool copy_back) {
  emit_gpu_adam_ops(ctx, s, Phase::OPTIMIZER, label, elements, [&] { ctx.gpu_adam(s, label, elements, copy_back); });
}

} // namespace zerosim::zero
