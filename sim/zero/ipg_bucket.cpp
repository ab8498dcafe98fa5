#include "sim/zero/ipg_bucket.hpp"

#include "sim/error.hpp"
#include "sim/zero/offload_cpu.hpp"

#include <algorithm>
#include <optional>
#include <string>

namespace zerosim::zero {

using program::BufferId;
using program::CollectiveKind;
using program::MemTag;
using program::Phase;

Elements FlatPartition::own(Elements offset, Elements numel) const {
  const Elements lo = std::max<Elements>(offset, 0);
  const Elements hi = std::min<Elements>(offset + numel, partition);
  return hi > lo ? hi - lo : 0;
}

FlatPartition make_flat_partition(const GeneratorContext& ctx) {
  FlatPartition fp;
  const Elements n = ctx.n();
  const Elements align = 2 * n; // nccl_start_alignment_factor (2) x world size
  fp.padded_total = (ctx.trainable_params() + align - 1) / align * align;
  fp.partition = fp.padded_total / n;
  // grads_in_partition holds every param touching the partition in full (boundary params count fully, §3.4).
  std::vector<Elements> touching(static_cast<std::size_t>(n), 0);
  for (const auto& p : ctx.params()) {
    if (!p.trainable || p.numel == 0)
      continue;
    const Elements first = p.flat_offset / fp.partition;
    const Elements last = (p.flat_offset + p.numel - 1) / fp.partition;
    for (Elements r = first; r <= last && r < n; ++r)
      touching[static_cast<std::size_t>(r)] += p.numel;
  }
  fp.grads_in_partition = *std::max_element(touching.begin(), touching.end());
  return fp;
}

bool emit_lp_flatten(GeneratorContext& ctx, const FlatPartition& part) {
  auto& b = ctx.b();
  const auto c = ctx.compute();
  const Bytes module = ctx.lp(ctx.total_params());
  const Bytes flat = ctx.lp(part.padded_total + (ctx.total_params() - ctx.trainable_params()));
  // DeepSpeed >= 0.19.0 flattens on the GPU when a second copy fits (flatten_on_accelerator); before, always on the
  // CPU (move_to_cpu / param.cpu_data, empty_cache, flatten, move the flat buffer back).
  const bool on_gpu =
      !ctx.cfg().deepspeed_before(0, 19, 0) && ctx.in().gpu_memory_for_pytorch - module.value() >= flat.value();
  b.alloc_persistent(c, Phase::INIT, "lp params (flat)", MemTag::LP_PARAMS, flat);
  if (on_gpu) {
    BufferId tmp = b.alloc(c, Phase::INIT, "flatten lp params", MemTag::FLATTEN_TEMP, ctx.lp(ctx.trainable_params()));
    b.free(c, Phase::INIT, tmp);
  }
  return on_gpu;
}

IpgBucket::IpgBucket(GeneratorContext& ctx, program::StreamId reduce, const FlatPartition& part,
                     std::optional<OffloadGrads> offload)
    : ctx_(ctx),
      reduce_(reduce),
      part_(part),
      overlap_(ctx.cfg().overlap_comm_effective()),
      // contiguous_gradients is forced on with optimizer offload (`contiguous_gradients or cpu_offload`, §3.1).
      contiguous_(ctx.cfg().contiguous_gradients || offload.has_value()),
      cap_(ctx.cfg().reduce_bucket_size),
      offload_(offload) {}

void IpgBucket::ensure_allocated() {
  // setup_buckets (stage_1_and_2.py): one B_r-element buffer of the model dtype, a second one with overlap_comm.
  if (!contiguous_ || !buffers_.empty())
    return;
  const int count = overlap_ ? 2 : 1;
  for (int i = 0; i < count; ++i)
    buffers_.push_back(ctx_.b().alloc(ctx_.compute(), Phase::BACKWARD, "ipg bucket " + std::to_string(i),
                                      MemTag::IPG_BUCKET, ctx_.lp(cap_)));
}

void IpgBucket::add(std::size_t param, BufferId grad, int micro) {
  micro_ = micro;
  ensure_allocated();
  const auto& p = ctx_.params()[param];
  auto& b = ctx_.b();
  if (p.numel > cap_) {
    // A param larger than the bucket: reduce_independent_p_g_buckets_and_remove_grads first reduces the pending
    // bucket (elements + numel > reduce_bucket_size), then, with contiguous_gradients, records the param as
    // extra_large_param_to_reduce instead of copying it into the bucket, and counts its numel as the bucket's
    // elements. Nothing reduces it yet: the next param's hook finds the bucket over-full and calls reduce_ipg_grads,
    // which averages that param's own grad (average_tensor(param.grad)); the epilogue does it for the backward's last
    // param (stage2.py l.715-730 and 1060-1066 @v0.4.0; stage_1_and_2.py l.809-830 and 1199-1205 @v0.6.0,
    // l.1172-1203 and 1664-1686 @v0.19.5). Without contiguous_gradients the param's grad is the bucket's one entry
    // and the next flush's buffered_reduce_fallback reduces it, in every release (l.1207-1210 @v0.6.0).
    // Before v0.4.0 there is no extra_large_param_to_reduce: contiguous_gradients narrows the reduce_bucket_size
    // buffer to the param's numel past its end, a RuntimeError (stage2.py l.630-635 @v0.3.15).
    if (contiguous_ && ctx_.cfg().deepspeed_before(0, 4, 0))
      throw Error("zero.reduce_bucket_size: parameter " + p.name + " (" + std::to_string(p.numel) +
                  " elements) is larger than the IPG bucket (" + std::to_string(cap_) +
                  " elements), which fails with contiguous_gradients in DeepSpeed before 0.4.0 (stage2.py narrows "
                  "the bucket past its end): set a larger reduce_bucket_size, contiguous_gradients false, or "
                  "deepspeed_version 0.4.0 or later");
    flush();
    pending_.push_back({param, grad});
    pending_elements_ = p.numel;
    extra_large_ = true;
    return;
  }
  if (pending_elements_ + p.numel > cap_)
    flush();
  if (contiguous_) {
    // Copy into the bucket slice, then param.grad is re-pointed at the bucket: the autograd tensor is released.
    ctx_.mem_kernel(ctx_.compute(), Phase::BACKWARD, "copy grad to bucket " + p.name, ctx_.lp(p.numel) * 2.0);
    b.free(ctx_.compute(), Phase::BACKWARD, grad);
  }
  pending_.push_back({param, grad});
  pending_elements_ += p.numel;
}

void IpgBucket::reduce_extra_large() {
  const Pending e = pending_.front();
  pending_.clear();
  pending_elements_ = 0;
  extra_large_ = false;
  const auto& p = ctx_.params()[e.param];
  order_streams();
  reduce_chunks({{e.param, p.numel}}, p.numel, "allreduce " + p.name);
  // The grad stays param.grad: it is never copied into the bucket. After its reduction (reduce_ipg_grads l.1706-1727
  // @v0.19.5, l.1522-1543 @v0.18.3) stage 2 drops it (clear_grad_attribute) or copy_grads_in_partition re-points it
  // into grads_in_partition when the param touches this rank's partition; stage 1 (`else: # zero stage 1`) does that
  // copy too but never clears a param outside the partition, so that grad lives until the epilogue's
  // zero_grad(set_to_none=True) (l.888 @v0.18.3; _clear_param_grad_only, l.945 @v0.19.5), after its synchronize.
  // (Stage 1 goes through this code from DeepSpeed 0.5.9, when stage1.py merged into stage_1_and_2.py; zerosim's
  // stage 1 follows it for every release.) Called with contiguous_gradients only (flush).
  if (ctx_.cfg().stage == 1 && part_.own(p.flat_offset, p.numel) == 0)
    kept_.push_back(e.grad);
  else
    ctx_.b().free(reduce_, Phase::GRAD_REDUCE, e.grad); // reduced and no longer needed; own slice already copied
}

void IpgBucket::order_streams() {
  if (!overlap_)
    return;
  auto& b = ctx_.b();
  // average_tensor with overlap_comm: the reduction stream waits for the grads produced so far
  // (`reduction_stream.wait_stream(current_stream())`, from v0.8.0; see below for earlier). From v0.14.3 the compute
  // stream also waits for the reductions already queued (`current_stream().wait_stream(reduction_stream)`, PR #5606,
  // stage_1_and_2.py l.1363 @v0.19.6): at most one bucket reduction overlaps compute, and compute stalls at a bucket
  // boundary until the previous one has finished (§3.4 "Streams"). Before, nothing but the epilogue's synchronize
  // made compute wait (average_tensor l.894-897 @v0.9.0), so every bucket's reduction could queue up behind the
  // backward (the ipg_buffer race PR #5606 fixed).
  // Before v0.8.0 average_tensor (the contiguous_gradients path, offload included) begins with torch.cuda.synchronize()
  // instead (stage2.py l.677-680 @v0.3.15, stage_1_and_2.py l.881-884 @v0.6.0, l.896-899 @v0.7.7; PR #2500 "Remove
  // unnecessary device synchronization for stage 2" put the wait_stream there in v0.8.0, l.937-940): per bucket the
  // host waits for the backward so far and every earlier reduction, so compute never runs more than one bucket's
  // reduction ahead, and the GPU idles while the host issues again. Without contiguous_gradients the bucket goes to
  // buffered_reduce_fallback, whose allreduce_and_copy synchronizes in every release (reduce_collectives).
  if (contiguous_ && ctx_.cfg().deepspeed_before(0, 8, 0)) {
    device_synchronize();
    return;
  }
  if (!ctx_.cfg().deepspeed_before(0, 14, 3))
    b.join(ctx_.compute(), reduce_);
  b.join(reduce_, ctx_.compute());
}

void IpgBucket::device_synchronize() {
  auto& b = ctx_.b();
  // allreduce_and_copy with overlap_comm: get_accelerator().synchronize() (CUDA does not resolve data dependencies):
  // the host waits for all the device's work, so everything queued before -- the backward so far and the earlier
  // reductions -- runs before anything issued after it (zero_semantics.md §3.4). Without a host model the GPU
  // order alone: compute and the reduction stream wait for each other.
  b.join(ctx_.compute(), reduce_);
  b.join(reduce_, ctx_.compute());
  ctx_.device_sync();
  ctx_.host_issue(reduce_);
}

void IpgBucket::flush() {
  if (pending_.empty())
    return;
  if (extra_large_ && contiguous_) {
    reduce_extra_large();
    return;
  }
  extra_large_ = false; // without contiguous_gradients the extra-large param is an ordinary one-grad bucket
  order_streams();
  std::vector<std::pair<std::size_t, Elements>> slices;
  for (const auto& e : pending_)
    slices.emplace_back(e.param, ctx_.params()[e.param].numel);
  reduce_chunks(slices, pending_elements_, "allreduce bucket " + std::to_string(flushes_));
  if (keeps_grads()) // without contiguous_gradients: each grad is kept or freed by keep()
    for (const auto& e : pending_)
      keep(e.param, e.grad);
  pending_.clear();
  pending_elements_ = 0;
  ++flushes_;
}

void IpgBucket::offload_boundary_checks(Elements numel, Elements own) {
  auto& b = ctx_.b();
  // copy_grads_in_partition, cpu_offload branch, at the boundary, before the fp32 copy (stage_1_and_2.py, v0.9.0 to
  // v0.19.5): set_norm_for_param_grad_in_gpu takes the L2 norm of the param's in-partition slice in fp64
  // (`.double().norm(2)`: an 8 B/element temporary written from the lp grad, then read).
  BufferId norm =
      b.alloc(reduce_, Phase::GRAD_REDUCE, "fp64 grad slice (norm)", MemTag::FLATTEN_TEMP, bytes_of(own, 8.0));
  ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, "fp64 norm of grad slice", ctx_.lp(own) + bytes_of(own, 16.0));
  b.free(reduce_, Phase::GRAD_REDUCE, norm);
  // update_overflow_tracker_for_param_grad (update_offload_overflow_tracker_for_param_grad from v0.17) runs
  // _has_inf_or_nan on the param's WHOLE gradient and branches on the answer in Python, so the host waits for the
  // reduction stream once per param. Until v0.13.3 `float(x.float().sum())`: an fp32 copy (4 B/element, written and
  // read). From v0.13.3 (PR #5115) `x.float()`, isnan, isinf, logical_or, `.float()`, max: the fp32 copy, three
  // 1 B/element masks and a second fp32 tensor live together until the function returns (11 B/element), and the
  // kernels move lp + 4 + 4+1 + 4+1 + 3 + 1+4 + 4 = lp + 26 B per element.
  // This check runs whatever the precision (copy_grads_in_partition does not read check_grad_overflow); in fp32
  // x.float() is x (inf_nan_check_cost).
  const bool masks = !ctx_.cfg().deepspeed_before(0, 13, 3);
  const InfNanCheckCost cost = inf_nan_check_cost(ctx_, numel, masks);
  std::optional<BufferId> check;
  if (cost.temporaries.value() > 0)
    check = b.alloc(reduce_, Phase::GRAD_REDUCE, "overflow check temporaries", MemTag::FLATTEN_TEMP, cost.temporaries);
  ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, "overflow check of the param grad", cost.traffic);
  if (check)
    b.free(reduce_, Phase::GRAD_REDUCE, *check);
  ctx_.host_read(reduce_);
}

