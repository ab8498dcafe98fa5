// Test support: a tiny sequentially-consistent interpreter of a StepProgram. It executes the streams round-robin,
// one op per stream per round, blocking a stream on a Wait until the event is recorded, and tracks GPU bytes by
// MemTag after every op plus collective calls and payload bytes per step. No timing: it checks memory and traffic
// structure independently of the engine.
#pragma once

#include "sim/program/program.hpp"

#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace zerosim::zero::testing {

constexpr std::size_t kTags = static_cast<std::size_t>(program::MemTag::COUNT_);

/// Memory state after one executed op.
struct Sample {
  std::size_t stream = 0;
  int step = -1; ///< last STEP_BEGIN seen on compute (-1: init)
  bool is_alloc = false;
  bool is_free = false;
  std::string label; ///< the op's label; for a Free, the label of the buffer's Alloc
  std::array<double, kTags> by_tag{}; ///< live GPU bytes per tag
  double total = 0; ///< live GPU bytes
  std::array<double, kTags> host_by_tag{}; ///< live host bytes per tag

  [[nodiscard]] double tag(program::MemTag t) const { return by_tag[static_cast<std::size_t>(t)]; }
  [[nodiscard]] double host_tag(program::MemTag t) const { return host_by_tag[static_cast<std::size_t>(t)]; }
  /// lp_params + lp_grads + grad_partition + fp32_master + optimizer_states (the paper's "model states").
  [[nodiscard]] double model_states() const {
    using program::MemTag;
    return tag(MemTag::LP_PARAMS) + tag(MemTag::LP_GRADS) + tag(MemTag::GRAD_PARTITION) + tag(MemTag::FP32_MASTER) +
           tag(MemTag::OPTIMIZER_STATES);
  }
};

struct CollectiveStats {
  int calls = 0;
  double payload = 0; ///< Collective::bytes summed
};

struct WalkResult {
  bool deadlock = false;
  std::vector<Sample> timeline;
  /// [step][kind] -> stats; step -1 = init.
  std::map<int, std::map<program::CollectiveKind, CollectiveStats>> collectives;
  /// [step] -> the optimizer step's scalar all-reduces (Collectives in phase OPTIMIZER: the overflow flag and the
  /// grad norm, emit_scalar_allreduce), not in `collectives`.
  std::map<int, CollectiveStats> scalars;
  /// [step][dir] -> bytes of Copy ops.
  std::map<int, std::map<program::CopyDir, double>> copies;
  /// [step] -> seconds of CpuCompute ops.
  std::map<int, double> cpu_seconds;
  /// Buffers still live at the end, with their tags.
  std::vector<std::pair<program::BufferId, program::MemTag>> live_at_end;
  std::vector<std::string> stream_names;

  /// Peak over samples of `f(sample)` restricted to `step` (all steps when step == -2).
  template <class F>
  [[nodiscard]] double peak(F f, int step = -2) const {
    double m = 0;
    for (const auto& s : timeline)
      if (step == -2 || s.step == step)
        m = std::max(m, f(s));
    return m;
  }
  /// The first sample of `step` produced by an Alloc (is_free=false) or Free (is_free=true) labelled `label`.
  [[nodiscard]] const Sample* find(int step, const std::string& label, bool is_free) const {
    for (const auto& s : timeline)
      if (s.step == step && s.label == label && s.is_free == is_free && (s.is_alloc || s.is_free))
        return &s;
    return nullptr;
  }
  [[nodiscard]] CollectiveStats stats(int step, program::CollectiveKind k) const {
    auto it = collectives.find(step);
    if (it == collectives.end())
      return {};
    auto jt = it->second.find(k);
    return jt == it->second.end() ? CollectiveStats{} : jt->second;
  }
  [[nodiscard]] double copied(int step, program::CopyDir d) const {
    auto it = copies.find(step);
    if (it == copies.end())
      return 0;
    auto jt = it->second.find(d);
    return jt == it->second.end() ? 0 : jt->second;
  }
  /// Per-rank wire bytes of a step (nccl-tests bus factors: all-reduce 2(n-1)/n, all-gather and reduce-scatter
  /// (n-1)/n of the payload; a reduce's root sends nothing and each other rank its payload: (n-1)/n on average).
  [[nodiscard]] double wire_bytes(int step, int n) const {
    const double f = (n - 1.0) / n;
    using program::CollectiveKind;
    return 2 * f * stats(step, CollectiveKind::ALL_REDUCE).payload +
           f * stats(step, CollectiveKind::ALL_GATHER).payload +
           f * stats(step, CollectiveKind::REDUCE_SCATTER).payload + f * stats(step, CollectiveKind::REDUCE).payload;
  }
};

