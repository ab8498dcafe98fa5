#include "sim/zero/stage1_generator.hpp"

#include "sim/zero/generator_common.hpp"
#include "sim/zero/ipg_bucket.hpp"
#include "sim/zero/offload_cpu.hpp"
#include "sim/zero/stage2_generator.hpp"

namespace zerosim::zero {

using program::Phase;

program::StepProgram generate_stage1(const GeneratorInput& in) {
  GeneratorContext ctx(in);
  // offload_optimizer=cpu: the ZeRO-Offload path (§3.4). Stage 1 reduces only at the GA boundary, so its grads
  // accumulate on the GPU (no host accumulation) and only the boundary's fp32 slices go D2H.
  const Stage12Setup setup = begin_stage12(ctx, false);
  const bool overlap = setup.overlap;
  IpgBucket bucket(ctx, setup.reduce, setup.part, setup.offload_grads);
  for (int step = 0; step < in.steps; ++step) {
    ctx.begin_step(step);
    AccumulatedGrads grads(ctx);
    for (int micro = 0; micro < ctx.grad_accum(); ++micro) {
      const bool boundary = micro == ctx.grad_accum() - 1;
      PassHooks hooks;
      hooks.on_grad = [&](std::size_t p) {
        // setup_buckets runs at the first hook of every backward, for stage 1 too (§3.4 "Backward hooks").
        bucket.ensure_allocated();
        grads.on_grad(p);
        if (overlap && boundary) {
          // overlap_comm: the boundary backward reduces in its hooks like stage 2 (§3.4 "Stage 1 gradient lifetime").
          bucket.add(p, *grads.release(p), micro);
        }
      };
      auto acts = ctx.forward({});
      ctx.backward(acts, hooks);
      if (!boundary)
        continue;
      if (!overlap) {
        // GA boundary, reduce_gradients(): walk all params in model order, copy each full grad into the bucket
        // (freeing it), reduce full buckets; the 2Ψ of full grads drains progressively (§3.4, §7 #14).
        for (std::size_t p = 0; p < ctx.params().size(); ++p)
          if (auto g = grads.release(p))
            bucket.add(p, *g, micro);
      }
      bucket.epilogue();  // buckets freed at the GA boundary in stage 1 (§7 #10)
      grads.free_all(ctx.compute(), Phase::GRAD_REDUCE);  // param.grad cleared at the end of the epilogue
    }
    emit_stage12_optimizer(ctx, setup, bucket, step);
    ctx.end_step(step);
  }
  return ctx.build();
}

} // namespace zerosim::zero
