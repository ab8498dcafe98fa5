#include "sim/workload/formulas.hpp"

namespace zerosim::workload {

namespace {
double d(std::int64_t x) { return static_cast<double>(x); }
} // namespace

Elements gpt_layer_params(std::int64_t h) { return 12 * h * h + 13 * h; }

Elements gpt_model_params(std::int64_t l, std::int64_t h, std::int64_t V, std::int64_t s) {
  // 12·l·h²·(1 + 13/(12h) + (V+s)/(12·l·h)) expanded to integers, so the count is exact.
  return l * gpt_layer_params(h) + (V + s) * h;
}

Bytes korthikanti_activation_bytes(std::int64_t s, std::int64_t b, std::int64_t h, std::int64_t a) {
  // sbh·(34 + 5as/h) = 34·sbh + 5·a·s²·b (exact when h does not divide as).
  return Bytes(34.0 * d(s) * d(b) * d(h) + 5.0 * d(a) * d(s) * d(s) * d(b));
}

Bytes flash_attention_activation_bytes(std::int64_t s, std::int64_t b, std::int64_t h, std::int64_t a) {
  return Bytes(34.0 * d(s) * d(b) * d(h) + 4.0 * d(a) * d(s) * d(b));
}

Bytes checkpointed_activation_bytes(std::int64_t s, std::int64_t b, std::int64_t h) {
  return Bytes(2.0 * d(s) * d(b) * d(h));
}

Flops gemm_flops(std::int64_t m, std::int64_t n, std::int64_t k) { return Flops(2.0 * d(m) * d(n) * d(k)); }

Flops gpt_layer_forward_flops(std::int64_t b, std::int64_t s, std::int64_t h) {
  return Flops(24.0 * d(b) * d(s) * d(h) * d(h) + 4.0 * d(b) * d(s) * d(s) * d(h));
}

Flops narayanan_iteration_flops(std::int64_t B, std::int64_t s, std::int64_t l, std::int64_t h, std::int64_t V,
                                bool recompute) {
  const double base = (recompute ? 96.0 : 72.0) * d(B) * d(s) * d(l) * d(h) * d(h);
  const double v_term = d(V) / ((recompute ? 16.0 : 12.0) * d(l) * d(h));
  return Flops(base * (1.0 + d(s) / (6.0 * d(h)) + v_term));
}

Bytes zero_infinity_mswm_bytes(std::int64_t h) {
  // fp16 param (2 B) + fp16 grad (2 B) of the h x 4h linear.
  return Bytes(4.0 * d(h) * 4.0 * d(h));
}

double zero_infinity_ait_params(std::int64_t bsz, std::int64_t seq) { return d(bsz) * d(seq); }

double zero_infinity_ait_optimizer(std::int64_t bsz, std::int64_t seq) { return d(bsz) * d(seq) / 4.0; }

double zero_infinity_efficiency(double ait, double bw_bytes_per_s, double peak_flops) {
  const double moved = ait * bw_bytes_per_s;
  return moved / (moved + peak_flops);
}

} // namespace zerosim::workload
