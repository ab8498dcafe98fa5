// End-to-end tests of scenario input at the `zerosim run` command: element counts and byte sizes reach result.json
// as JSON integers, and a bad size (fractional where DeepSpeed takes an int, negative, NaN, beyond range, of the
// wrong type) is one stderr line naming file, line and key, exit 2, and no output directory.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/support/cli_runner.hpp"

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using Catch::Contains;
using nlohmann::json;
using zerosim::test::Outcome;
using zerosim::test::run_zerosim;
using zerosim::test::slurp;
using zerosim::test::TempDir;
using zerosim::test::write_file;

namespace {

/// GPT-2 small on one RTX 4090 at analytic fidelity, one step. `cluster`, `simulation` and `zero` are one extra
/// line each (a comment when empty), on lines 6, 11 and 14.
std::string scenario(const std::string& cluster, const std::string& simulation, const std::string& zero) {
  const auto line = [](const std::string& l) { return (l.empty() ? "  # -" : l) + "\n"; };
  return "name: sizes\n" // 1
         "model: gpt2\n" // 2
         "training: {micro_batch: 1, seq_len: 128}\n" // 3
         "cluster:\n" // 4
         "  topology: one-rtx4090\n" + // 5
         line(cluster) + // 6
         "simulation:\n" // 7
         "  steps: 1\n" // 8
         "  fidelity: analytic\n" // 9
         "  on_oom: continue\n" + // 10
         line(simulation) + // 11
         "zero:\n" // 12
         "  stage: 2\n" + // 13
         line(zero); // 14
}

/// The bad-input contract: exit 2, one stderr line starting "zerosim: " holding `what`, no output directory.
void check_rejected(const Outcome& o, const fs::path& out, const std::string& what) {
  INFO("stderr: " << o.err);
  CHECK(o.status == 2);
  CHECK(zerosim::test::count_lines(o.err) == 1);
  CHECK(o.err.rfind("zerosim: ", 0) == 0);
  CHECK_THAT(o.err, Contains(what));
  CHECK_FALSE(fs::exists(out));
}

} // namespace

TEST_CASE("zerosim run: element counts written 5e8 and sizes in fractional GiB reach result.json as JSON integers",
          "[e2e]") {
  TempDir tmp;
  // 5e8 is DeepSpeed's own default spelling (deepspeed/runtime/zero/config.py v0.18.5 l.113: pp_int(5e8)), an int
  // field: 500,000,000 elements. 79.1 GiB = 79.1 x 2^30 B = 84,932,978,278.4 B, rounded to the nearest byte.
  const fs::path sc =
      write_file(tmp.path(), "sizes.yaml",
                 scenario("  host_memory: 79.1GiB", "",
                          "  reduce_bucket_size: 5e8\n  allgather_bucket_size: 2.5e8\n  aio: {block_size: 1.5MiB}"));
  const fs::path out = tmp.path() / "out";
  const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--quiet", "--out", out.string()});
  INFO("stderr: " << o.err);
  REQUIRE(o.status == 0);
  const json r = json::parse(slurp(out / "result.json"));
  const json& z = r.at("scenario").at("zero");
  CHECK(z.at("reduce_bucket_size").is_number_integer());
  CHECK(z.at("reduce_bucket_size").get<std::int64_t>() == 500'000'000);
  CHECK(z.at("allgather_bucket_size").get<std::int64_t>() == 250'000'000);
  CHECK(z.at("aio").at("block_size_bytes").is_number_integer());
  CHECK(z.at("aio").at("block_size_bytes").get<std::int64_t>() == 1'572'864); // 1.5 x 2^20
  const json& host = r.at("scenario").at("cluster").at("host_memory_bytes");
  CHECK(host.is_number_integer());
  CHECK(host.get<std::int64_t>() == 84'932'978'278);
  CHECK(r.at("summary").at("host_capacity_bytes").get<std::int64_t>() == 84'932'978'278);
  CHECK(r.at("summary").at("trainable_params").is_number_integer());
  // GPT-2 small: 124,439,808 parameters (Hugging Face gpt2), all trainable.
  CHECK(r.at("summary").at("trainable_params").get<std::int64_t>() == 124'439'808);
}

TEST_CASE("zerosim run: a bad size or element count is one line naming file, line and key, and exit 2", "[e2e]") {
  TempDir tmp;
  const fs::path out = tmp.path() / "out";
  struct Bad {
    const char* cluster; ///< line 6
    const char* simulation; ///< line 11
    const char* zero; ///< line 14
    const char* what; ///< in the message
  };
  const Bad bad[] = {
      {"", "", "  reduce_bucket_size: 2.5",
       "bad.yaml:14: zero.reduce_bucket_size: expected a non-negative whole number"},
      {"", "", "  reduce_bucket_size: -5e8", "bad.yaml:14: zero.reduce_bucket_size: must be positive"},
      {"", "", "  stage3_prefetch_bucket_size: .nan", "bad.yaml:14: zero.stage3_prefetch_bucket_size: expected"},
      {"", "", "  stage3_max_live_parameters: .inf", "bad.yaml:14: zero.stage3_max_live_parameters: expected"},
      {"", "", "  sub_group_size: 1e300", "bad.yaml:14: zero.sub_group_size: '1e300' is out of range"},
      {"", "", "  stage3_max_reuse_distance: 99999999999999999999", "bad.yaml:14: zero.stage3_max_reuse_distance: "},
      {"", "", "  allgather_bucket_size: [1]", "bad.yaml:14: zero.allgather_bucket_size"},
      {"", "", "  allgather_bucket_size: {a: 1}", "bad.yaml:14: zero.allgather_bucket_size"},
      {"", "", "  offload_param_buffer_size: 1GiB", "bad.yaml:14: zero.offload_param_buffer_size: expected an element"},
      {"", "", "  aio: {block_size: 1.0001KiB}", "bad.yaml:14: zero.aio.block_size: expected a whole number of bytes"},
      {"", "", "  aio: {block_size: 1e300GB}", "bad.yaml:14: zero.aio.block_size: '1e300GB' is out of range"},
      {"", "", "  aio: {block_size: -1MiB}", "bad.yaml:14: zero.aio.block_size"},
      {"", "", "  aio: {block_size: true}", "bad.yaml:14: zero.aio.block_size"},
      {"  host_memory: 10PB", "", "", "bad.yaml:6: cluster.host_memory: '10PB' is out of range"},
      {"  host_memory: 1e308TB", "", "", "bad.yaml:6: cluster.host_memory: '1e308TB' is out of range"},
      {"", "  cuda_context: .nan", "", "bad.yaml:11: simulation.cuda_context"},
      {"", "  cuda_context: nanGB", "", "bad.yaml:11: simulation.cuda_context"},
      // Rates, efficiencies and durations that made an op time infinite: a SimGrid deadlock or abort before.
      {"  gpu: {peak_lp: 1e-300FLOPS}", "", "", "bad.yaml:6: cluster.gpu.peak_lp: '1e-300FLOPS' is below 1 FLOP/s"},
      {"  gpu: {memory_efficiency: 1e-300}", "", "", "bad.yaml:6: cluster.gpu.memory_efficiency: '1e-300' is below"},
      {"", "  host_op_launch: 1e308s", "", "bad.yaml:11: simulation.host_op_launch: '1e308s' is out of range"},
  };
  for (const Bad& b : bad) {
    INFO(b.cluster << b.simulation << b.zero);
    const fs::path sc = write_file(tmp.path(), "bad.yaml", scenario(b.cluster, b.simulation, b.zero));
    check_rejected(run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()}), out, b.what);
  }
}