void IpgBucket::offload_copy_back(const std::vector<std::pair<std::size_t, Elements>>& slices,
                                  const std::vector<Elements>& own_slices) {
  auto& b = ctx_.b();
  using program::CopyDir;
  // reduce_ipg_grads (stage_1_and_2.py): after the bucket is averaged, copy_grads_in_partition runs per param inside
  // `with stream(reduction_stream if overlap_comm else current_stream())`: every copy below is queued on the
  // reduction stream (reduce_), so without overlap_comm it sits on the compute stream ahead of the backward kernels
  // queued after it (zero_semantics.md §3.4 "ZeRO-Offload path").
  // Host accumulation (stage 2, GA > 1; async_accumulate_grad_in_cpu_via_gpu): from the 2nd micro-step on the grads
  // accumulated on the CPU come back H2D into temp_grad_buffer_for_gpu_offload and are added on the GPU (2 B per
  // element). Which micro-steps send the lp grad back D2H (2 B per element) follows the release: before v0.15.2
  // every one but the boundary ("at the boundary we will send 32bit directly"); v0.15.2 to v0.18.x only the first
  // (PR #6550: `else: copy_gradients_to_cpu()`); from v0.19.0 every one (PR #7967).
  // Every copy is non_blocking; into or out of a pageable host buffer (pin_memory false) it still blocks the host
  // (GeneratorContext::host_copy).
  const bool pageable = !stage12_pinning(ctx_.cfg()).buffers;
  const bool h2d_accumulated = offload_->accumulate_on_cpu && micro_ > 0;
  const auto& cfg = ctx_.cfg();
  const bool d2h_accumulated = offload_->accumulate_on_cpu && (cfg.deepspeed_before(0, 15, 2)   ? !boundary_
                                                               : cfg.deepspeed_before(0, 19, 0) ? micro_ == 0
                                                                                                : true);
  for (std::size_t k = 0; k < own_slices.size(); ++k) {
    const Elements own = own_slices[k];
    if (own <= 0)
      continue;
    if (h2d_accumulated) {
      ctx_.host_copy(reduce_, Phase::OFFLOAD, "h2d accumulated grads", CopyDir::H2D, ctx_.lp(own), pageable);
      ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, "add accumulated grads", ctx_.lp(own) * 3.0);
    }
    if (d2h_accumulated)
      ctx_.host_copy(reduce_, Phase::OFFLOAD, "d2h lp grads", CopyDir::D2H, ctx_.lp(own), pageable);
    if (!boundary_)
      continue;
    offload_boundary_checks(slices[k].second, own);
    // Boundary (async_inplace_copy_grad_to_fp32_buffer_from_gpu): the param's in-partition slice is cast to fp32
    // into a new temporary (`src_tensor.to(fp32)`), copied non_blocking into the fp32 grad partition (4 B
    // per element D2H), and the temporary is dropped: the caching allocator hands the same block to the next
    // param's cast on this stream, so at most one param's fp32 slice is live at a time.
    // In fp32 `src_tensor.float()` is the slice itself: no temporary, no cast, the D2H copy reads the grad.
    if (ctx_.wl().training.precision == scenario::Precision::FP32) {
      ctx_.host_copy(reduce_, Phase::OFFLOAD, "d2h fp32 grads", CopyDir::D2H, GeneratorContext::fp32(own), pageable);
      continue;
    }
    BufferId t =
        b.alloc(reduce_, Phase::GRAD_REDUCE, "fp32 grad slice", MemTag::FLATTEN_TEMP, GeneratorContext::fp32(own));
    ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, "cast grad slice to fp32", ctx_.lp(own) + GeneratorContext::fp32(own));
    ctx_.host_copy(reduce_, Phase::OFFLOAD, "d2h fp32 grads", CopyDir::D2H, GeneratorContext::fp32(own), pageable);
    b.free(reduce_, Phase::GRAD_REDUCE, t);
  }
}

