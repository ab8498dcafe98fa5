#include "sim/scenario/scenario.hpp"

#include <algorithm>

namespace zerosim::scenario {

const char* to_string(ModelFamily f) {
  return f == ModelFamily::GPT2 ? "gpt2" : f == ModelFamily::OPT ? "opt" : "llama";
}
const char* to_string(Activation a) { return a == Activation::GELU_NEW ? "gelu_new" : "gelu"; }

const char* to_string(KernelImpl k) { return k == KernelImpl::FUSED ? "fused" : "hf"; }
const char* to_string(FlashAttentionKernel k) { return k == FlashAttentionKernel::TRITON ? "triton" : "flash2"; }
const char* to_string(Launcher l) {
  switch (l) {
  case Launcher::DEEPSPEED_BIND_CORES:
    return "deepspeed-bind-cores";
  case Launcher::TORCHRUN:
    return "torchrun";
  case Launcher::ACCELERATE:
    return "accelerate";
  case Launcher::DEEPSPEED:
    break;
  }
  return "deepspeed";
}

const char* cpu_threads_setter(const TrainingSpec& training) {
  if (training.omp_num_threads > 0 && training.launcher != Launcher::DEEPSPEED_BIND_CORES)
    return "OMP_NUM_THREADS";
  return to_string(training.launcher);
}

const char* to_string(AttentionBias b) {
  return b == AttentionBias::NONE ? "none" : b == AttentionBias::QKV ? "qkv" : "qkvo";
}
const char* to_string(Precision p) { return p == Precision::FP16 ? "fp16" : p == Precision::FP32 ? "fp32" : "bf16"; }

FlopRate matmul_peak(const GpuSpec& gpu, const TrainingSpec& training) {
  if (training.precision != Precision::FP32)
    return gpu.peak_lp;
  return training.tf32 && gpu.peak_tf32.value() > 0 ? gpu.peak_tf32 : gpu.peak_fp32;
}
const char* to_string(OptimizerKind o) { return o == OptimizerKind::ADAM ? "adam" : "adamw"; }
const char* to_string(OffloadDevice d) {
  switch (d) {
  case OffloadDevice::NONE:
    return "none";
  case OffloadDevice::CPU:
    return "cpu";
  case OffloadDevice::NVME:
    return "nvme";
  }
  return "?";
}
const char* to_string(GradAccumDtype d) {
  switch (d) {
  case GradAccumDtype::MODEL:
    return "model";
  case GradAccumDtype::FP32:
    return "fp32";
  case GradAccumDtype::FP16:
    return "fp16";
  case GradAccumDtype::BF16:
    return "bf16";
  }
  return "?";
}
const char* to_string(CommDataType d) {
  switch (d) {
  case CommDataType::MODEL:
    return "model";
  case CommDataType::FP32:
    return "fp32";
  case CommDataType::FP16:
    return "fp16";
  case CommDataType::BF16:
    return "bf16";
  }
  return "?";
}
const char* to_string(FabricKind k) {
  switch (k) {
  case FabricKind::NONE:
    return "none";
  case FabricKind::SINGLE_SWITCH:
    return "single-switch";
  case FabricKind::FAT_TREE:
    return "fat-tree";
  case FabricKind::TORUS:
    return "torus";
  case FabricKind::DRAGONFLY:
    return "dragonfly";
  case FabricKind::RAIL:
    return "rail";
  }
  return "?";
}
const char* to_string(Fidelity f) {
  switch (f) {
  case Fidelity::FLOW:
    return "flow";
  case Fidelity::ANALYTIC:
    return "analytic";
  case Fidelity::CHUNK:
    return "chunk";
  }
  return "?";
}
const char* to_string(OomPolicy p) { return p == OomPolicy::STOP ? "stop" : "continue"; }
const char* to_string(FoldPolicy p) {
  switch (p) {
  case FoldPolicy::AUTO:
    return "auto";
  case FoldPolicy::ON:
    return "on";
  case FoldPolicy::OFF:
    return "off";
  }
  return "?";
}

std::int64_t simulated_ranks(const ClusterSpec& cluster, FoldPolicy fold, Fidelity fidelity) {
  // Folding assumes every node sees the same, non-blocking fabric: AUTO does not fold an oversubscribed fat tree
  // (cross-leaf traffic contends at the leaf uplinks), a torus or a dragonfly (ring hops differ in length and share
  // links).
  const bool symmetric = cluster.fabric != FabricKind::TORUS && cluster.fabric != FabricKind::DRAGONFLY &&
                         !(cluster.fabric == FabricKind::FAT_TREE && cluster.fabric_oversubscription > 1);
  const bool folded = fold == FoldPolicy::ON || (fold == FoldPolicy::AUTO && cluster.nodes > 2 && symmetric);
  const std::int64_t nodes = !folded ? cluster.nodes : fidelity == Fidelity::ANALYTIC ? 1 : std::min(cluster.nodes, 2);
  return nodes * cluster.gpus_per_node;
}

int fat_tree_leaf_nodes(int nodes, int requested) {
  constexpr int kDefaultLeafRadix = 32; // nodes per leaf switch when the cluster does not say
  int limit = requested > 0 ? requested : kDefaultLeafRadix;
  if (limit > nodes)
    limit = nodes;
  for (int k = limit; k >= 1; --k)
    if (nodes % k == 0)
      return k;
  return 1;
}

bool has_nvlink_sharp_gpu(std::string_view gpu) {
  for (std::string_view prefix : {"h100", "h200", "gh200", "b100", "b200", "gb200", "b300", "gb300"})
    if (gpu.substr(0, prefix.size()) == prefix)
      return true;
  return false;
}

bool uses_bf16_optimizer(const TrainingSpec& training, const ZeroConfig& zero) {
  // Any offload device is zero_cpu_offload() at stage 1 (stage_1_and_2.py), which keeps the ZeRO path. Stage 0
  // with fp32 accumulation is BF16_Optimizer before DeepSpeed 0.18.5 (engine.py _do_optimizer_sanity_check,
  // removed by PR #7790); the loader rejects it from 0.18.5 on.
  return training.precision == Precision::BF16 && zero.grad_accum_dtype == GradAccumDtype::FP32 &&
         ((zero.stage == 1 && zero.offload_optimizer == OffloadDevice::NONE) || zero.stage == 0);
}

} // namespace zerosim::scenario