inline WalkResult walk(const program::StepProgram& p) {
  using namespace program;
  WalkResult r;
  std::vector<std::size_t> pc(p.streams.size(), 0);
  std::vector<bool> recorded(p.num_events, false);
  struct Buf {
    MemTag tag = MemTag::WORKING;
    double bytes = 0;
    bool gpu = true;
    bool live = false;
    std::string label;
  };
  std::vector<Buf> bufs(p.num_buffers);
  std::array<double, kTags> by_tag{};
  std::array<double, kTags> host_by_tag{};
  double total = 0;
  int step = -1;
  for (const auto& s : p.streams)
    r.stream_names.push_back(s.name);
  for (;;) {
    bool progress = false;
    bool all_done = true;
    for (std::size_t s = 0; s < p.streams.size(); ++s) {
      const auto& ops = p.streams[s].ops;
      if (pc[s] >= ops.size())
        continue;
      all_done = false;
      const Op& op = ops[pc[s]];
      Sample smp;
      smp.stream = s;
      if (const auto* w = std::get_if<Wait>(&op.body)) {
        if (!recorded[w->event])
          continue;
      } else if (const auto* rec = std::get_if<Record>(&op.body)) {
        recorded[rec->event] = true;
      } else if (const auto* m = std::get_if<Mark>(&op.body)) {
        if (m->kind == MarkKind::STEP_BEGIN && s == 0)
          step = m->step;
      } else if (const auto* a = std::get_if<Alloc>(&op.body)) {
        auto& b = bufs[a->buffer];
        b = Buf{a->tag, a->bytes.value(), a->device == Device::GPU, true, p.labels[op.label]};
        if (b.gpu) {
          by_tag[static_cast<std::size_t>(a->tag)] += b.bytes;
          total += b.bytes;
        } else {
          host_by_tag[static_cast<std::size_t>(a->tag)] += b.bytes;
        }
        smp.is_alloc = true;
        smp.label = b.label;
      } else if (const auto* f = std::get_if<Free>(&op.body)) {
        auto& b = bufs[f->buffer];
        // FreeKind::BLOCK: the tensor was already uncounted by its TENSOR free; allocated does not move.
        if (f->kind != program::FreeKind::BLOCK && b.live && b.gpu) {
          by_tag[static_cast<std::size_t>(b.tag)] -= b.bytes;
          total -= b.bytes;
        } else if (f->kind != program::FreeKind::BLOCK && b.live && !b.gpu) {
          host_by_tag[static_cast<std::size_t>(b.tag)] -= b.bytes;
        }
        if (f->kind != program::FreeKind::BLOCK)
          b.live = false;
        smp.is_free = true;
        smp.label = b.label;
      } else if (const auto* c = std::get_if<Collective>(&op.body)) {
        // The optimizer step's scalar all-reduces (overflow flag, grad norm) are kept apart from the gradient and
        // parameter traffic the ZeRO paper counts.
        auto& st = op.phase == Phase::OPTIMIZER ? r.scalars[step] : r.collectives[step][c->kind];
        ++st.calls;
        st.payload += c->bytes.value();
      } else if (const auto* cp = std::get_if<Copy>(&op.body)) {
        r.copies[step][cp->dir] += cp->bytes.value();
      } else if (const auto* cc = std::get_if<CpuCompute>(&op.body)) {
        r.cpu_seconds[step] += cc->duration.value();
      }
      if (smp.label.empty())
        smp.label = p.labels[op.label];
      smp.step = step;
      smp.by_tag = by_tag;
      smp.host_by_tag = host_by_tag;
      smp.total = total;
      r.timeline.push_back(std::move(smp));
      ++pc[s];
      progress = true;
    }
    if (all_done)
      break;
    if (!progress) {
      r.deadlock = true;
      break;
    }
  }
  for (BufferId b = 0; b < p.num_buffers; ++b)
    if (bufs[b].live)
      r.live_at_end.emplace_back(b, bufs[b].tag);
  return r;
}

} // namespace zerosim::zero::testing

