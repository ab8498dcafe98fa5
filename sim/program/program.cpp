#include "sim/program/program.hpp"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace zerosim::program {

const char* to_string(MemTag t) {
  switch (t) {
  case MemTag::LP_PARAMS:
    return "lp_params";
  case MemTag::LP_GRADS:
    return "lp_grads";
  case MemTag::GRAD_PARTITION:
    return "grad_partition";
  case MemTag::FP32_MASTER:
    return "fp32_master";
  case MemTag::OPTIMIZER_STATES:
    return "optimizer_states";
  case MemTag::FP32_GRADS:
    return "fp32_grads";
  case MemTag::IPG_BUCKET:
    return "ipg_bucket";
  case MemTag::FLATTEN_TEMP:
    return "flatten_temp";
  case MemTag::GATHER_BUFFER:
    return "gather_buffer";
  case MemTag::ACTIVATIONS:
    return "activations";
  case MemTag::WORKING:
    return "working";
  case MemTag::COUNT_:
    break;
  }
  return "?";
}

const char* to_string(Phase p) {
  switch (p) {
  case Phase::INIT:
    return "init";
  case Phase::FORWARD:
    return "forward";
  case Phase::BACKWARD:
    return "backward";
  case Phase::GRAD_REDUCE:
    return "grad_reduce";
  case Phase::OPTIMIZER:
    return "optimizer";
  case Phase::PARAM_GATHER:
    return "param_gather";
  case Phase::OFFLOAD:
    return "offload";
  case Phase::OTHER:
    return "other";
  }
  return "?";
}

const char* to_string(CollectiveKind k) {
  switch (k) {
  case CollectiveKind::ALL_REDUCE:
    return "all_reduce";
  case CollectiveKind::REDUCE_SCATTER:
    return "reduce_scatter";
  case CollectiveKind::ALL_GATHER:
    return "all_gather";
  case CollectiveKind::REDUCE:
    return "reduce";
  }
  return "?";
}

const char* to_string(StreamKind k) {
  switch (k) {
  case StreamKind::COMPUTE:
    return "compute";
  case StreamKind::COMM:
    return "comm";
  case StreamKind::COPY:
    return "copy";
  case StreamKind::CPU:
    return "cpu";
  case StreamKind::HOST:
    return "host";
  }
  return "?";
}

ProgramBuilder::ProgramBuilder() {
  p_.labels.emplace_back("");
  label_index_.emplace("", 0);
}

StreamId ProgramBuilder::add_stream(std::string name, StreamKind kind) {
  p_.streams.push_back(Stream{std::move(name), kind, {}});
  return static_cast<StreamId>(p_.streams.size() - 1);
}

std::uint16_t ProgramBuilder::add_group(std::string name) {
  p_.groups.push_back(GroupDecl{std::move(name), GroupDecl::Kind::DATA_PARALLEL});
  return static_cast<std::uint16_t>(p_.groups.size() - 1);
}

EventId ProgramBuilder::new_event() { return p_.num_events++; }
BufferId ProgramBuilder::new_buffer() { return p_.num_buffers++; }

LabelId ProgramBuilder::label(const std::string& text) {
  const auto [it, inserted] = label_index_.try_emplace(text, static_cast<LabelId>(p_.labels.size()));
  if (inserted)
    p_.labels.push_back(text);
  return it->second;
}

void ProgramBuilder::push(StreamId s, OpBody body, Phase p, LabelId l) {
  p_.streams.at(s).ops.push_back(Op{std::move(body), p, l});
}

void ProgramBuilder::compute(StreamId s, Phase p, const std::string& l, Flops flops, Bytes bytes, Flops attention_flops,
                             double gemm_utilization, double attention_work) {
  push(s, Compute{flops, bytes, attention_flops, attention_work, gemm_utilization}, p, label(l));
}

void ProgramBuilder::collective(StreamId s, Phase p, const std::string& l, CollectiveKind kind, Bytes bytes,
                                std::uint16_t group) {
  if (group_seq_.size() <= group)
    group_seq_.resize(group + std::size_t{1}, 0);
  push(s, Collective{kind, bytes, group, group_seq_[group]++}, p, label(l));
}

