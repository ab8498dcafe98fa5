// build_workload(): the per-layer table, derived per tensor (parameters), per GEMM (FLOPs), per memory-bound
// kernel (HBM traffic) and per saved tensor (activations), for the Hugging Face GPT-2 (GPT2LMHeadModel) and LLaMA
// (LlamaForCausalLM) modules. Notation (DESIGN.md): b micro-batch, s sequence, h hidden, a heads, kv KV heads,
// d head size (h/a, or the LLaMA family's model.head_dim), h_q = a·d query width (= h unless head_dim is set),
// h_kv = kv·d, I MLP inner size, V vocab, e = bytes per element of params, grads and activations: 2 for fp16/bf16
// mixed precision, 4 for training.precision fp32 (no mixed precision). In fp32 the casts that the 16-bit model runs
// to and from fp32 (`.float()`, `.to(torch.float32)`, `.to(input_dtype)`) are no-ops: PyTorch's Tensor.to returns
// the tensor itself when the dtype already matches (no kernel, no new tensor); the kernels and saved tensors below
// drop them where `d.fp32` says so.
// Element counts: N_h = b·s·h (one hidden-state tensor), N_q = b·s·h_q (queries, attention output), N_kv = b·s·h_kv,
// N_I = b·s·I, N_s = a·s²·b (one score matrix per head), T = b·s tokens.
//
// Conventions and assumptions (stated once here, used throughout):
//  - FLOPs: 2 per multiply-add (formulas.hpp gemm_flops); biases, norms and element-wise ops are not FLOPs here
//    (they are memory traffic). Attention counts the full s×s QKᵀ and P·V (2·2·b·s²·a·d, = 2·2·b·s²·h when
//    d = h/a), as Narayanan et al. 2021 do, also for causal FlashAttention (which skips about half). GQA shrinks
//    k_proj/v_proj only (K/V heads are shared, the score GEMMs still run over a heads). Backward = 2 × forward (dX
//    and dW GEMMs).
//  - Memory-bound traffic: each non-GEMM kernel reads its inputs and writes its outputs once (no cache reuse).
//    training.kernel_impl hf (the default) runs transformers' modules as eager PyTorch does: LlamaRMSNorm, rotary
//    embeddings and GPT-2's gelu_new as one kernel per tensor op (add_rmsnorm, add_rope, add_gelu below, with their
//    extra saved tensors); kernel_impl fused counts one kernel per module, as torch.compile / Apex / Megatron run
//    them. Other modules (softmax, SiLU, dropout) are single torch kernels either way; LayerNorm's backward is two
//    kernels in PyTorch and one in llm.c's fused set (add_layernorm). A bias's (and an eager norm weight's) gradient is
//    a reduction of dY over the tokens in a kernel of its own (add_bias_grads), under either setting. Backward counts per kernel are given
//    below (an element-wise op's backward reads dy and its saved input and writes dx: 3 tensors against 2 forward),
//    rather than a flat 2×. GEMM operand traffic is inside the GEMM's time and not counted.
//  - Saved activations: the tensors autograd keeps from forward to backward, in the spirit of Korthikanti et al.
//    2022 §4.1; LayerNorm/RMSNorm fp32 statistics (8 or 4 bytes per token) and RoPE cos/sin tables are omitted
//    (O(b·s), and Korthikanti omits them too), so the GPT-2 block with a one-kernel GELU (or kernel_impl fused)
//    reproduces sbh(34 + 5as/h) exactly.
#include "sim/workload/workload.hpp"

#include "sim/error.hpp"
#include "sim/scenario/lora.hpp"
#include "sim/workload/formulas.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <string>

