// LoRA as PEFT builds it (training.lora_rank, sim/scenario/lora.hpp): adapter tensors, frozen bases, the adapters'
// GEMMs and the saved tensors. Expected values are PEFT's printed counts or hand sums written out below.
#include "sim/scenario/lora.hpp"
#include "sim/workload/workload.hpp"

#include "tests/workload/model_specs.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

using namespace zerosim;
using namespace zerosim::workload;
using scenario::ModelFamily;
using scenario::ModelSpec;
using scenario::TrainingSpec;
using workload::testing::gpt2;
using workload::testing::llama;

namespace {

constexpr double kExact = 1e-12; // sums of the same integers in another order

ModelSpec opt(std::int64_t h, std::int64_t L, std::int64_t a) {
  ModelSpec m = gpt2(h, L, a);
  m.family = ModelFamily::OPT;
  m.tied_embeddings = true;
  return m;
}
TrainingSpec lora(std::int64_t b, std::int64_t s, std::int64_t r, std::vector<std::string> targets = {}) {
  TrainingSpec t;
  t.micro_batch = b;
  t.seq_len = s;
  t.lora_rank = r;
  t.lora_targets = std::move(targets);
  return t;
}
const Layer& layer(const Workload& w, const std::string& name) {
  for (const Layer& l : w.layers)
    if (l.name == name)
      return l;
  FAIL("no layer " << name);
  return w.layers.front();
}
const ParamTensor* param(const Layer& l, const std::string& name) {
  for (const ParamTensor& t : l.params)
    if (t.name == name)
      return &t;
  return nullptr;
}

} // namespace

