#include "sim/collectives/nccl_tuning.hpp"

#include "sim/collectives/nvls.hpp"
#include "sim/error.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <string>

namespace zerosim::collectives {

namespace {

constexpr std::array<Protocol, 4> kProtocols{Protocol::NONE, Protocol::LL, Protocol::LL128, Protocol::SIMPLE};

/// Index of LL / LL128 / Simple in NCCL's tables.
int proto_index(Protocol p) {
  switch (p) {
  case Protocol::LL:
    return 0;
  case Protocol::LL128:
    return 1;
  case Protocol::SIMPLE:
    return 2;
  case Protocol::NONE:
    break;
  }
  throw Error("collective: protocol 'none' has no NCCL latency table entry");
}

// NVIDIA/nccl src/graph/tuning.cc v2.27.7-1 (593de54e, the NCCL of the hardware.md measurements): baseLat and
// hwLat, in microseconds. Rows: Tree, Ring, NVLS.
constexpr double kBaseLatUs[3][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0.0, 0.0, 0.0}};
constexpr double kHwLatUs[3][3][3] = {
    /* NVLink */ {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 25}},
    /* PCI    */ {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 0}},
    /* NET    */ {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 18}},
};
/// NCCL nvlsEfficiency for Hopper (tuning.cc @5067397).
constexpr double kNvlsEfficiency = 0.85;

int algo_row(Algorithm a) { return a == Algorithm::TREE ? 0 : a == Algorithm::NVLS ? 2 : 1; }

// NCCL's bandwidth caps, GB/s (tuning.cc v2.27.7-1, ncclTopoTuneModel). Rows: Volta, Ampere, Hopper, Blackwell
// (compCapIndex); columns: 1, 2, more nodes. llMaxBws' rows are the GPU generation on one node and the host CPU
// across nodes (Intel 0, AMD 1).
constexpr double kLlMaxBw[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
constexpr double kPerChMaxRingLl128Bw[4][3] = {{20.0, 20.0, 20.0},
                                               {20.0, 20.0, 20.0},
                                               {36.7, 36.7, 36.7},
                                               {73.4, 73.4, 73.4}};
constexpr double kPerChMaxTreeLl128Bw[4][3] = {{20.0, 20.0, 20.0},
                                               {20.0, 20.0, 20.0},
                                               {36.7, 36.7, 29.0},
                                               {73.4, 73.4, 58.0}};
constexpr double kPerChMaxTreeBw[4][3] = {{26.5, 18.5, 10.0},
                                          {24.0, 23.6, 17.8},
                                          {38.7, 41.4, 36.0},
                                          {77.4, 82.8, 72.0}};
// The fastest channel NCCL's graph search tries (search.cc v2.27.7-1), GB/s: on one node speedArrayIntra[0] and its
// sm90 / sm100 versions {40, 60, 90} by generation (Volta and Ampere share the first); with a network in the
// topology the search draws bwIntra and bwInter from the inter arrays, {48, 48, 96} (Hopper's sm90 inter array
// starts at 48 too).
constexpr double kTopChannelBwOneNode[4] = {40.0, 40.0, 60.0, 90.0};
constexpr double kTopChannelBwNodes[4] = {48.0, 48.0, 48.0, 96.0};

} // namespace

const char* to_string(Protocol p) {
  switch (p) {
  case Protocol::NONE:
    return "none";
  case Protocol::LL:
    return "ll";
  case Protocol::LL128:
    return "ll128";
  case Protocol::SIMPLE:
    return "simple";
  }
  return "?";
}

Protocol parse_protocol(std::string_view name) {
  std::string known;
  for (Protocol p : kProtocols) {
    if (name == to_string(p))
      return p;
    known += known.empty() ? "" : ", ";
    known += to_string(p);
  }
  throw Error("unknown collective protocol '" + std::string(name) + "'; known: " + known);
}

std::span<const Protocol> protocols() { return kProtocols; }

Seconds base_latency(Algorithm a, Protocol p) {
  if (p == Protocol::NONE)
    return Seconds(0);
  return Seconds(kBaseLatUs[algo_row(a)][proto_index(p)] * 1e-6);
}

Seconds hop_latency(LinkClass link, Algorithm a, Protocol p) {
  return Seconds(kHwLatUs[static_cast<int>(link)][algo_row(a)][proto_index(p)] * 1e-6);
}

double bandwidth_factor(program::CollectiveKind kind, Algorithm a, Protocol p, const TuneTopology& t) {
  const bool all_reduce = kind == program::CollectiveKind::ALL_REDUCE;
  const int nodes = t.nodes();
  if (p == Protocol::NONE)
    return 1.0;
  if (a == Algorithm::NVLS)
    return kNvlsEfficiency;
  if (a == Algorithm::TREE) {
    switch (p) {
    case Protocol::LL:
      return 0.92 / 3.8;
    case Protocol::LL128:
      return 0.92 * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0);
    default:
      return 0.92;
    }
  }
  (void)all_reduce;
  switch (p) {
  case Protocol::LL:
    return 0.5;
  case Protocol::LL128:
    return 0.92;
  default:
    return 1.0;
  }
}

