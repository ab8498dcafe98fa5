#include "sim/workload/workload.hpp"

#include "sim/error.hpp"
#include "sim/workload/formulas.hpp"

#include "tests/workload/model_specs.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

using namespace zerosim;
using namespace zerosim::workload;
using scenario::ModelFamily;
using scenario::ModelSpec;
using scenario::TrainingSpec;
using workload::testing::gpt2;
using workload::testing::llama;

namespace {
constexpr double kExact = 1e-12; // the same closed form summed in another order
constexpr double kRatioDigits = 1e-6; // a hand ratio written to 7 digits

TrainingSpec training(std::int64_t b, std::int64_t s, bool ckpt = false, bool flash = false) {
  TrainingSpec t;
  t.micro_batch = b;
  t.seq_len = s;
  t.activation_checkpointing = ckpt;
  t.flash_attention = flash;
  return t;
}
const Layer& layer(const Workload& w, const std::string& name) {
  for (const Layer& l : w.layers)
    if (l.name == name)
      return l;
  FAIL("no layer " << name);
  return w.layers.front();
}
} // namespace

TEST_CASE("build_workload: parameter counts equal the Hugging Face checkpoints", "[workload][validation]") {
  // Sums of the checkpoints' tensors (model.num_parameters() with tied weights counted once).
  SECTION("gpt2") { REQUIRE(build_workload(gpt2(768, 12, 12), training(1, 1024)).total_params == 124'439'808); }
  SECTION("gpt2-xl") { REQUIRE(build_workload(gpt2(1600, 48, 25), training(1, 1024)).total_params == 1'557'611'200); }
  SECTION("llama-2-7b") {
    REQUIRE(build_workload(llama(4096, 32, 32, 32, 11008, 32000), training(1, 4096)).total_params == 6'738'415'616);
  }
  SECTION("llama-2-13b") {
    REQUIRE(build_workload(llama(5120, 40, 40, 40, 13824, 32000), training(1, 4096)).total_params == 13'015'864'320);
  }
  SECTION("llama-3-8b (GQA, 8 KV heads)") {
    REQUIRE(build_workload(llama(4096, 32, 32, 8, 14336, 128256), training(1, 8192)).total_params == 8'030'261'248);
  }
  SECTION("qwen2-7b (biases on q/k/v_proj)") {
    // Qwen/Qwen2-7B config: h 3584, L 28, 28 heads, 4 KV heads of 128, I 18944, V 152064, untied. Per layer:
    // q 3584² + 3584, k and v 512·3584 + 512 each, o 3584², 2 norms 2·3584, MLP 3·3584·18944 = 233,057,792;
    // x 28 + embed and lm_head 2·152064·3584 + final norm 3584 = 7,615,616,512 (the checkpoint's count; without the
    // 28·(3584 + 2·512) = 129,024 bias elements it would be 7,615,487,488).
    auto m = llama(3584, 28, 28, 4, 18944, 152064);
    m.attention_bias = scenario::AttentionBias::QKV;
    REQUIRE(build_workload(m, training(1, 4096)).total_params == 7'615'616'512);
    // attention_bias: true (LlamaConfig) adds o_proj's bias too: + 28·3584.
    m.attention_bias = scenario::AttentionBias::QKVO;
    REQUIRE(build_workload(m, training(1, 4096)).total_params == 7'615'616'512 + 28 * 3584);
  }
  SECTION("llama-3.2-3b, and with mlp_bias: true (LlamaConfig: biases on gate/up/down_proj)") {
    // meta-llama/Llama-3.2-3B config: h 3072, L 28, 24 heads, 8 KV heads of 128 (h_kv 1024), I 8192, V 128256,
    // tied. Per layer: q and o 2·3072² = 18,874,368, k and v 2·1024·3072 = 6,291,456, MLP 3·3072·8192 =
    // 75,497,472, 2 norms 6,144: 100,669,440; x 28 = 2,818,744,320; + embedding 128256·3072 = 394,002,432 (the
    // head shares it) + final norm 3072 = 3,212,749,824. mlp_bias adds 8192 + 8192 + 3072 per layer: + 28·19,456 =
    // 544,768 -> 3,213,294,592, in 3 more tensors per layer.
    auto m = llama(3072, 28, 24, 8, 8192, 128256);
    m.tied_embeddings = true;
    const auto plain = build_workload(m, training(1, 2048));
    REQUIRE(plain.total_params == 3'212'749'824);
    m.mlp_bias = true;
    const auto biased = build_workload(m, training(1, 2048));
    REQUIRE(biased.total_params == 3'213'294'592);
    std::size_t tensors_plain = 0, tensors_biased = 0;
    for (const auto& layer : plain.layers)
      tensors_plain += layer.params.size();
    for (const auto& layer : biased.layers)
      tensors_biased += layer.params.size();
    CHECK(tensors_biased == tensors_plain + 3 * 28);
  }
  SECTION("mistral-nemo-12b (head_dim 128, not hidden / heads = 160)") {
    // mistralai/Mistral-Nemo-Base-2407 config: h 5120, L 40, 32 heads of head_dim 128 (q width 4096), 8 KV heads
    // (h_kv 1024), I 14336, V 131072, untied. Per layer: q 5120·4096 = 20,971,520, k and v 2·5120·1024 =
    // 10,485,760, o 4096·5120 = 20,971,520, MLP 3·5120·14336 = 220,200,960, 2 norms 2·5120 = 10,240:
    // 272,640,000; x 40 = 10,905,600,000; + embed and lm_head 2·131072·5120 = 1,342,177,280 + final norm 5120
    // = 12,247,782,400 (the checkpoint's count; with d = h/a = 160 it would be 12.77e9).
    auto m = llama(5120, 40, 32, 8, 14336, 131072);
    m.head_dim = 128;
    REQUIRE(build_workload(m, training(1, 4096)).total_params == 12'247'782'400);
  }
}

TEST_CASE("build_workload: layers run embed, block.0..L-1, head, and a tied LM head lives in embed",
          "[workload][unit]") {
  const auto w = build_workload(gpt2(768, 12, 12), training(2, 512));
  REQUIRE(w.layers.size() == 14);
  REQUIRE(w.layers.front().name == "embed");
  REQUIRE(w.layers.front().kind == LayerKind::EMBEDDING);
  REQUIRE(w.layers[1].name == "block.0");
  REQUIRE(w.layers[12].name == "block.11");
  REQUIRE(w.layers.back().name == "head");
  REQUIRE(w.layers.back().kind == LayerKind::HEAD);
  // embed: wte 50257·768 + wpe 1024·768; head: ln_f only (2·768), yet its FLOPs include the logits GEMM 2·T·h·V.
  REQUIRE(layer(w, "embed").param_count == 50257 * 768 + 1024 * 768);
  REQUIRE(layer(w, "head").param_count == 2 * 768);
  REQUIRE(layer(w, "head").fwd_flops.value() == Approx(2.0 * 1024 * 768 * 50257).epsilon(kExact));
  REQUIRE(layer(w, "block.3").params.size() == 12);
  REQUIRE(layer(w, "block.3").params[2].name == "h.3.attn.c_attn.weight");
  REQUIRE(layer(w, "block.3").param_count == gpt_layer_params(768));
  // DeepSpeed's "largest layer" (module direct params) and the largest tensor are both wte.
  REQUIRE(w.largest_tensor_numel == 50257 * 768);
  REQUIRE(w.largest_layer_params == 50257 * 768);
  REQUIRE(w.tokens_per_micro_batch == 1024);
  REQUIRE(w.bytes_per_lp == 2.0);
  REQUIRE(layer(w, "block.0").param_grad_bytes_lp.value() == 2.0 * static_cast<double>(gpt_layer_params(768)));
}

TEST_CASE("build_workload: trainable_fraction makes round(f x numel) of each tensor trainable", "[workload][unit]") {
  // GPT-2 small (Ψ = 124,439,808, every tensor's numel even): f = 0.5 leaves exactly Ψ/2 = 62,219,904 trainable.
  // f = 1e-6: a tensor of n elements gets round(1e-6·n), 0 below 500,000 elements: only wte (50257·768 =
  // 38,597,376 -> 39), the 12 c_attn weights (768·2304 = 1,769,472 -> 2), 12 c_proj weights (589,824 -> 1), 12 c_fc
  // and 12 mlp.c_proj weights (2,359,296 -> 2 each) and wpe (786,432 -> 1) count: 39 + 24 + 12 + 48 + 1 = 124.
  auto t = training(1, 128);
  CHECK(build_workload(gpt2(768, 12, 12), t).total_params == 124'439'808);
  t.trainable_fraction = 0.5;
  CHECK(build_workload(gpt2(768, 12, 12), t).trainable_params == 62'219'904);
  t.trainable_fraction = 1e-6;
  CHECK(build_workload(gpt2(768, 12, 12), t).trainable_params == 124);
  CHECK(adapter_numel(10, 1.0) == 10);
  CHECK(adapter_numel(10, 0.25) == 3); // round(2.5) = 3, half away from zero
}

TEST_CASE("build_workload: an untied LLaMA head owns lm_head.weight", "[workload][unit]") {
  const auto w = build_workload(llama(4096, 32, 32, 32, 11008, 32000), training(1, 4096));
  REQUIRE(layer(w, "head").param_count == 4096 + 32000 * 4096);
  REQUIRE(layer(w, "embed").param_count == 32000 * 4096);
  REQUIRE(w.largest_layer_params == 32000 * 4096);
  // block: 4h² + 3hI + 2h = 202,383,360 (no biases)
  REQUIRE(layer(w, "block.0").param_count == 202'383'360);
}

TEST_CASE("build_workload: a GPT-2 block saves exactly Korthikanti's sbh(34 + 5as/h) (zero_semantics §7.28)",
          "[workload][validation]") {
  // GPT-3 175B layer (Korthikanti et al. 2022 §4.1): s = 2048, b = 1, h = 12288, a = 96:
  // 34·2048·12288 + 5·96·2048² = 855,638,016 + 2,013,265,920 = 2,868,903,936 B (2.87 GB).
  auto m = gpt2(12288, 2, 96);
  m.max_positions = 2048;
  m.vocab = 51200;
  const auto w = build_workload(m, training(1, 2048));
  REQUIRE(layer(w, "block.1").saved_activations.value() == 2'868'903'936.0);
  REQUIRE(layer(w, "block.1").recompute_activations.value() == 0.0);
  // gpt2 small, b = 4, s = 1024, h = 768, a = 12: 34·4·1024·768 + 5·12·1024²·4 = 106,954,752 + 251,658,240.
  const auto small = build_workload(gpt2(768, 12, 12), training(4, 1024));
  REQUIRE(layer(small, "block.0").saved_activations.value() == 106'954'752.0 + 251'658'240.0);
}

TEST_CASE("build_workload: OPT-1.3B counts its checkpoint's parameters and its eager attention saves 8 B per score",
          "[workload][validation]") {
  // facebook/opt-1.3b: h 2048, L 24, a 32, ffn 8192, V 50272 (tied), 2048 positions + OPT's 2 offset rows.
  // 50272·2048 + 2050·2048 + 24·(12·2048² + 13·2048) + 2·2048 = 102,957,056 + 4,198,400 + 1,208,598,528 + 4,096
  // = 1,315,758,080 (the checkpoint's model.num_parameters()).
  auto m = gpt2(2048, 24, 32);
  m.family = ModelFamily::OPT;
  m.vocab = 50272;
  m.max_positions = 2048;
  const auto w = build_workload(m, training(1, 512));
  REQUIRE(w.total_params == 1'315'758'080);
  // Saved per block (workload.cpp make_opt_block): (8e + 2)·N_h + e·N_I + (2e + 4)·N_s = 26·sbh + 8·a·s²·b with
  // e = 2, I = 4h (ReLU keeps one tensor of N_I, GPT-2's GELU two; OPTAttention keeps the clamp input, the fp32
  // softmax and the 16-bit probabilities, GPT-2 the probabilities, a dropout mask and its output).
  // b = 1, s = 512: sbh = 1,048,576, a·s²·b = 8,388,608: 27,262,976 + 67,108,864 = 94,371,840 B.
  REQUIRE(layer(w, "block.0").saved_activations.value() == 94'371'840.0);
  // The same FLOPs as a GPT-2 block of those sizes (separate q/k/v GEMMs instead of c_attn).
  auto g = m;
  g.family = ModelFamily::GPT2;
  CHECK(layer(w, "block.0").fwd_flops.value() ==
        Approx(layer(build_workload(g, training(1, 512)), "block.0").fwd_flops.value()).epsilon(kExact));
}

TEST_CASE("build_workload: FlashAttention and checkpointing change saved activations as the closed forms say",
          "[workload][unit]") {
  const std::int64_t b = 4, s = 1024, h = 768, a = 12;
  const double sbh = static_cast<double>(s * b * h);
  SECTION("flash: 34sbh + 4asb") {
    const auto w = build_workload(gpt2(h, 12, a), training(b, s, false, true));
    REQUIRE(layer(w, "block.0").saved_activations.value() == 34.0 * sbh + 4.0 * a * s * b);
  }
  SECTION("checkpointing: 2sbh kept, the full set recomputed") {
    const auto w = build_workload(gpt2(h, 12, a), training(b, s, true, false));
    const Layer& blk = layer(w, "block.0");
    REQUIRE(blk.saved_activations.value() == 2.0 * sbh);
    REQUIRE(blk.recompute_activations.value() == 34.0 * sbh + 5.0 * a * s * s * b);
    REQUIRE(blk.recompute_flops.value() == blk.fwd_flops.value());
    REQUIRE(blk.recompute_bytes.value() == blk.fwd_bytes.value());
    // embed and head are not checkpointed
    REQUIRE(layer(w, "head").recompute_flops.value() == 0.0);
  }
}

TEST_CASE("build_workload: LLaMA block saves its tensors per the per-tensor breakdown", "[workload][unit]") {
  // e = 2, fused kernels; eager attention: 8e·N_h + 4e·N_I + (4 + e)·N_s (see workload.cpp). llama-2-7b, b = 1,
  // s = 4096: N_h = 4096·4096, N_I = 4096·11008, N_s = 32·4096².
  const double Nh = 4096.0 * 4096, NI = 4096.0 * 11008, Ns = 32.0 * 4096 * 4096;
  auto fused = training(1, 4096);
  fused.kernel_impl = scenario::KernelImpl::FUSED;
  const auto w = build_workload(llama(4096, 32, 32, 32, 11008, 32000), fused);
  REQUIRE(layer(w, "block.0").saved_activations.value() == Approx(16 * Nh + 8 * NI + 6 * Ns).epsilon(kExact));
  // flash, llama-3-8b (kv = 8, h_kv = 1024), s = 8192: e·(6N_h + 2N_kv) + 4e·N_I + 4·a·s·b.
  const double Nh3 = 8192.0 * 4096, Nkv3 = 8192.0 * 1024, NI3 = 8192.0 * 14336;
  auto fused3 = training(1, 8192, false, true);
  fused3.kernel_impl = scenario::KernelImpl::FUSED;
  const auto w3 = build_workload(llama(4096, 32, 32, 8, 14336, 128256), fused3);
  REQUIRE(layer(w3, "block.0").saved_activations.value() ==
          Approx(2 * (6 * Nh3 + 2 * Nkv3) + 8 * NI3 + 4.0 * 32 * 8192).epsilon(kExact));
}

/// Bytes of `l`'s saved tensors (recomputed ones with `recomputed`) that `module`'s backward part frees.
double freed_by(const Layer& l, const std::string& module, bool recomputed = false) {
  const auto& tensors = recomputed ? l.recompute_tensors : l.activation_tensors;
  const auto& modules = recomputed ? l.recompute_modules : l.activation_modules;
  REQUIRE(modules.size() == tensors.size());
  double sum = 0;
  for (std::size_t j = 0; j < tensors.size(); ++j)
    if (modules[j] == module)
      sum += tensors[j].value();
  return sum;
}

TEST_CASE("build_workload: each saved tensor names a module of its layer, the one whose backward frees it",
          "[workload][unit]") {
  // Every name is a parameter's module in the same layer (or empty: the layer's end), for every family and mode.
  auto opt = gpt2(256, 2, 4);
  opt.family = ModelFamily::OPT;
  auto tied_llama = llama(256, 2, 4, 2, 688, 1000);
  tied_llama.tied_embeddings = true;
  for (bool flash : {false, true})
    for (int mode : {0, 1, 2}) // no checkpointing, full, selective
      for (bool hf : {false, true})
        for (const ModelSpec& m : {gpt2(256, 2, 4), opt, llama(256, 2, 4, 2, 688, 1000), tied_llama}) {
          auto t = training(1, 64, mode > 0, flash);
          if (mode == 2)
            t.recompute_granularity = scenario::RecomputeGranularity::SELECTIVE;
          t.kernel_impl = hf ? scenario::KernelImpl::HF : scenario::KernelImpl::FUSED;
          t.loss_impl = hf ? scenario::LossImpl::HF : scenario::LossImpl::MEGATRON;
          const auto w = build_workload(m, t);
          for (const Layer& l : w.layers) {
            std::vector<std::string> own;
            for (const ParamTensor& pt : l.params)
              own.push_back(pt.name.substr(0, pt.name.rfind('.')));
            for (const auto* names : {&l.activation_modules, &l.recompute_modules})
              for (const std::string& name : *names)
                CHECK((name.empty() || std::find(own.begin(), own.end(), name) != own.end()));
            CHECK(l.activation_modules.size() == l.activation_tensors.size());
            CHECK(l.recompute_modules.size() == l.recompute_tensors.size());
          }
        }
}

TEST_CASE("build_workload: a LLaMA block's saved tensors are freed by the modules that keep them", "[workload][unit]") {
  // llama-2-7b dims, FlashAttention, fused kernels, b = 1, s = 1024, e = 2 (workload.cpp make_llama_block):
  //   down_proj: its input e·N_I; up_proj: the product's operands (SiLU output, up output) 2e·N_I; gate_proj: the
  //   gate/up input e·N_h and SiLU's input e·N_I; post_attention_layernorm: its input e·N_h; v_proj (the attention
  //   core after it): Q, K, V, O e·(2N_q + 2N_kv) and the fp32 log-sum-exp 4·a·s·b; q_proj: the q/k/v input e·N_h;
  //   input_layernorm: its input e·N_h. o_proj and k_proj free nothing (O is o_proj's input as a view).
  const double Nh = 1024.0 * 4096, NI = 1024.0 * 11008, lse = 4.0 * 32 * 1024;
  auto t = training(1, 1024, false, true);
  t.kernel_impl = scenario::KernelImpl::FUSED;
  const auto w = build_workload(llama(4096, 2, 32, 32, 11008, 32000), t);
  const Layer& blk = layer(w, "block.1");
  const std::string p = "layers.1.";
  CHECK(freed_by(blk, p + "mlp.down_proj") == 2 * NI);
  CHECK(freed_by(blk, p + "mlp.up_proj") == 4 * NI);
  CHECK(freed_by(blk, p + "mlp.gate_proj") == 2 * Nh + 2 * NI);
  CHECK(freed_by(blk, p + "post_attention_layernorm") == 2 * Nh);
  CHECK(freed_by(blk, p + "self_attn.o_proj") == 0);
  CHECK(freed_by(blk, p + "self_attn.v_proj") == 2 * 4 * Nh + lse);
  CHECK(freed_by(blk, p + "self_attn.k_proj") == 0);
  CHECK(freed_by(blk, p + "self_attn.q_proj") == 2 * Nh);
  CHECK(freed_by(blk, p + "input_layernorm") == 2 * Nh);
  // Full checkpointing: the kept input lives to the layer's end; the recomputed set keeps the same owners.
  t.activation_checkpointing = true;
  const auto wc = build_workload(llama(4096, 2, 32, 32, 11008, 32000), t);
  const Layer& ck = layer(wc, "block.1");
  CHECK(ck.activation_modules == std::vector<std::string>{""});
  CHECK(freed_by(ck, p + "mlp.down_proj", true) == 2 * NI);
  CHECK(freed_by(ck, p + "self_attn.v_proj", true) == 2 * 4 * Nh + lse);
}

TEST_CASE("build_workload: GPT-2 and OPT blocks' saved tensors are freed by the modules that keep them",
          "[workload][unit]") {
  // h = 256, I = 4h, a = 4, b = 1, s = 64, e = 2, FlashAttention, fused kernels: N_h = 16,384, N_I = 65,536, the
  // fp32 log-sum-exp 4·a·s·b = 1,024 B (workload.cpp make_gpt2_block / make_opt_block).
  const double Nh = 64.0 * 256, NI = 64.0 * 1024, lse = 4.0 * 4 * 64;
  auto t = training(1, 64, false, true);
  t.kernel_impl = scenario::KernelImpl::FUSED;
  // GPT-2: ln_1 its input; c_attn its input, Q, K, V and the LSE (the core after it); c_proj its input and the
  // residual dropout's 1-byte mask; ln_2 its input; c_fc its input and GELU's input; mlp.c_proj its input and mask.
  const auto wg = build_workload(gpt2(256, 2, 4), t);
  const Layer& g = layer(wg, "block.1");
  CHECK(freed_by(g, "h.1.ln_1") == 2 * Nh);
  CHECK(freed_by(g, "h.1.attn.c_attn") == 4 * 2 * Nh + lse);
  CHECK(freed_by(g, "h.1.attn.c_proj") == 2 * Nh + Nh);
  CHECK(freed_by(g, "h.1.ln_2") == 2 * Nh);
  CHECK(freed_by(g, "h.1.mlp.c_fc") == 2 * Nh + 2 * NI);
  CHECK(freed_by(g, "h.1.mlp.c_proj") == 2 * NI + Nh);
  // OPT, parameters in registration order (self_attn, norms, MLP): the self-attention norm's input lives to the
  // layer's end, the final norm's goes with fc1 (whose part its backward follows); q_proj frees the q/k/v input,
  // v_proj the core's q, k, v and LSE, out_proj its input and the dropout mask, fc1 the final norm's input, its own
  // and the ReLU output, fc2 the MLP dropout mask; the norms' own parts free nothing.
  auto om = gpt2(256, 2, 4);
  om.family = ModelFamily::OPT;
  const auto wo = build_workload(om, t);
  const Layer& o = layer(wo, "block.1");
  const std::string p = "layers.1.";
  CHECK(freed_by(o, "") == 2 * Nh);
  CHECK(freed_by(o, p + "self_attn.q_proj") == 2 * Nh);
  CHECK(freed_by(o, p + "self_attn.v_proj") == 3 * 2 * Nh + lse);
  CHECK(freed_by(o, p + "self_attn.out_proj") == 2 * Nh + Nh);
  CHECK(freed_by(o, p + "fc1") == 2 * 2 * Nh + 2 * NI);
  CHECK(freed_by(o, p + "fc2") == Nh);
  CHECK(freed_by(o, p + "self_attn_layer_norm") == 0);
  CHECK(freed_by(o, p + "final_layer_norm") == 0);
}

TEST_CASE("build_workload: a GPT-2 head frees the loss tensors in the LM head's part, or at its end when tied",
          "[workload][unit]") {
  // Head (workload.cpp make_head), b = 1, s = 64, h = 256, V = 50257, e = 2: ln_f's part frees its input 2·N_h; the
  // LM head's part its input 2·N_h, the lp logits 2·N_V and the fp32 log-softmax 4·N_V. GPT-2 ties the head to wte,
  // so the head holds ln_f's parameters only and the LM head's tensors live to the layer's end.
  const double Nh = 64.0 * 256, NV = 64.0 * 50257;
  auto m = gpt2(256, 2, 4);
  const auto wt = build_workload(m, training(1, 64));
  const Layer& tied = layer(wt, "head");
  CHECK(freed_by(tied, "ln_f") == 2 * Nh);
  CHECK(freed_by(tied, "") == 2 * Nh + 6 * NV);
  m.tied_embeddings = false;
  const auto wu = build_workload(m, training(1, 64));
  const Layer& untied = layer(wu, "head");
  CHECK(freed_by(untied, "lm_head") == 2 * Nh + 6 * NV);
}

TEST_CASE("build_workload: the head keeps lp logits and their fp32 log-softmax", "[workload][unit]") {
  // gpt2, b = 2, s = 512: T = 1024; saved = 2·2·T·h (norm and LM-head inputs) + (2 + 4)·T·V.
  const auto w = build_workload(gpt2(768, 12, 12), training(2, 512));
  const double T = 1024, V = 50257;
  REQUIRE(layer(w, "head").saved_activations.value() == Approx(4 * T * 768 + 6 * T * V).epsilon(kExact));
  REQUIRE(layer(w, "head").fwd_working_bytes.value() == Approx(4 * T * V).epsilon(kExact));
  REQUIRE(layer(w, "head").bwd_working_bytes.value() == Approx(8 * T * V).epsilon(kExact));
  // embed (tied): the V×h gradient temporary before it is added onto the LM head's, 2·V·h bytes
  REQUIRE(layer(w, "embed").bwd_working_bytes.value() == Approx(2 * V * 768).epsilon(kExact));
}

TEST_CASE("build_workload: GPT-2 FLOPs equal Narayanan's closed form, with and without recompute",
          "[workload][validation]") {
  // Narayanan et al. 2021 §5.1: per layer 24bsh² + 4bs²h forward, LM head 2bshV forward, backward 2×:
  // F = 72·b·s·l·h²·(1 + s/(6h) + V/(12lh)); with full recompute of the blocks (not the head)
  // F = 96·b·s·l·h²·(1 + s/(6h) + V/(16lh)). GPT-2 family with I = 4h has exactly these GEMMs.
  const std::int64_t b = 8, s = 1024, l = 12, h = 768, V = 50257;
  const auto w = build_workload(gpt2(h, l, 12), training(b, s));
  REQUIRE(w.model_flops_per_micro_batch.value() ==
          Approx(narayanan_iteration_flops(b, s, l, h, V, false).value()).epsilon(kExact));
  REQUIRE(w.hardware_flops_per_micro_batch.value() == w.model_flops_per_micro_batch.value());
  const auto wc = build_workload(gpt2(h, l, 12), training(b, s, true));
  REQUIRE(wc.model_flops_per_micro_batch.value() == w.model_flops_per_micro_batch.value());
  REQUIRE(wc.hardware_flops_per_micro_batch.value() ==
          Approx(narayanan_iteration_flops(b, s, l, h, V, true).value()).epsilon(kExact));
  // Per block: backward = 2 × forward = 2·(24bsh² + 4bs²h).
  REQUIRE(layer(w, "block.5").bwd_flops.value() ==
          Approx(2 * gpt_layer_forward_flops(b, s, h).value()).epsilon(kExact));
}

TEST_CASE("build_workload: model FLOPs per token are 6P up to Narayanan's s/(6h) and V terms",
          "[workload][validation]") {
  // GPT-3 175B dims, b = 1, s = 2048: F/T = 72·l·h²·(1 + s/(6h) + V/(12lh)) and
  // P = 12·l·h²·(1 + 13/(12h) + (V + max_positions)/(12lh) + 2/(12lh)) (the last term is ln_f's 2h, which
  // Narayanan's P omits); here max_positions = s, so
  // F/(6·P·T) = (1 + 0.0277778 + 0.0036169) / (1 + 0.0000882 + 0.0037616 + 0.0000001) = 1.0313947 / 1.0038499
  //           = 1.027439.
  auto m = gpt2(12288, 96, 96);
  m.vocab = 51200;
  m.max_positions = 2048;
  const auto w = build_workload(m, training(1, 2048));
  const double ratio = w.model_flops_per_micro_batch.value() /
                       (6.0 * static_cast<double>(w.total_params) * static_cast<double>(w.tokens_per_micro_batch));
  REQUIRE(ratio == Approx(1.027439).epsilon(kRatioDigits));
  // and within the s/(6h) + V/(12lh) band of the 6P rule of thumb
  REQUIRE(std::abs(ratio - 1.0) <= 2048 / (6.0 * 12288) + 51200 / (12.0 * 96 * 12288));
}

TEST_CASE("build_workload: LLaMA FLOPs come from the real GEMM shapes (GQA, SwiGLU)", "[workload][unit]") {
  // llama-3-8b, b = 1, s = 8192, T = 8192: block forward = 2T(2h² + 2h·h_kv + 3hI) + 4·b·s²·h
  //   = 2·8192·(2·4096² + 2·4096·1024 + 3·4096·14336) + 4·8192²·4096.
  const double T = 8192, h = 4096, hkv = 1024, I = 14336, V = 128256;
  const auto w = build_workload(llama(4096, 32, 32, 8, 14336, 128256), training(1, 8192));
  const double blk = 2 * T * (2 * h * h + 2 * h * hkv + 3 * h * I) + 4 * T * T * h;
  REQUIRE(layer(w, "block.0").fwd_flops.value() == Approx(blk).epsilon(kExact));
  REQUIRE(layer(w, "head").fwd_flops.value() == Approx(2 * T * h * V).epsilon(kExact));
  REQUIRE(layer(w, "embed").fwd_flops.value() == 0.0);
  REQUIRE(w.model_flops_per_micro_batch.value() == Approx(3 * (32 * blk + 2 * T * h * V)).epsilon(kExact));
}

TEST_CASE("build_workload: an explicit head_dim sets the query width of q_proj, o_proj and attention (Mistral-NeMo)",
          "[workload][unit]") {
  // Mistral-NeMo-12B: h 5120, a 32, d 128 -> h_q = a·d = 4096, kv 8 -> h_kv = 1024, I 14336; b = 1, s = 4096.
  const double T = 4096, h = 5120, hq = 4096, hkv = 1024, I = 14336, a = 32, d = 128;
  auto m = llama(5120, 40, 32, 8, 14336, 131072);
  m.head_dim = 128;
  auto t = training(1, 4096);
  t.kernel_impl = scenario::KernelImpl::FUSED;
  const Layer blk = layer(build_workload(m, t), "block.0");
  // Parameters in module order (LlamaAttention: q_proj h -> a·d, k/v_proj h -> kv·d, o_proj a·d -> h).
  REQUIRE(blk.params[1].name == "layers.0.self_attn.q_proj.weight");
  REQUIRE(blk.params[1].numel == 4096 * 5120);
  REQUIRE(blk.params[4].name == "layers.0.self_attn.o_proj.weight");
  REQUIRE(blk.params[4].numel == 5120 * 4096);
  // cuBLAS GEMMs (m = T, n = out features, k = in features): q {T, 4096, 5120}, k and v {T, 1024, 5120}, QKᵀ
  // {s, s, d} and P·V {s, d, s} over b·a = 32 pairs, o {T, 5120, 4096}.
  REQUIRE(blk.gemms.size() == 9);
  CHECK(blk.gemms[0] == Gemm{4096, 4096, 5120});
  CHECK(blk.gemms[1] == Gemm{4096, 1024, 5120});
  CHECK(blk.gemms[3] == Gemm{4096, 4096, 128, 32, false});
  CHECK(blk.gemms[4] == Gemm{4096, 128, 4096, 32, false});
  CHECK(blk.gemms[5] == Gemm{4096, 5120, 4096});
  // Forward FLOPs: 2T(h·h_q + 2h·h_kv + h_q·h + 3hI) + 2 x 2·b·a·s²·d.
  const double fwd = 2 * T * (h * hq + 2 * h * hkv + hq * h + 3 * h * I) + 4 * a * T * T * d;
  REQUIRE(blk.fwd_flops.value() == Approx(fwd).epsilon(kExact));
  // Memory-bound forward traffic, eager attention, e = 2 (workload.cpp's LLaMA kernel list): 2 norms 2·2e·N_h, RoPE
  // 2e·(N_q + N_kv), repeat_kv 2e·(N_kv + N_q), scale and mask 2·2e·N_s, fp32 softmax + cast (2e + 8)·N_s,
  // transpose 2e·N_q, 2 residual adds 2·3e·N_h, SiLU 2e·N_I, product 3e·N_I
  // = 20·N_h + 12·N_q + 8·N_kv + 10·N_I + 20·N_s.
  const double Nh = T * h, Nq = T * hq, Nkv = T * hkv, NI = T * I, Ns = a * T * T;
  REQUIRE(blk.fwd_bytes.value() == Approx(20 * Nh + 12 * Nq + 8 * Nkv + 10 * NI + 20 * Ns).epsilon(kExact));
  // Saved, eager: 4e·N_h (norm, q/k/v, post-norm, gate/up inputs) + 4e·N_q (roped Q, repeated K and V, o_proj input)
  // + 4e·N_I + (4 + e)·N_s.
  REQUIRE(blk.saved_activations.value() == Approx(8 * Nh + 8 * Nq + 8 * NI + 6 * Ns).epsilon(kExact));
  // FlashAttention: e·(4·N_h + 2·N_q + 2·N_kv) (Q and O at the query width) + 4e·N_I + 4·a·s·b.
  t.flash_attention = true;
  const Layer fl = layer(build_workload(m, t), "block.0");
  REQUIRE(fl.saved_activations.value() == Approx(2 * (4 * Nh + 2 * Nq + 2 * Nkv) + 8 * NI + 4 * a * T).epsilon(kExact));
  // The query width need not be a divisor-derived h: hidden 100 over 3 heads of 32 (h_q 96) builds.
  auto odd = llama(100, 1, 3, 1, 256, 1000);
  odd.head_dim = 32;
  // per layer: q 100·96, k and v 2·100·32, o 96·100, MLP 3·100·256, norms 2·100; embed and head 2·1000·100 + 100
  REQUIRE(build_workload(odd, training(1, 64)).total_params ==
          100 * 96 + 2 * 100 * 32 + 96 * 100 + 3 * 100 * 256 + 2 * 100 + 2 * 1000 * 100 + 100);
}

TEST_CASE("build_workload: head_dim = hidden / heads is the default, to the bit", "[workload][unit]") {
  // llama-3-8b (d = 4096 / 32 = 128) and GPT-2 (768 / 12 = 64), eager and FlashAttention, with and without
  // checkpointing: head_dim 0 and the explicit d build the same table.
  for (const bool flash : {false, true}) {
    for (const bool ckpt : {false, true}) {
      INFO("flash " << flash << ", checkpointing " << ckpt);
      for (ModelSpec m : {llama(4096, 2, 32, 8, 14336, 128256), gpt2(768, 2, 12)}) {
        const Workload base = build_workload(m, training(2, 1024, ckpt, flash));
        m.head_dim = m.hidden / m.heads;
        const Workload same = build_workload(m, training(2, 1024, ckpt, flash));
        REQUIRE(same.total_params == base.total_params);
        REQUIRE(same.model_flops_per_micro_batch.value() == base.model_flops_per_micro_batch.value());
        REQUIRE(same.hardware_flops_per_micro_batch.value() == base.hardware_flops_per_micro_batch.value());
        REQUIRE(same.layers.size() == base.layers.size());
        for (std::size_t i = 0; i < base.layers.size(); ++i) {
          const Layer &x = same.layers[i], &y = base.layers[i];
          CHECK(x.param_count == y.param_count);
          CHECK(x.fwd_flops.value() == y.fwd_flops.value());
          CHECK(x.bwd_flops.value() == y.bwd_flops.value());
          CHECK(x.recompute_flops.value() == y.recompute_flops.value());
          CHECK(x.fwd_bytes.value() == y.fwd_bytes.value());
          CHECK(x.bwd_bytes.value() == y.bwd_bytes.value());
          CHECK(x.saved_activations.value() == y.saved_activations.value());
          CHECK(x.recompute_activations.value() == y.recompute_activations.value());
          CHECK(x.fwd_working_bytes.value() == y.fwd_working_bytes.value());
          CHECK(x.bwd_working_bytes.value() == y.bwd_working_bytes.value());
          CHECK(x.activation_tensors == y.activation_tensors);
          CHECK(x.gemms == y.gemms);
        }
      }
    }
  }
}

TEST_CASE("build_workload: GPT-2 eager block traffic follows the per-kernel count", "[workload][unit]") {
  // Forward, e = 2, I = 4h: LNs 2·4N_h, merge 4N_h, 2 dropouts 2·5N_h, 2 adds 2·6N_h = 34N_h; GELU 4N_I = 16N_h;
  // scale, mask, softmax 3·4N_s, attention dropout 5N_s = 17N_s. FlashAttention removes the N_s terms and the merge.
  const double b = 2, s = 256, h = 768, a = 12;
  const double Nh = b * s * h, Ns = a * s * s * b;
  const auto w = build_workload(gpt2(768, 2, 12), training(2, 256));
  REQUIRE(layer(w, "block.0").fwd_bytes.value() == Approx(50 * Nh + 17 * Ns).epsilon(kExact));
  const auto wf = build_workload(gpt2(768, 2, 12), training(2, 256, false, true));
  REQUIRE(layer(wf, "block.0").fwd_bytes.value() == Approx(46 * Nh).epsilon(kExact));
  REQUIRE(layer(w, "block.0").bwd_bytes.value() > layer(w, "block.0").fwd_bytes.value());
}

TEST_CASE("build_workload: rejects impossible dimensions", "[workload][unit]") {
  SECTION("heads not dividing hidden") {
    REQUIRE_THROWS_WITH(build_workload(gpt2(768, 12, 7), training(1, 128)), Catch::Contains("must divide hidden"));
  }
  SECTION("kv_heads not dividing heads") {
    REQUIRE_THROWS_WITH(build_workload(llama(4096, 32, 32, 5, 11008, 32000), training(1, 128)),
                        Catch::Contains("kv_heads (5) must divide heads"));
  }
  SECTION("zero layers") {
    REQUIRE_THROWS_WITH(build_workload(gpt2(768, 0, 12), training(1, 128)), Catch::Contains("layers must be >= 1"));
  }
  SECTION("sequence longer than GPT-2's position table") {
    REQUIRE_THROWS_WITH(build_workload(gpt2(768, 12, 12), training(1, 2048)), Catch::Contains("max_positions"));
  }
  SECTION("llama without intermediate size") {
    REQUIRE_THROWS_WITH(build_workload(llama(4096, 32, 32, 32, 0, 32000), training(1, 128)),
                        Catch::Contains("intermediate"));
  }
  SECTION("grouped-query attention on GPT-2") {
    auto m = gpt2(768, 12, 12);
    m.kv_heads = 4;
    REQUIRE_THROWS_WITH(build_workload(m, training(1, 128)), Catch::Contains("grouped-query"));
  }
  SECTION("a head_dim other than hidden / heads on GPT-2") {
    auto m = gpt2(768, 12, 12);
    m.head_dim = 128;
    REQUIRE_THROWS_WITH(build_workload(m, training(1, 128)), Catch::Contains("gpt2 family has no head_dim"));
  }
  SECTION("negative head_dim") {
    auto m = llama(4096, 32, 32, 8, 14336, 128256);
    m.head_dim = -1;
    REQUIRE_THROWS_WITH(build_workload(m, training(1, 128)), Catch::Contains("head_dim must be >= 0"));
  }
  SECTION("zero micro-batch") { REQUIRE_THROWS_AS(build_workload(gpt2(768, 12, 12), training(0, 128)), Error); }
}

TEST_CASE(
    "build_workload: the loss implementation sets what the head saves and holds per logit "
    "(HF log_softmax vs Megatron in-place softmax)",
    "[workload][unit]") {
  // GPT-2 small, b = 2, s = 512: T = 1024 tokens, N_V = T·V = 1024 x 50257 logits, N_h = T·h, e = 2 B.
  // HF (transformers ForCausalLMLoss): saved 2e·N_h + (e + 4)·N_V (lp logits kept in the output + fp32
  //   log_softmax), forward transient 4·N_V (the fp32 upcast), backward transient 8·N_V (two fp32 gradients):
  //   14 B per logit at the backward peak.
  // Megatron (megatron/mpu/cross_entropy.py on output.float()): saved 2e·N_h + 4·N_V (the fp32 softmax, made in
  //   place), forward transient e·N_V (the lp logits until the cast), backward transient e·N_V (the lp gradient;
  //   the fp32 gradient is the saved tensor, mul_'d in place): 6 B per logit at the backward peak.
  const double NV = 1024.0 * 50257, Nh = 1024.0 * 768, e = 2.0;
  auto t = training(2, 512);
  const auto hf = build_workload(gpt2(768, 12, 12), t);
  t.loss_impl = scenario::LossImpl::MEGATRON;
  const auto mg = build_workload(gpt2(768, 12, 12), t);
  REQUIRE(layer(hf, "head").saved_activations.value() == Approx(2 * e * Nh + (e + 4) * NV).epsilon(kExact));
  REQUIRE(layer(hf, "head").fwd_working_bytes.value() == Approx(4 * NV).epsilon(kExact));
  REQUIRE(layer(hf, "head").bwd_working_bytes.value() == Approx(8 * NV).epsilon(kExact));
  REQUIRE(layer(mg, "head").saved_activations.value() == Approx(2 * e * Nh + 4 * NV).epsilon(kExact));
  REQUIRE(layer(mg, "head").fwd_working_bytes.value() == Approx(e * NV).epsilon(kExact));
  REQUIRE(layer(mg, "head").bwd_working_bytes.value() == Approx(e * NV).epsilon(kExact));
  // Same GEMM; Megatron's in-place softmax reads and writes the fp32 logits more often in forward (max, sub_, exp,
  // sum, div_: 32 B per logit after the cast) and less in backward (one mul_: 8 B, against 16 B for HF).
  REQUIRE(layer(mg, "head").fwd_flops.value() == layer(hf, "head").fwd_flops.value());
  REQUIRE(layer(mg, "head").fwd_bytes.value() - layer(hf, "head").fwd_bytes.value() == Approx(24 * NV).epsilon(1e-9));
  REQUIRE(layer(hf, "head").bwd_bytes.value() - layer(mg, "head").bwd_bytes.value() == Approx(8 * NV).epsilon(1e-9));
}

TEST_CASE("build_workload: saved activations are listed tensor by tensor as autograd keeps them", "[workload][unit]") {
  // GPT-2 block, eager attention (Korthikanti et al. 2022 §4.1 breakdown): 8 lp tensors of s·b·h (ln_1 and c_attn
  // inputs, Q, K, V, c_proj input, ln_2 and c_fc inputs), 2 one-byte dropout masks of s·b·h, 2 lp tensors of s·b·4h
  // (GELU and mlp.c_proj inputs), and 3 of a·s²·b (softmax output, its mask, dropout output): 15 tensors, the largest
  // the lp softmax output 2·a·s²·b. b = 2, s = 512, h = 768, a = 12.
  const double Nh = 2.0 * 512 * 768, Ns = 12.0 * 512 * 512 * 2;
  auto t = training(2, 512);
  const auto w = build_workload(gpt2(768, 12, 12), t);
  const auto& blk = layer(w, "block.0");
  REQUIRE(blk.activation_tensors.size() == 15);
  double sum = 0, largest = 0;
  for (Bytes b : blk.activation_tensors) {
    sum += b.value();
    largest = std::max(largest, b.value());
  }
  REQUIRE(sum == Approx(blk.saved_activations.value()).epsilon(kExact));
  REQUIRE(sum == Approx(16 * Nh + 2 * Nh + 4 * 4 * Nh + 5 * Ns).epsilon(kExact)); // sbh(34 + 5as/h)
  REQUIRE(largest == Approx(2 * Ns).epsilon(kExact));
  // Checkpointed: the layer keeps its input (one tensor, 2·s·b·h) and re-materialises the same 15 in backward.
  t.activation_checkpointing = true;
  const auto c = build_workload(gpt2(768, 12, 12), t);
  REQUIRE(layer(c, "block.0").saved_activations.value() == Approx(2 * Nh).epsilon(kExact));
  REQUIRE(layer(c, "block.0").activation_tensors.size() == 1);
  REQUIRE(layer(c, "block.0").recompute_tensors.size() == 15);
  REQUIRE(layer(c, "block.0").recompute_activations.value() == Approx(sum).epsilon(kExact));
  REQUIRE(layer(c, "block.0").recompute_gemms == layer(c, "block.0").gemms);
}

TEST_CASE("build_workload: selective recomputation keeps 34sbh and re-runs only the attention core (Korthikanti §4.2)",
          "[workload][unit]") {
  // Korthikanti et al. 2022 Table 2, no tensor parallelism: selective recomputation stores sbh·34 per layer; the 5as²b
  // of the attention core (softmax output 2as²b, its dropout mask as²b, dropout output 2as²b) is recomputed.
  // GPT-2 small, b = 2, s = 512, h = 768, a = 12, d = 64, 2-byte activations.
  const double s = 512, b = 2, h = 768, a = 12, d = 64;
  const double sbh = s * b * h, Ns = a * s * s * b;
  auto t = training(2, 512);
  t.activation_checkpointing = true;
  t.recompute_granularity = scenario::RecomputeGranularity::SELECTIVE;
  const auto w = build_workload(gpt2(768, 12, 12), t);
  const auto& blk = layer(w, "block.0");
  CHECK(blk.saved_activations.value() == Approx(34 * sbh).epsilon(kExact));
  CHECK(blk.activation_tensors.size() == 12);
  CHECK(blk.recompute_activations.value() == Approx(5 * Ns).epsilon(kExact));
  CHECK(blk.recompute_tensors == std::vector<Bytes>{Bytes(2 * Ns), Bytes(Ns), Bytes(2 * Ns)});
  // Re-run: QKᵀ and P·V, 2 x 2·b·a·s²·d FLOPs, and the core's memory-bound kernels: scale, mask and softmax read and
  // write 2-byte scores (4·Ns B each), dropout writes a 1-byte mask too (5·Ns B).
  CHECK(blk.recompute_flops.value() == Approx(2 * 2 * b * a * s * s * d).epsilon(kExact));
  CHECK(blk.recompute_bytes.value() == Approx(17 * Ns).epsilon(kExact));
  CHECK(blk.recompute_gemms == std::vector<Gemm>{{512, 512, 64, 24, false}, {512, 64, 512, 24, false}});
  CHECK(blk.fwd_working_bytes.value() == 0.0); // the forward runs with grad, as without checkpointing
  // Model FLOPs unchanged; hardware FLOPs add the core's re-run in every block.
  const auto none = build_workload(gpt2(768, 12, 12), training(2, 512));
  CHECK(w.model_flops_per_micro_batch.value() == Approx(none.model_flops_per_micro_batch.value()).epsilon(kExact));
  CHECK(w.hardware_flops_per_micro_batch.value() - w.model_flops_per_micro_batch.value() ==
        Approx(12 * 2 * 2 * b * a * s * s * d).epsilon(kExact));
  // With FlashAttention nothing s×s is saved: selective recomputes nothing and keeps what no checkpointing keeps.
  t.flash_attention = true;
  const auto f = build_workload(gpt2(768, 12, 12), t);
  CHECK(layer(f, "block.0").recompute_flops.value() == 0.0);
  CHECK(layer(f, "block.0").recompute_activations.value() == 0.0);
  auto tf = training(2, 512);
  tf.flash_attention = true;
  CHECK(layer(f, "block.0").saved_activations.value() ==
        Approx(layer(build_workload(gpt2(768, 12, 12), tf), "block.0").saved_activations.value()).epsilon(kExact));
}

TEST_CASE("build_workload: with FlashAttention the attention GEMMs are marked for gpu.attention_efficiency",
          "[workload][unit]") {
  // GPT-2 small, b = 2, s = 512, a = 12, d = 64: QKᵀ and P·V are 2 x 2·b·a·s²·d = 4 x 2 x 12 x 512² x 64 FLOPs
  // forward (= 1.61e9 per layer); backward twice that; a checkpointed layer re-runs the forward's. Eager attention
  // (cuBLAS batched GEMMs) marks none.
  const double attn = 4.0 * 2 * 12 * 512.0 * 512 * 64;
  auto t = training(2, 512);
  const auto eager = build_workload(gpt2(768, 12, 12), t);
  CHECK(layer(eager, "block.0").fwd_attention_flops.value() == 0.0);
  t.flash_attention = true;
  const auto flash = build_workload(gpt2(768, 12, 12), t);
  CHECK(layer(flash, "block.0").fwd_attention_flops.value() == Approx(attn).epsilon(kExact));
  CHECK(layer(flash, "block.0").bwd_attention_flops.value() == Approx(2 * attn).epsilon(kExact));
  CHECK(layer(flash, "block.0").recompute_attention_flops.value() == 0.0);
  CHECK(layer(flash, "head").fwd_attention_flops.value() == 0.0);
  t.activation_checkpointing = true;
  const auto ckpt = build_workload(gpt2(768, 12, 12), t);
  CHECK(layer(ckpt, "block.0").recompute_attention_flops.value() == Approx(attn).epsilon(kExact));
  // Executed per counted FLOP (flash-attention benchmark_flash_attention.py flops(): causal halves 4·s²·d·heads,
  // backward is 2.5x forward): forward 0.5; backward 0.5 x 2.5 / 2 = 0.625 of the 2x counted. Eager: 1.
  CHECK(layer(flash, "block.0").fwd_attention_work == 0.5);
  CHECK(layer(flash, "block.0").bwd_attention_work == 0.625);
  CHECK(layer(eager, "block.0").fwd_attention_work == 1.0);
  CHECK(layer(eager, "block.0").bwd_attention_work == 1.0);
}

TEST_CASE("build_workload: a sliding window skips the score blocks outside it (FlashAttention only)",
          "[workload][unit]") {
  // s = 512, w = 128: query i sees min(i + 1, w) keys, s·w - w²/2 = 65536 - 8192 = 57344 scores against the causal
  // s²/2 = 131072: the counted attention FLOPs (and the layer's totals) shrink to 0.4375 of the full count, of which
  // the kernel executes the causal share as before (0.5 forward, 0.625 backward). A window >= s is full causal
  // attention; eager attention scores every block.
  auto t = training(2, 512);
  t.flash_attention = true;
  auto m = gpt2(768, 12, 12);
  const auto full = build_workload(m, t);
  m.sliding_window = 128;
  const auto windowed = build_workload(m, t);
  const auto& w = layer(windowed, "block.0");
  const auto& f = layer(full, "block.0");
  const double cut = 0.5625 * f.fwd_attention_flops.value();
  CHECK(w.fwd_attention_flops.value() == Approx(0.4375 * f.fwd_attention_flops.value()).epsilon(kExact));
  CHECK(w.bwd_attention_flops.value() == Approx(0.4375 * f.bwd_attention_flops.value()).epsilon(kExact));
  CHECK(w.fwd_flops.value() == Approx(f.fwd_flops.value() - cut).epsilon(kExact));
  CHECK(w.bwd_flops.value() == Approx(f.bwd_flops.value() - 2 * cut).epsilon(kExact));
  CHECK(w.fwd_attention_work == 0.5);
  CHECK(w.bwd_attention_work == 0.625);
  m.sliding_window = 512;
  CHECK(layer(build_workload(m, t), "block.0").fwd_attention_flops.value() == f.fwd_attention_flops.value());
  m.sliding_window = 128;
  t.flash_attention = false;
  CHECK(layer(build_workload(m, t), "block.0").fwd_flops.value() ==
        layer(build_workload(gpt2(768, 12, 12), t), "block.0").fwd_flops.value());
}

TEST_CASE("build_workload: max_window_layers keeps full attention below that block (Qwen2)", "[workload][unit]") {
  // Hugging Face Qwen2: layer i uses the sliding window when i >= max_window_layers. With 12 blocks, w = 128 of
  // s = 512 and max_window_layers = 9, blocks 0-8 keep the full causal count and blocks 9-11 get 0.4375 of it (the
  // ratio of the test above).
  auto t = training(2, 512);
  t.flash_attention = true;
  auto m = gpt2(768, 12, 12);
  const double full = layer(build_workload(m, t), "block.0").fwd_attention_flops.value();
  m.sliding_window = 128;
  m.max_window_layers = 9;
  const auto w = build_workload(m, t);
  for (int i = 0; i < 12; ++i) {
    INFO("block " << i);
    CHECK(layer(w, "block." + std::to_string(i)).fwd_attention_flops.value() ==
          Approx(i < 9 ? full : 0.4375 * full).epsilon(kExact));
  }
}

TEST_CASE("workload: the GEMM list of each layer carries every non-FlashAttention forward FLOP", "[workload][unit]") {
  // fwd_flops = Σ 2·m·n·k·batch over Layer::gemms + fwd_attention_flops, for both families, eager and flash.
  for (const bool flash : {false, true}) {
    auto t = training(2, 512);
    t.flash_attention = flash;
    for (const auto& w : {build_workload(gpt2(768, 2, 12), t), build_workload(llama(512, 2, 8, 2, 1376, 1000), t)}) {
      for (const auto& l : w.layers) {
        double gemm = 0;
        for (const auto& g : l.gemms)
          gemm += g.flops();
        CHECK(gemm + l.fwd_attention_flops.value() == Approx(l.fwd_flops.value()).epsilon(kExact));
      }
    }
  }
  // GPT-2 block, eager: c_attn, QKᵀ and P·V batched over b·a = 24 (sequence, head) pairs, c_proj, c_fc, c_proj.
  const auto w = build_workload(gpt2(768, 2, 12), training(2, 512));
  const std::vector<Gemm> want{{1024, 2304, 768}, {512, 512, 64, 24, false}, {512, 64, 512, 24, false},
                               {1024, 768, 768},  {1024, 3072, 768},         {1024, 768, 3072}};
  CHECK(layer(w, "block.0").gemms == want);
  CHECK(layer(w, "head").gemms == std::vector<Gemm>{{1024, 50257, 768}});
  CHECK(layer(w, "embed").gemms.empty());
}

TEST_CASE("workload: the step's GEMM utilization weighs forward, recompute and backward by their FLOPs",
          "[workload][gemm][unit]") {
  // One layer, one GEMM F: m 2048, n 1728, k 4096 on 108 SMs, compute only (hand calculations, tile = util):
  //   forward                        256x64, 216 tiles in 2 full waves            0.8
  //   dX  m 2048 n 4096 k 1728       128x128, 512 tiles in 5 waves (540 slots)     512/540
  //   dW  m 4096 n 1728 k 2048       128x128, 448 tiles in 5 waves: 7077888/(540·16384) = 0.8
  // Time at the large-GEMM rate, in units of F: forward 1/0.8 = 1.25, backward 540/512 + 1.25 = 2.3046875.
  //   without recompute: 3F / (1.25 + 2.3046875) = 0.8439560...
  //   with recompute (the forward again): 4F / (2.5 + 2.3046875) = 0.8325203...
  Workload w;
  Layer l;
  l.gemms = {Gemm{2048, 1728, 4096}};
  l.fwd_flops = Flops(l.gemms[0].flops()); // as build_workload fills them: forward F, backward 2F
  l.bwd_flops = Flops(2 * l.gemms[0].flops());
  w.layers.push_back(l);
  const GemmHardware hw{108, 1e15, 0, 2};
  const auto u = layer_gemm_utilization(l, hw);
  CHECK(u.forward == Approx(0.8).epsilon(kExact));
  CHECK(u.backward == Approx(2.0 / (540.0 / 512 + 1.25)).epsilon(kExact));
  CHECK(step_gemm_utilization(w, hw) == Approx(3.0 / (1.25 + 540.0 / 512 + 1.25)).epsilon(kExact));
  w.layers[0].recompute_gemms = w.layers[0].gemms; // full recomputation: the forward's GEMMs again
  w.layers[0].recompute_flops = w.layers[0].fwd_flops;
  CHECK(step_gemm_utilization(w, hw) == Approx(4.0 / (2.5 + 540.0 / 512 + 1.25)).epsilon(kExact));
  CHECK(step_gemm_utilization(w, GemmHardware{0, 1e15, 0, 2}) == 1.0);
  // gemm_hardware: the preset's SM count, peak x matmul_efficiency, bandwidth x memory_efficiency.
  scenario::GpuSpec g;
  g.sm_count = 108;
  g.peak_lp = FlopRate(312e12);
  g.matmul_efficiency = 0.5;
  g.memory_bandwidth = ByteRate(2e12);
  g.memory_efficiency = 0.25;
  const GemmHardware h = gemm_hardware(g, 2);
  CHECK(h.sm_count == 108);
  CHECK(h.flop_rate == Approx(156e12).epsilon(kExact));
  CHECK(h.byte_rate == Approx(0.5e12).epsilon(kExact));
  CHECK(h.element_bytes == 2);
}

TEST_CASE("build_workload: frozen weights skip their weight-gradient GEMMs (trainable_fraction)", "[workload][unit]") {
  // Autograd computes no gradient for a frozen weight: a block's backward runs every input-gradient GEMM and, of the
  // weight-gradient GEMMs, the trainable fraction f. GPT-2 small, b = 2, s = 512, eager attention: weight GEMMs
  // 24·T·h² = 24 x 1024 x 768² FLOPs forward; attention GEMMs 4·b·s²·h = 4 x 2 x 512² x 768 (both backward GEMMs
  // kept). f = 0.01: backward = 2 x attention + (1 + 0.01) x weight GEMMs.
  const double weight = 24.0 * 1024 * 768 * 768, attention = 4.0 * 2 * 512 * 512 * 768;
  auto t = training(2, 512);
  t.trainable_fraction = 0.01;
  const auto& blk = layer(build_workload(gpt2(768, 2, 12), t), "block.0");
  CHECK(blk.fwd_flops.value() == Approx(weight + attention).epsilon(kExact));
  CHECK(blk.bwd_flops.value() == Approx(2 * attention + 1.01 * weight).epsilon(kExact));
  CHECK(blk.wgrad_fraction == 0.01);
  // The head's LM-head GEMM (2·T·h·V) is a weight GEMM too.
  const auto& head = layer(build_workload(gpt2(768, 2, 12), t), "head");
  CHECK(head.bwd_flops.value() == Approx(1.01 * 2.0 * 1024 * 768 * 50257).epsilon(kExact));
}

TEST_CASE("build_workload: transformers' eager RMSNorm, rotary embeddings and gelu_new against fused kernels",
          "[workload][unit]") {
  // Hand counts (e = 2 bytes; workload.cpp add_rmsnorm / add_rope / add_gelu), hf minus fused per element:
  //  RMSNorm fwd (4e + 28) - 2e = 32, bwd (8e + 52) - 3e = 62; saved +4 (the fp32 copy).
  //  RoPE fwd 10e - 2e = 16, bwd 14e - 2e = 24, on q (N_h) and k (N_kv).
  //  gelu_new fwd 18e - 2e = 32, bwd 28e - 3e = 50; saved +3e = 6. GPT-2's two LayerNorms: bwd + 2e each (PyTorch's
  //  weight/bias-gradient pass, which llm.c's fused backward does not run): 2 x 4·N_h = 2·N_I at I = 4h.
  // llama-2-7b shape with GQA kv = 8 (h_kv = 1024), b = 1, s = 2048, FlashAttention (no s x s terms).
  const double Nh = 2048.0 * 4096, Nkv = 2048.0 * 1024;
  auto hf = training(1, 2048, false, true);
  auto fused = hf;
  fused.kernel_impl = scenario::KernelImpl::FUSED;
  const auto m = llama(4096, 2, 32, 8, 11008, 32000);
  const auto wa = build_workload(m, hf);
  const auto wb = build_workload(m, fused);
  const Layer& a = layer(wa, "block.0");
  const Layer& b = layer(wb, "block.0");
  CHECK(a.fwd_bytes.value() - b.fwd_bytes.value() == Approx(2 * 32 * Nh + 16 * (Nh + Nkv)).epsilon(kExact));
  CHECK(a.bwd_bytes.value() - b.bwd_bytes.value() == Approx(2 * 62 * Nh + 24 * (Nh + Nkv)).epsilon(kExact));
  CHECK(a.saved_activations.value() - b.saved_activations.value() == Approx(2 * 4 * Nh).epsilon(kExact));
  // The head's final RMSNorm too.
  CHECK(layer(wa, "head").saved_activations.value() - layer(wb, "head").saved_activations.value() ==
        Approx(4 * Nh).epsilon(kExact));
  // GPT-2 with gelu_new (HF GPT-2's activation_function), h = 768, I = 4h, b = 1, s = 1024, flash.
  auto g = gpt2(768, 2, 12);
  g.activation = scenario::Activation::GELU_NEW;
  const double NI = 1024.0 * 3072;
  auto hf2 = training(1, 1024, false, true);
  auto fused2 = hf2;
  fused2.kernel_impl = scenario::KernelImpl::FUSED;
  const auto wc = build_workload(g, hf2);
  const auto wf = build_workload(g, fused2);
  const Layer& c = layer(wc, "block.0");
  const Layer& f2 = layer(wf, "block.0");
  CHECK(c.fwd_bytes.value() - f2.fwd_bytes.value() == Approx(32 * NI).epsilon(kExact));
  CHECK(c.bwd_bytes.value() - f2.bwd_bytes.value() == Approx(50 * NI + 2 * NI).epsilon(kExact));
  CHECK(c.saved_activations.value() - f2.saved_activations.value() == Approx(6 * NI).epsilon(kExact));
  // A one-kernel GELU is the same under both.
  g.activation = scenario::Activation::GELU;
  const auto wg = build_workload(g, hf2);
  const auto wgf = build_workload(g, fused2);
  CHECK(layer(wg, "block.0").fwd_bytes.value() == layer(wgf, "block.0").fwd_bytes.value());
}

TEST_CASE("build_workload: bias gradients and LayerNorm's weight-gradient pass are memory traffic of their own",
          "[workload][unit]") {
  // Hand counts (e = 2 bytes, T = b·s tokens, N_h = T·h; workload.cpp add_bias_grads / add_layernorm / add_rmsnorm).
  // A bias's gradient is dY summed over the tokens: one reduction reading e·T·n per bias of width n. PyTorch's
  // LayerNorm backward re-reads dy and x for its weight and bias (2e·N_h more per norm, kernel_impl hf only). Both are
  // skipped for frozen weights, so they scale with training.trainable_fraction.
  const double e = 2;
  SECTION("GPT-2 block: four biased linears, two LayerNorms") {
    // h 768, I 3072, b 1, s 1024, FlashAttention. Bias widths 3h + h + I + h = 9h: e·9·N_h; LayerNorm passes 2·2e·N_h.
    const double Nh = 1024.0 * 768;
    auto full = training(1, 1024, false, true);
    auto half = full;
    half.trainable_fraction = 0.5;
    auto fused = full;
    fused.kernel_impl = scenario::KernelImpl::FUSED;
    const auto m = gpt2(768, 2, 12);
    const auto wa = build_workload(m, full);
    const auto wb = build_workload(m, half);
    const auto wc = build_workload(m, fused);
    const Layer& a = layer(wa, "block.0");
    const Layer& b = layer(wb, "block.0");
    const Layer& c = layer(wc, "block.0");
    CHECK(a.bwd_bytes.value() - b.bwd_bytes.value() == Approx(0.5 * (9 * e + 2 * 2 * e) * Nh).epsilon(kExact));
    CHECK(a.fwd_bytes.value() == b.fwd_bytes.value());
    // fused (llm.c's one-pass LayerNorm backward) keeps the bias reductions and drops the two second passes.
    CHECK(a.bwd_bytes.value() - c.bwd_bytes.value() == Approx(2 * 2 * e * Nh).epsilon(kExact));
    // The head's ln_f: one second pass.
    CHECK(layer(wa, "head").bwd_bytes.value() - layer(wc, "head").bwd_bytes.value() ==
          Approx(2 * e * Nh).epsilon(kExact));
  }
  SECTION("Qwen2-style q/k/v biases and LLaMA's attention_bias on all four") {
    // h 1536, 12 heads of 128, 2 KV heads (h_kv 256), I 8960, b 4, s 512: q/k/v biases e·T·(1536 + 2·256) = e·T·2048;
    // o_proj's bias adds e·T·1536.
    const double T = 4.0 * 512;
    auto m = llama(1536, 2, 12, 2, 8960, 151936);
    const auto t = training(4, 512, false, true);
    const double none = layer(build_workload(m, t), "block.0").bwd_bytes.value();
    m.attention_bias = scenario::AttentionBias::QKV;
    const double qkv = layer(build_workload(m, t), "block.0").bwd_bytes.value();
    m.attention_bias = scenario::AttentionBias::QKVO;
    const double qkvo = layer(build_workload(m, t), "block.0").bwd_bytes.value();
    CHECK(qkv - none == Approx(e * T * 2048).epsilon(kExact));
    CHECK(qkvo - qkv == Approx(e * T * 1536).epsilon(kExact));
  }
  SECTION("eager LlamaRMSNorm: the weight's gradient is a full-size product, then a reduction") {
    // hf: dweight = dy · x_norm written full size (3e) and summed over the tokens (e) = 4e·N_h per norm, two per block,
    // scaled by the trainable fraction: fraction 1 against 0.25 differs by 0.75 · 2 · 4e·N_h.
    const double Nh = 2048.0 * 4096;
    auto t = training(1, 2048, false, true);
    auto q = t;
    q.trainable_fraction = 0.25;
    const auto m = llama(4096, 2, 32, 8, 11008, 32000);
    const auto wt = build_workload(m, t);
    const auto wq = build_workload(m, q);
    CHECK(layer(wt, "block.0").bwd_bytes.value() - layer(wq, "block.0").bwd_bytes.value() ==
          Approx(0.75 * 2 * 4 * e * Nh).epsilon(kExact));
  }
}

TEST_CASE("build_workload: fp32 training doubles the element size and drops the fp32 casts", "[workload][unit]") {
  auto t = training(4, 1024);
  t.precision = scenario::Precision::FP32;
  // GPT-2 small, b = 4, s = 1024, h = 768, a = 12, eager attention: the block formula (8e + 2)·N_h + 2e·N_I +
  // (2e + 1)·N_s with e = 4, I = 4h is 66·sbh + 9·a·s²·b: 66 x 3,145,728 + 9 x 50,331,648 = 207,618,048 +
  // 452,984,832 = 660,602,880 B (34·sbh + 5·a·s²·b in bf16).
  const auto w = build_workload(gpt2(768, 12, 12), t);
  CHECK(w.bytes_per_lp == 4.0);
  CHECK(layer(w, "block.0").saved_activations.value() == 660'602'880.0);
  CHECK(layer(w, "block.0").param_grad_bytes_lp.value() == 4.0 * static_cast<double>(layer(w, "block.0").param_count));
  // The head: HF's logits.float() is the fp32 logits themselves, so no fp32 upcast transient in forward (bf16:
  // 4·T·V) -- the logits and the log_softmax output (4 B each) are saved either way.
  const double NV = 4.0 * 1024 * 50257;
  CHECK(layer(w, "head").fwd_working_bytes.value() == 0.0);
  CHECK(layer(build_workload(gpt2(768, 12, 12), training(4, 1024)), "head").fwd_working_bytes.value() == 4 * NV);
  // LLaMA, kernel_impl fused, eager attention, h 1024, a = kv = 16, I 2048, b 1, s 128: in bf16 4e·N_h + 4e·N_q +
  // 4e·N_I + (4 + e)·N_s; in fp32 the softmax's .to(query.dtype) is a no-op, so its fp32 output is also P·V's operand:
  // 16·N_h + 16·N_q + 16·N_I + 4·N_s = 16 x 131,072 x 2 + 16 x 262,144 + 4 x 262,144 = 9,437,184 B.
  auto tl = training(1, 128);
  tl.precision = scenario::Precision::FP32;
  tl.kernel_impl = scenario::KernelImpl::FUSED;
  const auto wl = build_workload(llama(1024, 2, 16, 16, 2048, 32000), tl);
  CHECK(layer(wl, "block.0").saved_activations.value() == 9'437'184.0);
}

TEST_CASE("gemm_hardware: fp32 GEMMs run at peak_fp32, or peak_tf32 with training.tf32", "[workload][unit]") {
  // A100 SXM (NVIDIA A100 datasheet): 312 TFLOPS bf16 dense, 19.5 fp32, 156 TF32 dense. The large-GEMM time ratio
  // fp32 / bf16 = (peak_lp x eff) / (peak_fp32 x eff) = 312 / 19.5 = 16; with TF32 312 / 156 = 2.
  scenario::GpuSpec g;
  g.peak_lp = FlopRate(312e12);
  g.peak_fp32 = FlopRate(19.5e12);
  g.peak_tf32 = FlopRate(156e12);
  g.matmul_efficiency = 0.869;
  g.memory_bandwidth = ByteRate(2e12);
  g.memory_efficiency = 0.9;
  scenario::TrainingSpec bf16, fp32, tf32;
  fp32.precision = tf32.precision = scenario::Precision::FP32;
  tf32.tf32 = true;
  const double lp_rate = gemm_hardware(g, 2, scenario::matmul_peak(g, bf16)).flop_rate;
  CHECK(lp_rate == Approx(312e12 * 0.869).epsilon(kExact));
  CHECK(gemm_hardware(g, 2).flop_rate == lp_rate); // no peak given: peak_lp
  CHECK(lp_rate / gemm_hardware(g, 4, scenario::matmul_peak(g, fp32)).flop_rate == Approx(16.0).epsilon(kExact));
  CHECK(lp_rate / gemm_hardware(g, 4, scenario::matmul_peak(g, tf32)).flop_rate == Approx(2.0).epsilon(kExact));
  // training.tf32 changes nothing in bf16, and on a card without TF32 tensor cores (V100: peak_tf32 0) fp32 stays on
  // the CUDA cores.
  bf16.tf32 = true;
  CHECK(scenario::matmul_peak(g, bf16).value() == 312e12);
  g.peak_tf32 = FlopRate(0);
  CHECK(scenario::matmul_peak(g, tf32).value() == 19.5e12);
}
