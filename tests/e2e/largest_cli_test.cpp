// End-to-end tests of `zerosim largest`: the answer on a small GPT-2-width model agrees with `zerosim run` on both
// sides of it and with the model-state bytes computed by hand; a card nothing fits on; the one-line / exit-2 error
// contract.
#include <catch2/catch.hpp>

#include "tests/support/cli_runner.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
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

TEST_CASE(
    "zerosim largest: --headroom is plan's rule, what the full card's run cannot give back at most capacity less H",
    "[e2e]") {
  // newuser25: largest simulated a card H smaller (the allocator released its cache 81 times to fit micro-batch 7)
  // while plan asked the full card's peak to stay H below the capacity. One rule: 10 % of 4 GiB = 0.40 GiB free, so
  // the memory a fit cannot give back (summary.json nvidia_smi_needed_bytes: nvidia-smi's peak less what a failed
  // cudaMalloc's retry releases; newuser31) is at most 3.60 GiB on the 4 GiB card.
  TempDir tmp;
  const fs::path sc = scenario(tmp.path());
  const Outcome o = zs(tmp.path(), {"largest", sc.string(), "--headroom", "10%"});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("(--headroom 0.40 GiB: the memory a fit cannot give back on the full 4.00 GiB card is "
                             "at most 3.60 GiB, zerosim plan's rule)"));
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
    CHECK(j["nvidia_smi_needed_bytes"].get<double>() <= j["nvidia_smi_bytes"].get<double>());
    return j["nvidia_smi_needed_bytes"].get<double>() / 1073741824.0;
  };
  bool fits = false;
  CHECK(smi_gib(n, fits) <= 3.6);
  CHECK(fits);
  const double next = smi_gib(n + 1, fits);
  CHECK((!fits || next > 3.6));
}

TEST_CASE("zerosim largest: --host-headroom bounds the node's host peak, and a tight host is marginal", "[e2e]") {
  // GPT-2 width with ZeRO-3 and optimizer + parameter offload on one GPU keeps 20 B per parameter on the host (fp32
  // master 4 + Adam m, v 8 + fp32 grads 4 + bf16 params 2 + bf16 grad partition 2), gpt2_params(n) by hand. With
  // 4 GiB of host RAM and --host-headroom 1GiB a fit's host peak is at most 3 GiB: 20 x gpt2_params(17) =
  // 3,197,583,360 B = 2.978 GiB fits, 18 layers (3.110 GiB) does not. Without it the host OOM decides: 24 layers =
  // 4,189,885,440 B = 3.902 GiB of 4 GiB fits (25: 4.034 GiB does not) and leaves 0.098 GiB, under 10 % of 4 GiB =
  // 0.40 GiB: marginal by the host.
  TempDir tmp;
  const fs::path sc = tmp.path() / "host.yaml";
  std::ofstream(sc) << "name: host-e2e\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 128}\n"
                       "zero: {stage: 3, offload_optimizer: cpu, offload_param: cpu}\n"
                       "cluster: {topology: one-rtx4090, host_memory: 4GiB}\nsimulation: {steps: 2}\n";
  CHECK(20.0 * gpt2_params(17) <= 3.0 * 1073741824.0);
  CHECK(20.0 * gpt2_params(18) > 3.0 * 1073741824.0);
  const Outcome kept = zs(tmp.path(), {"largest", sc.string(), "--host-headroom", "1GiB"});
  INFO("stdout: " << kept.out << "\nstderr: " << kept.err);
  REQUIRE(kept.status == 0);
  CHECK_THAT(kept.out, Contains("(--host-headroom 1.00 GiB: a fit's host memory peak per node is at most 3.00 of "
                                "4.00 GiB, zerosim plan's rule)"));
  CHECK_THAT(kept.out, Contains("largest model.layers that fits: 17 "));
  CHECK_THAT(kept.out, Contains("18 (") && Contains("leaves less than --host-headroom free: host RAM 3.11 GiB per "
                                                    "node > 3.00 GiB"));
  CHECK(20.0 * gpt2_params(24) <= 4.0 * 1073741824.0);
  CHECK(20.0 * gpt2_params(25) > 4.0 * 1073741824.0);
  const Outcome tight = zs(tmp.path(), {"largest", sc.string()});
  INFO("stdout: " << tight.out << "\nstderr: " << tight.err);
  REQUIRE(tight.status == 0);
  CHECK_THAT(tight.out, Contains("largest model.layers that fits: 24 (") &&
                            Contains("; marginal: host RAM under 10 % free (node peak 3.90 of 4.00 GiB leaves 0.10 "
                                     "GiB, under 0.40 GiB)"));
  // Each probe's line marks a marginal fit, and a line names the largest fit that is not marginal (newuser32 #26):
  // a host peak of at most 4 GiB - 10 % = 3.6 GiB: 20 x gpt2_params(21) = 3.506 GiB is, 22 layers (3.638 GiB) not.
  CHECK(20.0 * gpt2_params(21) <= 0.9 * 4.0 * 1073741824.0);
  CHECK(20.0 * gpt2_params(22) > 0.9 * 4.0 * 1073741824.0);
  CHECK_THAT(tight.out, Contains("\n  model.layers=24     fits ~ (") &&
                            Contains("; marginal: host RAM under 10 % free)\n") &&
                            Contains("\n  model.layers=21     fits (") &&
                            Contains("\n  largest model.layers that fits and is not marginal: 21 ("));
  // Without cluster.host_memory: nothing to keep free, an input error.
  const fs::path unlimited = tmp.path() / "unlimited.yaml";
  std::ofstream(unlimited) << "name: u\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 128}\n"
                              "zero: {stage: 3, offload_optimizer: cpu, offload_param: cpu}\n"
                              "cluster: {topology: one-rtx4090}\n";
  const Outcome bad = zs(tmp.path(), {"largest", unlimited.string(), "--host-headroom", "10%"});
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Contains("largest: --host-headroom 10%: the node's host RAM is not given"));
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

