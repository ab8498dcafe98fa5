// Test support: the made-up GPU of the engine tests, whose round numbers the tests' hand calculations use.
#pragma once

#include "sim/scenario/scenario.hpp"

namespace zerosim::test {

/// "test-gpu": 100e12 FLOP/s lp peak at matmul efficiency 0.5 (50e12 FLOP/s achieved), 2e12 B/s memory bandwidth
/// at efficiency 0.8 (1.6e12 B/s achieved), `memory_bytes` of memory; peak_fp32 and source left empty.
inline scenario::GpuSpec test_gpu(double memory_bytes) {
  scenario::GpuSpec g;
  g.name = "test-gpu";
  g.memory = Bytes(memory_bytes);
  g.peak_lp = FlopRate(100e12);
  g.matmul_efficiency = 0.5;
  g.memory_bandwidth = ByteRate(2e12);
  g.memory_efficiency = 0.8;
  return g;
}

} // namespace zerosim::test
