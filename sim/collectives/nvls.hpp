// NCCL's NVLS collectives (NVLink SHARP, NVSwitch-3 on H100/H200 systems), as phases of aggregated flows: the
// all-reduce, and since NCCL 2.19 (src/graph/tuning.cc v2.19.1-1: ReduceScatter and AllGather admit NCCL_ALGO_NVLS,
// v2.18.6-1 ring only) the all-gather and reduce-scatter.
// NCCL v2.27.7-1 src/device/all_reduce.h, RunWorkColl<AllReduce, NVLS, Simple> on one node: "scatter" warps copy the
// GPU's input into the NVLS buffers of the shard owners, "reduce, broadcast through NVLS" warps load each shard
// reduced by the switch (multimem ld_reduce) and store it once to the multicast address (the switch replicates it
// to every GPU), "gather" warps copy the result out. The reduction happens in the switch, so there is no second
// ring pass: each GPU moves about S out and S in, instead of the ring's 2(n-1)/n·S each way.
//
// Chunking (small and mid-size messages). The three warp groups are a three-stage pipeline: each loops over the
// channel's share of the buffer in steps of nHeads × chunkSize elements (all_reduce.h, `loopCount = nvls->nHeads *
// chunkSize`), and a chunk is scattered, then reduced and multicast, then gathered. With L loops per channel the
// kernel takes (L + 3 - 1) loop times: two loops of fill and drain on top of the steady state. NCCL shrinks the
// chunk for smaller messages (src/enqueue.cc calcCollChunking, v2.27.7-1), so a mid-size message has few loops and
// the fill is a large share of its time.
#pragma once

#include "sim/collectives/collective_plan.hpp"

namespace zerosim::collectives {

/// NCCL_NVLS_CHUNKSIZE default, 128 KiB (src/transport/nvls.cc v2.27.7-1, NCCL_PARAM(NvlsChunkSize, ..., 128*1024)).
inline constexpr double kNvlsMaxChunkBytes = 128.0 * 1024.0;
/// NVLS channels on Hopper, NVLS_NCHANNELS_SM90 = 16 (src/transport/nvls.cc v2.27.7-1; topoGetAlgoInfo in
/// enqueue.cc uses comm->nvlsChannels for NVLS whatever the size: "NVLS should not need more than 16 channels").
inline constexpr int kNvlsChannelsSm90 = 16;
/// Stages of the one-node NVLS kernel pipeline: scatter, reduce + multicast, gather (all_reduce.h v2.27.7-1).
inline constexpr int kNvlsPipelineStages = 3;
/// Stages of the one-node NVLS all-gather and reduce-scatter kernels (v2.27.7-1, no buffer registration): all-gather
/// multicast-stores the GPU's input then gathers the received shards (all_gather.h, "Bcast through NVLS" and "Gather"
/// warps); reduce-scatter scatters the input then loads its shard reduced by the switch (reduce_scatter.h,
/// "Scatter" and "Reduce through NVLS" warps).
inline constexpr int kNvlsAgRsPipelineStages = 2;
/// NCCL_MAX_NVLS_ARITY = 32 (src/include/device.h v2.27.7-1): NCCL drops NVLS for a collective other than all-reduce
/// when the node has more local ranks (enqueue.cc updateCollCostTable).
inline constexpr int kNvlsMaxArity = 32;

/// NCCL's NVLS chunk size (bytes) for an all-reduce of `size` bytes over `channels` channels of `heads` NVLS heads
/// (one per GPU of the node), src/enqueue.cc calcCollChunking v2.27.7-1 (one node, no buffer registration):
/// chunk = 128 KiB; with ops = channels × heads: chunk = 64 KiB if S < 64·ops·chunk, then 32 KiB if S < 8·ops·chunk,
/// then 16 KiB if S < 2·ops·chunk. 8 × H200 (ops = 128): 16 KiB below 8 MiB, 32 KiB below 64 MiB, 64 KiB below
/// 1 GiB, 128 KiB from 1 GiB. Throws zerosim::Error if channels < 1, heads < 1 or size < 0.
[[nodiscard]] Bytes nvls_chunk_size(Bytes size, int channels, int heads);

/// Loops each channel runs: ceil(S / (channels × heads × chunk)), at least 1 for S > 0 (the kernel's elemOffset
/// loop; NCCL splits the buffer evenly over the channels, ncclCollCbdPart). 0 for S = 0.
[[nodiscard]] int nvls_loops(Bytes size, int channels, int heads);

/// NVLS all-reduce of `size` bytes over n >= 2 ranks of one node: ONE phase (scope NODE, peer +1, 1 latency step)
/// of S·(1 + 1/n) bytes per rank each way: S scattered to the shard owners plus the rank's own reduced shard S/n
/// stored to the multicast address; symmetrically S/n loaded reduced plus (n-1)/n·S of the others' shards and the
/// own copy received. On a star of per-GPU NVLinks (the platform builder's node) a flow to peer +1 loads each GPU's
/// link up and down with exactly these bytes. NCCL's tuner prices it with hwLat[NVLink][NVLS][Simple] = 25 us and no
/// base latency (tuning.cc v2.27.7-1) and, from NCCL 2.28 on, an NVLS efficiency of 0.85 on Hopper
/// (tuning.cc nvlsEfficiency @5067397), which nccl_tuning.cpp applies as the bandwidth factor.
/// pipeline_fill_bytes = (kNvlsPipelineStages - 1) / L × the phase's bytes, L = nvls_loops(S, 16, n): the two extra
/// loop times of the three-stage pipeline (file comment). E.g. 8 GPUs, S = 16 MiB: chunk 32 KiB, L = 16 MiB /
/// (16 × 8 × 32 KiB) = 4, fill = 2/4 × 18 MiB = 9 MiB.
/// Preconditions (checked by plan()): all-reduce, one node, n >= 2, size > 0.
[[nodiscard]] std::vector<PhasePlan> nvls_plan(Bytes size, int n);

/// NVLS all-gather or reduce-scatter of `size` bytes (nccl-tests convention: the gathered output, the scattered
/// input) over n >= 2 ranks of one node: ONE phase (scope NODE, peer +1, 1 latency step) of S bytes per rank. Each
/// GPU moves S one way and S/n the other (NCCL issue #1083, maintainer's reply: reduce-scatter sends S and receives
/// S/n, all-gather sends S/n and receives S; the ring moves (n-1)/n·S each way): all-gather multicast-stores its S/n
/// and the switch writes all n shards into every GPU; reduce-scatter's switch reads every GPU's S and returns its
/// reduced S/n. The phase carries the heavier direction both ways (on the star of per-GPU NVLinks the lighter one
/// is never the bottleneck), so NVLS is n/(n-1) slower than the ring on bandwidth and wins only on latency.
/// pipeline_fill_bytes = (kNvlsAgRsPipelineStages - 1) / L × S, L = nvls_loops(S, 16, n) (the chunking is the
/// all-reduce's: enqueue.cc calcCollChunking applies it to every NVLS collective without buffer registration).
/// E.g. 8 GPUs, S = 16 MiB: L = 4, fill = 1/4 × 16 MiB = 4 MiB.
/// Preconditions (checked by plan()): all-gather or reduce-scatter, one node, n >= 2, size > 0.
[[nodiscard]] std::vector<PhasePlan> nvls_ag_rs_plan(Bytes size, int n);

} // namespace zerosim::collectives