namespace {

/// `bytes` in GiB (2^30 B) with 2 decimals, as the commands print it.
std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", bytes / 1073741824.0);
  return buf;
}

/// The fields of one CSV line, with double-quoted fields (plan.csv's reason) kept whole.
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (const char c : line) {
    if (c == '"')
      quoted = !quoted;
    else if (c == ',' && !quoted)
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

/// What `zerosim plan --model gpt2 --gpu rtx4090 --max-gpus 1` simulates for its plan "stage 0, offload none, N_d 1,
/// mb 1, GA 1, ckpt off", written out as a scenario (plan_command.cpp's base scenario plus that plan's keys), so that
/// run, largest and plan simulate one and the same variant.
fs::path plan_twin_scenario(const fs::path& tmp) {
  const fs::path sc = tmp / "twin.yaml";
  std::ofstream(sc) << "name: plan\nmodel: gpt2\n"
                       "training: {seq_len: 1024, micro_batch: 1, grad_accum: 1, activation_checkpointing: false}\n"
                       "zero: {stage: 0, offload_optimizer: none, offload_param: none}\n"
                       "cluster: {topology: one-rtx4090, gpu: rtx4090, nvls: false, nodes: 1, gpus_per_node: 1}\n"
                       "simulation: {steps: 2, fidelity: analytic, on_oom: continue, fold: auto}\n";
  return sc;
}

} // namespace