TEST_CASE("LoRA: llama-2-7b at r = 8 on q_proj, v_proj has PEFT's printed parameter counts", "[workload][validation]") {
  // PEFT print_trainable_parameters() for meta-llama/Llama-2-7b-hf, LoraConfig(r=8, target_modules=["q_proj",
  // "v_proj"]): "trainable params: 4,194,304 || all params: 6,742,609,920". By hand: 32 layers x 2 targets x
  // 8 x (4096 + 4096) = 4,194,304; base 6,738,415,616 (the checkpoint) + 4,194,304 = 6,742,609,920.
  const auto base = build_workload(llama(4096, 32, 32, 32, 11008, 32000), lora(1, 4096, 0));
  REQUIRE(base.total_params == 6'738'415'616);
  const auto w = build_workload(llama(4096, 32, 32, 32, 11008, 32000), lora(1, 4096, 8, {"q_proj", "v_proj"}));
  CHECK(w.trainable_params == 4'194'304);
  CHECK(w.total_params == 6'742'609'920);
  // PEFT's default targets for llama are the same two.
  CHECK(build_workload(llama(4096, 32, 32, 32, 11008, 32000), lora(1, 4096, 8)).trainable_params == 4'194'304);
  // r = 16, target_modules="all-linear" (the QLoRA recipes' print: "trainable params: 39,976,960 || all params:
  // 6,778,392,576"): 32 x 16 x (4 attention x (4096 + 4096) + 3 MLP x (4096 + 11008)) = 32 x 16 x 78,080.
  const auto all = build_workload(llama(4096, 32, 32, 32, 11008, 32000), lora(1, 4096, 16, {"all-linear"}));
  CHECK(all.trainable_params == 39'976'960);
  CHECK(all.total_params == 6'778'392'576);
}

TEST_CASE("LoRA: GPT-2 small on c_attn adds r x (h + 3h) per block", "[workload][unit]") {
  // c_attn is a Conv1D h -> 3h: lora_A r x 768, lora_B 2304 x r. r = 8: 8 x (768 + 2304) = 24,576 per block, x 12
  // = 294,912 trainable; all params 124,439,808 + 294,912 = 124,734,720.
  const auto w = build_workload(gpt2(768, 12, 12), lora(1, 1024, 8, {"c_attn"}));
  CHECK(w.trainable_params == 294'912);
  CHECK(w.total_params == 124'734'720);
  const Layer& blk = layer(w, "block.3");
  const ParamTensor* a = param(blk, "h.3.attn.c_attn.lora_A.default.weight");
  const ParamTensor* b = param(blk, "h.3.attn.c_attn.lora_B.default.weight");
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  CHECK(a->numel == 8 * 768);
  CHECK(b->numel == 2304 * 8);
  CHECK(a->trainable);
  CHECK(b->trainable);
  // The base is renamed as PEFT wraps it, and frozen with every other tensor (biases too).
  REQUIRE(param(blk, "h.3.attn.c_attn.base_layer.weight") != nullptr);
  REQUIRE(param(blk, "h.3.attn.c_attn.base_layer.bias") != nullptr);
  CHECK(param(blk, "h.3.attn.c_attn.weight") == nullptr);
  for (const Layer& l : w.layers)
    for (const ParamTensor& t : l.params)
      CHECK(t.trainable == (t.name.find(".lora_") != std::string::npos));
  // lp gradient bytes: the adapters' only.
  CHECK(blk.param_grad_bytes_lp.value() == 2.0 * 24'576);
  CHECK(layer(w, "embed").param_grad_bytes_lp.value() == 0.0);
  // "all-linear": c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj: 8 x ((768 + 2304) + (768 + 768) + (768 + 3072) +
  // (3072 + 768)) = 8 x 12,288 = 98,304 per block; "c_proj" alone matches both c_proj modules: 8 x 5,376 = 43,008.
  CHECK(build_workload(gpt2(768, 12, 12), lora(1, 1024, 8, {"all-linear"})).trainable_params == 12 * 98'304);
  CHECK(build_workload(gpt2(768, 12, 12), lora(1, 1024, 8, {"c_proj"})).trainable_params == 12 * 43'008);
  CHECK(build_workload(gpt2(768, 12, 12), lora(1, 1024, 8, {"mlp.c_proj"})).trainable_params == 12 * 8 * 3840);
}

TEST_CASE("LoRA: lora_linears names each block linear with its in x out weight", "[workload][unit]") {
  // The loader validates targets and ranks against lora_linears(); the workload builds the tensors. They must agree
  // for every family: a weight "<prefix><path>.weight" of in x out elements.
  auto gqa = llama(256, 1, 4, 2, 688, 1000);
  gqa.head_dim = 32; // q width 128, kv width 64
  for (const ModelSpec& m : {gpt2(256, 1, 4), opt(256, 1, 4), llama(256, 1, 4, 4, 688, 1000), gqa}) {
    const auto w = build_workload(m, lora(1, 64, 0));
    const Layer& blk = layer(w, "block.0");
    const std::string p = m.family == ModelFamily::GPT2 ? "h.0." : "layers.0.";
    for (const scenario::LoraLinear& l : scenario::lora_linears(m)) {
      const ParamTensor* t = param(blk, p + l.path + ".weight");
      REQUIRE(t != nullptr);
      CHECK(t->numel == l.in * l.out);
    }
  }
}

TEST_CASE("LoRA: frozen bases skip their weight-gradient GEMMs, adapters add two GEMMs each way", "[workload][unit]") {
  // llama(h 256, I 688), b = 1, s = 64 (T = 64), FlashAttention, r = 8 on q_proj and v_proj.
  // Base weight GEMMs forward W = 2T(4h² + 3hI) = 128 x (262,144 + 528,384) = 101,187,584; attention (fused)
  // A = 2 x 2·b·s²·h = 4 x 64² x 256 = 4,194,304; adapters F = 2 targets x (2·T·h·r + 2·T·r·h) = 8 x 64 x 8 x 256 =
  // 1,048,576. Backward: attention 2A, the bases' dX GEMMs only W, the adapters' dX and dW 2F.
  const double W = 101'187'584, A = 4'194'304, F = 1'048'576;
  auto t = lora(1, 64, 8, {"q_proj", "v_proj"});
  t.flash_attention = true;
  const auto w = build_workload(llama(256, 2, 4, 4, 688, 1000), t);
  const Layer& blk = layer(w, "block.1");
  CHECK(blk.fwd_flops.value() == Approx(W + A + F).epsilon(kExact));
  CHECK(blk.bwd_flops.value() == Approx(2 * A + W + 2 * F).epsilon(kExact));
  CHECK(blk.wgrad_fraction == 0.0);
  CHECK(std::count_if(blk.gemms.begin(), blk.gemms.end(), [](const Gemm& g) { return g.adapter; }) == 4);
  // Memory-bound traffic (e = 2, T·h = N_h, dropout 0): per target the alpha/r scaling 2e·N_h each way, the add onto
  // the base output 3e·N_h forward and the sum of x's two gradients 3e·N_h backward: + 10e·N_h forward and backward
  // for the two targets. With kernel_impl hf each LlamaRMSNorm's frozen weight multiply computes no dweight (the
  // full-size product 3e·N_h and its reduction over the tokens e·N_h): - 4e·N_h per norm in backward, two per block.
  const double Nh = 64.0 * 256, e = 2;
  for (bool hf : {false, true}) {
    auto plain = lora(1, 64, 0);
    plain.flash_attention = true;
    plain.kernel_impl = hf ? scenario::KernelImpl::HF : scenario::KernelImpl::FUSED;
    auto with = plain;
    with.lora_rank = 8;
    const auto wp = build_workload(llama(256, 2, 4, 4, 688, 1000), plain);
    const auto wq = build_workload(llama(256, 2, 4, 4, 688, 1000), with);
    const Layer& p = layer(wp, "block.1");
    const Layer& q = layer(wq, "block.1");
    CHECK(q.fwd_bytes.value() - p.fwd_bytes.value() == Approx(10 * e * Nh).epsilon(kExact));
    CHECK(q.bwd_bytes.value() - p.bwd_bytes.value() == Approx(10 * e * Nh - (hf ? 8 * e * Nh : 0)).epsilon(kExact));
  }
  // Full checkpointing re-runs the adapters' forward too.
  t.activation_checkpointing = true;
  CHECK(layer(build_workload(llama(256, 2, 4, 4, 688, 1000), t), "block.1").recompute_flops.value() ==
        Approx(W + A + F).epsilon(kExact));
  // The head's LM head is frozen: backward 1 x its forward (dX only), 2·T·h·V.
  CHECK(layer(w, "head").bwd_flops.value() == Approx(2.0 * 64 * 256 * 1000).epsilon(kExact));
}

TEST_CASE("LoRA: frozen linears keep no input, adapters keep A·x (and with dropout its output and mask)",
          "[workload][unit]") {
  // llama-2-7b block dims, b = 1, s = 1024, FlashAttention, fused kernels, e = 2, r = 16 on q_proj, v_proj.
  // N_h = N_q = N_kv = 1024 x 4096, N_I = 1024 x 11008, lse = 4·a·s·b = 4 x 32 x 1024, T = 1024.
  // Without LoRA (workload.cpp make_llama_block): e·(4N_h + 2N_q + 2N_kv) + 4e·N_I + lse = e·8N_h + 4e·N_I + lse.
  // LoRA, dropout 0: the gate/up input (e·N_h) and down_proj's input (e·N_I) go (frozen weights); the q/k/v input
  // stays (lora_A of q and v reads it); + 2 x A·x = 2·e·T·r.
  // LoRA, dropout 0.1: the q/k/v input goes too; each target keeps its dropout output e·T·h and 1-byte mask T·h.
  const double Nh = 1024.0 * 4096, NI = 1024.0 * 11008, lse = 4.0 * 32 * 1024, T = 1024, r = 16, e = 2;
  auto t = lora(1, 1024, 0);
  t.flash_attention = true;
  t.kernel_impl = scenario::KernelImpl::FUSED;
  const auto m = llama(4096, 2, 32, 32, 11008, 32000);
  CHECK(layer(build_workload(m, t), "block.0").saved_activations.value() ==
        Approx(e * 8 * Nh + 4 * e * NI + lse).epsilon(kExact));
  t.lora_rank = 16;
  const auto w = build_workload(m, t);
  CHECK(layer(w, "block.0").saved_activations.value() ==
        Approx(e * 7 * Nh + 3 * e * NI + lse + 2 * e * T * r).epsilon(kExact));
  t.lora_dropout = 0.1;
  CHECK(layer(build_workload(m, t), "block.0").saved_activations.value() ==
        Approx(e * 6 * Nh + 3 * e * NI + lse + 2 * (e * Nh + Nh + e * T * r)).epsilon(kExact));
  // kernel_impl hf: each RMSNorm also saves an fp32 copy (4·N_h) and, without LoRA, its normalised lp tensor
  // (e·N_h), which only the frozen norm weight's gradient reads: + 2 x 4·N_h with LoRA, + 2 x (4 + e)·N_h without.
  t.lora_dropout = 0;
  t.kernel_impl = scenario::KernelImpl::HF;
  CHECK(layer(build_workload(m, t), "block.0").saved_activations.value() ==
        Approx(e * 5 * Nh + 8 * Nh + 3 * e * NI + lse + 2 * e * T * r).epsilon(kExact));
  // The frozen embedding records no autograd graph: nothing saved, no backward traffic.
  CHECK(layer(w, "embed").saved_activations.value() == 0.0);
  CHECK(layer(w, "embed").bwd_bytes.value() == 0.0);
  // The adapters' tensors are freed by their own modules' backward parts; the base's by base_layer.
  const Layer& blk = layer(w, "block.0");
  double a_x = 0, q_base = 0;
  for (std::size_t j = 0; j < blk.activation_tensors.size(); ++j) {
    if (blk.activation_modules[j] == "layers.0.self_attn.q_proj.lora_B.default")
      a_x += blk.activation_tensors[j].value();
    if (blk.activation_modules[j] == "layers.0.self_attn.q_proj.base_layer")
      q_base += blk.activation_tensors[j].value();
  }
  CHECK(a_x == e * T * r);
  CHECK(q_base == e * Nh);
}

TEST_CASE("LoRA: every saved tensor still names a module of its layer", "[workload][unit]") {
  // As for the plain blocks (workload_test.cpp): the renamed bases and the adapters are modules of the layer.
  for (bool flash : {false, true})
    for (int mode : {0, 1, 2})
      for (double dropout : {0.0, 0.05})
        for (const ModelSpec& m : {gpt2(256, 2, 4), opt(256, 2, 4), llama(256, 2, 4, 2, 688, 1000)}) {
          auto t = lora(1, 64, 4, {"all-linear"});
          t.flash_attention = flash;
          t.activation_checkpointing = mode > 0;
          if (mode == 2)
            t.recompute_granularity = scenario::RecomputeGranularity::SELECTIVE;
          t.lora_dropout = dropout;
          const auto w = build_workload(m, t);
          for (const Layer& l : w.layers) {
            std::vector<std::string> own;
            for (const ParamTensor& pt : l.params)
              own.push_back(pt.name.substr(0, pt.name.rfind('.')));
            for (const auto* names : {&l.activation_modules, &l.recompute_modules})
              for (const std::string& name : *names)
                CHECK((name.empty() || std::find(own.begin(), own.end(), name) != own.end()));
            CHECK(l.activation_modules.size() == l.activation_tensors.size());
          }
        }
}