void IpgBucket::copy_back(Elements own) {
  if (own <= 0) // also: the offload path copies per param after the reduction (offload_copy_back)
    return;
  auto& b = ctx_.b();
  // copy_grads_in_partition: grads_in_partition is allocated at the first copy; stage 2 micro-steps > 0 write a
  // fresh buffer that is added into the first one at the epilogue (§3.4 "Stage 2 gradient lifetime").
  // (Stage 1 reduces once, at the boundary micro-step: a single buffer.)
  const bool later_micro = partition_ && micro_ != partition_micro_;
  std::optional<BufferId>& target = later_micro ? extra_partition_ : partition_;
  if (!target) {
    target = b.alloc(reduce_, Phase::GRAD_REDUCE, "grads_in_partition", MemTag::GRAD_PARTITION,
                     ctx_.lp(part_.grads_in_partition));
    if (!later_micro)
      partition_micro_ = micro_;
  }
  ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, "copy grads in partition", ctx_.lp(own) * 2.0);
}

void IpgBucket::reduce_chunks(const std::vector<std::pair<std::size_t, Elements>>& slices, Elements elements,
                              const std::string& label) {
  Elements own = 0;
  std::vector<Elements> own_slices;
  // Elements of the bucket each rank's partition holds (rank r: flat [r P, (r + 1) P)): the per-owner dist.reduce
  // calls of average_tensor without use_multi_rank_bucket_allreduce.
  std::vector<Elements> owners(static_cast<std::size_t>(ctx_.n()), 0);
  for (const auto& [param, numel] : slices) {
    const Elements offset = ctx_.params()[param].flat_offset;
    own_slices.push_back(part_.own(offset, numel));
    own += own_slices.back();
    for (Elements at = offset; at < offset + numel && part_.partition > 0;) {
      const Elements r = std::min<Elements>(at / part_.partition, ctx_.n() - 1);
      const Elements end = std::min(offset + numel, r == ctx_.n() - 1 ? offset + numel : (r + 1) * part_.partition);
      owners[static_cast<std::size_t>(r)] += end - at;
      at = end;
    }
  }
  if (offload_) {
    // ZeRO-Offload: the whole bucket is averaged first, then copy_grads_in_partition moves each param's slice to
    // the host (reduce_ipg_grads). No grads_in_partition buffer on the GPU.
    reduce_collectives(elements, label, nullptr, owners);
    offload_copy_back(slices, own_slices);
    return;
  }
  reduce_collectives(elements, label, &own, owners);
}