TEST_CASE("zerosim run, largest and plan call the same variant marginal, by summary.json's one definition", "[e2e]") {
  // One definition (analysis::marginal_fit): a fit is marginal when the allocator needed cudaMalloc retries or its
  // nvidia-smi peak leaves less than 5 % of the card free. The card: an RTX 4090 cut to 4 GiB = 4294967296 B, so
  // 5 % is 214748364.8 B (0.20 GiB). GPT-2 width (h = 768) at stage 0 holds 20 B per parameter (zero_semantics.md
  // §3.6) and one layer has 12h^2 + 13h = 7087872 of them: 141.8 MB per layer, under the 214.7 MB, so the largest
  // layer count that fits leaves less than 5 % free (one layer more would need more than the card) and is marginal.
  TempDir tmp;
  const fs::path sc = plan_twin_scenario(tmp.path());
  const std::string card = "cluster.gpu.memory=4GiB";
  const double capacity = 4.0 * 1073741824.0;
  const double five_percent = 0.05 * capacity; // 214748364.8 B

  const Outcome big = zs(tmp.path(), {"largest", sc.string(), "--set", card});
  INFO("largest: " << big.out << big.err);
  REQUIRE(big.status == 0);
  std::smatch m;
  REQUIRE(std::regex_search(big.out, m, std::regex("largest model.layers that fits: ([0-9]+) \\(([^\n]*)")));
  const int n = std::stoi(m[1]);
  const std::string largest_line = m[2];

  // `zerosim run` of that variant (--check prints its verdict line, the console its fits line).
  const auto run = [&](int layers) {
    const fs::path out = tmp.path() / ("run-" + std::to_string(layers));
    const Outcome r =
        zs(tmp.path(), {"run", sc.string(), "--set", card, "--set", "model.layers=" + std::to_string(layers), "--out",
                        out.string(), "--check", "--headroom", "0"}); // largest's default; run --check's is plan's 5 %
    INFO("run: " << r.out << r.err);
    REQUIRE(r.status == 0);
    std::ifstream in(out / "summary.json");
    return std::make_pair(r.out, nlohmann::json::parse(in)["variants"][0]["summary"]);
  };
  const auto [run_out, s] = run(n);
  const double smi = s["nvidia_smi_bytes"].get<double>();
  const long retries = s["alloc_retries"].get<long>();
  CHECK(s["capacity_bytes"].get<double>() == capacity);
  REQUIRE(s["fits"].get<bool>());
  // By hand: less than 5 % free, as the per-layer bytes above say.
  CHECK(capacity - smi < five_percent);
  const bool marginal = retries > 0 || capacity - smi < five_percent;
  REQUIRE(marginal);
  CHECK(s["marginal"].get<bool>() == marginal);
  // Which 5 % reason: the memory the run cannot give back (nvidia-smi less the cached segments a retry releases)
  // leaves less than 5 % itself, or only nvidia-smi's peak does (the 5 % kept only by cache flushes).
  const double needed = s["nvidia_smi_needed_bytes"].get<double>();
  CHECK(needed <= smi);
  const std::string reason = capacity - needed < five_percent
                                 ? "less than 5 % of the card free (it cannot give back " + gib(needed) +
                                       " of 4.00 GiB, leaving " + gib(capacity - needed) + " GiB, under 0.20 GiB)"
                                 : "headroom only after cache flushes (nvidia-smi " + gib(smi) +
                                       " of 4.00 GiB leaves " + gib(capacity - smi) + " GiB, under 0.20 GiB; " +
                                       gib(smi - needed) +
                                       " GiB of it is blocks held for other streams and cached segments a cudaMalloc "
                                       "retry gives back, without which it needs " +
                                       gib(needed) + " GiB)";
  const std::string words = reason.substr(0, reason.find(" ("));
  CHECK_THAT(run_out, Contains("fits in 4.00 GiB: yes, marginal: ") && Contains(words + " ("));
  CHECK_THAT(run_out, Contains("check: pass: fits (nvidia-smi " + gib(smi) + " of 4.00 GiB") &&
                          Contains("; marginal: ") && Contains(reason + ")"));
  // largest: the same answer marked marginal, with the same figures.
  CHECK_THAT(largest_line, Contains("; marginal: ") && Contains(reason));

  // plan, with --headroom 0 (its default 5 % would reject this plan outright: a stricter gate than marginal).
  const fs::path csv_path = tmp.path() / "plan.csv";
  const Outcome p =
      zs(tmp.path(), {"plan", "--model", "gpt2", "--gpu", "rtx4090", "--max-gpus", "1", "--headroom", "0", "--set",
                      card, "--set", "model.layers=" + std::to_string(n), "--top", "100", "--csv", csv_path.string()});
  INFO("plan: " << p.out << p.err);
  REQUIRE(p.status == 0);
  std::ifstream csv_in(csv_path);
  std::string line;
  std::getline(csv_in, line);
  const std::vector<std::string> head = csv_fields(line);
  const auto col = [&](const std::string& name) {
    const auto it = std::find(head.begin(), head.end(), name);
    REQUIRE(it != head.end());
    return static_cast<std::size_t>(it - head.begin());
  };
  std::vector<std::string> twin;
  while (std::getline(csv_in, line)) {
    const auto f = csv_fields(line);
    if (f[col("n_d")] == "1" && f[col("stage")] == "0" && f[col("offload")] == "none" && f[col("micro_batch")] == "1" &&
        f[col("grad_accum")] == "1" && f[col("checkpointing")] == "false")
      twin = f;
  }
  REQUIRE(!twin.empty());
  CHECK(twin[col("status")] == "feasible");
  CHECK(twin[col("marginal")] == "true");
  CHECK(std::stol(twin[col("alloc_retries")]) == retries);
  CHECK(std::stod(twin[col("nvidia_smi_gib")]) == Approx(smi / 1073741824.0).margin(0.0005)); // the same simulation
  // Its table row carries `~` after the headroom column, and the legend names the 5 % reason.
  const std::regex row("\n *" + twin[col("rank")] + " +\\*? +1 +0 +- +none +1 +1 +off +[0-9.]+ +[0-9.]+~");
  CHECK(std::regex_search(p.out, row));
  CHECK_THAT(p.out, Contains("~ = marginal, as `zerosim run` and `zerosim largest` call it") && Contains(words + " ("));

  // And a variant far from the limit is marginal in none of them: 2 layers leave more than 5 % free.
  const auto [small_out, small] = run(2);
  CHECK(capacity - small["nvidia_smi_bytes"].get<double>() >= five_percent);
  CHECK(small["alloc_retries"].get<long>() == 0);
  CHECK_FALSE(small["marginal"].get<bool>());
  CHECK_THAT(small_out, Contains("fits in 4.00 GiB: yes (OOM when") && !Contains("marginal"));
  CHECK_THAT(small_out, Contains("check: pass: fits (nvidia-smi " + gib(small["nvidia_smi_bytes"].get<double>()) +
                                 " of 4.00 GiB") &&
                            !Contains("marginal"));
  const Outcome two = zs(tmp.path(), {"largest", sc.string(), "--set", card, "--max", "2"});
  REQUIRE(two.status == 0);
  CHECK_THAT(two.out, Contains("largest model.layers that fits: 2 (") && !Contains("marginal:"));
}