void ProgramBuilder::copy(StreamId s, Phase p, const std::string& l, CopyDir dir, Bytes bytes, bool pageable) {
  push(s, Copy{dir, bytes, pageable}, p, label(l));
}

void ProgramBuilder::cpu(StreamId s, Phase p, const std::string& l, Seconds duration) {
  push(s, CpuCompute{duration}, p, label(l));
}

BufferId ProgramBuilder::alloc(StreamId s, Phase p, const std::string& l, MemTag tag, Bytes bytes, Device d,
                               bool pinned) {
  BufferId b = new_buffer();
  push(s, Alloc{b, tag, bytes, d, pinned}, p, label(l));
  return b;
}

BufferId ProgramBuilder::alloc_from(StreamId s, StreamId pool, Phase p, const std::string& l, MemTag tag, Bytes bytes) {
  BufferId b = new_buffer();
  Alloc a{b, tag, bytes, Device::GPU, false};
  a.pool = pool == s ? kOwnPool : pool;
  push(s, a, p, label(l));
  return b;
}

BufferId ProgramBuilder::alloc_persistent(StreamId s, Phase p, const std::string& l, MemTag tag, Bytes bytes, Device d,
                                          bool pinned) {
  BufferId b = alloc(s, p, l, tag, bytes, d, pinned);
  keep(b);
  return b;
}

void ProgramBuilder::free(StreamId s, Phase p, BufferId b) { push(s, Free{b}, p, 0); }
void ProgramBuilder::keep(BufferId b) {
  const auto at = std::lower_bound(p_.persistent.begin(), p_.persistent.end(), b);
  if (at == p_.persistent.end() || *at != b)
    p_.persistent.insert(at, b);
}
void ProgramBuilder::free_tensor(StreamId s, Phase p, BufferId b) { push(s, Free{b, FreeKind::TENSOR}, p, 0); }
void ProgramBuilder::free_block(StreamId s, Phase p, BufferId b) { push(s, Free{b, FreeKind::BLOCK}, p, 0); }

void ProgramBuilder::free_record_streamed(StreamId tensor_stream, StreamId block_stream, Phase p, BufferId b) {
  if (tensor_stream == block_stream) {
    free(tensor_stream, p, b);
    return;
  }
  free_tensor(tensor_stream, p, b);
  free_block(block_stream, p, b);
}

EventId ProgramBuilder::record(StreamId s) {
  EventId e = new_event();
  push(s, Record{e}, Phase::OTHER, 0);
  return e;
}

void ProgramBuilder::wait(StreamId s, EventId e) { push(s, Wait{e}, Phase::OTHER, 0); }

void ProgramBuilder::join(StreamId waiter, StreamId producer) {
  if (waiter == producer)
    return;
  wait(waiter, record(producer));
}

void ProgramBuilder::mark(StreamId s, MarkKind k, int step) {
  if (k == MarkKind::STEP_BEGIN && step >= 0) {
    const auto i = static_cast<std::size_t>(step);
    if (p_.step_begin_ops.size() <= i)
      p_.step_begin_ops.resize(i + 1);
    auto& counts = p_.step_begin_ops[i];
    counts.clear();
    for (const auto& st : p_.streams)
      counts.push_back(st.ops.size());
  }
  push(s, Mark{k, step}, Phase::OTHER, 0);
}

int StepProgram::step_of(StreamId s, std::size_t index) const {
  int step = -1;
  for (std::size_t k = 0; k < step_begin_ops.size(); ++k) {
    const auto& counts = step_begin_ops[k];
    if (counts.empty()) // no STEP_BEGIN for this step number
      continue;
    if ((s < counts.size() ? counts[s] : 0) <= index)
      step = static_cast<int>(k);
    else
      break;
  }
  return step;
}