double phase_bandwidth_factor(program::CollectiveKind kind, Algorithm a, Protocol p, const PhasePlan& ph,
                              const TuneTopology& t) {
  const double factor = bandwidth_factor(kind, a, p, t);
  if (p == Protocol::NONE || t.arch < 0 || t.arch > 3 || a == Algorithm::DIRECT)
    return factor;
  const double bw = phase_bandwidth(ph, t).value();
  if (!(bw > 0))
    return factor;
  const int nodes = t.nodes();
  const int col = nodes <= 2 ? nodes - 1 : 2;
  const double ll_max = kLlMaxBw[nodes == 1 ? t.arch : (t.amd_host ? 1 : 0)][col] * 1e9;
  // No channel count (cluster.nccl_channels 0): no per-channel bound; LL's absolute cap still holds.
  const double ch = t.channels > 0 ? t.channels : std::numeric_limits<double>::infinity();
  // busBw = nChannels x the channel's bandwidth, which the graph search caps at its fastest speed.
  double bus = std::min(bw, ch * (nodes == 1 ? kTopChannelBwOneNode : kTopChannelBwNodes)[t.arch] * 1e9);
  if (a == Algorithm::NVLS) // NCCL_MAX_CTAS caps the NVLS channels too (nvls.cc: min(maxCTAs, NVLS_NCHANNELS))
    return bus * factor / bw;
  if (a == Algorithm::TREE) {
    bus = std::min(bus * 0.92, ch * kPerChMaxTreeBw[t.arch][col] * 1e9);
    if (p == Protocol::LL)
      bus = std::min(bus / 3.8, ll_max);
    else if (p == Protocol::LL128)
      bus = std::min(bus * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), ch * kPerChMaxTreeLl128Bw[t.arch][col] * 1e9);
  } else if (p == Protocol::LL) { // ring, and hierarchical (rings)
    bus = std::min(ll_max, bus * 0.5);
  } else if (p == Protocol::LL128) {
    bus = std::min(bus * 0.92, ch * kPerChMaxRingLl128Bw[t.arch][col] * 1e9);
  }
  return bus / bw;
}

Seconds table_phase_latency(const PhasePlan& ph, Algorithm a, Protocol p, const TuneTopology& t) {
  double intra = hop_latency(t.intra, a, p).value();
  // tuning.cc: with one GPU per node every step is exposed, priced with the Tree's network latency; a ring across
  // nodes pays at least the network post overhead per step (x3 with Simple).
  const double net = hop_latency(LinkClass::NET, t.gpus_per_node == 1 ? Algorithm::TREE : a, p).value();
  if (a != Algorithm::TREE && a != Algorithm::NVLS && t.nodes() > 1)
    intra = std::max(intra, t.net_overhead.value() * (p == Protocol::SIMPLE ? 3.0 : 1.0));
  intra += t.intra_step_extra.value();
  return Seconds((ph.latency_steps - ph.inter_node_steps) * intra +
                 ph.inter_node_steps * (net + t.inter_step_extra.value()));
}

Bytes reduce_chunk_bytes(Protocol p) {
  // Default buffer sizes (init.cc v2.27.7-1): LL 8 lines/thread x 512 threads x NCCL_STEPS x 16 B; LL128 120 elements
  // x 640 threads x NCCL_STEPS x 8 B; Simple 1 << 22.
  constexpr double kSteps = 8.0;
  switch (p) {
  case Protocol::SIMPLE:
    return Bytes(4194304.0 / kSteps);
  case Protocol::LL:
    return Bytes(8.0 * 512.0 * kSteps * 16.0 / kSteps / 2.0);
  case Protocol::LL128:
    return Bytes(120.0 * 640.0 * kSteps * 8.0 / kSteps * 15.0 / 16.0);
  case Protocol::NONE:
    break;
  }
  return Bytes(0);
}

Seconds pipeline_fill_time(const PhasePlan& ph, Algorithm a, Protocol p, const TuneTopology& t) {
  Seconds fill(0);
  if (ph.pipeline_fill_bytes.value() > 0)
    fill += ph.pipeline_fill_bytes /
            (phase_bandwidth(ph, t) * bandwidth_factor(program::CollectiveKind::ALL_REDUCE, a, p, t));
  const Bytes chunk = reduce_chunk_bytes(p);
  if (ph.pipeline_fill_chunks > 0 && t.channels > 0 && chunk.value() > 0) {
    // The kind only matters to bandwidth_factor's tree rows, which a ring phase does not reach.
    const double factor = phase_bandwidth_factor(program::CollectiveKind::REDUCE, a, p, ph, t);
    const Bytes per_chunk_time = std::min(ph.bytes_per_rank, chunk * static_cast<double>(t.channels));
    fill += per_chunk_time * static_cast<double>(ph.pipeline_fill_chunks) / (phase_bandwidth(ph, t) * factor);
  }
  return fill;
}

