// The step program: a small IR of ops on CUDA-like streams, one program per rank (data-parallel ranks are
// symmetric, so one program serves them all). Pure data; no SimGrid here (DESIGN.md "program/").
//
// Semantics the engine implements:
//  - each stream runs its ops in order; ops on different streams run concurrently;
//  - Record(e) marks event e complete when the stream reaches it; Wait(e) blocks the stream until e is recorded
//    (like cudaEventRecord / cudaStreamWaitEvent). Every event is recorded exactly once per program;
//  - Alloc/Free change the rank's memory pool at the simulated time the stream reaches them;
//  - Collective ops run among the same stream of every rank of the group, matched by their order on that stream;
//  - a group is one NCCL communicator, which runs its kernels in the order the host issued them, whatever their
//    stream (NCCL src/enqueue.cc l.180-184 @v2.7.8-1, l.964-986 @v2.18.1-1; and, whatever the NCCL version,
//    PyTorch's ProcessGroupNCCL launches every collective of a group on that group's own internal stream,
//    ncclStreams_, after syncStream makes it wait for the caller's current stream: torch/csrc/distributed/c10d/
//    ProcessGroupNCCL.cpp ProcessGroupNCCL::collective): on each rank, a group's collective
//    number k + 1 (Collective::seq, stamped by the builder in emission order) starts after its number k ended;
//  - Mark ops are instant; STEP_END on the compute stream closes an optimizer step (the generator makes it wait
//    for every other stream's work of that step first).
#pragma once

#include "sim/quantity.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