int StepProgram::step_of(StreamId s, const Op& op) const {
  const std::vector<Op>& ops = streams[s].ops;
  // std::less: a total order on pointers, also for one outside the array.
  assert(!std::less<const Op*>{}(&op, ops.data()) && std::less<const Op*>{}(&op, ops.data() + ops.size()));
  return step_of(s, static_cast<std::size_t>(&op - ops.data()));
}

StepProgram ProgramBuilder::build(int steps) {
  p_.steps = steps;
  if (p_.groups.empty())
    add_group("dp");
  StepProgram out = std::move(p_);
  p_ = StepProgram{};
  group_seq_.clear();
  label_index_.clear();
  p_.labels.emplace_back("");
  label_index_.emplace("", 0);
  return out;
}

namespace {

/// "stream NAME op I ('LABEL')": where an op sits, for validate's messages.
std::string op_at(const StepProgram& p, std::size_t s, std::size_t i) {
  const LabelId l = p.streams[s].ops[i].label;
  return "stream " + p.streams[s].name + " op " + std::to_string(i) +
         (l < p.labels.size() && !p.labels[l].empty() ? " ('" + p.labels[l] + "')" : std::string());
}

/// The zero-time dry run of validate(): every stream runs its ops in order, a Wait only once its event is recorded
/// and a Collective only once it is its group's next issue number (the engine's rules: stream_actor's do_wait,
/// collective_runner's wait_turn). Every rank runs this same program, so a collective that is its turn here is
/// reached by every rank. Runs in O(ops): a blocked stream is parked on what it waits for and resumed by the Record
/// or the collective that frees it. Returns "" when every stream reaches its end, else the first stuck stream (in
/// stream order) and what it waits for. Needs the structural checks passed (events and issue numbers in range,
/// every issue number once).
std::string check_progress(const StepProgram& p, const std::vector<std::vector<std::uint32_t>>& seq_count) {
  const std::size_t n = p.streams.size();
  std::vector<std::size_t> pos(n, 0);
  std::vector<char> recorded(p.num_events, 0);
  std::vector<std::vector<std::size_t>> event_waiters(p.num_events);
  std::vector<std::uint32_t> next_seq(p.groups.size(), 0);
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::vector<std::vector<std::size_t>> seq_waiter(p.groups.size());
  for (std::size_t g = 0; g < p.groups.size(); ++g)
    seq_waiter[g].assign(seq_count[g].size(), kNone);
  // Where each event is recorded and each group's issue number sits, for the message.
  std::vector<std::pair<std::size_t, std::size_t>> record_at(p.num_events, {kNone, 0});
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> seq_at(p.groups.size());
  for (std::size_t g = 0; g < p.groups.size(); ++g)
    seq_at[g].assign(seq_count[g].size(), {kNone, 0});
  for (std::size_t s = 0; s < n; ++s)
    for (std::size_t i = 0; i < p.streams[s].ops.size(); ++i)
      if (const auto* r = std::get_if<Record>(&p.streams[s].ops[i].body))
        record_at[r->event] = {s, i};
      else if (const auto* c = std::get_if<Collective>(&p.streams[s].ops[i].body))
        seq_at[c->group][c->seq] = {s, i};
  std::vector<std::size_t> ready(n);
  for (std::size_t s = 0; s < n; ++s)
    ready[s] = n - 1 - s; // popped from the back: stream 0 first
  while (!ready.empty()) {
    const std::size_t s = ready.back();
    ready.pop_back();
    const auto& ops = p.streams[s].ops;
    for (; pos[s] < ops.size(); ++pos[s]) {
      const OpBody& body = ops[pos[s]].body;
      if (const auto* w = std::get_if<Wait>(&body); w && !recorded[w->event]) {
        event_waiters[w->event].push_back(s);
        break;
      }
      if (const auto* c = std::get_if<Collective>(&body)) {
        if (c->seq != next_seq[c->group]) {
          seq_waiter[c->group][c->seq] = s;
          break;
        }
        const std::uint32_t next = ++next_seq[c->group];
        if (next < seq_waiter[c->group].size() && seq_waiter[c->group][next] != kNone)
          ready.push_back(seq_waiter[c->group][next]);
      } else if (const auto* r = std::get_if<Record>(&body)) {
        recorded[r->event] = 1;
        for (const std::size_t waiter : event_waiters[r->event])
          ready.push_back(waiter);
        event_waiters[r->event].clear();
      }
    }
  }
  for (std::size_t s = 0; s < n; ++s) {
    if (pos[s] == p.streams[s].ops.size())
      continue;
    const OpBody& body = p.streams[s].ops[pos[s]].body;
    if (const auto* w = std::get_if<Wait>(&body)) {
      const auto [rs, ri] = record_at[w->event];
      return op_at(p, s, pos[s]) + ": waits on event " + std::to_string(w->event) + ", which " + op_at(p, rs, ri) +
             " records only after it (a Wait that its Record cannot precede: the streams would deadlock)";
    }
    const auto& c = std::get<Collective>(body);
    const auto [cs, ci] = seq_at[c.group][next_seq[c.group]];
    return op_at(p, s, pos[s]) + ": collective number " + std::to_string(c.seq) + " of group " +
           p.groups[c.group].name + " waits for number " + std::to_string(next_seq[c.group]) + " at " +
           op_at(p, cs, ci) + ", which never runs (the streams would deadlock)";
  }
  return {};
}

} // namespace

