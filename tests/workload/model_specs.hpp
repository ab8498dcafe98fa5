// Test support for the workload tests: ModelSpecs of the GPT-2 and LLaMA families built from their dimensions, as
// a Hugging Face config.json gives them (n_embd / hidden_size, n_layer, n_head, num_key_value_heads,
// intermediate_size, vocab_size).
#pragma once

#include "sim/scenario/scenario.hpp"

#include <cstdint>

namespace zerosim::workload::testing {

/// A GPT-2 of hidden `h`, `L` blocks and `a` heads: MLP 4h, GPT-2's vocabulary (50257) and 1024 learned positions,
/// the LM head tied to the token embedding.
inline scenario::ModelSpec gpt2(std::int64_t h, std::int64_t L, std::int64_t a) {
  scenario::ModelSpec m;
  m.name = "gpt2-like";
  m.family = scenario::ModelFamily::GPT2;
  m.hidden = h;
  m.layers = L;
  m.heads = a;
  m.kv_heads = a;
  m.intermediate = 4 * h;
  m.vocab = 50257;
  m.max_positions = 1024;
  m.tied_embeddings = true;
  return m;
}

/// A LLaMA of hidden `h`, `L` blocks, `a` query and `kv` key/value heads, MLP width `I` and vocabulary `V`: rotary
/// positions (no table), an untied LM head.
inline scenario::ModelSpec llama(std::int64_t h, std::int64_t L, std::int64_t a, std::int64_t kv, std::int64_t I,
                                 std::int64_t V) {
  scenario::ModelSpec m;
  m.name = "llama-like";
  m.family = scenario::ModelFamily::LLAMA;
  m.hidden = h;
  m.layers = L;
  m.heads = a;
  m.kv_heads = kv;
  m.intermediate = I;
  m.vocab = V;
  m.max_positions = 0;
  m.tied_embeddings = false;
  return m;
}

} // namespace zerosim::workload::testing