void IpgBucket::reduce_collectives(Elements elements, const std::string& label, const Elements* own_in,
                                   const std::vector<Elements>& owners) {
  auto& b = ctx_.b();
  const auto& cfg = ctx_.cfg();
  const Elements own = own_in ? *own_in : 0;
  // The collectives run in zero.communication_data_type (ctx_.comm: the model's lp dtype unless set), and each
  // chunk is cast to it first when it differs (GeneratorContext::cast_for_comm, on the reduction stream).
  if (!contiguous_) {
    // contiguous_gradients=False: reduce_ipg_grads takes buffered_reduce_fallback whatever reduce_scatter and
    // use_multi_rank_bucket_allreduce say: the bucket's grads are flattened into a new tensor, all-reduced, and
    // copied back into each param.grad (allreduce_and_copy; stage_1_and_2.py @v0.9.0 and @v0.19.5).
    if (overlap_) // allreduce_and_copy: a device synchronize first (l.1353-1354 @v0.9.0, l.1884-1886 @v0.19.6)
      device_synchronize();
    BufferId tmp = alloc_input("flatten " + label, ctx_.lp(elements));
    ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, "flatten " + label, ctx_.lp(elements) * 2.0);
    const auto cast = ctx_.cast_for_comm(reduce_, elements, label);
    // allreduce_bucket (divide defaults to True): div_(N_d) of the tensor it reduces, before the all-reduce, at any
    // N_d (stage2.py l.1072 @v0.3.15, stage_1_and_2.py l.1330 @v0.9.0, l.1826-1827 @v0.19.5).
    emit_grad_average(ctx_, reduce_, ctx_.comm(elements), label);
    b.collective(reduce_, Phase::GRAD_REDUCE, label, CollectiveKind::ALL_REDUCE, ctx_.comm(elements), ctx_.dp_group());
    ctx_.uncast_from_comm(reduce_, cast, elements, label);
    ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, "unflatten " + label, ctx_.lp(elements) * 2.0);
    release_input(tmp);
    // No copy into grads_in_partition: the in-partition grads themselves are kept (keep()).
    return;
  }
  if (!cfg.reduce_scatter) {
    // reduce_scatter=False: gradient_reduction_w_predivide all-reduces the bucket in place (or its cast copy).
    const auto cast = ctx_.cast_for_comm(reduce_, elements, label);
    b.collective(reduce_, Phase::GRAD_REDUCE, label, CollectiveKind::ALL_REDUCE, ctx_.comm(elements), ctx_.dp_group());
    // postscale_gradients (default) with gradient_predivide_factor 1.0: mul_(1 / N_d) of the reduced tensor after
    // the all-reduce, skipped when the factor equals N_d (N_d == 1) (stage2.py l.660-667 @v0.3.15,
    // stage_1_and_2.py l.1246-1254 @v0.19.5).
    if (ctx_.n() > 1)
      emit_grad_average(ctx_, reduce_, ctx_.comm(elements), label);
    ctx_.uncast_from_comm(reduce_, cast, elements, label);
    copy_back(own);
    return;
  }
  // reduce_scatter (default): average_tensor divides the whole bucket in place, in the model's dtype, before any
  // cast or collective and whatever the path below, at any N_d; the reductions then run with divide=False
  // (stage2.py l.727 @v0.3.15, stage_1_and_2.py l.966 @v0.9.0, l.1409 and 1432/1440 @v0.19.5; MoE buckets, divided
  // per param, are not modelled).
  emit_grad_average(ctx_, reduce_, ctx_.lp(elements), label);
  if (!cfg.use_multi_rank_bucket_allreduce) {
    // average_tensor without use_multi_rank_bucket_allreduce: the bucket's slices go to their owners with dist.reduce,
    // one call per owning rank, issued back to back on one communicator, so they run one after the other: the bucket
    // takes about E / bw, where a reduce-scatter would take (N-1)/N x E / bw (ring.hpp: a reduce is a chain whose
    // every link carries its slice). `owners` is empty for a bucket without a param list: then the bucket is split
    // evenly over the N ranks.
    std::vector<Elements> shares = owners;
    if (shares.empty())
      for (Elements r = 0, left = elements; r < ctx_.n(); ++r) {
        shares.push_back(std::min(left, (elements + ctx_.n() - 1) / ctx_.n()));
        left -= shares.back();
      }
    if (cfg.deepspeed_before(0, 12, 4)) {
      // Before 0.12.4 (average_tensor l.894-987 @v0.9.0): async reduces straight on narrow()s of the bucket, no
      // flatten; with a differing communication_data_type the whole bucket is cast once before them and copied back
      // once after (`tensor.to(...)`, `tensor.copy_(tensor_to_reduce)`).
      const auto cast = ctx_.cast_for_comm(reduce_, elements, label);
      for (std::size_t r = 0; r < shares.size(); ++r)
        if (shares[r] > 0)
          b.collective(reduce_, Phase::GRAD_REDUCE, label + " to rank " + std::to_string(r), CollectiveKind::REDUCE,
                       ctx_.comm(shares[r]), ctx_.dp_group());
      ctx_.uncast_from_comm(reduce_, cast, elements, label);
      copy_back(own);
      return;
    }
    // From 0.12.4 (PR #4695; average_tensor l.1438-1469 @v0.19.6): the slices are grouped per owner and each owner's
    // group goes through allreduce_no_retain -> allreduce_and_copy(rank=owner): with overlap_comm a device
    // synchronize first (l.1884-1886), then allreduce_bucket flattens the group into a new tensor (cast to
    // communication_data_type if it differs), reduces it to the owner, and only the owner copies it back
    // (l.1863-1865, 1904-1906). One owner's share is live at a time. This program is rank 0's: it copies back
    // shares[0].
    for (std::size_t r = 0; r < shares.size(); ++r) {
      if (shares[r] <= 0)
        continue;
      const std::string l = label + " to rank " + std::to_string(r);
      if (overlap_)
        device_synchronize();
      BufferId tmp = alloc_input("flatten " + l, ctx_.lp(shares[r]));
      ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, "flatten " + l, ctx_.lp(shares[r]) * 2.0);
      const auto cast = ctx_.cast_for_comm(reduce_, shares[r], l);
      b.collective(reduce_, Phase::GRAD_REDUCE, l, CollectiveKind::REDUCE, ctx_.comm(shares[r]), ctx_.dp_group());
      if (r == 0) {
        ctx_.uncast_from_comm(reduce_, cast, shares[r], l);
        ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, "unflatten " + l, ctx_.lp(shares[r]) * 2.0);
      } else if (cast) {
        b.free(reduce_, Phase::GRAD_REDUCE, *cast);
      }
      release_input(tmp);
    }
    copy_back(own);
    return;
  }
  // Defaults (average_tensor with use_multi_rank_bucket_allreduce=True): all slices, whatever their owner, are
  // chunked into <= B_r-element pieces, each flattened into a new temporary and all-reduced over the whole DP
  // group; then each rank copies back its own slices. Wire volume 2·E·(N-1)/N, not a reduce-scatter (§3.4, §7 #13).
  Elements left = elements;
  Elements own_left = own;
  int chunk = 0;
  while (left > 0) {
    const Elements c = std::min(left, cap_);
    const std::string l = label + (elements > cap_ ? " chunk " + std::to_string(chunk) : std::string());
    BufferId tmp = alloc_input("flatten " + l, ctx_.lp(c));
    ctx_.mem_kernel(reduce_, Phase::GRAD_REDUCE, "flatten " + l, ctx_.lp(c) * 2.0);
    const auto cast = ctx_.cast_for_comm(reduce_, c, l);
    b.collective(reduce_, Phase::GRAD_REDUCE, l, CollectiveKind::ALL_REDUCE, ctx_.comm(c), ctx_.dp_group());
    ctx_.uncast_from_comm(reduce_, cast, c, l);
    const Elements o = std::min(own_left, c);
    copy_back(o);
    own_left -= o;
    release_input(tmp);
    left -= c;
    ++chunk;
  }
}