namespace zerosim::program {

using EventId = std::uint32_t;
using BufferId = std::uint32_t;
using LabelId = std::uint32_t;
using StreamId = std::uint16_t;

/// What executes a stream's ops.
enum class StreamKind : std::uint8_t {
  COMPUTE, ///< GPU kernels (Compute ops); the default CUDA stream
  COMM, ///< NCCL collectives (a side stream; with overlap_comm off, collectives sit on the COMPUTE stream)
  COPY, ///< host<->device copies over the GPU's PCIe link
  CPU, ///< host CPU work (CPU Adam)
  HOST, ///< the Python thread issuing GPU work (host overheads: eager op dispatch, DeepSpeed hooks; CpuCompute ops)
};

/// Coarse phase an op belongs to, for the step-time breakdown.
enum class Phase : std::uint8_t { INIT, FORWARD, BACKWARD, GRAD_REDUCE, OPTIMIZER, PARAM_GATHER, OFFLOAD, OTHER };
/// How many Phase values there are (0 .. kPhaseCount - 1): the last one, OTHER, plus one (keep OTHER last).
inline constexpr std::size_t kPhaseCount = static_cast<std::size_t>(Phase::OTHER) + 1;

/// REDUCE: torch.distributed.reduce to one root (NCCL's Reduce, a ring chain towards the root: every link of the
/// chain carries the whole buffer); DeepSpeed stage 1/2 issues one per owning rank of a gradient bucket without
/// use_multi_rank_bucket_allreduce (stage_1_and_2.py average_tensor).
enum class CollectiveKind : std::uint8_t { ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, REDUCE };
/// How many CollectiveKind values there are: the last one, REDUCE, plus one (update it with a new last kind).
inline constexpr std::size_t kCollectiveKindCount = static_cast<std::size_t>(CollectiveKind::REDUCE) + 1;

/// NVME_READ / NVME_WRITE: node-local NVMe -> pinned host buffer / host -> NVMe (ZeRO-Infinity swapping); the engine
/// runs them as SimGrid Disk I/O on the rank's node.
enum class CopyDir : std::uint8_t { H2D, D2H, D2D, NVME_READ, NVME_WRITE };

enum class Device : std::uint8_t { GPU, HOST };

/// What a buffer holds; the memory report groups by tag and names the knob that sizes it (mem_tag_knob).
enum class MemTag : std::uint8_t {
  LP_PARAMS, ///< fp16/bf16 parameters (full, or this rank's partition in stage 3)
  LP_GRADS, ///< fp16/bf16 gradients held in param.grad
  GRAD_PARTITION, ///< DeepSpeed grads_in_partition / grad_partitions_flat_buffer
  FP32_MASTER, ///< fp32 master weights (partitioned from stage 1)
  OPTIMIZER_STATES, ///< Adam exp_avg + exp_avg_sq (fp32)
  FP32_GRADS, ///< fp32 gradient partition built at step time
  IPG_BUCKET, ///< DeepSpeed IPG (gradient) bucket(s), reduce_bucket_size elements each
  FLATTEN_TEMP, ///< flatten/cast temporaries around collectives and at step
  GATHER_BUFFER, ///< stage 3 all-gathered full parameters and their coalesced flat buffer
  ACTIVATIONS, ///< activations saved for backward (or checkpoints)
  WORKING, ///< per-layer transient working memory (recomputed activations, logits, loss)
  COUNT_
};

/// Stable lowercase name of a tag ("ipg_bucket"), used in JSON, CSV and trace counters.
[[nodiscard]] const char* to_string(MemTag);
[[nodiscard]] const char* to_string(Phase);
[[nodiscard]] const char* to_string(CollectiveKind);
[[nodiscard]] const char* to_string(StreamKind);

/// GPU kernel(s): time = (flops - attention_flops) / (peak x matmul_efficiency x gemm_utilization)
/// + attention_flops x attention_work / (peak x attention_efficiency) + bytes / (mem_bw x memory_efficiency). peak: gpu.peak_lp,
/// or the fp32 run's (engine EngineOptions::matmul_peak).
/// The two terms add because GEMMs and memory-bound kernels are separate launches.
struct Compute {
  Flops flops;
  Bytes bytes;
  /// The part of `flops` done inside fused attention kernels (FlashAttention): priced at gpu.attention_efficiency
  /// instead of gpu.matmul_efficiency (stream_actor.cpp do_compute).
  Flops attention_flops;
  /// FLOPs the fused attention kernels execute per attention_flops counted (workload::Layer::fwd_attention_work:
  /// causal FlashAttention skips half, its backward recomputes QKᵀ), times their time per executed FLOP against
  /// FlashAttention-2 (workload::attention_kernel_time); > 0.
  double attention_work = 1;
  /// Fraction of the large-GEMM rate the op's GEMMs reach on the simulated GPU, in (0, 1]: tile and wave
  /// quantization and the operand-read floor (workload/gemm.hpp gemm_utilization); 1 = the large-GEMM rate.
  double gemm_utilization = 1;
};

/// A collective over `group` of `bytes`: the full buffer per rank (all-reduce input = output; all-gather output;
/// reduce-scatter input), nccl-tests convention.
struct Collective {
  CollectiveKind kind = CollectiveKind::ALL_REDUCE;
  Bytes bytes;
  std::uint16_t group = 0; ///< index into StepProgram::groups
  /// Issue number on its group (0, 1, 2, ... over all streams), stamped by ProgramBuilder::collective in emission
  /// order, which is the host's issue order: the engine starts a rank's collective seq + 1 of the group only after
  /// its collective seq ended (one NCCL communicator runs its kernels in issue order; "Semantics" above).
  std::uint32_t seq = 0;
};

struct Copy {
  CopyDir dir = CopyDir::H2D;
  Bytes bytes;
  /// H2D / D2H only: the host side is pageable memory, so the CUDA driver stages the copy through a pinned bounce
  /// buffer with a one-thread memcpy at cpu.pageable_copy_bandwidth m (CUDA Programming Guide, "Page-Locked Host
  /// Memory"; CUDA Runtime API "API synchronization behavior"): either way it takes bytes / link + bytes / m, the
  /// memcpy serialized with the DMA (the fit of a DGX A100 bandwidthTest, near-symmetric in H2D and D2H).
  /// Either way the calling thread is blocked until the copy is done; the generator models that with a host sync.
  bool pageable = false;
};

/// Host CPU work, given as a duration already derived from a CPU model.
struct CpuCompute {
  Seconds duration;
};

/// Alloc::pool when the Alloc's own stream's cache serves the request.
inline constexpr StreamId kOwnPool = 0xFFFF;

struct Alloc {
  BufferId buffer = 0;
  MemTag tag = MemTag::WORKING;
  Bytes bytes;
  Device device = Device::GPU;
  /// Host buffers only: page-locked (torch pin_memory / cudaHostAlloc), which the OS cannot swap and which PCIe DMA
  /// reads directly; false = pageable. The engine reports pinned and pageable host bytes apart.
  bool pinned = false;
  /// GPU buffers only: the stream whose cached blocks serve the request, when the host thread allocates for another
  /// stream (`with torch.cuda.stream(s)`: PyTorch's caching allocator runs on the host and takes the block from
  /// stream s's pool, CUDACachingAllocator.cpp malloc). The Alloc then sits on the HOST stream (it counts at host
  /// time) and `pool` names s; kOwnPool: the Alloc's own stream.
  StreamId pool = kOwnPool;
};

/// What a Free ends. PyTorch's `record_stream` splits a tensor's end in two: the tensor is freed where the program
/// drops it (torch.cuda.memory_allocated drops then), while its block returns to the caching allocator only after the
/// other stream's queued work on it (reserved memory keeps it until then). GPU buffers only for TENSOR / BLOCK.
/// A cudaMalloc that fails on the stream that ran the TENSOR Free waits for the BLOCK Free (PyTorch's
/// synchronize_and_free_events), so the BLOCK Free must be emitted before that stream's next op: as the event
/// record_stream stands for, it marks work already queued when the tensor was freed.
enum class FreeKind : std::uint8_t {
  TENSOR_AND_BLOCK, ///< an ordinary free: both at once
  TENSOR, ///< the allocated counter drops; the block stays held
  BLOCK, ///< the held block returns to its stream's cache (after a TENSOR free of the same buffer)
};

struct Free {
  BufferId buffer = 0;
  FreeKind kind = FreeKind::TENSOR_AND_BLOCK;
};

struct Record {
  EventId event = 0;
};

struct Wait {
  EventId event = 0;
};

enum class MarkKind : std::uint8_t { STEP_BEGIN, STEP_END };

struct Mark {
  MarkKind kind = MarkKind::STEP_BEGIN;
  int step = 0; ///< 0-based optimizer step
};

using OpBody = std::variant<Compute, Collective, Copy, CpuCompute, Alloc, Free, Record, Wait, Mark>;

struct Op {
  OpBody body;
  Phase phase = Phase::OTHER;
  LabelId label = 0; ///< index into StepProgram::labels ("fwd block.3", "allreduce bucket 2", ...)
};

struct Stream {
  std::string name; ///< "compute", "comm", "gather", "reduce", "copy", "cpu"
  StreamKind kind = StreamKind::COMPUTE;
  std::vector<Op> ops;
};

/// A communicator: a torch.distributed process group, with its own NCCL communicator. Every group spans every rank
/// (DATA_PARALLEL); DeepSpeed may run its ZeRO collectives on two such groups (zero.Init's and the engine's), which
/// can overlap each other, while the collectives of one group run one after another (Collective::seq).
struct GroupDecl {
  std::string name;
  enum class Kind : std::uint8_t { DATA_PARALLEL } kind = Kind::DATA_PARALLEL;
};

/// The whole per-rank program for all simulated steps (unrolled).
struct StepProgram {
  std::vector<Stream> streams;
  std::vector<std::string> labels; ///< labels[0] is ""
  std::vector<GroupDecl> groups;
  EventId num_events = 0;
  BufferId num_buffers = 0;
  int steps = 0;
  /// [step][stream]: the ops each stream held when the generator began that step (ProgramBuilder::mark with
  /// STEP_BEGIN). Streams run ahead of the compute stream's STEP_BEGIN (stage 3's host thread can issue the next
  /// step's first all-gathers while the GPU finishes the optimizer where DeepSpeed does not synchronize at the step's
  /// end), so this, not the time, says which step an op is of.
  std::vector<std::vector<std::size_t>> step_begin_ops;
  /// The step op number `index` of stream `s` was generated for: the last k with step_begin_ops[k][s] <= index (a
  /// stream added after step k began counts 0 there); -1 before step 0's STEP_BEGIN (initialisation) or without marks.
  [[nodiscard]] int step_of(StreamId s, std::size_t index) const;
  /// step_of for `op`, which must be an element of streams[s].ops (its index is its position there; asserted).
  [[nodiscard]] int step_of(StreamId s, const Op& op) const;
  /// Buffers that live to the end of the program by design (model states, DeepSpeed's buffers allocated once and
  /// reused every step), ascending; every other allocated buffer must be freed (check_conservation).
  std::vector<BufferId> persistent;
};

/// Helper to emit a program: interns labels, allocates event and buffer ids, appends ops to streams.
class ProgramBuilder {
 public:
  ProgramBuilder();
  /// Adds a stream; returns its id.
  StreamId add_stream(std::string name, StreamKind kind);
  std::uint16_t add_group(std::string name);
  EventId new_event();
  BufferId new_buffer();
  LabelId label(const std::string& text);

