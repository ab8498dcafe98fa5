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

/// One node of `gpus` test GPUs on a 25e9 B/s, 5 us star, each with a 25e9 B/s, 1 us PCIe link to the host, ring
/// collectives with the ideal protocol; with `nvme`, an NVMe of 5e9 B/s read, 2e9 B/s write and 80 us per request.
inline scenario::ClusterSpec test_node(int gpus, bool nvme = false) {
  scenario::ClusterSpec c;
  c.nodes = 1;
  c.gpus_per_node = gpus;
  c.intra_node = {ByteRate(25e9), Seconds(5e-6), "test"};
  c.host_link = {ByteRate(25e9), Seconds(1e-6), "test"};
  c.gpu = test_gpu(80e9);
  if (nvme) {
    c.nvme.read_bandwidth = ByteRate(5e9);
    c.nvme.write_bandwidth = ByteRate(2e9);
    c.nvme.latency = Seconds(80e-6);
  }
  c.collective_algorithm = "ring";
  c.collective_protocol = "none";
  return c;
}

} // namespace zerosim::test