void IpgBucket::epilogue() {
  flush();
  auto& b = ctx_.b();
  b.join(ctx_.compute(), reduce_);
  if (overlap_) {
    // independent_gradient_partition_epilogue with overlap_comm: get_accelerator().synchronize() on the host
    // (stage_1_and_2.py l.929-931): the host waits for every stream; no-op without a host model.
    ctx_.host_read(ctx_.compute());
  }
  if (extra_partition_) {
    // all_grad_tensors: later micro-steps' partition grads are added into the first micro-step's buffer.
    ctx_.mem_kernel(ctx_.compute(), Phase::GRAD_REDUCE, "accumulate grads in partition",
                    ctx_.lp(part_.grads_in_partition) * 3.0);
    b.free(ctx_.compute(), Phase::GRAD_REDUCE, *extra_partition_);
    extra_partition_.reset();
  }
  if (!kept_micro_.empty()) {
    // Stage 2 without contiguous_gradients, micro-step > 0: accumulated_grad.add_(new_avg_grad) per in-partition
    // grad (keep()), then zero_grad drops the new grads (after _release_ipg_buffers; the order does not change the
    // peak, which is reached before the add).
    Elements added = 0;
    for (const auto& [g, elements] : kept_micro_)
      added += elements;
    ctx_.mem_kernel(ctx_.compute(), Phase::GRAD_REDUCE, "accumulate grads in partition", ctx_.lp(added) * 3.0);
    for (const auto& [g, elements] : kept_micro_)
      b.free(ctx_.compute(), Phase::GRAD_REDUCE, g);
    kept_micro_.clear();
  }
  // _release_ipg_buffers: the bucket list is cleared, its tensors go back to the caching allocator.
  for (BufferId buf : buffers_)
    b.free(ctx_.compute(), Phase::GRAD_REDUCE, buf);
  buffers_.clear();
  // Then zero_grad(set_to_none=True) drops the stage-1 out-of-partition grads of params larger than the bucket (add).
  for (BufferId g : kept_)
    b.free(ctx_.compute(), Phase::GRAD_REDUCE, g);
  kept_.clear();
  flushes_ = 0;
}