namespace zerosim::zero::testing {

/// The k-th (0-based) Alloc sample of `step` labelled `label`, or nullptr.
inline const Sample* find_nth_alloc(const WalkResult& r, int step, const std::string& label, int k) {
  for (const auto& s : r.timeline)
    if (s.step == step && s.is_alloc && s.label == label && k-- == 0)
      return &s;
  return nullptr;
}

/// The k-th (0-based) sample of `step` of any op labelled `label` (a compute kernel, a collective, ...), or nullptr.
inline const Sample* find_nth_op(const WalkResult& r, int step, const std::string& label, int k) {
  for (const auto& s : r.timeline)
    if (s.step == step && s.label == label && k-- == 0)
      return &s;
  return nullptr;
}

/// The first sample of `step` of an op labelled `label`; throws std::runtime_error naming it when there is none
/// (for the tests that compare where ops fall in the timeline).
inline const Sample& op_at(const WalkResult& r, int step, const std::string& label) {
  const Sample* s = find_nth_op(r, step, label, 0);
  if (s == nullptr)
    throw std::runtime_error("no op '" + label + "' in step " + std::to_string(step));
  return *s;
}

/// The last sample of `step` (for step -1: the end of init).
inline const Sample* last_of(const WalkResult& r, int step) {
  const Sample* out = nullptr;
  for (const auto& s : r.timeline)
    if (s.step == step)
      out = &s;
  return out;
}

/// An op of a program: (stream, index into the stream's ops).
using OpRef = std::pair<std::size_t, std::size_t>;

/// Whether op `later` can start only after op `earlier` completed: a path from `earlier` to `later` along each
/// stream's order and from every Record to the Waits on its event (CUDA stream and event semantics, as the engine
/// runs them).
inline bool ordered_after(const program::StepProgram& p, OpRef earlier, OpRef later) {
  std::map<program::EventId, std::vector<OpRef>> waits;
  for (std::size_t s = 0; s < p.streams.size(); ++s)
    for (std::size_t i = 0; i < p.streams[s].ops.size(); ++i)
      if (const auto* w = std::get_if<program::Wait>(&p.streams[s].ops[i].body))
        waits[w->event].emplace_back(s, i);
  // reached[s]: the first op of stream s known to run after `earlier` (ops from there on were scanned).
  std::vector<std::size_t> reached;
  for (const auto& st : p.streams)
    reached.push_back(st.ops.size());
  std::vector<OpRef> work{{earlier.first, earlier.second + 1}};
  while (!work.empty()) {
    const auto [s, from] = work.back();
    work.pop_back();
    if (from >= reached[s])
      continue;
    for (std::size_t i = from; i < reached[s]; ++i)
      if (const auto* r = std::get_if<program::Record>(&p.streams[s].ops[i].body))
        for (const OpRef& w : waits[r->event])
          work.push_back(w);
    reached[s] = from;
  }
  return reached[later.first] <= later.second;
}

/// The index of the stream named `name`; throws when there is none.
inline std::size_t stream_index(const program::StepProgram& p, const std::string& name) {
  for (std::size_t s = 0; s < p.streams.size(); ++s)
    if (p.streams[s].name == name)
      return s;
  throw std::runtime_error("no stream " + name);
}

/// The last (or first) op of `step` on stream `stream` whose label contains `label`, and, if `collective`, that is a
/// Collective; throws when there is none.
inline OpRef find_op(const program::StepProgram& p, const std::string& stream, int step, const std::string& label,
                     bool last, bool collective = false) {
  const std::size_t s = stream_index(p, stream);
  std::optional<OpRef> found;
  for (std::size_t i = 0; i < p.streams[s].ops.size(); ++i) {
    const auto& op = p.streams[s].ops[i];
    if (p.step_of(static_cast<program::StreamId>(s), i) != step || p.labels[op.label].find(label) == std::string::npos)
      continue;
    if (collective && !std::holds_alternative<program::Collective>(op.body))
      continue;
    found = OpRef{s, i};
    if (!last)
      break;
  }
  if (!found)
    throw std::runtime_error("no op '" + label + "' of step " + std::to_string(step) + " on " + stream);
  return *found;
}

} // namespace zerosim::zero::testing