Seconds phase_latency(const PhasePlan& ph, Algorithm a, Protocol p, const TuneTopology& t) {
  return table_phase_latency(ph, a, p, t) + pipeline_fill_time(ph, a, p, t);
}

ByteRate phase_bandwidth(const PhasePlan& ph, const TuneTopology& t) {
  const double intra = t.intra_bandwidth.value();
  if (t.nodes() == 1 || ph.scope == PeerScope::NODE)
    return t.mesh ? ByteRate(intra * std::max(ph.fan_out, 1)) : t.intra_bandwidth;
  const double inter = t.inter_bandwidth.value();
  if (ph.scope == PeerScope::ACROSS_NODES)
    return ByteRate(std::min(intra, inter / t.gpus_per_node));
  return ByteRate(std::min(intra, inter));
}

double nvls_ag_rs_tuner_factor(program::CollectiveKind kind, Algorithm a, const TuneTopology& t) {
  if (a != Algorithm::NVLS ||
      (kind != program::CollectiveKind::ALL_GATHER && kind != program::CollectiveKind::REDUCE_SCATTER))
    return 1.0;
  // tuning.cc ncclTopoTuneModel: NVLS all-gather / reduce-scatter bandwidth x (ppn - 1) / ppn, and no bus-to-algorithm
  // conversion (v2.27.7-1 and 5067397).
  const double ppn = t.gpus_per_node;
  return ppn > 1 ? (ppn - 1) / ppn : 1.0;
}

Seconds model_time(program::CollectiveKind kind, CollectiveChoice c, Bytes size, const TuneTopology& t) {
  const std::vector<PhasePlan> phases = plan(kind, c.algorithm, size, t.ranks, t.gpus_per_node);
  if (phases.empty())
    return Seconds(0);
  Seconds time = base_latency(c.algorithm, c.protocol);
  const double tuner_only = nvls_ag_rs_tuner_factor(kind, c.algorithm, t);
  for (const PhasePlan& ph : phases)
    time += table_phase_latency(ph, c.algorithm, c.protocol, t) +
            ph.bytes_per_rank /
                (phase_bandwidth(ph, t) * (phase_bandwidth_factor(kind, c.algorithm, c.protocol, ph, t) * tuner_only));
  return time;
}

CollectiveChoice choose(program::CollectiveKind kind, Bytes size, const TuneTopology& t, const Algorithm* algo,
                        const Protocol* proto) {
  std::vector<Algorithm> algos;
  if (kind == program::CollectiveKind::REDUCE)
    algos = {Algorithm::RING}; // NCCL's Reduce is a ring chain whatever algorithm the other collectives use
  else if (algo != nullptr)
    algos = {*algo};
  else {
    algos = {Algorithm::RING};
    if (kind == program::CollectiveKind::ALL_REDUCE && t.ranks >= 2)
      algos.push_back(Algorithm::TREE);
    // NVLS all-reduce; all-gather and reduce-scatter from NCCL 2.19 on, up to NCCL_MAX_NVLS_ARITY local ranks
    // (enqueue.cc updateCollCostTable v2.27.7-1).
    if (t.nvls && t.nodes() == 1 && t.ranks >= 2 &&
        (kind == program::CollectiveKind::ALL_REDUCE || t.gpus_per_node <= kNvlsMaxArity))
      algos.push_back(Algorithm::NVLS);
    if (t.mesh && t.nodes() == 1 && t.ranks >= 2)
      algos.push_back(Algorithm::DIRECT);
  }
  std::vector<Protocol> protos;
  if (proto != nullptr)
    protos = {*proto};
  else {
    protos = {Protocol::LL};
    if (t.intra == LinkClass::NVLINK)
      protos.push_back(Protocol::LL128);
    protos.push_back(Protocol::SIMPLE);
  }
  CollectiveChoice best{algos.front(), protos.front()};
  if (best.protocol == Protocol::NONE || t.ranks < 2)
    return best;
  double best_time = -1;
  // NVLS and DIRECT run with Simple only: a forced NVLS / DIRECT with a forced LL / LL128 runs Simple.
  if (algos.size() == 1 && (algos.front() == Algorithm::NVLS || algos.front() == Algorithm::DIRECT) &&
      proto != nullptr && *proto != Protocol::SIMPLE)
    return {algos.front(), Protocol::SIMPLE};
  for (Algorithm a : algos)
    for (Protocol p : protos) {
      if ((a == Algorithm::NVLS || a == Algorithm::DIRECT) && p != Protocol::SIMPLE)
        continue;
      const double time = model_time(kind, {a, p}, size, t).value();
      if (best_time < 0 || time < best_time) {
        best_time = time;
        best = {a, p};
      }
    }
  return best;
}

} // namespace zerosim::collectives
