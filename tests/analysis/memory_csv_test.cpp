#include "analysis/memory_csv.hpp"
#include "tests/analysis/synthetic_run.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

using namespace zerosim;
using namespace zerosim::analysis;
using namespace zerosim::analysis::testing;

TEST_CASE("write_memory_csv: header and one row per sample", "[analysis][unit]") {
  std::ostringstream os;
  write_memory_csv(os, synthetic_run());
  // 2 GiB = 2147483648 B; 1 GiB = 1073741824 B; 3 GiB = 3221225472 B; reserved 4 GiB = 4294967296 B.
  CHECK(os.str() ==
        "time_s,rank,device,tag,bytes,total_bytes,reserved_bytes\n"
        "0.500000000,0,gpu,lp_params,2147483648,2147483648,2147483648\n"
        "3.250000000,0,gpu,activations,1073741824,3221225472,4294967296\n");
}

TEST_CASE("write_memory_csv: host samples say host and the file writer leaves no .tmp", "[analysis][unit]") {
  TempDir dir("csv");
  auto run = synthetic_run();
  run.mem_samples = {{1, 0.125, program::Device::HOST, program::MemTag::FP32_MASTER, 4096, 8192, 8192}};
  const auto path = (dir.path() / "memory.csv").string();
  write_memory_csv(path, run);
  std::ifstream in(path);
  std::string header, row, extra;
  std::getline(in, header);
  std::getline(in, row);
  CHECK(header == kMemoryCsvHeader);
  CHECK(row == "0.125000000,1,host,fp32_master,4096,8192,8192");
  CHECK_FALSE(std::getline(in, extra));
  CHECK_FALSE(has_tmp_file(dir.path()));
}

TEST_CASE("write_memory_csv: steps > 0 keeps the samples of the first optimizer steps", "[analysis][unit]") {
  // synthetic_run(): step 0 ends at 3.0 s; samples at 0.5 s (step 0) and 3.25 s (step 1).
  std::ostringstream os;
  write_memory_csv(os, synthetic_run(), 1);
  CHECK(os.str() ==
        "time_s,rank,device,tag,bytes,total_bytes,reserved_bytes\n"
        "0.500000000,0,gpu,lp_params,2147483648,2147483648,2147483648\n");
}