  void compute(StreamId s, Phase p, const std::string& label, Flops flops, Bytes bytes,
               Flops attention_flops = Flops(0), double gemm_utilization = 1, double attention_work = 1);
  /// A collective on `group`, stamped with the group's next issue number (Collective::seq): emit the collectives in
  /// the order the host issues them.
  void collective(StreamId s, Phase p, const std::string& label, CollectiveKind kind, Bytes bytes,
                  std::uint16_t group = 0);
  /// A copy; `pageable` marks an H2D / D2H whose host side is pageable memory (Copy::pageable).
  void copy(StreamId s, Phase p, const std::string& label, CopyDir dir, Bytes bytes, bool pageable = false);
  void cpu(StreamId s, Phase p, const std::string& label, Seconds duration);
  /// Emits an Alloc and returns the new buffer's id. `pinned` only for Device::HOST (validate() rejects a pinned
  /// GPU buffer).
  BufferId alloc(StreamId s, Phase p, const std::string& label, MemTag tag, Bytes bytes, Device d = Device::GPU,
                 bool pinned = false);
  /// A GPU buffer the thread running stream `s` (the host) allocates from stream `pool`'s cache (Alloc::pool).
  BufferId alloc_from(StreamId s, StreamId pool, Phase p, const std::string& label, MemTag tag, Bytes bytes);
  /// alloc() of a buffer that lives to the end by design (model states, buffers DeepSpeed allocates once), declared
  /// with keep().
  BufferId alloc_persistent(StreamId s, Phase p, const std::string& label, MemTag tag, Bytes bytes,
                            Device d = Device::GPU, bool pinned = false);
  void free(StreamId s, Phase p, BufferId b);
  /// A tensor freed on `tensor_stream` whose block is still used by `block_stream` (record_stream): Free{TENSOR}
  /// on `tensor_stream` now; the caller emits free_block() on `block_stream` (after that stream's last use) before
  /// anything else on `tensor_stream` (FreeKind).
  void free_tensor(StreamId tensor_stream, Phase p, BufferId b);
  /// The block of a buffer freed with free_tensor() returns to the cache (Free{BLOCK}).
  void free_block(StreamId block_stream, Phase p, BufferId b);
  /// record_stream(block_stream) then drop the tensor on `tensor_stream`: free_tensor() and free_block() at this
  /// point of both streams, or one plain free() when they are the same stream.
  void free_record_streamed(StreamId tensor_stream, StreamId block_stream, Phase p, BufferId b);
  /// Declares `b` persistent: it is allocated once and never freed (StepProgram::persistent).
  void keep(BufferId b);
  /// Emits Record of a fresh event on `s` and returns it.
  EventId record(StreamId s);
  void wait(StreamId s, EventId e);
  /// Makes `waiter` wait for everything queued so far on `producer` (record on producer + wait on waiter).
  void join(StreamId waiter, StreamId producer);
  /// A step mark on `s`; a STEP_BEGIN also records every stream's op count (StepProgram::step_begin_ops).
  void mark(StreamId s, MarkKind k, int step);

