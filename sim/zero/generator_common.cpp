#include "sim/zero/generator_common.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <cmath>
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
  compute_ = b_.add_stream("compute", program::StreamKind::COMPUTE);
  dp_group_ = b_.add_group("dp");
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
      const auto adapter = std::min<Elements>(t.numel, static_cast<Elements>(std::llround(f * static_cast<double>(t.numel))));
      if (t.numel - adapter > 0)
        add(l, i, t.name, t.numel - adapter, false);
      if (adapter > 0)
        add(l, i, t.name + ".adapter", adapter, true);
    }
  }
  if (total_ <= 0)
    throw Error("zero: the workload has no parameters");
}

StreamId GeneratorContext::add_stream(const std::string& name, program::StreamKind kind) {
  StreamId s = b_.add_stream(name, kind);
  streams_.push_back(s);
  return s;
}

void GeneratorContext::mem_kernel(StreamId s, Phase p, const std::string& label, Bytes traffic) {
  b_.compute(s, p, label, Flops(0), traffic);
}

void GeneratorContext::gpu_adam(StreamId s, const std::string& label, Elements elements) {
  // FusedAdam (multi-tensor apply): per element read p32 + g32 + m + v = 16 B, write p32 + m + v = 12 B.
  mem_kernel(s, Phase::OPTIMIZER, label, fp32(elements) * 7.0);
  // Copy of the updated fp32 master into the lp params: read 4 B, write lp.
  mem_kernel(s, Phase::OPTIMIZER, label + " fp32->lp", fp32(elements) + lp(elements));
}

void GeneratorContext::begin_step(int step) { b_.mark(compute_, program::MarkKind::STEP_BEGIN, step); }

void GeneratorContext::end_step(int step) {
  // "finally join every stream into compute": STEP_END closes the step only when all its work is done.
  for (StreamId s : streams_)
    b_.join(compute_, s);
  b_.mark(compute_, program::MarkKind::STEP_END, step);
}

std::vector<BufferId> GeneratorContext::forward(const PassHooks& hooks) {
  std::vector<BufferId> acts(wl().layers.size());
  for (std::size_t l = 0; l < wl().layers.size(); ++l) {
    const auto& layer = wl().layers[l];
    if (hooks.before_layer)
      hooks.before_layer(l);
    acts[l] = b_.alloc(compute_, Phase::FORWARD, "act " + layer.name, MemTag::ACTIVATIONS, layer.saved_activations);
    // Transients that live only inside the layer's forward (e.g. the head's fp32 logits).
    std::optional<BufferId> work;
    if (layer.fwd_working_bytes.value() > 0)
      work = b_.alloc(compute_, Phase::FORWARD, "fwd working " + layer.name, MemTag::WORKING, layer.fwd_working_bytes);
    b_.compute(compute_, Phase::FORWARD, "fwd " + layer.name, layer.fwd_flops, layer.fwd_bytes);
    if (work)
      b_.free(compute_, Phase::FORWARD, *work);
    if (hooks.after_layer)
      hooks.after_layer(l);
  }
  return acts;
}

void GeneratorContext::backward(const std::vector<BufferId>& acts, const PassHooks& hooks) {
  for (std::size_t k = wl().layers.size(); k-- > 0;) {
    const auto& layer = wl().layers[k];
    if (hooks.before_layer)
      hooks.before_layer(k);
    // Activation checkpointing (the workload sets these per layer): the layer's forward re-runs inside its
    // backward and the recomputed activations live only around the layer's backward kernels.
    std::optional<BufferId> recompute;
    if (layer.recompute_activations.value() > 0)
      recompute = b_.alloc(compute_, Phase::BACKWARD, "recompute " + layer.name, MemTag::WORKING,
                           layer.recompute_activations);
    if (layer.recompute_flops.value() > 0 || layer.recompute_bytes.value() > 0)
      b_.compute(compute_, Phase::BACKWARD, "recompute " + layer.name, layer.recompute_flops, layer.recompute_bytes);
    std::optional<BufferId> work;
    if (layer.bwd_working_bytes.value() > 0)
      work = b_.alloc(compute_, Phase::BACKWARD, "bwd working " + layer.name, MemTag::WORKING, layer.bwd_working_bytes);
    b_.compute(compute_, Phase::BACKWARD, "bwd " + layer.name, layer.bwd_flops, layer.bwd_bytes);
    if (work)
      b_.free(compute_, Phase::BACKWARD, *work);
    if (recompute)
      b_.free(compute_, Phase::BACKWARD, *recompute);
    b_.free(compute_, Phase::BACKWARD, acts.at(k));
    const auto& idx = layer_params_[k];
    if (hooks.on_grad)
      for (std::size_t j = idx.size(); j-- > 0;)
        if (params_[idx[j]].trainable)
          hooks.on_grad(idx[j]);
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

const BufferId* AccumulatedGrads::buffer(std::size_t param) const {
  return live_[param] ? &buf_[param] : nullptr;
}

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

} // namespace zerosim::zero