bool IpgBucket::input_held() const {
  // Only where the host thread is modelled (it is what runs ahead of the GPU) and the collective reads the flatten
  // itself (no communication_data_type cast, whose copy would be the input instead).
  // TORCH_NCCL_AVOID_RECORD_STREAMS=1 (torch 2.1-2.7) replaces the record_stream by a stash that the synchronous
  // collective's wait() drops on the host right after making the reduction stream wait for the NCCL stream
  // (ProcessGroupNCCL.cpp WorkNCCL::synchronizeStream(s)): the block is then reusable in stream order, as from 2.8.
  const auto& t = ctx_.wl().training;
  return ctx_.host_enabled() && t.torch_before(2, 8) && !t.torch_nccl_avoid_record_streams && !ctx_.comm_cast();
}

BufferId IpgBucket::alloc_input(const std::string& label, Bytes bytes) {
  auto& b = ctx_.b();
  if (!input_held())
    return b.alloc(reduce_, Phase::GRAD_REDUCE, label, MemTag::FLATTEN_TEMP, bytes);
  // The Python thread allocates the flatten inside `with stream(reduction_stream)`: at host time, from the
  // reduction stream's cache; the reduction stream then runs what the host queues with it.
  BufferId tmp = b.alloc_from(ctx_.issuer(), reduce_, Phase::GRAD_REDUCE, label, MemTag::FLATTEN_TEMP, bytes);
  ctx_.host_issue(reduce_);
  return tmp;
}

