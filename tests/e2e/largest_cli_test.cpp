// End-to-end tests of `zerosim largest`: the answer on a small GPT-2-width model agrees with `zerosim run` on both
// sides of it and with the model-state bytes computed by hand; a card nothing fits on; the one-line / exit-2 error
// contract.
#include <catch2/catch.hpp>

#include "tests/support/cli_runner.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using Catch::Contains;

using zerosim::test::Outcome;
using zerosim::test::TempDir;

namespace {

Outcome zs(const fs::path& tmp, const std::vector<std::string>& args) {
  zerosim::test::RunOptions opt;
  opt.chdir = false;
  return zerosim::test::run_zerosim(tmp, args, opt);
}

/// GPT-2 width (h = 768) at stage 0 on an RTX 4090 cut to 4 GiB, 128-token sequences: the model states decide.
fs::path scenario(const fs::path& tmp) {
  const fs::path sc = tmp / "largest.yaml";
  std::ofstream(sc) << "name: largest-e2e\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 128}\nzero: {stage: 0}\n"
                       "cluster: {topology: one-rtx4090, gpu: {memory: 4GiB}}\nsimulation: {steps: 2}\n";
  return sc;
}

/// GPT-2 parameters by hand (Radford et al. 2019; Narayanan et al. 2021 §5.1): per layer 12h^2 + 13h, plus the
/// token (V = 50257) and position (1024) embeddings and the final LayerNorm (2h); the LM head is tied.
double gpt2_params(int layers) {
  const double h = 768;
  return layers * (12 * h * h + 13 * h) + 50257 * h + 1024 * h + 2 * h;
}

bool run_fits(const fs::path& tmp, const fs::path& sc, int layers) {
  const fs::path out = tmp / ("run-" + std::to_string(layers));
  const Outcome o = zs(tmp, {"run", sc.string(), "--set", "model.layers=" + std::to_string(layers), "--out",
                             out.string(), "--quiet"});
  INFO(o.err);
  REQUIRE(o.status == 0);
  std::ifstream in(out / "summary.json");
  const auto j = nlohmann::json::parse(in);
  return j["variants"][0]["summary"]["fits"].get<bool>();
}

} // namespace

TEST_CASE("zerosim largest: the answer fits, one layer more does not, and the model states bound it", "[e2e]") {
  TempDir tmp;
  const fs::path sc = scenario(tmp.path());
  const Outcome o = zs(tmp.path(), {"largest", sc.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  std::smatch m;
  REQUIRE(std::regex_search(o.out, m, std::regex("largest model.layers that fits: ([0-9]+) ")));
  const int n = std::stoi(m[1]);
  // Stage 0 with bf16 and Adam holds 20 B/param at the step (2 lp params + 2 lp grads + 4 fp32 master + 8 Adam
  // m, v + 4 fp32 grads; zero_semantics.md §3.6): the answer's must be within the 4 GiB.
  CHECK(20.0 * gpt2_params(n) <= 4.0 * 1073741824.0);
  CHECK_THAT(o.out, Contains(std::to_string(n + 1) + " (")); // the first value that does not fit, and why
  CHECK_THAT(o.out, Contains("out of GPU memory"));
  // Every value is tried once; from 12 the search needs at most 2 + log2(n / 12) doublings and log2(n) halvings.
  std::set<std::string> tried;
  const std::regex probe("model\\.layers=([0-9]+) ");
  for (auto it = std::sregex_iterator(o.out.begin(), o.out.end(), probe); it != std::sregex_iterator(); ++it)
    CHECK(tried.insert((*it)[1]).second);
  CHECK(tried.size() <= 10);
  // `zerosim run` agrees on both sides of the answer.
  CHECK(run_fits(tmp.path(), sc, n));
  CHECK_FALSE(run_fits(tmp.path(), sc, n + 1));
}

TEST_CASE("zerosim largest: --headroom is plan's rule, the full card's nvidia-smi peak at most capacity less H",
          "[e2e]") {
  // newuser25: largest simulated a card H smaller (the allocator released its cache 81 times to fit micro-batch 7)
  // while plan asks the full card's nvidia-smi peak to stay H below the capacity (and rejected micro-batch 4). One
  // rule now: 10 % of 4 GiB = 0.40 GiB free, so a fit's nvidia-smi peak is at most 3.60 GiB on the 4 GiB card.
  TempDir tmp;
  const fs::path sc = scenario(tmp.path());
  const Outcome o = zs(tmp.path(), {"largest", sc.string(), "--headroom", "10%"});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("(--headroom 0.40 GiB: a fit's nvidia-smi peak on the full 4.00 GiB card is at most "
                             "3.60 GiB, zerosim plan's rule)"));
  std::smatch m;
  REQUIRE(std::regex_search(o.out, m, std::regex("largest model.layers that fits: ([0-9]+) ")));
  const int n = std::stoi(m[1]);
  // `zerosim run` on the full card: the answer leaves 0.40 GiB free, one layer more does not (or runs out).
  const auto smi_gib = [&](int layers, bool& fits) {
    const fs::path out = tmp.path() / ("h-" + std::to_string(layers));
    const Outcome r = zs(tmp.path(), {"run", sc.string(), "--set", "model.layers=" + std::to_string(layers), "--out",
                                      out.string(), "--quiet"});
    REQUIRE(r.status == 0);
    std::ifstream in(out / "summary.json");
    const auto j = nlohmann::json::parse(in)["variants"][0]["summary"];
    fits = j["fits"].get<bool>();
    return j["nvidia_smi_bytes"].get<double>() / 1073741824.0;
  };
  bool fits = false;
  CHECK(smi_gib(n, fits) <= 3.6);
  CHECK(fits);
  const double next = smi_gib(n + 1, fits);
  CHECK((!fits || next > 3.6));
}

TEST_CASE("zerosim largest: a card nothing fits on exits 1 and says why", "[e2e]") {
  TempDir tmp;
  const Outcome o = zs(tmp.path(), {"largest", scenario(tmp.path()).string(), "--set", "cluster.gpu.memory=0.5GiB"});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  CHECK(o.status == 1);
  CHECK_THAT(o.out, Contains("no model.layers fits: 1 "));
}

TEST_CASE("zerosim largest: bad arguments are one line and exit 2", "[e2e]") {
  TempDir tmp;
  const std::string sc = scenario(tmp.path()).string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"largest"}, "expected one scenario file, got 0"},
      {{"largest", sc, "--key", "zero.stage"}, "--key zero.stage: expected model.layers or training.micro_batch"},
      {{"largest", sc, "--max", "0"}, "--max 0: must be in [1, 1000] for model.layers"},
      {{"largest", sc, "--max", "1001"}, "--max 1001: must be in [1, 1000] for model.layers"},
      {{"largest", sc, "--set", "model.layers=3"}, "the search sets model.layers itself"},
      {{"largest", sc, "--headroom", "30GiB"},
       "largest: --headroom 30GiB: must be at least 0 and below the GPU's 4.00 GiB"},
      {{"largest", sc, "--set", "zero.stag=1"}, "zero.stag: unknown key"},
  };
  for (const auto& [args, what] : cases) {
    const Outcome o = zs(tmp.path(), args);
    INFO("args: " << args.size() << " stderr: " << o.err);
    CHECK(o.status == 2);
    CHECK_THAT(o.err, Contains(what));
    CHECK(zerosim::test::count_lines(o.err) == 1);
    CHECK(o.out.empty());
  }
}
