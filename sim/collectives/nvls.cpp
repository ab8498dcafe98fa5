#include "sim/collectives/nvls.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace zerosim::collectives {

Bytes nvls_chunk_size(Bytes size, int channels, int heads) {
  if (channels < 1 || heads < 1 || size < Bytes(0))
    throw Error("nvls_chunk_size: need channels >= 1, heads >= 1 and size >= 0, got channels " +
                std::to_string(channels) + ", heads " + std::to_string(heads) + ", size " +
                std::to_string(size.value()));
  // src/enqueue.cc calcCollChunking, NCCL_ALGO_NVLS, v2.27.7-1: the three shrink rules, each against the chunk left by
  // the previous one.
  const double s = size.value();
  const double ops = static_cast<double>(channels) * heads;
  double chunk = kNvlsMaxChunkBytes;
  if (s < 64 * ops * chunk && chunk > 65536)
    chunk = 65536;
  if (s < 8 * ops * chunk && chunk > 32768)
    chunk = 32768;
  if (s < 2 * ops * chunk && chunk > 16384)
    chunk = 16384;
  return Bytes(chunk);
}

int nvls_loops(Bytes size, int channels, int heads) {
  const double loop = nvls_chunk_size(size, channels, heads).value() * channels * heads;
  if (!(size.value() > 0))
    return 0;
  return static_cast<int>(std::ceil(size.value() / loop));
}

namespace {
/// The one intra-node phase of an NVLS collective of `size` bytes on n ranks: `bytes` per rank, one latency step, and
/// (stages - 1) of the L = nvls_loops(size, 16, n) loops of pipeline fill (nvls.hpp).
PhasePlan one_node_phase(Bytes bytes, Bytes size, int n, int stages) {
  PhasePlan p;
  p.bytes_per_rank = bytes;
  p.peer_offset = 1;
  p.latency_steps = 1;
  p.scope = PeerScope::NODE;
  const int loops = nvls_loops(size, kNvlsChannelsSm90, n);
  p.pipeline_fill_bytes = bytes * (static_cast<double>(stages - 1) / std::max(loops, 1));
  return p;
}
} // namespace

std::vector<PhasePlan> nvls_plan(Bytes size, int n) {
  return {one_node_phase(size * (1.0 + 1.0 / static_cast<double>(n)), size, n, kNvlsPipelineStages)};
}

std::vector<PhasePlan> nvls_ag_rs_plan(Bytes size, int n) {
  // The heavier direction: S received (all-gather) or sent (reduce-scatter).
  return {one_node_phase(size, size, n, kNvlsAgRsPipelineStages)};
}

} // namespace zerosim::collectives