std::string validate(const StepProgram& p) {
  std::vector<int> recorded(p.num_events, 0);
  std::vector<int> allocated(p.num_buffers, 0);
  // Per buffer: bit 1 = its tensor was freed, bit 2 = its block was (an ordinary Free sets both).
  std::vector<int> freed(p.num_buffers, 0);
  std::vector<Device> device(p.num_buffers, Device::GPU);
  for (const auto& s : p.streams)
    for (const auto& op : s.ops)
      if (const auto* a = std::get_if<Alloc>(&op.body); a && a->buffer < p.num_buffers)
        device[a->buffer] = a->device;
  // Per group: how many collectives carry each issue number; per (group, stream): the last number seen + 1.
  std::vector<std::vector<std::uint32_t>> seq_count(p.groups.size());
  for (const auto& s : p.streams) {
    std::vector<std::uint32_t> next_on_stream(p.groups.size(), 0);
    for (const auto& op : s.ops) {
      if (const auto* r = std::get_if<Record>(&op.body)) {
        if (r->event >= p.num_events)
          return "stream " + s.name + ": event " + std::to_string(r->event) + " out of range";
        if (++recorded[r->event] > 1)
          return "event " + std::to_string(r->event) + " recorded twice";
      } else if (const auto* a = std::get_if<Alloc>(&op.body)) {
        if (a->buffer >= p.num_buffers)
          return "stream " + s.name + ": buffer out of range";
        if (++allocated[a->buffer] > 1)
          return "buffer " + std::to_string(a->buffer) + " allocated twice";
        if (a->pinned && a->device != Device::HOST)
          return "buffer " + std::to_string(a->buffer) + " is pinned but not a host buffer";
        if (a->pool != kOwnPool && (a->pool >= p.streams.size() || a->device != Device::GPU))
          return "buffer " + std::to_string(a->buffer) + ": allocated from stream " + std::to_string(a->pool) +
                 ", which is not a GPU buffer's existing stream";
      } else if (const auto* f = std::get_if<Free>(&op.body)) {
        if (f->buffer >= p.num_buffers)
          return "stream " + s.name + ": freed buffer out of range";
        const int parts = f->kind == FreeKind::TENSOR ? 1 : f->kind == FreeKind::BLOCK ? 2 : 3;
        if ((freed[f->buffer] & parts) != 0)
          return "buffer " + std::to_string(f->buffer) + " freed twice";
        if (f->kind != FreeKind::TENSOR_AND_BLOCK && device[f->buffer] != Device::GPU)
          return "buffer " + std::to_string(f->buffer) + ": a host buffer freed in two parts";
        freed[f->buffer] |= parts;
      } else if (const auto* cp = std::get_if<Copy>(&op.body)) {
        if (cp->pageable && cp->dir != CopyDir::H2D && cp->dir != CopyDir::D2H)
          return "stream " + s.name + ": a pageable copy that is neither H2D nor D2H";
      } else if (const auto* k = std::get_if<Compute>(&op.body)) {
        if (!(k->gemm_utilization > 0 && k->gemm_utilization <= 1))
          return "stream " + s.name + ": compute op with gemm_utilization " + std::to_string(k->gemm_utilization) +
                 " outside (0, 1]";
        if (!(k->attention_work > 0))
          return "stream " + s.name + ": compute op with attention_work " + std::to_string(k->attention_work) +
                 " not > 0";
      } else if (const auto* c = std::get_if<Collective>(&op.body)) {
        if (c->group >= p.groups.size())
          return "stream " + s.name + ": collective on unknown group " + std::to_string(c->group);
        if (c->seq < next_on_stream[c->group])
          return "stream " + s.name + ": collective number " + std::to_string(c->seq) + " of group " +
                 p.groups[c->group].name + " after a later one";
        next_on_stream[c->group] = c->seq + 1;
        auto& count = seq_count[c->group];
        if (count.size() <= c->seq)
          count.resize(c->seq + std::size_t{1}, 0);
        if (++count[c->seq] > 1)
          return "group " + p.groups[c->group].name + ": collective number " + std::to_string(c->seq) + " twice";
      }
    }
  }
  for (const auto& s : p.streams)
    for (const auto& op : s.ops)
      if (const auto* w = std::get_if<Wait>(&op.body))
        if (w->event >= p.num_events || recorded[w->event] == 0)
          return "stream " + s.name + ": waits on event " + std::to_string(w->event) + " that is never recorded";
  for (std::size_t g = 0; g < seq_count.size(); ++g)
    for (std::size_t k = 0; k < seq_count[g].size(); ++k)
      if (seq_count[g][k] == 0)
        return "group " + p.groups[g].name + ": no collective number " + std::to_string(k);
  for (BufferId b = 0; b < p.num_buffers; ++b)
    if (freed[b] && !allocated[b])
      return "buffer " + std::to_string(b) + " freed but never allocated";
    else if (freed[b] == 1 || freed[b] == 2)
      return "buffer " + std::to_string(b) +
             (freed[b] == 1 ? ": tensor freed, block never" : ": block freed, tensor never");
  return check_progress(p, seq_count);
}

