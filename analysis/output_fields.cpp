// The field reference of the output files (analysis/output_fields.hpp). Each entry says what result_json.cpp,
// sweep.cpp and memory_csv.cpp write under that name; tests/e2e/output_fields_test.cpp fails when a run emits a
// field this table lacks, or the table lists one no run emits.
#include "analysis/output_fields.hpp"

#include "analysis/version.hpp"

#include "sim/program/program.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace zerosim::analysis {

namespace {

constexpr const char* kS = "s";
constexpr const char* kB = "B";
constexpr const char* kGiB = "GiB";
constexpr const char* kFrac = "fraction 0-1";
constexpr const char* kCount = "count";

class Table {
 public:
  explicit Table(std::vector<OutputField>& out) : out_(out) {}
  Table& file(const char* f) {
    file_ = f;
    return *this;
  }
  void add(const std::string& path, const char* type, const char* unit, const std::string& meaning,
           bool stable = true) {
    out_.push_back({file_, path, type, unit, stable, meaning});
  }

 private:
  std::vector<OutputField>& out_;
  std::string file_;
};

/// StepBreakdown (analysis/summary.hpp) under `p`: "summary.breakdown.", "phase_breakdown.", "rows[].breakdown.".
void breakdown(Table& t, const std::string& p) {
  const char* n = "number";
  t.add(p + "forward_s", n, kS, "rank 0's compute stream busy with forward kernels, per optimizer step (steady state)");
  t.add(p + "backward_s", n, kS, "... with backward kernels (recomputation included)");
  t.add(p + "optimizer_s", n, kS, "... with the optimizer step's kernels on the GPU");
  t.add(p + "other_compute_s", n, kS, "... with other kernels: bucket copies, casts, overflow checks");
  t.add(p + "compute_busy_s", n, kS, "sum of the four above: the compute stream's busy time");
  t.add(p + "comm_busy_s", n, kS,
        "time at least one collective was in flight on rank 0 (\"collectives in flight\"; overlaps compute)");
  t.add(p + "exposed_comm_s", n, kS,
        "compute stream idle while waiting on the communication streams (collectives and their bucket copies)");
  t.add(p + "exposed_offload_s", n, kS, "compute stream idle while offload traffic ran: the next two summed");
  t.add(p + "exposed_offload_pcie_s", n, kS, "... while a GPU <-> host copy over PCIe ran");
  t.add(p + "exposed_offload_nvme_s", n, kS, "... while an NVMe swap ran and no PCIe copy (offload to nvme)");
  t.add(p + "exposed_cpu_s", n, kS, "compute stream idle while the CPU optimizer worked (optimizer offload)");
  t.add(p + "exposed_host_s", n, kS,
        "compute stream idle waiting for the host (Python) thread to issue work: op launches, DeepSpeed hooks");
  t.add(p + "idle_other_s", n, kS,
        "any other idle time; compute_busy_s + the exposed_* (without the offload split) + this = step time");
}

/// traffic_json: collectives by kind.
void traffic(Table& t, const std::string& p, const std::string& whose) {
  t.add(p + "<kind>.payload_bytes", "number", kB, whose + ": bytes of the buffers handed to collectives of that kind");
  t.add(p + "<kind>.wire_bytes", "number", kB,
        whose +
            ": bytes the rank sent on the wire for them (the algorithm's factor, e.g. 2(n-1)/n for a ring "
            "all-reduce)");
  t.add(p + "<kind>.calls", "integer", kCount, whose + ": collective calls of that kind");
}

void step_traffic(Table& t, const std::string& p) {
  t.add(p.substr(0, p.size() - 1), "object | null", "",
        "rank 0's collectives in one optimizer step (the last completed one) by kind; null when no step completed");
  traffic(t, p, "that step");
  t.add(p + "step", "integer", "", "the step's number (0 = warm-up)");
  t.add(p + "steady_state", "bool", "", "the step is >= 1 and another followed it (not the warm-up step)");
}

void copies(Table& t, const std::string& p, const std::string& whose) {
  t.add(p + "h2d_bytes", "number", kB, whose + ": host -> GPU copy bytes (offload)");
  t.add(p + "d2h_bytes", "number", kB, whose + ": GPU -> host copy bytes (offload)");
  t.add(p + "d2d_bytes", "number", kB, whose + ": GPU -> GPU copy bytes");
  t.add(p + "nvme_read_bytes", "number", kB, whose + ": NVMe swap reads (offload to nvme)");
  t.add(p + "nvme_write_bytes", "number", kB, whose + ": NVMe swap writes (offload to nvme)");
}

void step_copies(Table& t, const std::string& p) {
  t.add(p.substr(0, p.size() - 1), "object | null", "",
        "rank 0's copies in the step of collectives_per_step; null when no step completed");
  copies(t, p, "that step");
  t.add(p + "step", "integer", "", "the step's number");
  t.add(p + "steady_state", "bool", "", "as collectives_per_step.steady_state");
  t.add(p + "rank", "integer", "", "the rank counted: 0");
}

void attribution(Table& t, const std::string& p, const std::string& what) {
  t.add(p + "[].tag", "string", "", what + ": a memory tag live at the peak, largest first");
  t.add(p + "[].gib", "number", kGiB, "its bytes at the peak");
  t.add(p + "[].knob", "string", "", "the settings that size it, for people", false);
}

void tags(Table& t, const std::string& p, const std::string& what) {
  t.add(p + ".<tag>", "number", kB, what + ", by memory tag (every tag listed, 0 when none)");
}

void peak(Table& t, const std::string& p, const std::string& what) {
  t.add(p + ".bytes", "number", kB, what);
  t.add(p + ".gib", "number", kGiB, "the same in GiB");
  t.add(p + ".time_s", "number", kS, "simulated time it was reached");
  t.add(p + ".step", "integer", "", "the optimizer step it was reached in; -1 = initialisation, before step 0");
  t.add(p + ".label", "string", "", "the program op whose allocation reached it (\"bwd L3 mlp\")", false);
  tags(t, p + ".by_tag_bytes", "allocated bytes at that moment");
}

/// rank_memory_json: one entry of memory_per_rank, host_memory_per_rank, host_memory_per_node.
void rank_memory(Table& t, const std::string& p) {
  t.add(p + "rank", "integer", "", "the rank (in host_memory_per_node: the node index)");
  peak(t, p + "peak", "peak allocated bytes over the whole run (GPU: torch.cuda.max_memory_allocated)");
  peak(t, p + "steady_peak", "peak allocated bytes over steps >= 1 (the whole-run peak when there is one step)");
  t.add(p + "final_bytes", "number", kB, "allocated at the end of the run");
  tags(t, p + "final_by_tag_bytes", "allocated at the end");
  peak(t, p + "reserved_peak",
       "peak reserved bytes: the caching allocator's segments (torch.cuda.max_memory_reserved); host: = peak");
  t.add(p + "reserved_peak_held_bytes", "number", kB,
        "blocks not free at the reserved peak (tensors, blocks held for other streams, remainders); the rest of "
        "reserved_peak.bytes is cached free blocks");
  t.add(p + "final_reserved_bytes", "number", kB, "reserved at the end");
  t.add(p + "non_pytorch_bytes", "number", kB, "outside PyTorch's allocator: CUDA context + NCCL buffers (host: 0)");
  t.add(p + "nvidia_smi_peak_bytes", "number", kB, "reserved_peak.bytes + non_pytorch_bytes: what nvidia-smi shows");
  t.add(p + "nvidia_smi_peak_gib", "number", kGiB, "the same in GiB");
  t.add(p + "unreclaimable_peak_bytes", "number", kB,
        "GPU: the most reserved bytes a failed cudaMalloc's retry could not have given back at any moment (reserved "
        "less the segments whose blocks are all free or held for other streams); host: = reserved_peak.bytes");
  t.add(p + "pinned_peak_bytes", "number", kB, "host: most page-locked bytes live at once (GPU: 0)");
  t.add(p + "pinned_at_peak_bytes", "number", kB, "host: page-locked bytes of `peak` (GPU: 0)");
  t.add(p + "alloc_retries", "integer", kCount,
        "GPU: allocations that released every cached free segment and retried (num_alloc_retries)");
  t.add(p + "alloc_retry_wait_s", "number", kS, "GPU: time the rank's streams waited inside those retries");
}

/// summary_obj (result_json.cpp): result.json's "summary", each variant's summary in summary.json.
void summary(Table& t, const std::string& p) {
  const char* n = "number";
  const char* i = "integer";
  const char* b = "bool";
  const char* s = "string";
  const char* nn = "number | null";
  t.add(p + "gpu", s, "", "the GPU's name (preset, with inline changes)", false);
  t.add(p + "cpu", s, "", "the host CPU's name (\"\" without a CPU preset)", false);
  t.add(p + "cpu_memory_bandwidth_bytes_per_s", n, "B/s", "DRAM bandwidth of the node's CPUs");
  t.add(p + "gpus_per_node", i, kCount, "ranks per node");
  t.add(p + "cpu_numa_nodes", i, kCount, "NUMA nodes of the host DRAM");
  t.add(p + "cpu_core_memory_bandwidth_bytes_per_s", n, "B/s",
        "DRAM bandwidth one core draws alone (cluster.cpu.core_memory_bandwidth); 0 when not given");
  t.add(p + "cpu_threads_per_rank", i, "threads",
        "OpenMP threads a rank runs CPU Adam on when fewer than its cores / ranks share (torchrun, accelerate, "
        "training.omp_num_threads); 0: the whole share");
  t.add(p + "cpu_threads_set_by", s, "", "what set them: the launcher, or OMP_NUM_THREADS (\"\" when 0)");
  t.add(p + "cpu_adam_bound", s, "",
        "what set CPU Adam's time (of its passes' bounds, the one with the most seconds): node_memory (the rank's "
        "share of the node's DRAM), thread_memory (its threads x cpu.core_memory_bandwidth) or compute (its cores' "
        "fp32 peak); \"\" without optimizer offload");
  t.add(p + "host_optimizer", s, "", "optimizer the host runs with optimizer offload (\"CPU Adam\", ...)", false);
  t.add(p + "world_size", i, kCount, "N_d: data-parallel ranks (GPUs)");
  t.add(p + "steps_completed", i, kCount, "optimizer steps that completed on rank 0");
  t.add(p + "finished", b, "", "every stream of every rank ran to its end");
  t.add(p + "warmup_step_time_s", n, kS, "duration of step 0 (lazy allocations); 0 when it did not complete");
  t.add(p + "step_time_s", nn, kS,
        "steady-state step time: mean of the completed steps >= steady_first_step; null without a step time (no "
        "step completed, or stopped at its OOM)");
  t.add(p + "steady_state", b, "", "step_time_s comes from steps >= 1 (false: only the warm-up step)");
  t.add(p + "steady_first_step", i, "", "first step of the steady window (2 with DeepSpeed's throughput timer)");
  t.add(p + "step_times_s", "number[]", kS, "every completed step's duration, in order");
  t.add(p + "global_batch_tokens", n, "tokens", "tokens per optimizer step over all GPUs: b x s x GA x N_d");
  t.add(p + "grad_accum", i, kCount, "GA as simulated (training.grad_accum, or derived from train_batch_size)");
  t.add(p + "train_batch_size", i, "sequences", "sequences per optimizer step over all GPUs: b x GA x N_d");
  t.add(p + "params", i, kCount, "Ψ: the model's parameters");
  t.add(p + "trainable_params", i, kCount, "parameters with gradients and optimizer states");
  t.add(p + "trainable_note", s, "", "what trains when not everything does (\"LoRA r=16 on ...\"); \"\" otherwise",
        false);
  t.add(p + "zero_stage", i, "", "zero.stage of the run");
  t.add(p + "bf16_optimizer", b, "", "DeepSpeed's BF16_Optimizer ran (bf16 with fp32 gradient accumulation)");
  t.add(p + "stage3_padding_params", i, "elements",
        "stage 3: zeros padding each tensor to a multiple of N_d elements, over all tensors; 0 at stages 0-2");
  t.add(p + "param_tensors", i, kCount, "parameter tensors of the model");
  t.add(p + "paper_model_state_bytes", n, kB,
        "model states per GPU as the ZeRO paper counts them (§5.1, K = 12); 0 where that accounting does not "
        "apply (offload, frozen parameters, fp32)");
  t.add(p + "element_bytes", n, kB, "bytes of one model element: 2 in fp16/bf16, 4 in fp32");
  t.add(p + "tokens_per_s", nn, "tokens/s", "global_batch_tokens / step_time_s; null without a step time");
  t.add(p + "model_tflops_per_gpu", nn, "TFLOP/s", "model FLOPs per GPU per second (10^12); null without a step time");
  t.add(p + "hardware_tflops_per_gpu", nn, "TFLOP/s", "the same with recomputation (HFU's numerator)");
  t.add(p + "peak_tflops_per_gpu", n, "TFLOP/s", "the GPU's dense peak for the training precision (MFU's denominator)");
  t.add(p + "mfu", nn, kFrac, "model FLOPs utilization: model_tflops_per_gpu / peak_tflops_per_gpu (0.5 = 50 %)");
  t.add(p + "hfu", nn, kFrac, "hardware FLOPs utilization (recomputation counted)");
  t.add(p + "attention_flops_share", n, kFrac,
        "share of the model FLOPs that is FlashAttention's attention, counted as the full s x s product; 0 without");
  t.add(p + "executed_flops_ratio", n, "ratio",
        "FLOPs the GPU executes per model FLOP counted (causal attention skips half); mfu x this = executed share "
        "of peak; 1 when nothing is skipped");
  t.add(p + "gemm_utilization", n, kFrac, "fraction of the large-GEMM rate the model's GEMM shapes reach");
  t.add(p + "capacity_bytes", i, kB, "GPU memory capacity (cluster.gpu.memory, a whole number of bytes)");
  t.add(p + "peak_memory_bytes", n, kB, "worst rank's peak allocated GPU memory over the run (= peak_allocated_bytes)");
  t.add(p + "peak_rank", i, "", "that rank (lowest on ties)");
  t.add(p + "peak_time_s", n, kS, "simulated time of that peak");
  t.add(p + "peak_step", i, "", "its step; -1 = initialisation, before step 0");
  t.add(p + "peak_label", s, "", "the op whose allocation reached it", false);
  t.add(p + "steady_peak_memory_bytes", n, kB, "worst rank's peak allocated over steps >= 1");
  t.add(p + "steady_peak_reached", b, "", "some rank began a step >= 1 (else the field above is the whole-run peak)");
  t.add(p + "host_peak_memory_bytes", n, kB, "worst rank's peak allocated host memory (offload); 0 without");
  t.add(p + "peak_reserved_bytes", n, kB, "worst rank's peak reserved GPU memory (torch.cuda.max_memory_reserved)");
  t.add(p + "peak_reserved_rank", i, "", "that rank");
  t.add(p + "peak_reserved_time_s", n, kS, "simulated time of the reserved peak");
  t.add(p + "peak_reserved_step", i, "", "its step; -1 = initialisation");
  t.add(p + "peak_reserved_label", s, "", "the op that reserved it", false);
  t.add(p + "peak_reserved_held_bytes", n, kB,
        "blocks not free at the reserved peak; peak_reserved_bytes minus this is cached free blocks");
  t.add(p + "reserved_note", s, "",
        "stage 3: a warning that the reserved and nvidia-smi peaks depend on the host thread's run-ahead; \"\" "
        "otherwise",
        false);
  t.add(p + "non_pytorch_bytes", n, kB, "per GPU, outside PyTorch's allocator: CUDA context + NCCL buffers");
  t.add(p + "nvidia_smi_bytes", n, kB, "peak_reserved_bytes + non_pytorch_bytes: what nvidia-smi shows at the peak");
  t.add(p + "nvidia_smi_needed_bytes", n, kB,
        "the memory the run cannot give back: the most, over the ranks, of the reserved bytes a failed cudaMalloc's "
        "retry could not release (blocks held for other streams and fully free cached segments it does release) + "
        "non_pytorch_bytes; at most nvidia_smi_bytes. What --headroom (plan, largest, run --check) compares");
  t.add(p + "alloc_retries", i, kCount, "most cudaMalloc retries on one rank (a fit with retries is marginal)");
  t.add(p + "alloc_retries_rank", i, "", "that rank");
  t.add(p + "alloc_retry_wait_s", n, kS, "time that rank's streams waited inside the retries");
  t.add(p + "host_node_peak_memory_bytes", n, kB, "worst node's peak host memory (its ranks together); 0 without");
  t.add(p + "host_capacity_bytes", i, kB, "host memory per node (cluster.host_memory); 0 = unlimited");
  t.add(p + "host_pinned_at_peak_bytes", n, kB, "page-locked bytes of the worst rank's host peak");
  t.add(p + "peak_host_pinned_bytes", n, kB, "worst rank's most page-locked host bytes live at once");
  t.add(p + "fits", b, "", "no OOM, and the allocated and nvidia-smi peaks are within capacity_bytes");
  t.add(p + "oom", b, "", "an allocation failed (GPU or host)");
  t.add(p + "oom_description", s, "", "one line on the first OOM; \"\" without", false);
  t.add(p + "oom_gpu_demand_bytes", n, kB,
        "GPU OOM: reserved + CUDA context + NCCL + the segment asked for (what nvidia-smi would have shown); 0 "
        "without a GPU OOM");
  t.add(p + "oom_label", s, "", "the op whose allocation failed first; \"\" without an OOM", false);
  t.add(p + "oom_request_bytes", n, kB, "bytes that allocation asked for; 0 without an OOM");
  t.add(p + "oom_tag", s, "", "its memory tag; \"\" without an OOM");
  t.add(p + "oom_rank", i, "", "its rank; 0 without an OOM");
  t.add(p + "oom_on_host", b, "", "the OOM was the node's host memory, not a GPU's");
  t.add(p + "oom_host_demand_bytes", n, kB,
        "host OOM: the node's live host memory at the failed allocation plus its request (a lower bound of its "
        "need); 0 without a host OOM");
  t.add(p + "diagnostics", "string[]", "",
        "notes on the run, one sentence each: the engine's (ranks folded, a deadlock), the report's advice (e.g. "
        "exposed communication with overlap_comm off), a ds_config import's (\"auto\" values; one per top-level key "
        "set but not simulated, as \"ds.json:4: steps_per_print is not imported: ...\", or not read by DeepSpeed)",
        false);
  t.add(p + "caveats", "string[]", "",
        "the notes the console prints apart from diagnostics that qualify numbers: step times are the simulated "
        "best case (the measured band), no measured band covers the GPU (not validated), the MFU count note, a run "
        "that did not finish",
        false);
  t.add(p + "measured_band", s, "",
        "whose measured steps measured_step_low/high come from: the GPU family (\"A100\", \"H100/GH200\", \"V100\"), "
        "\"offload\" with offload on such a GPU; \"none\" on a GPU no measured band covers (e.g. rtx4090, a "
        "hand-described GPU), with or without offload: its simulated step time is not validated, low and high are "
        "then 1 and caveats holds the \"no measured band covers ...\" note");
  t.add(p + "measured_step_low", n, "ratio",
        "smallest measured / simulated step time of that band's claims (docs/validation.md); 1.02 = 2 % longer");
  t.add(p + "measured_step_high", n, "ratio", "largest measured / simulated step time of those claims");
  t.add(p + "collective_bound", b, "",
        "the run spans more than one node and rank 0 has a collective in flight for at least 50 % of the step: the "
        "regime where docs/validation.md's measured steps took 2.2-5.6x the simulated one (gaps 16-18 and 20), so "
        "step_time_s is a lower bound, not within measured_step_low/high (a caveat says so)");
  t.add(p + "comm_busy_share", n, "ratio", "breakdown.comm_busy_s / step_time_s; 0 without a step time");
  t.add(p + "resolved.<key>", s, "",
        "a default that follows other keys, as this run resolved it, by scenario key (zero.overlap_comm, "
        "zero.contiguous_gradients, zero.use_multi_rank_bucket_allreduce, zero.reduce_bucket_size, "
        "zero.stage3_prefetch_bucket_size, zero.stage3_param_persistence_threshold, zero.grad_accum_dtype, "
        "zero.communication_data_type, zero.offload_optimizer_pin_memory, zero.offload_param_pin_memory, "
        "cluster.nccl_channels), the value as --set takes it");
  breakdown(t, p + "breakdown.");
  t.add(p + "host_step.cpu_adam_s", n, kS, "optimizer offload: rank 0's CPU busy with the Adam update, per step");
  t.add(p + "host_step.unscale_s", n, kS, "... unscaling and clipping the fp32 gradients");
  t.add(p + "host_step.lp_cast_s", n, kS, "... casting the updated params to 16 bits");
  t.add(p + "host_step.other_s", n, kS, "... other CPU-optimizer work");
  t.add(p + "capacity_gib", n, kGiB, "capacity_bytes in GiB");
  t.add(p + "peak_memory_gib", n, kGiB, "peak_memory_bytes in GiB");
  tags(t, p + "peak_by_tag_bytes", "allocated at the worst rank's peak");
  tags(t, p + "peak_reserved_by_tag_bytes", "allocated at the worst rank's reserved peak");
  attribution(t, p + "peak_attribution", "the GPU peak");
  t.add(p + "steady_peak_memory_gib", n, kGiB, "steady_peak_memory_bytes in GiB");
  t.add(p + "host_pageable_at_peak_bytes", n, kB, "host_peak_memory_bytes minus its pinned part");
  t.add(p + "host_peak_step", i, "", "step of the host peak; -1 = initialisation");
  t.add(p + "host_peak_label", s, "", "the op that reached the host peak", false);
  tags(t, p + "host_peak_by_tag_bytes", "host memory allocated at the host peak");
  attribution(t, p + "host_peak_attribution", "the host peak");
  t.add(p + "peak_allocated_bytes", n, kB, "= peak_memory_bytes (torch.cuda.max_memory_allocated's name)");
  t.add(p + "peak_allocated_gib", n, kGiB, "the same in GiB");
  t.add(p + "peak_reserved_gib", n, kGiB, "peak_reserved_bytes in GiB");
  t.add(p + "nvidia_smi_gib", n, kGiB, "nvidia_smi_bytes in GiB");
  t.add(p + "reserved_not_live_bytes", n, kB,
        "at the reserved peak, reserved bytes that are not live tensors (blocks held for other streams + cached free "
        "blocks): the part of peak_reserved_bytes and nvidia_smi_bytes that depends on how far the host thread runs "
        "ahead (reserved_note, simulation.host_launch_queue)");
  t.add(p + "nvidia_smi_low_bytes", n, kB,
        "a floor under nvidia_smi_bytes at this run's allocations: the larger of peak_memory_bytes and the tensors at "
        "the reserved peak, + non_pytorch_bytes (reserved is never below allocated). The allocations themselves "
        "follow simulation.host_launch_queue (stage-3 prefetch, host-side frees), so another launch queue can give "
        "a lower floor; nvidia_smi_bytes is the estimate at the assumed launch queue, not an upper bound");
  t.add(p + "marginal", b, "",
        "fits, but the allocator needed cudaMalloc retries (alloc_retries > 0), nvidia_smi_needed_bytes leaves "
        "less than 5 % of capacity_bytes free (the default --headroom of plan and run --check), the nvidia-smi "
        "peak does (the 5 % kept only by cache flushes), or the node's host peak leaves less than 10 % of "
        "host_capacity_bytes free (given and used; the default --host-headroom of plan and run --check); false when it does not "
        "fit");
  t.add(p + "marginal_reason", s, "",
        "why marginal is true, the reasons present joined by \", \" and \" and \": \"allocator retries\", \"less "
        "than 5 % of the card free\", \"host RAM under 10 % free\"; \"\" when marginal is false");
  t.add(p + "oom_decided_by", s, "", "the rule that decides an OOM, in words", false);
  traffic(t, p + "collectives.", "rank 0, whole run (warm-up step 0 included)");
  step_traffic(t, p + "collectives_per_step.");
  copies(t, p + "copies.", "rank 0, whole run");
  step_copies(t, p + "copies_per_step.");
  t.add(p + "nvme_write_bytes_per_1b_tokens", n, kB,
        "offload to nvme: bytes written to one node's NVMe drives per 1e9 trained tokens (rank 0's writes in "
        "copies_per_step x the node's ranks x 1e9 / global_batch_tokens), for the drives' rated endurance (TBW); 0 "
        "without NVMe writes in a steady step");
  t.add(p + "time_per_1b_tokens_s", "number | null", kS,
        "wall-clock time to train 1e9 tokens at this throughput: 1e9 / tokens_per_s (the console's \"1B tokens in "
        "...\"); null without a step time");
  t.add(p + "gpu_time_per_1b_tokens_s", "number | null", kS,
        "GPU time to train 1e9 tokens: time_per_1b_tokens_s x world_size, in GPU-seconds (/ 3600 = the console's "
        "GPU-hours); null without a step time");
}

/// What zerosim_build holds, for a file whose build `did` (result.json, summary.json and sweep.json say the same).
std::string build_meaning(const std::string& did) {
  return "the build that " + did + ": its git commit (12 hex digits), `<commit>-dirty.<8 hex>` with local edits, " +
         "or `unknown-<zerosim_version>` outside git (zerosim --version prints it)";
}

std::vector<OutputField> build() {
  std::vector<OutputField> out;
  Table t(out);
  const char* n = "number";
  const char* i = "integer";
  const char* s = "string";

  t.file("result.json");
  t.add("zerosim_version", s, "", "the zerosim release that wrote the file");
  t.add("zerosim_build", s, "", build_meaning("wrote the file"));
  t.add("variant", s, "", "the variant's label (compare: value), \"\" for a single run");
  t.add("scenario.*", "object", "",
        "the scenario as simulated, defaults resolved: the keys of docs/scenario-reference.md (model, training, "
        "zero, cluster, simulation, outputs) plus gpu and cpu (the resolved presets), with the unit in each "
        "numeric key's name (_bytes, _bytes_per_s, _s, _hz, _flops_per_s)",
        false);
  // The scenario's counts of elements and bytes: whole by construction (the loader refuses a fractional element
  // count, as DeepSpeed's pydantic int fields do, and rounds a size to the nearest byte), so typed here.
  for (const char* key :
       {"reduce_bucket_size", "allgather_bucket_size", "sub_group_size", "stage3_prefetch_bucket_size",
        "stage3_param_persistence_threshold", "stage3_model_persistence_threshold", "stage3_max_live_parameters",
        "stage3_max_reuse_distance", "offload_param_buffer_size", "offload_param_max_in_cpu"})
    t.add(std::string("scenario.zero.") + key, i, "elements", std::string("zero.") + key + " as simulated", false);
  t.add("scenario.zero.aio.block_size_bytes", i, kB, "zero.aio.block_size as simulated", false);
  t.add("scenario.cluster.host_memory_bytes", i, kB, "cluster.host_memory as simulated; 0 = unlimited", false);
  t.add("scenario.cluster.name", s, "",
        "the cluster preset with the cluster keys the scenario or --set changed (GPU, CPU and nodes aside), as the "
        "console's header names it: \"dgx-a100 (modified: gpus_per_node=4, nics_per_node=1)\"",
        false);
  t.add("scenario.cluster.nvme.name", s, "",
        "whose NVMe figures: the cluster preset with the cluster.nvme keys changed, \"dgx-a100\" when they are "
        "the preset's",
        false);
  t.add("scenario.cluster.nvme.drives", i, kCount, "cluster.nvme.drives: drives in the bandwidths; 0 = not stated",
        false);
  t.add("scenario.gpu.memory_bytes", i, kB, "the GPU's memory (gpu.memory) as simulated", false);
  t.add("scenario.simulation.cuda_context_bytes", i, kB, "simulation.cuda_context as simulated", false);
  summary(t, "summary.");
  attribution(t, "peak_attribution", "the GPU peak (as summary.peak_attribution)");
  attribution(t, "host_peak_attribution", "the host peak (as summary.host_peak_attribution)");
  t.add("steps[].step", i, "", "a completed optimizer step of rank 0 (0 = warm-up)");
  t.add("steps[].start_s", n, kS, "its start, simulated time");
  t.add("steps[].end_s", n, kS, "its end");
  t.add("steps[].duration_s", n, kS, "end_s - start_s");
  t.add("steps[].compute_busy_by_phase.<phase>_s", n, kS, "rank 0's compute stream busy in that step, by phase");
  t.add("steps[].comm_busy_s", n, kS, "rank 0's communication streams busy in that step");
  traffic(t, "steps[].collectives.", "rank 0, that step");
  t.add("step_times_s", "number[]", kS, "= summary.step_times_s");
  breakdown(t, "phase_breakdown.");
  t.add("phase_breakdown.step_time_s", "number | null", kS, "= summary.step_time_s");
  t.add("simulated_ranks", i, kCount, "ranks simulated (< world_size when symmetric ranks were folded)");
  rank_memory(t, "memory_per_rank[].");
  rank_memory(t, "host_memory_per_rank[].");
  rank_memory(t, "host_memory_per_node[].");
  t.add("host_memory_per_node[].node", i, "", "the node index");
  t.add("host_capacity_bytes", n, kB, "host memory per node; 0 = unlimited");
  traffic(t, "collectives.", "rank 0, whole run");
  step_traffic(t, "collectives_per_step.");
  copies(t, "copies.", "rank 0, whole run");
  step_copies(t, "copies_per_step.");
  t.add("oom", "object | null", "", "the first allocation that did not fit; null without an OOM");
  t.add("oom.time_s", n, kS, "when it failed");
  t.add("oom.rank", i, "", "the rank");
  t.add("oom.step", i, "", "the step; -1 = initialisation");
  t.add("oom.device", s, "", "\"gpu\" or \"host\"");
  t.add("oom.label", s, "", "the op whose allocation failed", false);
  t.add("oom.tag", s, "", "its memory tag");
  t.add("oom.requested_bytes", n, kB, "bytes it asked for");
  t.add("oom.capacity_bytes", n, kB, "the device's capacity (host: the node's memory)");
  tags(t, "oom.live_by_tag_bytes", "allocated when it failed (host: the whole node)");
  t.add("oom.allocated_bytes", n, kB, "allocated on the device when it failed");
  t.add("oom.reserved_bytes", n, kB, "reserved by the caching allocator when it failed (host: = allocated)");
  t.add("oom.non_pytorch_bytes", n, kB, "CUDA context + NCCL buffers (GPU)");
  t.add("oom.needed_bytes", n, kB, "what the failing cudaMalloc asked for (a segment), or the request (host)");
  t.add("oom.cache_released", "bool", "", "GPU: cached free segments were released first and it still failed");
  t.add("oom.node", i, "", "the rank's node");
  t.add("oom.description", s, "", "= summary.oom_description", false);
  t.add("finished", "bool", "", "= summary.finished");
  t.add("end_time_s", n, kS, "simulated time at which the run ended");
  t.add("diagnostics", "string[]", "",
        "the engine's notes only (ranks folded, a deadlock); summary.diagnostics holds these and the report's", false);

  t.file("summary.json");
  t.add("zerosim_version", s, "", "the zerosim release that wrote the file");
  t.add("zerosim_build", s, "", build_meaning("wrote the file"));
  t.add("scenario", s, "", "the scenario's name");
  t.add("variants[].label", s, "", "the variant's label (\"\" for a single run)");
  t.add(
      "variants[].key", s, "",
      "a name for the variant across runs (dashboards that merge several runs): the scenario's name for a single run, "
      "\"<scenario>/<label>\" for a compare variant");
  t.add("variants[].dir", s, "", "its output directory, relative to the run's (\"\" or \".\" for a single run)");
  t.add("variants[].summary.*", "object", "", "the variant's summary: the fields of result.json's summary.*");

  t.file("sweep.json");
  t.add("zerosim_version", s, "", "the zerosim release that computed the rows (a merge keeps its shards')");
  t.add("zerosim_build", s, "",
        build_meaning("computed the rows (a merge keeps its shards', which must agree); absent in older files"));
  t.add("scenario", s, "", "the scenario's name");
  t.add("axes", "string[]", "", "the swept keys, in column order");
  t.add("points_total", i, kCount, "points of the whole sweep (all shards)");
  t.add("shard", s, "", "\"i/n\": the slice this output holds (\"0/1\": all)");
  t.add("set", "string[]", "", "the --set overrides every point ran with, \"key=value\"");
  t.add("fingerprint", s, "", "hash of the scenario file and the axes: merge refuses outputs whose differ");
  t.add("notes[].text", s, "",
        "a note of one or more points, once per text: the report's diagnostics and caveats (best case, overlap_comm "
        "hint, ds_config \"auto\" choices, ranks folded)",
        false);
  t.add("notes[].points", "integer[]", "", "the indices of the points it applies to, ascending");
  const std::string r = "rows[].";
  t.add(r + "index", i, "", "the point's position in the expansion order");
  t.add(r + "key", s, "", "stable hash of what the point simulates (resume and merge match on it)");
  t.add(r + "inputs", "[string, string][]", "", "the point's axis values as [key, value] pairs, in axis order");
  t.add(r + "axis_values.<key>", "number | bool | string", "",
        "the same values by key, typed: a value written as a JSON number or true / false is one (zero.stage: 2), "
        "any other the string given (\"dgx-h100\", \"24GiB\"); units as the scenario key's");
  t.add(r + "status", s, "", "\"fits\", \"oom\", \"error\" (the simulation failed) or \"invalid\" (never simulated)");
  t.add(r + "ok", "bool", "", "the simulation ran to a summary (an OOM is ok)");
  t.add(r + "error", s, "", "the failure's message, one line; \"\" when ok", false);
  t.add(r + "step_time_s", "number | null", kS, "as summary.step_time_s; null without a steady-state step time");
  t.add(r + "tokens_per_s", "number | null", "tokens/s", "as summary.tokens_per_s");
  t.add(r + "mfu", "number | null", kFrac, "as summary.mfu");
  t.add(r + "steady_state", "bool", "", "the three above come from steps >= 1");
  t.add(r + "stopped_at_oom", "bool", "", "the run stopped at its OOM (on_oom: stop): no step time");
  t.add(r + "gemm_utilization", n, kFrac, "as summary.gemm_utilization");
  t.add(r + "world_size", i, kCount, "N_d");
  t.add(r + "grad_accum", i, kCount, "GA the point ran with; 0 when not simulated");
  t.add(r + "train_batch_size", i, "sequences", "b x GA x N_d; 0 when not simulated");
  t.add(r + "peak_allocated_bytes", n, kB, "worst rank's max_memory_allocated");
  t.add(r + "peak_allocated_rank", i, "", "that rank");
  t.add(r + "peak_at_init", "bool", "", "that peak was reached at initialisation, before step 0");
  t.add(r + "steady_peak_allocated_bytes", n, kB, "worst rank's peak over steps >= 1; 0 when none began");
  t.add(r + "peak_reserved_bytes", n, kB, "worst rank's max_memory_reserved");
  t.add(r + "peak_reserved_rank", i, "", "that rank");
  t.add(r + "nvidia_smi_bytes", n, kB, "reserved + CUDA context + NCCL at the peak");
  t.add(r + "nvidia_smi_needed_bytes", n, kB, "as summary.nvidia_smi_needed_bytes: what --headroom compares");
  t.add(r + "capacity_bytes", n, kB, "GPU memory capacity");
  t.add(r + "fits", "bool", "", "as summary.fits");
  t.add(r + "oom_reason", s, "", "one line on the first OOM; \"\" without", false);
  t.add(r + "oom_gpu_demand_bytes", n, kB, "as summary.oom_gpu_demand_bytes; 0 without a GPU OOM");
  t.add(r + "alloc_retries", i, kCount, "most cudaMalloc retries on one rank");
  t.add(r + "oom_on_host", "bool", "", "the OOM was the node's host memory");
  t.add(r + "host_node_peak_bytes", n, kB, "worst node's host memory peak (offload); 0 without");
  t.add(r + "oom_host_demand_bytes", n, kB, "as summary.oom_host_demand_bytes; 0 without a host OOM");
  t.add(r + "marginal", "bool", "", "as summary.marginal: fits, with little to spare (also sweep.csv's last column)");
  t.add(r + "marginal_reason", s, "",
        "why: \"allocator retries\", \"less than 5 % of the card free\" or both; \"\" when not marginal (also "
        "sweep.csv's column before marginal)",
        false);
  breakdown(t, r + "breakdown.");
  t.add(r + "measured_band", "object | null", "",
        "as summary.measured_band, measured_step_low, _high; null when not simulated");
  t.add(r + "measured_band.label", s, "", "= summary.measured_band");
  t.add(r + "measured_band.low", n, "ratio", "= summary.measured_step_low");
  t.add(r + "measured_band.high", n, "ratio", "= summary.measured_step_high");
  t.add(r + "collective_bound", "bool", "",
        "= summary.collective_bound: multi-node with collectives in flight for at least 50 % of the step, so "
        "step_time_s is a lower bound (also sweep.csv's last column); false when not simulated");
  t.add(r + "resolved.<key>", s, "", "= summary.resolved: the defaults that follow other keys, as resolved");
  t.add(r + "note_indices", "integer[]", "",
        "the point's notes as positions in notes[] (from 0), in the order the console prints them: diagnostics, the "
        "reserved-memory note, caveats");

  t.file("memory.csv");
  t.add("time_s", n, kS, "simulated time of the allocation or free, 1 ns resolution");
  t.add("rank", i, "", "the rank (traced ranks only: outputs.trace_ranks)");
  t.add("device", s, "", "\"gpu\" or \"host\" (host rows with offload)");
  t.add("tag", s, "", "the memory tag that changed");
  t.add("bytes", i, kB,
        "that tag's live total on this rank and device after the event (not the size allocated or freed: a free "
        "shows the smaller total; the change is the difference from the tag's previous row)");
  t.add("total_bytes", i, kB, "all tags' live total on this rank and device after the event (allocated)");
  t.add("reserved_bytes", i, kB,
        "GPU: the caching allocator's reserved bytes after the event (what decides an OOM, with the CUDA context and "
        "NCCL); host: = total_bytes");

  // `zerosim plan --json FILE` (apps/plan_command.cpp): the inputs plan used and its --csv rows, typed.
  t.file("plan.json");
  const char* nn = "number | null";
  t.add("zerosim_version", s, "", "the zerosim release that wrote the file");
  t.add("zerosim_build", s, "", build_meaning("wrote the file"));
  t.add("inputs.model", s, "", "the model (--model), as the reports name it");
  t.add("inputs.gpu", s, "", "--gpu");
  t.add("inputs.topology", s, "", "the cluster preset or file planned on (--topology, or the one plan chose)");
  t.add("inputs.gpus_per_node", i, kCount, "GPUs per node of that topology");
  t.add("inputs.max_gpus", i, kCount, "--max-gpus (or its default: one node, or a --topology scenario's GPUs)");
  t.add("inputs.n_d", "integer[]", kCount, "the data-parallel sizes searched");
  t.add("inputs.seq_len", i, "tokens", "tokens per sequence");
  t.add("inputs.seq_len_from", s, "",
        "where seq_len came from: \"--seq-len\", \"model.max_positions\" (the model's context length) or "
        "\"default\" (1024)");
  t.add("inputs.global_batch", "integer | null", "sequences", "--global-batch; null without (GA 1)");
  t.add("inputs.tokens", nn, "tokens", "--tokens; null without");
  t.add("inputs.time_margin", n, "ratio",
        "--time-margin (1 without): the factor on the simulated step in the times, "
        "GPU-hours and costs of the rows");
  t.add("inputs.price_per_gpu_hour", nn, "", "--price-per-gpu-hour; null without");
  t.add("inputs.deadline_s", nn, kS, "--deadline; null without");
  t.add("inputs.max_step_time_s", nn, kS, "--max-step-time; null without");
  t.add("inputs.capacity_bytes", n, kB, "GPU memory capacity");
  t.add("inputs.headroom_bytes", n, kB, "--headroom as bytes (default 5 % of the capacity)");
  t.add("inputs.usable_bytes", n, kB,
        "capacity - headroom: what a plan's needed_gib (the memory it cannot give back) may reach");
  t.add("inputs.host_memory_bytes", nn, kB, "host RAM per node (--host-memory or the topology's); null when none");
  t.add("inputs.host_headroom_bytes", nn, kB, "--host-headroom as bytes (default 10 %); null without host RAM");
  t.add("inputs.precision", s, "", "\"bf16\", \"fp16\" or \"fp32\"");
  t.add("inputs.flash_attention", "bool", "", "the plans use FlashAttention");
  t.add("inputs.exhaustive", "bool", "", "--exhaustive");
  t.add("inputs.set", "string[]", "", "the --set overrides every plan ran with, \"key=value\"");
  t.add("counts.candidates", i, kCount, "plans enumerated");
  t.add("counts.pruned", i, kCount, "removed by the closed-form lower bound");
  t.add("counts.simulated", i, kCount, "simulated");
  t.add("counts.skipped", i, kCount, "not simulated: a smaller micro-batch of the same plan ran out of memory");
  t.add("counts.dominated", i, kCount, "not simulated: a plan with less offload or recomputation fits");
  t.add("counts.feasible", i, kCount, "ranked plans");
  t.add("columns", "string[]", "", "the rows' fields in --csv's column order");
  t.add("rows[].rank", "integer | null", "", "1 = best; null for a rejected candidate (ranked rows come first)");
  t.add("rows[].pareto", "bool", "", "on the Pareto front (the table's *)");
  t.add("rows[].n_d", i, kCount, "GPUs (data-parallel degree)");
  t.add("rows[].stage", i, "", "ZeRO stage");
  t.add("rows[].offload", s, "", "\"none\", \"opt->cpu\" or \"opt+param->cpu\"");
  t.add("rows[].micro_batch", i, "sequences", "micro-batch");
  t.add("rows[].grad_accum", i, kCount, "GA");
  t.add("rows[].checkpointing", "bool", "", "activation checkpointing");
  t.add("rows[].status", s, "", "\"feasible\", \"rejected\", \"pruned\", \"skipped\" or \"dominated\"");
  t.add("rows[].step_time_s", nn, kS, "simulated step (without --time-margin); null without a step");
  t.add("rows[].tokens_per_s", nn, "tokens/s", "simulated throughput");
  t.add("rows[].mfu", nn, kFrac, "simulated MFU");
  t.add("rows[].nvidia_smi_gib", nn, kGiB, "nvidia-smi peak (reserved + CUDA context + NCCL); null when not simulated");
  t.add("rows[].needed_gib", nn, kGiB,
        "what the plan cannot give back (= summary.nvidia_smi_needed_bytes): the figure --headroom tests against "
        "inputs.usable_bytes; null when not simulated");
  t.add("rows[].time_to_train_s", nn, kS, "time to train --tokens, x time_margin; feasible plans with --tokens only");
  t.add("rows[].gpu_hours", nn, "GPU-hours", "n_d x time_to_train_s / 3600");
  t.add("rows[].cost", nn, "", "gpu_hours x price_per_gpu_hour");
  t.add("rows[].reason", s, "", "why it was rejected, pruned, skipped or dominated; \"\" for a ranked plan", false);
  t.add("rows[].alloc_retries", "integer | null", kCount, "most cudaMalloc retries on one rank");
  t.add("rows[].marginal", "bool | null", "", "as summary.marginal");
  t.add("rows[].host_node_peak_gib", nn, kGiB, "host RAM of the busiest node (offload); null without");
  t.add("rows[].lower_bound_gib", n, kGiB, "the closed-form lower bound of its peak the pruning compared");
  t.add("rows[].overlap_comm", "bool | null", "", "zero.overlap_comm; null at stage 0");
  t.add("rows[].measured_band", "string | null", "",
        "the band its step takes (as summary.measured_band: \"A100\", \"A100 and multi-node ZeRO-3\", \"offload\", "
        "...); null without a step");
  t.add("rows[].band_low", nn, "ratio", "= summary.measured_step_low");
  t.add("rows[].band_high", nn, "ratio", "= summary.measured_step_high");
  t.add("rows[].step_time_low_s", nn, kS, "band_low x step_time_s");
  t.add("rows[].step_time_high_s", nn, kS, "band_high x step_time_s");
  t.add("rows[].time_to_train_low_s", nn, kS, "band_low x the time to train without time_margin");
  t.add("rows[].time_to_train_high_s", nn, kS, "band_high x the time to train without time_margin");
  t.add("rows[].gpu_hours_low", nn, "GPU-hours", "band_low x the GPU-hours without time_margin");
  t.add("rows[].gpu_hours_high", nn, "GPU-hours", "band_high x the GPU-hours without time_margin");
  t.add("rows[].cost_low", nn, "", "band_low x the cost without time_margin");
  t.add("rows[].cost_high", nn, "", "band_high x the cost without time_margin");
  t.add("rows[].collective_bound", "bool | null", "", "= summary.collective_bound; null without a step");
  return out;
}

std::vector<std::string> split(const std::string& path) {
  std::vector<std::string> out;
  std::size_t from = 0;
  while (true) {
    const std::size_t dot = path.find('.', from);
    out.push_back(path.substr(from, dot == std::string::npos ? std::string::npos : dot - from));
    if (dot == std::string::npos)
      return out;
    from = dot + 1;
  }
}

/// A pattern segment: literal, or "prefix<name>suffix" standing for any key with that prefix and suffix.
bool segment_matches(const std::string& pattern, const std::string& seg) {
  const std::size_t open = pattern.find('<');
  const std::size_t close = pattern.find('>');
  if (open == std::string::npos || close == std::string::npos || close < open)
    return pattern == seg;
  const std::string prefix = pattern.substr(0, open);
  const std::string suffix = pattern.substr(close + 1);
  return seg.size() > prefix.size() + suffix.size() && seg.compare(0, prefix.size(), prefix) == 0 &&
         seg.compare(seg.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// What the placeholders in output field names stand for: every memory tag, collective kind and phase, by
/// program::to_string, in enum order. Both output_fields_markdown and output_fields_json list them from here.
struct Placeholders {
  std::vector<std::string> tags;
  std::vector<std::string> kinds;
  std::vector<std::string> phases;
};

template <class Enum>
std::vector<std::string> enum_names(std::size_t count) {
  std::vector<std::string> out;
  for (std::size_t k = 0; k < count; ++k)
    out.emplace_back(program::to_string(static_cast<Enum>(k)));
  return out;
}

Placeholders placeholders() {
  return {enum_names<program::MemTag>(static_cast<std::size_t>(program::MemTag::COUNT_)),
          enum_names<program::CollectiveKind>(program::kCollectiveKindCount),
          enum_names<program::Phase>(program::kPhaseCount)};
}

std::string names_of(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t k = 0; k < names.size(); ++k)
    out += fmt::format("{}`{}`", k == 0 ? "" : ", ", names[k]);
  return out;
}

std::string cell(const std::string& s) {
  std::string out;
  for (char c : s)
    out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

} // namespace

const std::vector<OutputField>& output_fields() {
  static const std::vector<OutputField> fields = build();
  return fields;
}

bool output_field_matches(const std::string& pattern, const std::vector<std::string>& segments) {
  std::vector<std::string> p = split(pattern);
  const bool subtree = !p.empty() && p.back() == "*";
  if (subtree)
    p.pop_back();
  if (subtree ? segments.size() <= p.size() : segments.size() != p.size())
    return false;
  for (std::size_t k = 0; k < p.size(); ++k)
    if (!segment_matches(p[k], segments[k]))
      return false;
  return true;
}

std::string output_fields_markdown() {
  std::string out;
  std::string file;
  for (const OutputField& f : output_fields()) {
    if (f.file != file) {
      file = f.file;
      const bool csv = file.size() > 4 && file.compare(file.size() - 4, 4, ".csv") == 0;
      out += fmt::format("{}### {}\n\n| {} | type | unit | stable | meaning |\n|---|---|---|---|---|\n",
                         out.empty() ? "" : "\n", file, csv ? "column" : "field");
    }
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", cell(f.path), cell(f.type), f.unit, f.stable ? "yes" : "no",
                       cell(f.meaning));
  }
  const Placeholders p = placeholders();
  out += fmt::format(
      "\nThe placeholders: `<tag>` is each memory tag, {}; `<kind>` each collective kind, {}; `<phase>` each phase, "
      "{}; `<key>` a dotted scenario key.\n",
      names_of(p.tags), names_of(p.kinds), names_of(p.phases));
  return out;
}

std::string output_fields_json() {
  nlohmann::json fields = nlohmann::json::array();
  for (const OutputField& f : output_fields())
    fields.push_back({{"file", f.file},
                      {"name", f.path},
                      {"type", f.type},
                      {"unit", f.unit},
                      {"stable", f.stable},
                      {"meaning", f.meaning}});
  const Placeholders p = placeholders();
  const nlohmann::json j = {{"zerosim_version", version()},
                            {"fields", fields},
                            {"placeholders",
                             {{"<tag>", p.tags},
                              {"<kind>", p.kinds},
                              {"<phase>", p.phases},
                              {"<key>", "a dotted scenario key (docs/scenario-reference.md)"}}}};
  return j.dump(2) + "\n";
}

} // namespace zerosim::analysis