namespace zerosim::workload {

namespace {

using scenario::ModelFamily;

/// Resolved dimensions of one micro-batch on one rank, as doubles for the byte/FLOP arithmetic.
struct Dims {
  std::int64_t b, s, h, a, kv, hd, h_q, h_kv, I, V, pos, L; // h_q = a·hd: = h unless model.head_dim is set
  std::int64_t window = 0; // model.sliding_window, 0 = full causal
  std::int64_t window_from = 0; // model.max_window_layers: the first block that uses the window
  bool gpt2, tied, flash, ckpt, selective, megatron_loss; // gpt2: GPT-style embeddings and head (GPT-2, OPT)
  bool hf_kernels = true; // training.kernel_impl hf: transformers' eager module ops (RMSNorm, RoPE, gelu_new)
  bool gelu_new = false; // model.activation gelu_new (GPT-2 family)
  bool opt = false; // OPT blocks
  scenario::AttentionBias attention_bias = scenario::AttentionBias::NONE; // LLaMA family
  bool mlp_bias = false; // LLaMA family: biases on gate/up/down_proj
  double trainable = 1; // training.trainable_fraction
  double wgrad = 1; // Layer::wgrad_fraction: trainable_fraction, or 0 with LoRA (every base weight frozen)
  std::int64_t lora_rank = 0; // training.lora_rank, 0 = no LoRA
  double lora_dropout = 0; // training.lora_dropout
  std::vector<scenario::LoraLinear> lora; // the targeted linears of a block (paths below the block)
  double e = 2.0; // bytes per element: 2 (fp16, bf16) or 4 (fp32)
  bool fp32 = false; // training.precision fp32: the fp32 casts of the 16-bit model are no-ops
  double T, N_h, N_q, N_kv, N_I, N_s;
};

std::string dim_error(const scenario::ModelSpec& m, const std::string& what) {
  return "model '" + m.name + "': " + what;
}

Dims resolve(const scenario::ModelSpec& m, const scenario::TrainingSpec& t) {
  auto positive = [&](std::int64_t v, const char* name) {
    if (v < 1)
      throw Error(dim_error(m, std::string(name) + " must be >= 1, got " + std::to_string(v)));
  };
  positive(m.hidden, "hidden");
  positive(m.layers, "layers");
  positive(m.heads, "heads");
  positive(m.vocab, "vocab");
  positive(t.micro_batch, "micro_batch");
  positive(t.seq_len, "seq_len");
  if (m.head_dim < 0)
    throw Error(dim_error(m, "head_dim must be >= 0 (0 means hidden / heads), got " + std::to_string(m.head_dim)));
  if (m.head_dim == 0 && m.hidden % m.heads != 0) // an explicit head dimension frees a·d from h (Mistral-NeMo)
    throw Error(dim_error(m, "heads (a=" + std::to_string(m.heads) +
                                 ") must divide hidden (h=" + std::to_string(m.hidden) + ")"));
  if (m.kv_heads < 0)
    throw Error(dim_error(m, "kv_heads must be >= 0 (0 means = heads), got " + std::to_string(m.kv_heads)));
  const std::int64_t kv = m.kv_heads == 0 ? m.heads : m.kv_heads;
  if (m.heads % kv != 0)
    throw Error(
        dim_error(m, "kv_heads (" + std::to_string(kv) + ") must divide heads (a=" + std::to_string(m.heads) + ")"));
  if (m.intermediate < 0)
    throw Error(dim_error(m, "intermediate must be >= 0, got " + std::to_string(m.intermediate)));
  const bool gpt2 = scenario::learned_positions(m.family); // GPT-2 or OPT: GPT-style embeddings and head
  const std::string family = scenario::to_string(m.family);
  std::int64_t I = m.intermediate;
  if (I == 0) {
    if (!gpt2)
      throw Error(dim_error(m, "intermediate (intermediate_size) is required for the llama family"));
    I = 4 * m.hidden; // HF GPT2Config n_inner = None -> 4h
  }
  if (gpt2 && kv != m.heads)
    throw Error(dim_error(m, family + " family has no grouped-query attention: kv_heads must equal heads"));
  if (gpt2 && m.head_dim != 0 && (m.hidden % m.heads != 0 || m.head_dim != m.hidden / m.heads))
    throw Error(dim_error(m, family + " family has no head_dim: its heads are hidden / heads wide"));
  if (gpt2 && m.max_positions < t.seq_len)
    throw Error(dim_error(m, family + " learned positions: max_positions (" + std::to_string(m.max_positions) +
                                 ") must be >= seq_len (" + std::to_string(t.seq_len) + ")"));

  Dims d{};
  d.b = t.micro_batch;
  d.s = t.seq_len;
  d.h = m.hidden;
  d.a = m.heads;
  d.kv = kv;
  d.hd = m.head_dim != 0 ? m.head_dim : m.hidden / m.heads;
  d.h_q = d.a * d.hd;
  d.h_kv = kv * d.hd;
  d.I = I;
  d.V = m.vocab;
  // OPTLearnedPositionalEmbedding keeps 2 more rows than max_position_embeddings (its offset).
  d.opt = m.family == ModelFamily::OPT;
  d.pos = gpt2 ? m.max_positions + (d.opt ? 2 : 0) : 0;
  d.L = m.layers;
  d.gpt2 = gpt2;
  d.tied = m.tied_embeddings;
  d.attention_bias = m.attention_bias;
  d.mlp_bias = m.mlp_bias;
  d.flash = t.flash_attention;
  d.window = m.sliding_window;
  d.window_from = m.max_window_layers;
  d.ckpt = t.activation_checkpointing;
  d.trainable = t.trainable_fraction;
  d.wgrad = t.trainable_fraction;
  if (t.lora_rank > 0) {
    if (t.trainable_fraction < 1)
      throw Error("training.lora_rank excludes training.trainable_fraction < 1");
    d.wgrad = 0;
    d.lora_rank = t.lora_rank;
    d.lora_dropout = t.lora_dropout;
    const std::vector<std::string> targets =
        t.lora_targets.empty() ? scenario::lora_default_targets(m.family) : t.lora_targets;
    for (const scenario::LoraLinear& l : scenario::lora_linears(m))
      if (scenario::lora_targeted(targets, l.path)) {
        if (t.lora_rank > std::min(l.in, l.out))
          throw Error(dim_error(m, "LoRA rank " + std::to_string(t.lora_rank) + " exceeds min(in, out) of " + l.path));
        d.lora.push_back(l);
      }
    if (d.lora.empty())
      throw Error(dim_error(m, "training.lora_targets match no linear module of a block"));
  }
  d.selective = t.recompute_granularity == scenario::RecomputeGranularity::SELECTIVE;
  d.megatron_loss = t.loss_impl == scenario::LossImpl::MEGATRON;
  d.hf_kernels = t.kernel_impl == scenario::KernelImpl::HF;
  d.gelu_new = m.family == ModelFamily::GPT2 && m.activation == scenario::Activation::GELU_NEW;
  d.fp32 = t.precision == scenario::Precision::FP32;
  d.e = scenario::element_bytes(t.precision);
  const auto f = [](std::int64_t x) { return static_cast<double>(x); };
  d.T = f(d.b) * f(d.s);
  d.N_h = d.T * f(d.h);
  d.N_q = d.T * f(d.h_q);
  d.N_kv = d.T * f(d.h_kv);
  d.N_I = d.T * f(d.I);
  d.N_s = f(d.a) * f(d.s) * f(d.s) * f(d.b);
  return d;
}

/// Accumulates one layer's kernels: memory-bound traffic forward/backward and the largest single kernel footprint
/// (inputs + outputs), used to estimate transient working memory.
struct Kernels {
  double fwd = 0, bwd = 0, largest_fwd = 0, largest_bwd = 0;
  void add(double fwd_bytes, double bwd_bytes) {
    fwd += fwd_bytes;
    bwd += bwd_bytes;
    footprint(fwd_bytes, bwd_bytes);
  }
  /// A kernel that only sets the footprint (GEMM operands: their traffic is inside the GEMM time).
  void footprint(double fwd_bytes, double bwd_bytes) {
    largest_fwd = std::max(largest_fwd, fwd_bytes);
    largest_bwd = std::max(largest_bwd, bwd_bytes);
  }
};

/// A LLaMA-family RMSNorm over `n` elements: its HBM traffic, and its extra saved bytes (beyond the lp input that
/// the fused count saves), added to `k` / returned.
/// fused: one kernel, 2e·n forward, 3e·n backward (reads dy and x, writes dx).
/// hf (transformers LlamaRMSNorm.forward, unchanged from 4.28 to 4.5x): x.to(fp32) (e+4), pow(2) (4+4), mean (4),
///   mul by rsqrt (4+4), .to(lp) (4+e), weight * (e+e): (4e + 28)·n forward. Backward through autograd: the weight
///   mul's dx (2e) and dweight: dy times the normalised tensor, written full size (3e), then summed over the tokens
///   to the weight's shape by the autograd engine (e; add_bias_grads), the cast back (e+4), the rsqrt mul's two
///   gradients (4+4, and 4+4 read for the row sums), mean's expand (4), pow's 2·x·dy (4+4+4), the sum of the two fp32
///   gradients (4+4+4), the cast to lp (4+e): (8e + 52)·n, of which the dweight's 4e scale with the trainable
///   fraction (0 with LoRA's frozen weights). Saved: the fp32 copy (pow's and mul's input, 4·n) and the lp normalised tensor (the weight
///   mul's, e·n) instead of the lp input: 4·n more.
double add_rmsnorm(Kernels& k, const Dims& d, double n) {
  const double e = d.e;
  if (!d.hf_kernels) {
    k.add(2 * e * n, 3 * e * n);
    return 0;
  }
  // fp32: the two casts and their backward are no-ops (x.to(fp32) is x; the normalised tensor stays fp32). Saved:
  // x itself and the normalised tensor, e·n more than the input alone -- the same 4·n.
  const double cast = d.fp32 ? 0 : 1; // the casts' kernels
  for (double fwd : {cast * (e + 4), 8.0, 4.0, 8.0, cast * (4 + e), 2 * e})
    if (fwd > 0)
      k.add(fwd * n, 0);
  // With LoRA the weight is frozen: the weight mul's backward writes dx only (2e instead of 4e).
  for (double bwd : {2 * e + d.wgrad * 4 * e, cast * (e + 4), 16.0, 4.0, 12.0, 12.0, cast * (4 + e)})
    if (bwd > 0)
      k.add(0, bwd * n);
  return 4 * n;
}

/// A LayerNorm over `n` elements (torch.nn.LayerNorm: HF GPT-2 and OPT, MPT's low-precision LayerNorm). Forward one
/// kernel, 2e·n (reads x, writes y). Backward: the input gradient, 3e·n (reads dy and x, writes dx), and with
/// kernel_impl hf PyTorch's second kernel for the weight and bias gradients, a column reduction over the tokens that
/// reads dy and x again, 2e·n (aten/src/ATen/native/cuda/layer_norm_kernel.cu: the dX kernel, then
/// GammaBetaBackwardCUDAKernel; skipped when the weights are frozen, so scaled by the trainable fraction). kernel_impl
/// fused counts one backward pass, as llm.c's layernorm_backward computes dx, dweight and dbias in one kernel
/// [simplification: Apex's FusedLayerNorm also runs a second pass, cuComputePartGradGammaBeta].
void add_layernorm(Kernels& k, const Dims& d, double n) {
  k.add(2 * d.e * n, 3 * d.e * n);
  if (d.hf_kernels)
    k.add(0, d.wgrad * 2 * d.e * n);
}

/// The bias gradients of linears with output widths `widths` (elements per token): a bias is added to all T tokens,
/// so its gradient is dY summed over the tokens, one reduction kernel per bias that reads dY once (e·T·n; writes n
/// elements). PyTorch: addmm's gradient for the bias input is the full-size grad (tools/autograd/derivatives.yaml),
/// which the autograd engine sums to the bias's shape (torch/csrc/autograd/engine.cpp validate_outputs); Megatron-LM's
/// linear backward: grad_bias = grad_output.sum(dim=0) (megatron/core/tensor_parallel/layers.py); llm.c: its own
/// matmul_backward_bias kernel. Not computed for frozen biases: scaled by the trainable fraction (0 with LoRA), as the
/// weight-gradient GEMMs are.
void add_bias_grads(Kernels& k, const Dims& d, std::initializer_list<std::int64_t> widths) {
  for (std::int64_t n : widths)
    k.add(0, d.wgrad * d.e * d.T * static_cast<double>(n));
}

/// Rotary embeddings on `n` elements (q or k). fused: 2e·n each way. hf (transformers apply_rotary_pos_emb:
/// q * cos + rotate_half(q) * sin, rotate_half = cat(-x2, x1)): mul (2e), neg of half (e), cat (2e), mul (2e), add (3e)
/// = 10e·n forward; backward: dy * sin (2e), neg (e), the two slices' zero-filled gradients (3e), dy * cos (2e), two
/// sums of the three gradients (6e) = 14e·n. cos and sin are the only saved tensors (O(s·d)).
void add_rope(Kernels& k, const Dims& d, double n) {
  const double e = d.e;
  if (!d.hf_kernels) {
    k.add(2 * e * n, 2 * e * n);
    return;
  }
  for (double fwd : {2 * e, e, 2 * e, 2 * e, 3 * e})
    k.add(fwd * n, 0);
  for (double bwd : {2 * e, e, 3 * e, 2 * e, 6 * e})
    k.add(0, bwd * n);
}

/// The GPT-2 MLP activation on `n` elements; returns the extra saved bytes beyond its input (which the block counts).
/// gelu (one kernel, or gelu_new under kernel_impl fused): 2e·n / 3e·n. gelu_new in eager PyTorch (transformers
/// NewGELUActivation: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))): pow, mul, add, mul, tanh, add, mul, mul = 18e·n
/// forward; backward: the product's two gradients (3e + 3e), tanh_backward (3e), two scalar muls (2e + 2e), pow's
/// 3·x²·dy (2e + 2e + 3e), 0.5·dy (2e), two sums of x's three gradients (6e) = 28e·n. Saved: x (pow's), tanh's
/// output, 0.5·x and 1 + tanh (the product's operands): 3e·n more than x alone.
double add_gelu(Kernels& k, const Dims& d, double n) {
  const double e = d.e;
  if (!(d.gelu_new && d.hf_kernels)) {
    k.add(2 * e * n, 3 * e * n);
    return 0;
  }
  for (double fwd : {2 * e, 2 * e, 3 * e, 2 * e, 2 * e, 2 * e, 2 * e, 3 * e})
    k.add(fwd * n, 0);
  for (double bwd : {3 * e, 3 * e, 3 * e, 2 * e, 2 * e, 7 * e, 2 * e, 6 * e})
    k.add(0, bwd * n);
  return 3 * e * n;
}

void add_param(Layer& layer, std::string name, Elements numel) {
  layer.params.push_back(ParamTensor{std::move(name), numel, true});
  layer.param_count += numel;
}

/// A tensor autograd saves in forward: its bytes and the module whose backward part frees it (Layer::
/// activation_modules; empty: the layer's end).
struct Saved {
  double bytes;
  std::string module;
  /// Modules (full paths) whose weight gradient alone needs this tensor: a linear's input (a matmul operand is kept
  /// only for the other operand's gradient), LlamaRMSNorm's normalised tensor before the weight multiply. Empty:
  /// needed whatever trains. With LoRA those weights are frozen and lora_saved() drops the tensor.
  std::vector<std::string> weights = {};
};

/// What a layer recomputes in backward (training.activation_checkpointing / recompute_granularity).
enum class Recompute { NONE, FULL, SELECTIVE };

/// The attention core of a block run eagerly (QKᵀ, scale, mask, softmax, dropout, P·V): the s×s tensors autograd
/// keeps from it, and the FLOPs, memory-bound bytes and GEMMs of its forward -- what selective recomputation
/// re-runs in backward (Korthikanti et al. 2022 §4.2). Empty with FlashAttention.
struct AttentionCore {
  std::vector<Saved> saved;
  double flops = 0;
  double bytes = 0;
  std::vector<Gemm> gemms;
};

/// The recomputation a transformer block gets from the training settings.
Recompute block_recompute(const Dims& d) {
  return !d.ckpt ? Recompute::NONE : d.selective ? Recompute::SELECTIVE : Recompute::FULL;
}

/// Finishes a layer from its forward FLOPs, kernels and saved tensors: `saved_tensors` outside the attention core,
/// then core.saved.
void finish(Layer& layer, const Dims& d, Flops fwd, const Kernels& k, const std::vector<Saved>& saved_tensors,
            const AttentionCore& core, Recompute mode) {
  std::vector<Saved> all = saved_tensors;
  all.insert(all.end(), core.saved.begin(), core.saved.end());
  const auto set = [](std::vector<Bytes>& out, std::vector<std::string>& modules, Bytes& total,
                      const std::vector<Saved>& tensors) {
    double sum = 0;
    for (const Saved& t : tensors) {
      sum += t.bytes;
      out.push_back(Bytes(t.bytes));
      modules.push_back(t.module);
    }
    total = Bytes(sum);
  };
  layer.fwd_flops = fwd;
  // dX and dW GEMMs (Narayanan et al. 2021 §5.1); a frozen weight's dW is not computed, so with a trainable fraction
  // f the weight GEMMs' backward is (1 + f) x their forward (1 x with LoRA's frozen bases; the adapters' 2 x).
  double weight_gemms = 0;
  for (const Gemm& g : layer.gemms)
    if (g.weight && !g.adapter)
      weight_gemms += g.flops();
  layer.wgrad_fraction = d.wgrad;
  layer.bwd_flops = Flops(2.0 * fwd.value() - (1.0 - d.wgrad) * weight_gemms);
  layer.fwd_bytes = Bytes(k.fwd);
  layer.bwd_bytes = Bytes(k.bwd);
  if (mode == Recompute::SELECTIVE && core.saved.empty())
    mode = Recompute::NONE; // FlashAttention keeps no s×s tensor: nothing for selective recomputation to drop
  switch (mode) {
  case Recompute::NONE:
    set(layer.activation_tensors, layer.activation_modules, layer.saved_activations, all);
    break;
  case Recompute::FULL:
    // Full recomputation (Korthikanti et al. 2022; reference/zero_semantics.md §5.1): keep the layer input
    // (e·N_h = 2sbh); at backward the forward runs again and re-materialises the full set, live only during
    // this layer's backward. The checkpoint (CheckpointFunction's saved input) lives to the layer's end.
    set(layer.activation_tensors, layer.activation_modules, layer.saved_activations, {{d.e * d.N_h, ""}});
    set(layer.recompute_tensors, layer.recompute_modules, layer.recompute_activations, all);
    layer.recompute_flops = fwd;
    layer.recompute_bytes = Bytes(k.fwd);
    layer.recompute_gemms = layer.gemms;
    layer.fwd_working_bytes = Bytes(k.largest_fwd); // no-grad forward: intermediates die kernel by kernel
    break;
  case Recompute::SELECTIVE:
    // Selective recomputation (Korthikanti et al. 2022 §4.2, Megatron-LM --recompute-granularity selective): keep
    // everything but the attention core's s×s tensors; re-run the core from the saved Q, K, V in backward.
    set(layer.activation_tensors, layer.activation_modules, layer.saved_activations, saved_tensors);
    set(layer.recompute_tensors, layer.recompute_modules, layer.recompute_activations, core.saved);
    layer.recompute_flops = Flops(core.flops);
    layer.recompute_bytes = Bytes(core.bytes);
    layer.recompute_gemms = core.gemms;
    break;
  }
  layer.bwd_working_bytes = Bytes(k.largest_bwd);
  layer.param_grad_bytes_lp = bytes_of(layer.param_count, d.e);
}

/// With FlashAttention, QKᵀ and P·V (`attention` FLOPs of the forward: 2 x 2·b·a·s²·d) run inside one fused kernel
/// priced at gpu.attention_efficiency; backward counts twice the forward's, as every GEMM here (Narayanan et al.
/// 2021 §5.1 convention), and a checkpointed layer re-runs the forward's.
/// A sliding window w < s leaves query i min(i + 1, w) keys: s·w - w²/2 of the s² scores against the causal s²/2
/// (continuous forms). The counted FLOPs shrink by that ratio (so MFU and HFU count the window's work, as the
/// full-s² convention counts a causal model's) and the executed share of them stays the causal one. Only blocks
/// `block >= d.window_from` use the window (Qwen2's max_window_layers).
void set_attention_flops(Layer& l, const Dims& d, double attention, std::int64_t block) {
  if (!d.flash)
    return;
  double counted = attention;
  if (d.window > 0 && d.window < d.s && block >= d.window_from) {
    const double s = static_cast<double>(d.s);
    const double w = static_cast<double>(d.window);
    counted = attention * (s * w - w * w / 2.0) / (s * s / 2.0);
    const double cut = attention - counted; // out of the layer totals too (they include the full s² count)
    l.fwd_flops = Flops(l.fwd_flops.value() - cut);
    l.bwd_flops = Flops(l.bwd_flops.value() - 2.0 * cut);
    if (l.recompute_flops.value() > 0)
      l.recompute_flops = Flops(l.recompute_flops.value() - cut);
  }
  l.fwd_attention_flops = Flops(counted);
  l.bwd_attention_flops = Flops(2.0 * counted);
  if (l.recompute_flops.value() > 0)
    l.recompute_attention_flops = Flops(counted);
  // Causal: half the blocks (forward, recompute); backward 2.5x the forward's executed work against the 2x counted.
  l.fwd_attention_work = 0.5;
  l.bwd_attention_work = 0.5 * 2.5 / 2.0;
}

/// A transformer block's layer, "block.<i>".
Layer new_block(std::int64_t i) {
  Layer l;
  l.name = "block." + std::to_string(i);
  l.kind = LayerKind::BLOCK;
  return l;
}

/// QKᵀ and P·V batched over the b·a (sequence, head) pairs: cuBLAS GEMMs with eager attention, one fused kernel with
/// FlashAttention (set_attention_flops).
std::vector<Gemm> attention_core_gemms(const Dims& d) {
  const std::int64_t BA = d.b * d.a;
  return {{d.s, d.s, d.hd, BA, false}, {d.s, d.hd, d.s, BA, false}};
}

/// FLOPs of attention_core_gemms (integers well below 2^53: exact in any order).
Flops attention_core_flops(const Dims& d) {
  double f = 0;
  for (const Gemm& g : attention_core_gemms(d))
    f += g.flops();
  return Flops(f);
}

/// Appends the attention core's GEMMs to the block's cuBLAS list unless FlashAttention runs them.
void add_attention_core_gemms(Layer& l, const Dims& d) {
  if (d.flash)
    return;
  const std::vector<Gemm> core = attention_core_gemms(d);
  l.gemms.insert(l.gemms.end(), core.begin(), core.end());
}

/// The eager attention core of a block: QKᵀ and P·V batched over the b·a (sequence, head) pairs, with the tensors
/// autograd keeps between them (`saved`, freed by the backward part of `module`, the last projection before the
/// core) and the memory-bound bytes of the kernels between them (`bytes`).
AttentionCore eager_core(const Dims& d, const std::vector<double>& saved, const std::string& module, double bytes) {
  AttentionCore core;
  for (double t : saved)
    core.saved.push_back({t, module});
  core.flops = attention_core_flops(d).value();
  core.bytes = bytes;
  core.gemms = attention_core_gemms(d);
  return core;
}

/// Ends block `i`: finish() with the training's recomputation, then its attention FLOPs (set_attention_flops).
void finish_block(Layer& l, const Dims& d, Flops fwd, const Kernels& k, const std::vector<Saved>& saved,
                  const AttentionCore& core, std::int64_t i) {
  finish(l, d, fwd, k, saved, core, block_recompute(d));
  set_attention_flops(l, d, attention_core_flops(d).value(), i);
}

/// The targeted linear of block prefix `p` whose full path is `module`, or nullptr.
const scenario::LoraLinear* lora_target(const Dims& d, const std::string& p, const std::string& module) {
  for (const scenario::LoraLinear& l : d.lora)
    if (p + l.path == module)
      return &l;
  return nullptr;
}

/// With LoRA (every base weight frozen): drops the saved tensors that only a frozen weight's gradient needs
/// (Saved::weights). Autograd keeps a matmul operand only when the other operand's gradient is computed (PyTorch
/// tools/autograd/gen_variable_type.py, guard_for: the save is wrapped in grad_fn->should_compute_output), so a frozen
/// linear keeps no input and LlamaRMSNorm's weight multiply no normalised tensor. A target's input stays when
/// lora_dropout is 0: lora_A reads (and saves) that same tensor. No-op without LoRA.
void lora_saved(const Dims& d, std::vector<Saved>& saved, const std::string& p) {
  if (d.lora_rank == 0)
    return;
  std::erase_if(saved, [&](const Saved& t) {
    return !t.weights.empty() && std::none_of(t.weights.begin(), t.weights.end(), [&](const std::string& w) {
      return d.lora_dropout == 0 && lora_target(d, p, w) != nullptr;
    });
  });
}

/// LoRA on a block (training.lora_rank r; `p` its tensor-name prefix), as PEFT's lora.Linear runs a targeted linear
/// M (in -> out) on T = b·s tokens: result = base_layer(x) + lora_B(lora_A(dropout(x))) · alpha / r
/// (peft/tuners/lora/layer.py Linear.forward). Called before finish_block, on the block's forward FLOPs, kernels and
/// saved tensors:
///  - params: M's tensors renamed M.base_layer.weight / .bias (frozen, as every other tensor: build_workload), then
///    M.lora_A.default.weight (r·in) and M.lora_B.default.weight (out·r), trainable -- PEFT's names, so ZeRO-3 hooks
///    and fetches base_layer, lora_A.default and lora_B.default as the modules they are.
///  - GEMMs (fwd): lora_A 2·T·in·r, lora_B 2·T·r·out (Gemm::adapter: backward runs their dX and dW GEMMs).
///  - memory-bound kernels (fwd / bwd): nn.Dropout when p > 0, (2e+1)·T·in each way; the alpha/r scaling 2e·T·out
///    each way; the add onto the base output 3e·T·out / 0 (the add's backward is the identity); the sum of x's two
///    input gradients (base and adapter) 0 / 3e·T·in.
///  - saved: lora_B's input A·x, e·T·r (freed by lora_B's part); with p > 0 the dropout output e·T·in (lora_A's
///    input, freed by lora_A's part) and its 1-byte mask T·in (the dropout follows base_layer in forward: its part);
///    with p = 0 lora_A's input is x itself, the base's input entry of `saved`, which lora_saved() keeps.
///  Saved tensors (and the attention core's) that M's backward part freed now belong to M.base_layer.
void add_lora(Layer& l, const Dims& d, const std::string& p, Flops& fwd, Kernels& k, std::vector<Saved>& saved,
              AttentionCore& core) {
  if (d.lora_rank == 0)
    return;
  lora_saved(d, saved, p);
  const std::int64_t T = d.b * d.s, r = d.lora_rank;
  const double e = d.e, Td = d.T;
  const auto module = [](const std::string& tensor) { return tensor.substr(0, tensor.rfind('.')); };
  std::vector<ParamTensor> params;
  for (std::size_t i = 0; i < l.params.size(); ++i) {
    const ParamTensor& t = l.params[i];
    const std::string m = module(t.name);
    const scenario::LoraLinear* lin = lora_target(d, p, m);
    if (lin == nullptr) {
      params.push_back(t);
      continue;
    }
    params.push_back({m + ".base_layer" + t.name.substr(m.size()), t.numel, false});
    if (i + 1 < l.params.size() && module(l.params[i + 1].name) == m)
      continue; // the bias follows
    params.push_back({m + ".lora_A.default.weight", r * lin->in, true});
    params.push_back({m + ".lora_B.default.weight", lin->out * r, true});
    l.param_count += r * (lin->in + lin->out);
    fwd += gemm_flops(T, r, lin->in) + gemm_flops(T, lin->out, r);
    l.gemms.push_back({T, r, lin->in, 1, true, true});
    l.gemms.push_back({T, lin->out, r, 1, true, true});
    const double in = static_cast<double>(lin->in), out = static_cast<double>(lin->out);
    if (d.lora_dropout > 0) {
      k.add((2 * e + 1) * Td * in, (2 * e + 1) * Td * in);
      saved.push_back({e * Td * in, m + ".lora_A.default"});
      saved.push_back({Td * in, m + ".base_layer"});
    }
    k.add(2 * e * Td * out, 2 * e * Td * out); // * alpha / r
    k.add(3 * e * Td * out, 0); // result + adapter
    k.add(0, 3 * e * Td * in); // dx of base + dx of adapter
    saved.push_back({e * Td * static_cast<double>(r), m + ".lora_B.default"});
  }
  l.params = std::move(params);
  const auto rename = [&](std::string& m) {
    if (lora_target(d, p, m) != nullptr)
      m += ".base_layer";
  };
  for (Saved& t : saved)
    rename(t.module);
  for (Saved& t : core.saved)
    rename(t.module);
}

// ---------------------------------------------------------------------------------------------------------------
// Embeddings ("embed"): token table (V×h), and for GPT-2 the learned position table (max_positions×h).
// Tied LM head: the shared weight is listed here, where DeepSpeed's stage-3 hooks meet it first.
Layer make_embed(const Dims& d) {
  Layer l;
  l.name = "embed";
  l.kind = LayerKind::EMBEDDING;
  const double e = d.e;
  Kernels k;
  // int64 input_ids, kept by the token embedding's backward (indices)
  std::vector<Saved> saved{{8.0 * d.T, d.gpt2 ? "wte" : "embed_tokens"}};
  if (d.gpt2) {
    add_param(l, "wte.weight", d.V * d.h);
    add_param(l, "wpe.weight", d.pos * d.h);
    // fwd: two lookups (read ids + rows, write N_h) 2·2e·N_h; add tok+pos 3e·N_h; embd dropout (2e+1)·N_h.
    // bwd: each lookup's dense grad: zero-fill the table (e·rows·h) + read dy and scatter-add rows (3e·N_h);
    //      the add's backward is the identity; dropout backward reads dy and mask, writes dx: (2e+1)·N_h.
    //      Tied wte: PyTorch accumulates this grad onto the LM head's (read 2, write 1: +3e·V·h).
    const double wte_grad = e * static_cast<double>(d.V * d.h) * (d.tied ? 4.0 : 1.0);
    k.add(2 * e * d.N_h, wte_grad + 3 * e * d.N_h);
    k.add(2 * e * d.N_h, e * static_cast<double>(d.pos * d.h) + 3 * e * d.N_h);
    k.add(3 * e * d.N_h, 0);
    k.add((2 * e + 1) * d.N_h, (2 * e + 1) * d.N_h);
    saved.insert(saved.end(), {{8.0 * d.T, "wpe"}, {d.N_h, "wpe"}}); // position ids + dropout mask (1 B each)
  } else {
    add_param(l, "embed_tokens.weight", d.V * d.h);
    const double grad = e * static_cast<double>(d.V * d.h) * (d.tied ? 4.0 : 1.0);
    k.add(2 * e * d.N_h, grad + 3 * e * d.N_h);
  }
  finish(l, d, Flops(0), k, saved, {}, Recompute::NONE);
  // The dense table gradients are parameter gradients (param_grad_bytes_lp), not working memory; only with a tied
  // head is this layer's V×h gradient a temporary before PyTorch adds it onto the LM head's contribution.
  l.bwd_working_bytes = Bytes(d.tied ? e * static_cast<double>(d.V * d.h) : 0.0);
  if (d.lora_rank > 0) {
    // LoRA freezes the tables: no op here has an input that requires grad, so autograd records nothing -- no saved
    // ids or masks, no backward kernels, no table gradient. [simplification: the blocks' backward still runs in
    // full down to block 0, as with enable_input_require_grads, which PEFT with gradient checkpointing needs]
    l.activation_tensors.clear();
    l.activation_modules.clear();
    l.saved_activations = Bytes(0);
    l.bwd_bytes = Bytes(0);
    l.bwd_working_bytes = Bytes(0);
  }
  return l;
}

// ---------------------------------------------------------------------------------------------------------------
// GPT-2 block (HF GPT2Block, eager attention unless flash_attention).
// Params: ln_1 (w, b: h each), attn.c_attn (h×3h + 3h), attn.c_proj (h×h + h), ln_2, mlp.c_fc (h×I + I),
//         mlp.c_proj (I×h + h). With I = 4h: 12h² + 13h (Narayanan et al. 2021).
// GEMMs (fwd): c_attn 2·T·h·3h; QKᵀ 2·b·a·s·s·d; P·V 2·b·a·s·d·s; c_proj 2·T·h·h; c_fc 2·T·h·I; c_proj 2·T·I·h
//         -> with I = 4h: 24·b·s·h² + 4·b·s²·h.
// Memory-bound kernels (bytes, fwd / bwd):
//   ln_1, ln_2                       2e·N_h / 3e·N_h each (bwd reads dy, x; writes dx), + 2e·N_h each with
//                                    kernel_impl hf (the weight/bias-gradient kernel reads dy, x again: add_layernorm)
//   bias gradients (bwd only)        e·T·(3h + h + I + h): c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj (add_bias_grads)
//   c_attn output split (q,k,v)      0 / 2e·3N_h (split's backward concatenates the three grads)
//   scale by 1/√d          [eager]   2e·N_s / 2e·N_s
//   causal mask (where)    [eager]   2e·N_s / 2e·N_s
//   softmax                [eager]   2e·N_s / 3e·N_s (bwd reads dy, y)
//   attention dropout      [eager]   (2e+1)·N_s / (2e+1)·N_s (1-byte mask)
//   merge heads (contiguous)[eager]  2e·N_h / 2e·N_h (FlashAttention writes (b,s,a,d): a view)
//   2 residual dropouts              (2e+1)·N_h each, fwd and bwd
//   2 residual adds                  3e·N_h each; bwd: the gradient sum where the residual stream forks
//   GELU (one fused kernel)          2e·N_I / 3e·N_I
// Saved for backward (Korthikanti et al. 2022 §4.1 breakdown, with I for 4h):
//   ln_1 input e·N_h, c_attn input e·N_h, Q and K 2e·N_h, softmax output e·N_s, its dropout mask N_s, dropout
//   output e·N_s, V e·N_h, c_proj input e·N_h, residual dropout mask N_h; ln_2 input e·N_h, c_fc input e·N_h,
//   GELU input e·N_I, mlp.c_proj input e·N_I, residual dropout mask N_h.
//   = (8e + 2)·N_h + 2e·N_I + (2e + 1)·N_s, which for e = 2, I = 4h is 34·sbh + 5·a·s²·b = sbh(34 + 5as/h).
//   FlashAttention: the three N_s tensors are replaced by the fp32 log-sum-exp per row and head, 4·a·s·b.
Layer make_gpt2_block(const Dims& d, std::int64_t i) {
  Layer l = new_block(i);
  const std::string p = "h." + std::to_string(i) + ".";
  const std::int64_t h = d.h, I = d.I;
  add_param(l, p + "ln_1.weight", h);
  add_param(l, p + "ln_1.bias", h);
  add_param(l, p + "attn.c_attn.weight", h * 3 * h);
  add_param(l, p + "attn.c_attn.bias", 3 * h);
  add_param(l, p + "attn.c_proj.weight", h * h);
  add_param(l, p + "attn.c_proj.bias", h);
  add_param(l, p + "ln_2.weight", h);
  add_param(l, p + "ln_2.bias", h);
  add_param(l, p + "mlp.c_fc.weight", h * I);
  add_param(l, p + "mlp.c_fc.bias", I);
  add_param(l, p + "mlp.c_proj.weight", I * h);
  add_param(l, p + "mlp.c_proj.bias", h);

  const std::int64_t T = d.b * d.s;
  Flops fwd = gemm_flops(T, 3 * h, h) // c_attn
              + attention_core_flops(d) // QKᵀ and P·V per (sequence, head)
              + gemm_flops(T, h, h) // attn.c_proj
              + gemm_flops(T, I, h) // mlp.c_fc
              + gemm_flops(T, h, I); // mlp.c_proj
  l.gemms.push_back({T, 3 * h, h});
  add_attention_core_gemms(l, d);
  l.gemms.insert(l.gemms.end(), {{T, h, h}, {T, I, h}, {T, h, I}});

  const double e = d.e, Nh = d.N_h, NI = d.N_I, Ns = d.N_s;
  Kernels k;
  add_layernorm(k, d, Nh); // ln_1
  add_bias_grads(k, d, {3 * h, h, I, h}); // c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj
  k.add(0, 2 * e * 3 * Nh); // split backward (cat of dq, dk, dv)
  if (!d.flash) {
    k.add(2 * e * Ns, 2 * e * Ns); // scale
    k.add(2 * e * Ns, 2 * e * Ns); // causal mask
    k.add(2 * e * Ns, 3 * e * Ns); // softmax
    k.add((2 * e + 1) * Ns, (2 * e + 1) * Ns); // attention dropout
    k.add(2 * e * Nh, 2 * e * Nh); // merge heads
    k.footprint(e * (2 * Nh + Ns), e * (2 * Nh + 2 * Ns)); // QKᵀ: Q, K in, scores out (bwd: + dscores)
  }
  k.add((2 * e + 1) * Nh, (2 * e + 1) * Nh); // attention residual dropout
  k.add(3 * e * Nh, 3 * e * Nh); // residual add
  add_layernorm(k, d, Nh); // ln_2
  const double gelu_saved = add_gelu(k, d, NI); // GELU
  k.footprint(e * (Nh + NI), e * (2 * Nh + 2 * NI)); // c_fc in/out (bwd: dy, dx, saved x)
  k.add((2 * e + 1) * Nh, (2 * e + 1) * Nh); // MLP residual dropout
  k.add(3 * e * Nh, 3 * e * Nh); // residual add

  // In forward order, each with the module whose backward part frees it: ln_1 and c_attn inputs; Q, K, V (and
  // FlashAttention's log-sum-exp), kept by the attention core after c_attn; c_proj input and the residual dropout's
  // mask; ln_2 and c_fc inputs; GELU input (and gelu_new's tanh output, 0.5·x, 1 + tanh) after c_fc; mlp.c_proj
  // input and the residual dropout's mask.
  const std::string attn = p + "attn.c_attn", attn_proj = p + "attn.c_proj", fc = p + "mlp.c_fc",
                    mlp_proj = p + "mlp.c_proj";
  // Saved::weights: the inputs of c_attn, c_fc and mlp.c_proj (GELU's output), and with eager attention attn.c_proj's
  // (merge_heads' copy; FlashAttention's output O, which the kernel keeps, otherwise) serve their weight gradients only.
  const std::vector<std::string> proj_input =
      d.flash ? std::vector<std::string>{} : std::vector<std::string>{attn_proj};
  std::vector<Saved> saved{{e * Nh, p + "ln_1"},
                           {e * Nh, attn, {attn}},
                           {e * Nh, attn},
                           {e * Nh, attn},
                           {e * Nh, attn}};
  if (d.flash)
    saved.push_back({4.0 * static_cast<double>(d.a * d.s * d.b), attn}); // fp32 log-sum-exp
  saved.insert(saved.end(), {{e * Nh, attn_proj, proj_input},
                             {Nh, attn_proj},
                             {e * Nh, p + "ln_2"},
                             {e * Nh, fc, {fc}},
                             {e * NI, fc}});
  if (gelu_saved > 0)
    saved.insert(saved.end(), 3, {gelu_saved / 3, fc});
  saved.insert(saved.end(), {{e * NI, mlp_proj, {mlp_proj}}, {Nh, mlp_proj}});
  AttentionCore core;
  if (!d.flash) {
    // saved: softmax output, its dropout mask, dropout output; bytes: scale, mask, softmax, dropout
    core = eager_core(d, {e * Ns, Ns, e * Ns}, attn, 2 * e * Ns + 2 * e * Ns + 2 * e * Ns + (2 * e + 1) * Ns);
  }
  add_lora(l, d, p, fwd, k, saved, core);
  finish_block(l, d, fwd, k, saved, core, i);
  return l;
}

// ---------------------------------------------------------------------------------------------------------------
// OPT block (HF OPTDecoderLayer with do_layer_norm_before, eager OPTAttention unless flash_attention; biases;
// LayerNorm; ReLU MLP of size I = ffn_dim). Same parameters and FLOPs as a GPT-2 block with separate q/k/v.
// Attention (transformers OPTAttention, eager, 4.2x-4.4x): q = q_proj(x) * d^-1/2, q/k/v reshaped to (b·a, s, d)
//   contiguous, scores = bmm(q, kᵀ), + causal mask, torch.max(scores, dtype min) (clamp), softmax with
//   dtype=float32, .to(fp16/bf16), dropout (attention_dropout = 0.0 in every OPT config: the identity),
//   bmm(probs, v), transpose + reshape (a copy), out_proj.
// Memory-bound kernels (bytes, fwd / bwd):
//   self_attn_layer_norm, final_layer_norm   2e·N_h / 3e·N_h each, + 2e·N_h each with kernel_impl hf (add_layernorm)
//   bias gradients (bwd only)                e·T·(4h + I + h): q/k/v/out_proj, fc1, fc2 (add_bias_grads)
//   q scaling                                 2e·N_h / 2e·N_h
//   q, k, v reshape copies                    3 x 2e·N_h / 3 x 2e·N_h
//   mask add                         [eager]  2e·N_s / 0 (the gradient passes through)
//   clamp (maximum)                  [eager]  2e·N_s / 3e·N_s (reads dy and its saved input)
//   softmax to fp32                  [eager]  (e+4)·N_s / (4+4+e)·N_s (reads dy, y in fp32, writes dx)
//   cast back to 16 bits             [eager]  (4+e)·N_s / (e+4)·N_s
//   merge heads (reshape copy)       [eager]  2e·N_h / 2e·N_h
//   2 residual dropouts (p = 0.1)             (2e+1)·N_h each, fwd and bwd
//   2 residual adds                           3e·N_h each
//   ReLU                                      2e·N_I / 3e·N_I (backward reads dy and its output)
// Saved for backward: LN input e·N_h, q/k/v projections' input e·N_h, q, k, v e·N_h each, out_proj input e·N_h,
//   dropout mask N_h; LN input e·N_h, fc1 input e·N_h, ReLU output (fc2's input too) e·N_I, dropout mask N_h; eager
//   attention: the clamp's input e·N_s, the fp32 softmax output 4·N_s, the 16-bit probabilities e·N_s.
//   = (8e + 2)·N_h + e·N_I + (2e + 4)·N_s, which for e = 2, I = 4h is 26·sbh + 8·a·s²·b (GPT-2: 34·sbh + 5·a·s²·b).
Layer make_opt_block(const Dims& d, std::int64_t i) {
  Layer l = new_block(i);
  const std::string p = "layers." + std::to_string(i) + ".";
  const std::int64_t h = d.h, I = d.I;
  for (const char* proj : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
    add_param(l, p + "self_attn." + proj + ".weight", h * h);
    add_param(l, p + "self_attn." + proj + ".bias", h);
  }
  add_param(l, p + "self_attn_layer_norm.weight", h);
  add_param(l, p + "self_attn_layer_norm.bias", h);
  add_param(l, p + "fc1.weight", I * h);
  add_param(l, p + "fc1.bias", I);
  add_param(l, p + "fc2.weight", h * I);
  add_param(l, p + "fc2.bias", h);
  add_param(l, p + "final_layer_norm.weight", h);
  add_param(l, p + "final_layer_norm.bias", h);

  const std::int64_t T = d.b * d.s;
  Flops fwd = 4.0 * gemm_flops(T, h, h) // q, k, v, out_proj
              + attention_core_flops(d) // QKᵀ and P·V per (sequence, head)
              + gemm_flops(T, I, h) // fc1
              + gemm_flops(T, h, I); // fc2
  l.gemms.insert(l.gemms.end(), {{T, h, h}, {T, h, h}, {T, h, h}});
  add_attention_core_gemms(l, d);
  l.gemms.insert(l.gemms.end(), {{T, h, h}, {T, I, h}, {T, h, I}});

  const double e = d.e, Nh = d.N_h, NI = d.N_I, Ns = d.N_s;
  Kernels k;
  add_layernorm(k, d, Nh); // self_attn_layer_norm
  add_bias_grads(k, d, {h, h, h, h, I, h}); // q/k/v/out_proj, fc1, fc2
  k.add(2 * e * Nh, 2 * e * Nh); // q scaling
  k.add(3 * 2 * e * Nh, 3 * 2 * e * Nh); // q, k, v reshape copies
  if (!d.flash) {
    k.add(2 * e * Ns, 0); // mask add
    k.add(2 * e * Ns, 3 * e * Ns); // clamp at the dtype's minimum
    k.add((e + 4) * Ns, (8 + e) * Ns); // softmax to fp32
    k.footprint((e + 4 + 4) * Ns, (4 + 4 + 4 + e) * Ns); // softmax: lp in, fp32 out (bwd: dy, y, dx)
    if (!d.fp32) // fp32: .to(query.dtype) is a no-op
      k.add((4 + e) * Ns, (e + 4) * Ns); // cast back
    k.add(2 * e * Nh, 2 * e * Nh); // merge heads
  }
  k.add((2 * e + 1) * Nh, (2 * e + 1) * Nh); // attention residual dropout
  k.add(3 * e * Nh, 3 * e * Nh); // residual add
  add_layernorm(k, d, Nh); // final_layer_norm
  k.add(2 * e * NI, 3 * e * NI); // ReLU
  k.footprint(e * (Nh + NI), e * (2 * Nh + 2 * NI)); // fc1 in/out (bwd: dy, dx, saved x)
  k.add((2 * e + 1) * Nh, (2 * e + 1) * Nh); // MLP residual dropout
  k.add(3 * e * Nh, 3 * e * Nh); // residual add

  // In forward order, each with the module whose backward part frees it: LN input, q/k/v input; q, k, v (and
  // FlashAttention's log-sum-exp) kept by the attention core after v_proj; out_proj input, dropout mask; LN input, fc1
  // input, ReLU output (fc2's input too; ReLU's backward, after fc1, frees it), dropout mask. The parameters come in
  // registration order (self_attn, then the norms and the MLP), so a norm's part is not where it runs: the
  // self-attention norm's input lives to the layer's end and the final norm's to fc1's part, after which its
  // backward runs.
  // Saved::weights: the q/k/v input, fc1's input and with eager attention out_proj's (the reshape copy; with
  // FlashAttention the entry stands for the output O the kernel keeps) serve weight gradients only.
  const std::string q_proj = p + "self_attn.q_proj", v_proj = p + "self_attn.v_proj",
                    out_proj = p + "self_attn.out_proj", fc1 = p + "fc1";
  const std::vector<std::string> out_input = d.flash ? std::vector<std::string>{} : std::vector<std::string>{out_proj};
  std::vector<Saved> saved{{e * Nh, ""},
                           {e * Nh, q_proj, {q_proj, p + "self_attn.k_proj", v_proj}},
                           {e * Nh, v_proj},
                           {e * Nh, v_proj},
                           {e * Nh, v_proj}};
  if (d.flash)
    saved.push_back({4.0 * static_cast<double>(d.a * d.s * d.b), v_proj}); // fp32 log-sum-exp
  saved.insert(saved.end(), {{e * Nh, out_proj, out_input},
                             {Nh, out_proj},
                             {e * Nh, fc1},
                             {e * Nh, fc1, {fc1}},
                             {e * NI, fc1},
                             {Nh, p + "fc2"}});
  AttentionCore core;
  if (!d.flash) {
    // saved: clamp input, fp32 softmax output, 16-bit probabilities; bytes: mask add, clamp, softmax, cast
    core = d.fp32 // fp32: the probabilities are the softmax output itself
               ? eager_core(d, {e * Ns, 4 * Ns}, v_proj, 2 * e * Ns + 2 * e * Ns + (e + 4) * Ns)
               : eager_core(d, {e * Ns, 4 * Ns, e * Ns}, v_proj, 2 * e * Ns + 2 * e * Ns + (e + 4) * Ns + (4 + e) * Ns);
  }
  add_lora(l, d, p, fwd, k, saved, core);
  finish_block(l, d, fwd, k, saved, core, i);
  return l;
}

// ---------------------------------------------------------------------------------------------------------------
// LLaMA block (HF LlamaDecoderLayer, eager attention unless flash_attention; no biases; RMSNorm; SwiGLU; RoPE).
// The attention runs at the query width h_q = a·d (LlamaAttention: q_proj h -> a·d, o_proj a·d -> h, with d =
// config.head_dim), which is h unless model.head_dim says otherwise (Mistral-NeMo-12B: h 5120, h_q 32·128 = 4096);
// the residual stream, the norms and the MLP stay at h.
// Params: input_layernorm (h), q_proj (h×h_q), k_proj, v_proj (h×h_kv each), o_proj (h_q×h), post_attention_layernorm
//         (h), gate_proj, up_proj (h×I each), down_proj (I×h).
// GEMMs (fwd): q 2·T·h·h_q; k, v 2·T·h·h_kv each; QKᵀ and P·V 2·b·a·s²·d each (over all a query heads); o 2·T·h_q·h;
//         gate, up 2·T·h·I each; down 2·T·I·h  (SwiGLU: 3 GEMMs).
// Memory-bound kernels (bytes, fwd / bwd):
//   2 RMSNorms (fused)                    2e·N_h / 3e·N_h each
//   RoPE on q and k (fused)               2e·(N_q + N_kv) / same
//   repeat_kv of K and V [eager, kv < a]  2·e·(N_kv + N_q) / same (bwd sums the copies back)
//   scale (× 1/√d)         [eager]        2e·N_s / 2e·N_s
//   causal mask add        [eager]        2e·N_s / 0 (the add's backward is the identity)
//   softmax in fp32 + cast to lp [eager]  (e+4)·N_s + (4+e)·N_s / cast bwd (e+4)·N_s + softmax bwd (4+4+e)·N_s
//   attention dropout: attention_dropout = 0.0 in every LLaMA config, a no-op
//   transpose + contiguous of the output [eager]  2e·N_q / 2e·N_q
//   2 residual adds                       3e·N_h each, fwd and bwd (gradient sum at the fork)
//   SiLU(gate)                            2e·N_I / 3e·N_I
//   SiLU(gate) · up                       3e·N_I / 5e·N_I (bwd reads dy and both operands, writes two grads)
//   input-grad sums at the q/k/v and gate/up forks: bwd only, 3 × 3e·N_h
//   bias gradients (model.attention_bias, bwd only): e·(N_q + 2·N_kv) for q/k/v, + e·N_h for o_proj (add_bias_grads)
// Saved for backward:
//   eager: input_layernorm input e·N_h; q/k/v input e·N_h; roped Q e·N_q; repeated K e·N_q and V e·N_q (what the
//     matmuls keep, repeated to a heads; equal to K, V when kv = a); softmax fp32 output 4·N_s (softmax's backward
//     needs it) and the lp probabilities e·N_s (P·V's operand); o_proj input e·N_q; post_attention_layernorm input
//     e·N_h; gate/up input e·N_h; SiLU input (gate output) e·N_I; SiLU output e·N_I and up output e·N_I (the
//     product's operands); down_proj input e·N_I.  = 4e·N_h + 4e·N_q + 4e·N_I + (4 + e)·N_s (8e·N_h + ... when
//     h_q = h).  No dropout masks.
//   FlashAttention: Q e·N_q, K and V at KV size 2e·N_kv, output O e·N_q (o_proj's input is a view of it) and the
//     fp32 log-sum-exp 4·a·s·b, replacing Q, K_rep, V_rep, the N_s tensors and the o_proj input:
//     = e·(4·N_h + 2·N_q + 2·N_kv) + 4e·N_I + 4·a·s·b.
Layer make_llama_block(const Dims& d, std::int64_t i) {
  Layer l = new_block(i);
  const std::string p = "layers." + std::to_string(i) + ".";
  const std::int64_t h = d.h, hq = d.h_q, I = d.I, hkv = d.h_kv;
  // Attention biases (Qwen2: q/k/v; attention_bias: true: all four) and MLP biases (mlp_bias: true) are added
  // inside the projections' addmm: no kernel, FLOPs or saved tensor of their own.
  const bool qkv_bias = d.attention_bias != scenario::AttentionBias::NONE;
  const bool o_bias = d.attention_bias == scenario::AttentionBias::QKVO;
  add_param(l, p + "input_layernorm.weight", h);
  add_param(l, p + "self_attn.q_proj.weight", hq * h);
  if (qkv_bias)
    add_param(l, p + "self_attn.q_proj.bias", hq);
  add_param(l, p + "self_attn.k_proj.weight", hkv * h);
  if (qkv_bias)
    add_param(l, p + "self_attn.k_proj.bias", hkv);
  add_param(l, p + "self_attn.v_proj.weight", hkv * h);
  if (qkv_bias)
    add_param(l, p + "self_attn.v_proj.bias", hkv);
  add_param(l, p + "self_attn.o_proj.weight", h * hq);
  if (o_bias)
    add_param(l, p + "self_attn.o_proj.bias", h);
  add_param(l, p + "post_attention_layernorm.weight", h);
  add_param(l, p + "mlp.gate_proj.weight", I * h);
  if (d.mlp_bias)
    add_param(l, p + "mlp.gate_proj.bias", I);
  add_param(l, p + "mlp.up_proj.weight", I * h);
  if (d.mlp_bias)
    add_param(l, p + "mlp.up_proj.bias", I);
  add_param(l, p + "mlp.down_proj.weight", h * I);
  if (d.mlp_bias)
    add_param(l, p + "mlp.down_proj.bias", h);

  const std::int64_t T = d.b * d.s;
  Flops fwd = gemm_flops(T, hq, h) // q_proj
              + 2.0 * gemm_flops(T, hkv, h) // k_proj, v_proj
              + attention_core_flops(d) // QKᵀ and P·V
              + gemm_flops(T, h, hq) // o_proj
              + 2.0 * gemm_flops(T, I, h) // gate_proj, up_proj
              + gemm_flops(T, h, I); // down_proj
  l.gemms.insert(l.gemms.end(), {{T, hq, h}, {T, hkv, h}, {T, hkv, h}});
  add_attention_core_gemms(l, d);
  l.gemms.insert(l.gemms.end(), {{T, h, hq}, {T, I, h}, {T, I, h}, {T, h, I}});

  const double e = d.e, Nh = d.N_h, Nq = d.N_q, Nkv = d.N_kv, NI = d.N_I, Ns = d.N_s;
  Kernels k;
  double norm_saved = add_rmsnorm(k, d, Nh); // input_layernorm
  if (qkv_bias)
    add_bias_grads(k, d, {hq, hkv, hkv});
  if (o_bias)
    add_bias_grads(k, d, {h});
  k.add(0, 2 * 3 * e * Nh); // dx sums of q/k/v projections (2 adds, at the input's width h)
  add_rope(k, d, Nq); // RoPE on q
  add_rope(k, d, Nkv); // RoPE on k
  if (!d.flash) {
    if (d.kv < d.a)
      k.add(2 * e * (Nkv + Nq), 2 * e * (Nkv + Nq)); // repeat_kv K and V (each to a heads: N_q)
    k.add(2 * e * Ns, 2 * e * Ns); // scale
    k.add(2 * e * Ns, 0); // mask add
    if (d.fp32) { // softmax(dtype=fp32) of fp32 scores: one kernel; .to(query.dtype) and its backward are no-ops
      k.add(8 * Ns, 12 * Ns);
      k.footprint(8 * Ns, 12 * Ns);
    } else {
      k.add((e + 4) * Ns + (4 + e) * Ns, (e + 4) * Ns + (8 + e) * Ns); // fp32 softmax + cast
      k.footprint((e + 4 + 4) * Ns, (4 + 4 + 4 + e) * Ns); // softmax: lp in, fp32 out, (bwd: dy, y, dx)
    }
    k.add(2 * e * Nq, 2 * e * Nq); // transpose + contiguous
  }
  k.add(3 * e * Nh, 3 * e * Nh); // residual add
  norm_saved += add_rmsnorm(k, d, Nh); // post_attention_layernorm
  k.add(0, 3 * e * Nh); // dx sum of gate/up projections
  k.add(2 * e * NI, 3 * e * NI); // SiLU
  k.add(3 * e * NI, 5 * e * NI); // SiLU(gate) · up
  k.footprint(e * (Nh + 2 * NI), e * (2 * Nh + 4 * NI)); // gate/up GEMMs: x in, two outputs (bwd: + grads)
  k.add(3 * e * Nh, 3 * e * Nh); // residual add

  // In forward order, each with the module whose backward part frees it: the input norm's input (and with kernel_impl
  // hf its fp32 copy); the q/k/v input; what the attention core keeps after v_proj (eager: roped Q, repeated K and
  // V; FlashAttention: Q, K, V, the output O -- o_proj's input is a view of it -- and the fp32 log-sum-exp); eager:
  // o_proj's input; the post-attention norm's input (and fp32 copy); the gate/up input; SiLU's input after gate_proj;
  // the product's operands (SiLU output, up output) after up_proj; down_proj's input.
  const std::string input_norm = p + "input_layernorm", post_norm = p + "post_attention_layernorm",
                    v_proj = p + "self_attn.v_proj", gate = p + "mlp.gate_proj";
  // Saved::weights: with kernel_impl hf the norm's first entry is its normalised tensor, which only the norm
  // weight's gradient reads; the q/k/v input is kept for the three weight gradients only (and so on below).
  const auto hf_norm = [&](const std::string& norm) {
    return d.hf_kernels ? std::vector<std::string>{norm} : std::vector<std::string>{};
  };
  const std::string q_proj = p + "self_attn.q_proj", up = p + "mlp.up_proj", down = p + "mlp.down_proj";
  std::vector<Saved> saved{{e * Nh, input_norm, hf_norm(input_norm)}};
  if (norm_saved > 0) // kernel_impl hf: each RMSNorm's fp32 copy of its input
    saved.push_back({norm_saved / 2, input_norm});
  saved.push_back({e * Nh, q_proj, {q_proj, p + "self_attn.k_proj", v_proj}});
  if (d.flash)
    saved.insert(saved.end(), {{e * Nq, v_proj},
                               {e * Nkv, v_proj},
                               {e * Nkv, v_proj},
                               {e * Nq, v_proj},
                               {4.0 * static_cast<double>(d.a * d.s * d.b), v_proj}});
  else
    saved.insert(saved.end(), {{e * Nq, v_proj},
                               {e * Nq, v_proj},
                               {e * Nq, v_proj},
                               {e * Nq, p + "self_attn.o_proj", {p + "self_attn.o_proj"}}});
  saved.push_back({e * Nh, post_norm, hf_norm(post_norm)});
  if (norm_saved > 0)
    saved.push_back({norm_saved / 2, post_norm});
  saved.insert(saved.end(),
               {{e * Nh, gate, {gate, up}}, {e * NI, gate}, {e * NI, up}, {e * NI, up}, {e * NI, down, {down}}});
  AttentionCore core;
  if (!d.flash && d.fp32) // saved: the fp32 softmax output, which is also P·V's operand (the cast is a no-op)
    core = eager_core(d, {4 * Ns}, v_proj, 2 * e * Ns + 2 * e * Ns + 8 * Ns);
  else if (!d.flash) // saved: fp32 softmax output, lp probabilities; bytes: scale, mask, fp32 softmax + cast
    core = eager_core(d, {4 * Ns, e * Ns}, v_proj, 2 * e * Ns + 2 * e * Ns + (e + 4) * Ns + (4 + e) * Ns);
  add_lora(l, d, p, fwd, k, saved, core);
  finish_block(l, d, fwd, k, saved, core, i);
  return l;
}

// ---------------------------------------------------------------------------------------------------------------
// Head ("head"): final norm (GPT-2 ln_f w+b / LLaMA norm w), LM head (V×h, no bias; its weight lives in "embed"
// when tied) and the loss. HF's loss (ForCausalLMLoss) upcasts the logits to fp32, then cross_entropy =
// log_softmax + nll_loss.
// GEMM (fwd): logits 2·T·h·V (counted here even when the weight is tied).
// Memory-bound kernels (bytes, fwd / bwd), N_V = T·V:
//   final norm                 2e·N_h / 3e·N_h (+ 2e·N_h for a LayerNorm with kernel_impl hf: add_layernorm)
//   logits.float()             (e + 4)·N_V / cast bwd (4 + e)·N_V
//   log_softmax                (4 + 4)·N_V / (4 + 4 + 4)·N_V (reads dy, y; writes dx)
//   nll_loss                   O(T) / writes the fp32 gradient 4·N_V
// Saved: norm input e·N_h, LM-head input e·N_h, lp logits e·N_V (also returned in the model output, alive until
// after backward), fp32 log_softmax output 4·N_V. Transient in forward: the fp32 upcast 4·N_V (freed once the loss
// is computed). Transient in backward: two fp32 logit gradients (log_softmax's dy and dx) 8·N_V.
// training.loss_impl megatron (Megatron-LM megatron/mpu/cross_entropy.py _VocabParallelCrossEntropy on
// output.float(), fp16_lm_cross_entropy off): max over the vocabulary, then sub_, exp (out= itself) and div_ in place
// in the fp32 copy, which is saved as the softmax; backward subtracts 1 at the targets and mul_s by the loss
// gradient in place (that tensor is the fp32 gradient), then the cast back to 16 bits.
//   fwd: cast (e + 4)·N_V, max 4·N_V, sub_ 8·N_V, exp 8·N_V, sum 4·N_V, div_ 8·N_V; bwd: mul_ 8·N_V, cast (4 + e)·N_V.
//   Saved: norm and LM-head inputs 2e·N_h, the fp32 softmax 4·N_V (the lp logits are not kept: Megatron returns the
//   loss only). Transient in forward: the lp logits e·N_V until the cast; in backward: the lp gradient e·N_V.
Layer make_head(const Dims& d) {
  Layer l;
  l.name = "head";
  l.kind = LayerKind::HEAD;
  if (d.gpt2) {
    add_param(l, "ln_f.weight", d.h);
    add_param(l, "ln_f.bias", d.h);
  } else {
    add_param(l, "norm.weight", d.h);
  }
  if (!d.tied)
    add_param(l, "lm_head.weight", d.V * d.h);
  const std::int64_t T = d.b * d.s;
  const Flops fwd = gemm_flops(T, d.V, d.h);
  l.gemms.push_back({T, d.V, d.h});
  const double e = d.e, Nh = d.N_h, NV = d.T * static_cast<double>(d.V);
  Kernels k;
  // LLaMA's final norm is an RMSNorm (hf: LlamaRMSNorm in eager, its fp32 copy saved); GPT-2's a LayerNorm kernel.
  const double norm_saved = d.gpt2 ? (add_layernorm(k, d, Nh), 0.0) : add_rmsnorm(k, d, Nh); // final norm
  // Saved, with the module whose backward part frees it: the norm's input (and fp32 copy), the LM head's input and
  // the loss's tensors, which the LM head's part runs (a tied head has no part of its own here: the layer's end).
  const std::string norm = d.gpt2 ? "ln_f" : "norm", lm_head = d.tied ? "" : "lm_head";
  // Saved::weights (dropped with LoRA's frozen head, lora_saved): the LM head's input, and LlamaRMSNorm's normalised
  // tensor (kernel_impl hf: the norm's first entry).
  std::vector<Saved> saved{
      {e * Nh, norm, norm_saved > 0 ? std::vector<std::string>{norm} : std::vector<std::string>{}}};
  if (norm_saved > 0)
    saved.push_back({norm_saved, norm});
  saved.push_back({e * Nh, lm_head, {"lm_head"}});
  lora_saved(d, saved, "");
  if (d.megatron_loss) {
    // fp32: output.float() is the output itself [simplification: its in-place sub_/exp/div_ then still counted as
    // on a copy; Megatron's loss is not what an fp32 HF run uses]
    if (!d.fp32)
      k.add((e + 4) * NV, (4 + e) * NV); // output.float() and its backward cast
    k.add(32 * NV, 8 * NV); // max, sub_, exp, sum, div_ / mul_ (in place)
    saved.push_back({4 * NV, lm_head});
    finish(l, d, fwd, k, saved, {}, Recompute::NONE);
    l.fwd_working_bytes = Bytes(e * NV);
    l.bwd_working_bytes = Bytes(e * NV);
    return l;
  }
  if (!d.fp32) // fp32: logits.float() is the logits tensor itself (no kernel, no transient)
    k.add((e + 4) * NV, (4 + e) * NV); // fp32 upcast
  k.add(8 * NV, 12 * NV); // log_softmax
  k.add(0, 4 * NV); // nll_loss backward
  saved.insert(saved.end(), {{e * NV, lm_head}, {4 * NV, lm_head}});
  finish(l, d, fwd, k, saved, {}, Recompute::NONE);
  l.fwd_working_bytes = Bytes(d.fp32 ? 0 : 4 * NV);
  l.bwd_working_bytes = Bytes(8 * NV);
  return l;
}

/// Module name of a parameter tensor: its name without the last component ("h.0.mlp.c_fc.weight" -> "h.0.mlp.c_fc").
std::string module_of(const std::string& tensor) {
  const auto dot = tensor.rfind('.');
  return dot == std::string::npos ? tensor : tensor.substr(0, dot);
}

} // namespace

Elements adapter_numel(Elements numel, double f) {
  if (f >= 1)
    return numel;
  return std::min<Elements>(numel, static_cast<Elements>(std::llround(f * static_cast<double>(numel))));
}

Workload build_workload(const scenario::ModelSpec& model, const scenario::TrainingSpec& training) {
  const Dims d = resolve(model, training);
  Workload w;
  w.model = model;
  w.model.kv_heads = d.kv; // resolved: 0 -> heads
  w.model.intermediate = d.I; // resolved: 0 -> 4h (GPT-2)
  w.training = training;
  if (training.lora_rank > 0 && training.lora_targets.empty()) // resolved: PEFT's default for the family
    w.training.lora_targets = scenario::lora_default_targets(model.family);
  w.bytes_per_lp = d.e;
  w.tokens_per_micro_batch = d.b * d.s;

  w.layers.reserve(static_cast<std::size_t>(d.L) + 2);
  w.layers.push_back(make_embed(d));
  for (std::int64_t i = 0; i < d.L; ++i)
    w.layers.push_back(d.opt ? make_opt_block(d, i) : d.gpt2 ? make_gpt2_block(d, i) : make_llama_block(d, i));
  w.layers.push_back(make_head(d));

  // "Largest layer" as DeepSpeed's estimators define it: the largest module's direct parameters
  // (sum of p.numel() for p in m.parameters(recurse=False)); a tied LM head's module holds the same V×h tensor.
  std::map<std::string, Elements> per_module; // ordered: deterministic
  if (d.lora_rank > 0) // PEFT: every base weight and bias frozen (requires_grad False), the adapters train
    for (Layer& layer : w.layers) {
      Elements trained = 0;
      for (ParamTensor& t : layer.params) {
        t.trainable = t.name.find(".lora_A.") != std::string::npos || t.name.find(".lora_B.") != std::string::npos;
        trained += t.trainable ? t.numel : 0;
      }
      layer.param_grad_bytes_lp = bytes_of(trained, d.e);
    }
  for (const Layer& layer : w.layers) {
    for (const ParamTensor& t : layer.params) {
      w.total_params += t.numel;
      if (t.trainable)
        w.trainable_params += adapter_numel(t.numel, d.trainable);
      w.largest_tensor_numel = std::max(w.largest_tensor_numel, t.numel);
      per_module[module_of(t.name)] += t.numel;
    }
    w.model_flops_per_micro_batch += layer.fwd_flops + layer.bwd_flops;
    w.hardware_flops_per_micro_batch += layer.fwd_flops + layer.bwd_flops + layer.recompute_flops;
  }
  for (const auto& [name, n] : per_module)
    w.largest_layer_params = std::max(w.largest_layer_params, n);
  return w;
}

AttentionKernelTime attention_kernel_time(scenario::FlashAttentionKernel k) {
  if (k == scenario::FlashAttentionKernel::TRITON)
    return {1.4, 2.0};
  return {};
}

GemmHardware gemm_hardware(const scenario::GpuSpec& gpu, double element_bytes, FlopRate peak) {
  return GemmHardware{gpu.sm_count, (peak.value() > 0 ? peak : gpu.peak_lp).value() * gpu.matmul_efficiency,
                      gpu.memory_bandwidth.value() * gpu.memory_efficiency, element_bytes};
}

LayerGemmUtilization layer_gemm_utilization(const Layer& layer, const GemmHardware& hw) {
  // Backward: every dX GEMM, and each weight's dW GEMM for the trainable fraction of its work (flops and time both
  // scaled by wgrad_fraction), as bwd_flops counts them.
  double backward = 1;
  if (hw.sm_count > 0 && !layer.gemms.empty()) {
    double flops = 0, seconds = 0;
    for (const Gemm& g : layer.gemms) {
      const auto b = backward_gemms(g);
      const double dw = g.weight && !g.adapter ? layer.wgrad_fraction : 1.0;
      flops += b[0].flops() + dw * b[1].flops();
      seconds += gemm_seconds(b[0], hw) + dw * gemm_seconds(b[1], hw);
    }
    backward = seconds > 0 ? std::min(1.0, flops / hw.flop_rate / seconds) : 1.0; // <= 1 but for rounding
  }
  return {gemm_utilization(layer.gemms, hw), gemm_utilization(layer.recompute_gemms, hw), backward};
}

std::vector<LayerGemmUtilization> gemm_utilizations(const Workload& w, const GemmHardware& hw) {
  std::vector<LayerGemmUtilization> out;
  out.reserve(w.layers.size());
  const Layer* last = nullptr;
  for (const Layer& l : w.layers) {
    const bool same = last != nullptr && last->gemms == l.gemms && last->recompute_gemms == l.recompute_gemms &&
                      last->wgrad_fraction == l.wgrad_fraction;
    out.push_back(same ? out.back() : layer_gemm_utilization(l, hw)); // the blocks repeat
    last = &l;
  }
  return out;
}

double step_gemm_utilization(const Workload& w, const GemmHardware& hw) {
  // The GEMM FLOPs of each pass are the layer's FLOPs less those of the fused attention kernels.
  double flops = 0, scaled = 0; // FLOPs, and FLOPs / utilization (time at the large-GEMM rate)
  const auto u = gemm_utilizations(w, hw);
  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    const Layer& l = w.layers[i];
    const double fwd = l.fwd_flops.value() - l.fwd_attention_flops.value();
    const double re = l.recompute_flops.value() - l.recompute_attention_flops.value();
    const double bwd = l.bwd_flops.value() - l.bwd_attention_flops.value();
    flops += fwd + re + bwd;
    scaled += fwd / u[i].forward + re / u[i].recompute + bwd / u[i].backward;
  }
  return scaled > 0 ? flops / scaled : 1.0;
}

} // namespace zerosim::workload