std::string check_conservation(const StepProgram& p) {
  struct Seen {
    const Alloc* alloc = nullptr;
    LabelId label = 0;
    int freed = 0; // bit 1 = tensor, bit 2 = block
  };
  std::vector<Seen> seen(p.num_buffers);
  for (const auto& s : p.streams)
    for (const auto& op : s.ops)
      if (const auto* a = std::get_if<Alloc>(&op.body); a && a->buffer < p.num_buffers)
        seen[a->buffer] = Seen{a, op.label, seen[a->buffer].freed};
      else if (const auto* f = std::get_if<Free>(&op.body); f && f->buffer < p.num_buffers)
        seen[f->buffer].freed |= f->kind == FreeKind::TENSOR ? 1 : f->kind == FreeKind::BLOCK ? 2 : 3;
  const auto name = [&p](const Seen& x) {
    const std::string l = x.label < p.labels.size() ? p.labels[x.label] : std::string();
    return "'" + l + "' (" + to_string(x.alloc->tag) + ", " + (x.alloc->device == Device::GPU ? "GPU" : "host") + ")";
  };
  for (BufferId b = 0; b < p.num_buffers; ++b) {
    const Seen& x = seen[b];
    if (x.alloc == nullptr)
      continue;
    const bool kept = std::binary_search(p.persistent.begin(), p.persistent.end(), b);
    if (kept && x.freed != 0)
      return "persistent buffer " + name(x) + " is freed";
    if (!kept && x.freed != 3)
      return "buffer " + name(x) + " is never freed and not declared persistent";
  }
  return {};
}

} // namespace zerosim::program
