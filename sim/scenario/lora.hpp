// LoRA as PEFT builds it (peft/tuners/lora: LoraConfig, LoraModel, LoraLayer): which linear modules of a
// transformer block can carry adapters, their in/out widths, PEFT's default targets per family and PEFT's rule for
// matching `target_modules` against module names. Shared by the loader (validation) and the workload (the adapter
// tensors, GEMMs and saved activations).
#pragma once

#include "sim/scenario/scenario.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace zerosim::scenario {

/// One nn.Linear (GPT-2: transformers Conv1D) of a transformer block: its path below the block ("self_attn.q_proj",
/// "attn.c_attn"), input and output features. Its weight is in × out elements; LoRA adds lora_A (r × in) and lora_B
/// (out × r).
struct LoraLinear {
  std::string path;
  std::int64_t in = 0;
  std::int64_t out = 0;
};

/// The linear modules of one block of `m`'s family, in forward (registration) order, from the resolved dims
/// (kv_heads, head_dim, intermediate as the workload resolves them: 0 kv_heads means heads, 0 head_dim hidden / heads,
/// 0 intermediate 4h for GPT-2/OPT). LLaMA: self_attn.{q,k,v,o}_proj, mlp.{gate,up,down}_proj; GPT-2: attn.c_attn,
/// attn.c_proj, mlp.c_fc, mlp.c_proj; OPT: self_attn.{q,k,v,out}_proj, fc1, fc2. The LM head is not listed (PEFT's
/// "all-linear" leaves the output layer out too).
[[nodiscard]] std::vector<LoraLinear> lora_linears(const ModelSpec& m);

/// PEFT's default target_modules for the family (peft/utils/constants.py
/// TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING): llama (also mistral, qwen2) and opt {q_proj, v_proj}; gpt2
/// {c_attn}.
[[nodiscard]] std::vector<std::string> lora_default_targets(ModelFamily f);

/// PEFT's match of one target_modules entry against a module path (peft/tuners/tuners_utils.py
/// check_target_module_exists): equal, or the path ends with "." + target. "all-linear" (PEFT's shorthand) matches every
/// block linear.
[[nodiscard]] bool lora_target_matches(const std::string& target, const std::string& module_path);

/// True when some entry of `targets` matches `module_path`.
[[nodiscard]] bool lora_targeted(const std::vector<std::string>& targets, const std::string& module_path);

/// The names a user may give for `m`'s family: each linear's last component and its block path, deduplicated, plus
/// "all-linear", joined by ", " (for error messages and docs).
[[nodiscard]] std::string lora_target_names(const ModelSpec& m);

/// Adapter parameters LoRA rank `rank` adds to one block: Σ rank·(in + out) over the targeted linears.
[[nodiscard]] std::int64_t lora_block_params(const ModelSpec& m, const std::vector<std::string>& targets,
                                             std::int64_t rank);

} // namespace zerosim::scenario
