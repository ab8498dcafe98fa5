// NCCL's cost model for choosing and pricing a collective: per-algorithm/protocol base latency, per-hop hardware
// latency by link type, and protocol bandwidth factors, restated from NVIDIA/nccl src/graph/tuning.cc v2.27.7-1
// (baseLat, hwLat, the "model refinements" in ncclTopoTuneModel and the min-time choice of ncclTopoGetAlgoTime;
// the NCCL of the hardware.md measurements). Pure data and arithmetic, no SimGrid.
//
// Time of a collective = base_latency(algo, proto)
//                      + Σ_phases [ intra steps·hwLat(intra link) + network steps·hwLat(NET)
//                                   + phase bytes / (phase bandwidth · phase_bandwidth_factor(algo, proto)) ].
// The bandwidth factor is the protocol's payload efficiency (LL: 4 B of data per 8 B flit; LL128: 120 of 128 B;
// Simple: 1) and the tree's pipelining loss (0.92), as NCCL applies them to busBw, under NCCL's absolute and
// per-channel bandwidth caps.
// The executed collective also pays each phase's pipeline fill (PhasePlan::pipeline_fill_bytes of NVLS, nvls.hpp;
// PhasePlan::pipeline_fill_chunks of a ring Reduce's chain, ring.hpp), which NCCL's tuner does not model:
// phase_latency() includes it, model_time() and choose() do not.
#pragma once

#include "sim/collectives/collective_plan.hpp"

#include <span>
#include <string_view>
#include <vector>