void IpgBucket::release_input(BufferId tmp) {
  auto& b = ctx_.b();
  if (!input_held()) {
    b.free(reduce_, Phase::GRAD_REDUCE, tmp);
    return;
  }
  // Before torch 2.8 ProcessGroupNCCL::collective record_stream()s the input on its NCCL stream (pytorch#148590
  // removed it for 2.8). The host drops the flatten once the function that issued it returns (the allocated
  // counter falls then), but the allocator hands the block out again only once the event recorded on the NCCL stream
  // at that free has completed, i.e. the collective has run on the GPU (CUDACachingAllocator.cpp free ->
  // insert_events, process_events at the next malloc). While the host runs ahead, every bucket it queues takes a
  // new block, and the reduction stream's pool grows by as many buckets as the host leads.
  b.free_tensor(ctx_.issuer(), Phase::GRAD_REDUCE, tmp);
  ctx_.host_issue(reduce_); // the block cannot come back before the host has dropped the tensor
  b.free_block(reduce_, Phase::GRAD_REDUCE, tmp);
}

bool IpgBucket::keeps_grads() const { return !contiguous_; }

void IpgBucket::keep(std::size_t param, BufferId grad) {
  // Without contiguous_gradients reduce_ipg_grads copies nothing into grads_in_partition: buffered_reduce_fallback
  // all-reduced the bucket's grads and allreduce_and_copy copied the synced values back into each param.grad, and
  // `elif self.contiguous_gradients: copy_grads_in_partition` (stage 2) / `if self.contiguous_gradients and ...`
  // (stage 1) skip the copy (stage2.py l.964-977 @v0.3.15; stage_1_and_2.py l.1222-1242 @v0.9.0, l.1712-1727
  // @v0.19.5). The epilogue then keeps the grads of the params touching this rank's partition themselves:
  // get_flat_partition(..., return_tensor_list=True) puts them (whole, or narrow views that keep the whole storage)
  // into averaged_gradients (l.459-477 @v0.3.15, l.700-706 @v0.9.0; from v0.17.6 all_grad_tensors holds the whole
  // tensors and averaged_gradients the views, l.920-936 @v0.19.5), and zero_grad(set_to_none=True) only drops
  // param.grad; the step frees them after flattening the partition (`averaged_gradients[i] = None`, l.1433 @v0.3.15,
  // l.1716 @v0.9.0, l.2346 @v0.19.5).
  //   Stage 2 reduces at every micro-step: in a micro-step after the first, averaged_gradients (all_grad_tensors
  //   from v0.17.6) already holds the first one's grads, so the epilogue add_()s the new ones into them and
  //   zero_grad drops the new ones (l.470-477 @v0.3.15, l.712-720 @v0.9.0, l.923-927 @v0.19.5).
  //   Outside the partition: stage 2 clears the grad after its reduction (with overlap_comm at the next
  //   allreduce_and_copy or the epilogue, after their synchronize: previous_reduced_grads, which orders the free
  //   after the reduction as the free on the reduction stream here does). Stage 1 (`else: # zero stage 1`,
  //   l.1240-1242 @v0.9.0, l.1541-1543 @v0.18.3) clears nothing: the grad lives until the epilogue's
  //   zero_grad(set_to_none=True) (l.723 @v0.9.0, l.888 @v0.18.3).
  const auto& p = ctx_.params()[param];
  const Elements own = part_.own(p.flat_offset, p.numel);
  if (own > 0 && ctx_.cfg().stage >= 2 && micro_ > 0) {
    // add_ over the partition's views before v0.17.6, over the whole all_grad_tensors entries from it
    kept_micro_.emplace_back(grad, ctx_.cfg().deepspeed_before(0, 17, 6) ? own : p.numel);
  } else if (own > 0) {
    kept_partition_.push_back(grad);
  } else if (ctx_.cfg().stage == 1) {
    kept_.push_back(grad);
  } else {
    ctx_.b().free(reduce_, Phase::GRAD_REDUCE, grad);
  }
}

std::vector<BufferId> IpgBucket::take_kept_partition_grads() {
  std::vector<BufferId> out;
  out.swap(kept_partition_);
  return out;
}

std::optional<BufferId> IpgBucket::take_partition() {
  auto p = partition_;
  partition_.reset();
  return p;
}

} // namespace zerosim::zero
