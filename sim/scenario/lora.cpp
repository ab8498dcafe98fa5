#include "sim/scenario/lora.hpp"

#include <algorithm>

namespace zerosim::scenario {

std::vector<LoraLinear> lora_linears(const ModelSpec& m) {
  const std::int64_t h = m.hidden;
  const std::int64_t I = m.intermediate != 0 ? m.intermediate : 4 * h;
  if (m.family == ModelFamily::GPT2)
    return {{"attn.c_attn", h, 3 * h}, {"attn.c_proj", h, h}, {"mlp.c_fc", h, I}, {"mlp.c_proj", I, h}};
  if (m.family == ModelFamily::OPT)
    return {{"self_attn.q_proj", h, h},
            {"self_attn.k_proj", h, h},
            {"self_attn.v_proj", h, h},
            {"self_attn.out_proj", h, h},
            {"fc1", h, I},
            {"fc2", I, h}};
  const std::int64_t kv = m.kv_heads != 0 ? m.kv_heads : m.heads;
  const std::int64_t d = m.head_dim != 0 ? m.head_dim : (m.heads > 0 ? h / m.heads : 0);
  const std::int64_t hq = m.heads * d;
  const std::int64_t hkv = kv * d;
  return {{"self_attn.q_proj", h, hq}, {"self_attn.k_proj", h, hkv}, {"self_attn.v_proj", h, hkv},
          {"self_attn.o_proj", hq, h}, {"mlp.gate_proj", h, I},      {"mlp.up_proj", h, I},
          {"mlp.down_proj", I, h}};
}

std::vector<std::string> lora_default_targets(ModelFamily f) {
  if (f == ModelFamily::GPT2)
    return {"c_attn"};
  return {"q_proj", "v_proj"};
}

bool lora_target_matches(const std::string& target, const std::string& module_path) {
  if (target == "all-linear" || target == module_path)
    return true;
  return module_path.size() > target.size() + 1 &&
         module_path.compare(module_path.size() - target.size(), target.size(), target) == 0 &&
         module_path[module_path.size() - target.size() - 1] == '.';
}

bool lora_targeted(const std::vector<std::string>& targets, const std::string& module_path) {
  return std::any_of(targets.begin(), targets.end(),
                     [&](const std::string& t) { return lora_target_matches(t, module_path); });
}

std::string lora_target_names(const ModelSpec& m) {
  std::vector<std::string> names;
  const auto add = [&](const std::string& n) {
    if (std::find(names.begin(), names.end(), n) == names.end())
      names.push_back(n);
  };
  const auto linears = lora_linears(m);
  for (const LoraLinear& l : linears)
    add(l.path.substr(l.path.rfind('.') == std::string::npos ? 0 : l.path.rfind('.') + 1));
  for (const LoraLinear& l : linears)
    if (l.path.find('.') != std::string::npos)
      add(l.path);
  add("all-linear");
  std::string out;
  for (const std::string& n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::int64_t lora_block_params(const ModelSpec& m, const std::vector<std::string>& targets, std::int64_t rank) {
  std::int64_t n = 0;
  for (const LoraLinear& l : lora_linears(m))
    if (lora_targeted(targets, l.path))
      n += rank * (l.in + l.out);
  return n;
}

} // namespace zerosim::scenario