namespace zerosim::collectives {

/// NCCL protocols. NONE is zerosim's ideal alpha-beta model (no launch latency, full link bandwidth, the platform's
/// own hop latencies): what the engine did before protocols existed, and the reference of the fidelity tests.
enum class Protocol { NONE, LL, LL128, SIMPLE };

/// The hardware class of a hop, indexing NCCL's hwLat table.
enum class LinkClass { NVLINK, PCI, NET };

/// What the tuner needs to know about the communicator.
struct TuneTopology {
  int ranks = 1;
  int gpus_per_node = 1;
  LinkClass intra = LinkClass::NVLINK; ///< the intra-node GPU-GPU path (NVLink/NVSwitch or PCIe)
  /// Per GPU per direction, achievable (link bandwidth × efficiency); on a mesh, per peer link.
  ByteRate intra_bandwidth;
  ByteRate inter_bandwidth; ///< per node per direction into the network (0 on one node)
  bool nvls = false; ///< NVSwitch with NVLink SHARP: NCCL's NVLS all-reduce, all-gather, reduce-scatter enabled
  /// Full mesh inside the node (cluster.intra_node_topology mesh): one dedicated link of intra_bandwidth per GPU
  /// pair, so a fan-out phase's flows cross different links; enables DIRECT in choose().
  bool mesh = false;
  /// NCCL's network post overhead per ring step across nodes (tuning.cc getNetOverhead v2.27.7-1): 1 us on Intel
  /// and non-x86 hosts, 2 us on AMD x86 hosts.
  Seconds net_overhead = Seconds(1e-6);
  /// NCCL's GPU generation index for its bandwidth caps (tuning.cc compCapIndex): 0 Volta and older, 1 Ampere and
  /// Ada (compute capability 8.x), 2 Hopper (9.x), 3 Blackwell (10.x and later); -1 = not an NVIDIA GPU or not
  /// known: no caps (phase_bandwidth_factor).
  int arch = -1;
  /// NCCL channels of the communicator (ClusterSpec::nccl_channels_effective); 0 = no per-channel caps (LL's
  /// absolute cap still applies).
  int channels = 0;
  /// The hosts are AMD x86 (NCCL's LL cap across nodes is chosen by CPU vendor).
  bool amd_host = false;
  /// Route latency a ring step pays beyond what NCCL's per-step latency (hwLat) already stands for, per step inside
  /// a node and (averaged over the ring's node crossings) per step across nodes; table_phase_latency adds them to
  /// every protocol's steps, as NCCL's tuner adds a network's own latency (graph latencyInter, the net plugin's
  /// props.latency) to interLat (tuning.cc v2.27.7-1). 0 = the links are as fast as NCCL's table assumes.
  /// engine::tune_topology derives them from the cluster's routes.
  Seconds intra_step_extra = Seconds(0);
  Seconds inter_step_extra = Seconds(0);
  [[nodiscard]] int nodes() const { return ranks / gpus_per_node; }
};

/// An (algorithm, protocol) pair.
struct CollectiveChoice {
  Algorithm algorithm = Algorithm::RING;
  Protocol protocol = Protocol::SIMPLE;
};

/// Stable lowercase names: "none", "ll", "ll128", "simple".
[[nodiscard]] const char* to_string(Protocol p);
/// Parses a protocol name; throws zerosim::Error listing the known names otherwise.
[[nodiscard]] Protocol parse_protocol(std::string_view name);
/// Every protocol in a fixed order.
[[nodiscard]] std::span<const Protocol> protocols();

/// NCCL baseLat[algo][proto] (s), tuning.cc v2.27.7-1: Tree {LL 6.8, LL128 14.0, Simple 8.4} us, Ring {6.6, 14.0,
/// 8.4} us, NVLS 0 (an NVLS latency is its hop latency alone); hierarchical uses the ring's (it is made of rings).
/// DIRECT uses the ring's row too: [assumption] NCCL has no one-node all-to-all collective algorithm; on a fully
/// connected node DIRECT is what RCCL's / NCCL's multi-channel rings amount to (every link used), so it is priced as
/// a Ring/Simple kernel (8.4 us base) with one hop of hwLat per phase. NONE: 0.
[[nodiscard]] Seconds base_latency(Algorithm a, Protocol p);

/// NCCL hwLat[link][algo][proto] (s), one hop, tuning.cc v2.27.7-1: NVLink Tree {.6, 1.25, 4.0} Ring {.6, 1.9, 3.4};
/// PCI Tree {1.0, 1.9, 4.0} Ring {1.0, 2.5, 5.7}; NET Tree {5.0, 8.5, 14} Ring {2.7, 4.0, 14.0} us. Hierarchical
/// uses the ring's. NVLS (Simple only): NVLink 25, PCI 0, NET 18 us; LL / LL128 0 (NCCL runs NVLS with Simple
/// only). DIRECT: the ring's (base_latency's [assumption]). Throws for NONE (its hops cost the platform's route
/// latency).
[[nodiscard]] Seconds hop_latency(LinkClass link, Algorithm a, Protocol p);

/// Fraction of the link bandwidth the protocol delivers as payload (tuning.cc v2.27.7-1 "model refinements"):
/// Ring LL 0.5 (8 B lines carry 4 B of data and a flag), Ring LL128 0.92 (120 of 128 B), Simple 1. Tree (all-reduce):
/// 0.92 × {LL 1/3.8, LL128 7/9 on one node else 120/128, Simple 1}. Hierarchical, DIRECT: the ring's. NVLS: 0.85
/// (nvlsEfficiency for Hopper, tuning.cc @5067397; NVLS exists from Hopper on). NONE: 1.
/// NCCL's absolute and per-channel caps are phase_bandwidth_factor's.
[[nodiscard]] double bandwidth_factor(program::CollectiveKind kind, Algorithm a, Protocol p, const TuneTopology& t);

/// The fraction of phase `ph`'s uncontended bandwidth (phase_bandwidth) the protocol delivers as payload: NCCL's
/// busBw over the link's, tuning.cc v2.27.7-1 ncclTopoTuneModel with its caps (GB/s, by t.arch and 1 / 2 / more
/// nodes). busBw = min(link, channels x the graph search's fastest channel: 40 / 60 / 90 on one node for
/// Volta-Ampere / Hopper / Blackwell, search.cc speedArrayIntra[0]; 48 / 48 / 96 across nodes, the inter arrays);
/// ring LL: min(llMaxBw, 0.5 x busBw) (one node: Blackwell 282, Hopper 141, Ampere 87.7, Volta 39; across nodes by
/// host CPU, 2 / more nodes: Intel 39 / 20.4, AMD 22.5 / 19.0); ring LL128:
/// min(0.92 x busBw, channels x perChMaxRingLL128Bw: 20 Volta-Ampere, 36.7 Hopper); tree: min(0.92 x busBw,
/// channels x perChMaxTreeBw), then LL: min(/3.8, llMaxBw), LL128: min(x 7/9 on one node else 120/128, channels x
/// perChMaxTreeLL128Bw); NVLS: the channel bound alone, then its efficiency (NCCL_MAX_CTAS caps the NVLS channels
/// too: nvls.cc v2.27.7-1). With t.channels 0 only LL's absolute cap; without caps (t.arch < 0, DIRECT, NONE)
/// bandwidth_factor. E.g. 8
/// H100 on NVSwitch at 360 GB/s, ring LL: min(141, 180) / 360 = 0.392 instead of 0.5; 2 channels, ring LL128:
/// 2 x 36.7 / 360 = 0.204. [simplification] The caps come out as a fraction of the tuner's closed-form phase
/// bandwidth; where the executed route is slower (a rail-misaligned hop, contention) they scale down with it
/// instead of staying absolute. On the presets the two bandwidths agree.
[[nodiscard]] double phase_bandwidth_factor(program::CollectiveKind kind, Algorithm a, Protocol p, const PhasePlan& ph,
                                            const TuneTopology& t);

/// NCCL's tuner latency of one phase of a plan under protocol p (not NONE), tuning.cc v2.27.7-1: intra-node steps ×
/// hwLat(t.intra) + network steps × hwLat(NET) (the Tree's NET row with one GPU per node: every step exposed); a
/// ring or hierarchical phase on several nodes pays at least t.net_overhead per intra step (× 3 with Simple).
/// Every step also pays its route's latency beyond NCCL's table: + intra steps × t.intra_step_extra + network
/// steps × t.inter_step_extra (0 on links as fast as the table's; NCCL's interLat + latencyInter).
/// What model_time() and choose() use.
[[nodiscard]] Seconds table_phase_latency(const PhasePlan& ph, Algorithm a, Protocol p, const TuneTopology& t);

/// The pipeline fill and drain of a phase (PhasePlan::pipeline_fill_bytes) priced at the phase's uncontended
/// bandwidth times the protocol factor: fill bytes / (phase_bandwidth × bandwidth_factor). Only NVLS sets fill bytes
/// (its factor is the same for every NVLS collective, so the all-reduce's is taken). 8 × H200, NVLS, S = 16 MiB: 9 MiB / (370.8e9 × 0.85) =
/// 29.9 us. NCCL's tuner does not include it (tuning.cc prices NVLS as 25 us + S / busBw); zerosim adds it to the
/// executed collective only, so the algorithm choice stays NCCL's.
/// Plus a chain's fill (PhasePlan::pipeline_fill_chunks, a ring Reduce): each of its chunk times moves one
/// reduce_chunk_bytes(p) chunk on every one of the t.channels channels (at most the phase's bytes, which NCCL then
/// splits into smaller chunks: calcCollChunking and ncclCollCbdPart), at the phase's bandwidth under NCCL's caps
/// (phase_bandwidth × phase_bandwidth_factor): fill_chunks × min(bytes_per_rank, chunk × channels) / (bandwidth ×
/// factor). 16 ranks, Simple, 16 channels, 100e9 B/s, S = 1 GiB: 14 × 512 KiB × 16 / 100e9 = 1.174 ms. Without a
/// channel count (t.channels 0) or with protocol NONE (no NCCL) there is no chain fill.
[[nodiscard]] Seconds pipeline_fill_time(const PhasePlan& ph, Algorithm a, Protocol p, const TuneTopology& t);

/// Data bytes of one chunk of NCCL's ring Reduce per channel under protocol p (enqueue.cc calcCollChunking and
/// device/primitives.h calcBytePerStep, v2.27.7-1; the same in v2.10.3-1): the protocol's default buffer over
/// NCCL_STEPS (8) times REDUCE_CHUNKSTEPS (1, include/collectives.h). Simple 4 MiB / 8 = 524,288 B; LL 524,288 B
/// / 8 / 2 (half of each 16 B line is flags) = 32,768 B; LL128 4,915,200 B / 8 × 15/16 (one 8 B flag per 128 B
/// line) = 576,000 B; NONE 0.
[[nodiscard]] Bytes reduce_chunk_bytes(Protocol p);

/// Latency the engine pays for one phase under protocol p (not NONE): table_phase_latency() + pipeline_fill_time().
[[nodiscard]] Seconds phase_latency(const PhasePlan& ph, Algorithm a, Protocol p, const TuneTopology& t);

/// The bandwidth a phase's flow gets on an uncontended platform of this shape (before the protocol factor):
/// GLOBAL on one node, NODE: intra; GLOBAL on several nodes: min(intra, inter) (one ring flow crosses each node
/// boundary); ACROSS_NODES: min(intra, inter / gpus_per_node) (every GPU of a node crosses at once).
/// A fan-out phase (DIRECT, one node) is the rank's aggregate over its fan_out flows: fan_out × intra on a mesh
/// (t.mesh: each flow on its own link), intra on a switch star (the flows share the GPU's one link).
[[nodiscard]] ByteRate phase_bandwidth(const PhasePlan& ph, const TuneTopology& t);

/// The tuner's extra bandwidth factor for an NVLS all-gather or reduce-scatter: (ppn - 1) / ppn with ppn =
/// t.gpus_per_node; 1 for any other (kind, algorithm). NCCL's ncclTopoTuneModel multiplies the NVLS bandwidth of
/// these two by (ppn - 1)/ppn and, unlike every other (algorithm, collective), does not convert it from bus to
/// algorithm bandwidth (tuning.cc v2.27.7-1 lines 267-273 and 321; @5067397 lines 307-318 and 377), so it prices
/// S / (NVLS bus bandwidth × (n-1)/n) where the executed kernel moves S at the NVLS bandwidth (nvls_ag_rs_plan).
/// Only model_time() applies it: the choice is NCCL's, the executed time the data movement's.
[[nodiscard]] double nvls_ag_rs_tuner_factor(program::CollectiveKind kind, Algorithm a, const TuneTopology& t);

/// NCCL's modelled time of `kind` on S bytes with choice c (protocol not NONE), the formula in the file comment
/// (table_phase_latency: no pipeline fill, as NCCL's tuner; an NVLS all-gather / reduce-scatter also
/// nvls_ag_rs_tuner_factor()).
[[nodiscard]] Seconds model_time(program::CollectiveKind kind, CollectiveChoice c, Bytes size, const TuneTopology& t);

/// What NCCL's tuner picks: the enabled (algorithm, protocol) of least model_time. Algorithms: ring; tree for
/// all-reduce on >= 2 ranks; NVLS on one node of >= 2 GPUs when t.nvls for all-reduce, and for all-gather and
/// reduce-scatter with at most kNvlsMaxArity GPUs (NCCL enables NVLS with nvlsSupport, for AG/RS since 2.19, and on
/// several nodes only with CollNet: init.cc / tuning.cc algoEnable, enqueue.cc updateCollCostTable), Simple protocol only
/// (hierarchical is not an NCCL algorithm and is only used when asked for); DIRECT for every op on one node of
/// >= 2 GPUs when t.mesh, Simple only (base_latency's [assumption]; a forced DIRECT with a forced LL / LL128 runs
/// Simple). Candidates in the order ring, tree, NVLS, DIRECT. Protocols: LL,
/// Simple, and LL128 when the intra-node path is NVLink (NCCL enables LL128 by default only on NVLink). A forced
/// NVLS with a forced LL / LL128 runs Simple (NCCL has no other NVLS protocol).
/// `algo` / `proto` fix one of the two when given (nullptr: choose); a reduce always runs as a ring (NCCL's Reduce). Ties keep the earlier (ring before tree,
/// LL before LL128 before Simple), so the choice is deterministic.
[[nodiscard]] CollectiveChoice choose(program::CollectiveKind kind, Bytes size, const TuneTopology& t,
                                      const Algorithm* algo = nullptr, const Protocol* proto = nullptr);

} // namespace zerosim::collectives