  /// Finishes the program; the builder is left empty.
  [[nodiscard]] StepProgram build(int steps);

 private:
  void push(StreamId s, OpBody body, Phase p, LabelId l);
  StepProgram p_;
  /// text -> LabelId. Hashed: ids follow first use (p_.labels' order), so the container's order is never observed; a
  /// sorted vector here cost an O(labels) insert per new label, ~9 % of a 16-GPU llama-2-70b ZeRO-3 run (callgrind).
  std::unordered_map<std::string, LabelId> label_index_;
  std::vector<std::uint32_t> group_seq_; // per group: the next Collective::seq
};

/// Checks structural invariants: every event is recorded exactly once and every waited event is recorded; every
/// buffer is allocated once and freed at most once (a two-part free: one TENSOR and one BLOCK Free, GPU buffers
/// only), and never freed without an Alloc; only host buffers are pinned; an Alloc's pool is kOwnPool or an existing
/// stream, and only GPU buffers name one;
/// collective groups exist, and each group's issue numbers (Collective::seq) are 0, 1, 2, ... without a repeat or a
/// hole and rise along every stream. Then a zero-time dry run checks that the program cannot deadlock: every stream
/// reaches its end when a Wait passes only after its event's Record and a collective only after its group's
/// previous issue number (a Wait placed where its Record can never come first, e.g. two streams each waiting on
/// the other's later Record, or a collective behind such a Wait). Returns "" when valid, else the first problem
/// found (the dry run's messages name the stream, op index and label; the structural ones the event, buffer or group).
[[nodiscard]] std::string validate(const StepProgram& p);

/// Memory conservation (issue 3): every allocated buffer is either freed (both parts of a two-part free) or declared
/// persistent, and no persistent buffer is freed. Since every stream runs its ops to the end, this is what a
/// finished simulation leaves allocated: the persistent buffers, nothing else. Returns "" when it holds, else the
/// first offending buffer with its label and tag.
[[nodiscard]] std::string check_conservation(const StepProgram& p);

} // namespace zerosim::program
