#include "apps/cli.hpp"

#include <catch2/catch.hpp>

using zerosim::cli::variant_dir_name;

TEST_CASE("variant_dir_name: last key segment and value, sanitised", "[e2e][unit]") {
  CHECK(variant_dir_name("zero.stage=2") == "stage-2");
  CHECK(variant_dir_name("zero.offload_optimizer=cpu") == "offload_optimizer-cpu");
  CHECK(variant_dir_name("training.micro_batch=4") == "micro_batch-4");
  CHECK(variant_dir_name("cluster.gpu=a100 80GB/x") == "gpu-a100-80GB-x");
  CHECK(variant_dir_name("model=../../etc") == "model-..-..-etc");
  CHECK(variant_dir_name("").empty());
  CHECK(variant_dir_name("=") == "variant");
}
