// NCCL's NVLS all-reduce (NVLink SHARP, NVSwitch-3 on H100/H200 systems), as phases of aggregated flows.
// NCCL v2.27.7-1 src/device/all_reduce.h, RunWorkColl<AllReduce, NVLS, Simple> on one node: "scatter" warps copy the
// GPU's input into the NVLS buffers of the shard owners, "reduce, broadcast through NVLS" warps load each shard
// reduced by the switch (multimem ld_reduce) and store it once to the multicast address (the switch replicates it
// to every GPU), "gather" warps copy the result out. The reduction happens in the switch, so there is no second
// ring pass: each GPU moves about S out and S in, instead of the ring's 2(n-1)/n·S each way.
#pragma once

#include "sim/collectives/collective_plan.hpp"

namespace zerosim::collectives {

/// NVLS all-reduce of `size` bytes over n >= 2 ranks of one node: ONE phase (scope NODE, peer +1, 1 latency step)
/// of S·(1 + 1/n) bytes per rank each way: S scattered to the shard owners plus the rank's own reduced shard S/n
/// stored to the multicast address; symmetrically S/n loaded reduced plus (n-1)/n·S of the others' shards and the
/// own copy received. On a star of per-GPU NVLinks (the platform builder's node) a flow to peer +1 loads each GPU's
/// link up and down with exactly these bytes. NCCL's tuner prices it with hwLat[NVLink][NVLS][Simple] = 25 us and no
/// base latency (tuning.cc v2.27.7-1) and, from NCCL 2.28 on, an NVLS efficiency of 0.85 on Hopper
/// (tuning.cc nvlsEfficiency @5067397), which nccl_tuning.cpp applies as the bandwidth factor.
/// Preconditions (checked by plan()): all-reduce, one node, n >= 2, size > 0.
[[nodiscard]] std::vector<PhasePlan> nvls_plan(Bytes size, int n);

} // namespace zerosim::collectives
