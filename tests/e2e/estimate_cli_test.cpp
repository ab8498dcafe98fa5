// End-to-end tests of `zerosim estimate`: run the built binary (ZEROSIM_EXE) and check exit status, stdout and
// stderr. Expected table rows are DeepSpeed's published printouts (reference/calibration.md §1), not earlier output.
#include <catch2/catch.hpp>

#include "tests/support/cli_runner.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using Catch::Contains;

using zerosim::test::Outcome;
using zerosim::test::TempDir;

namespace {

/// Runs `zerosim estimate args...` with stdout / stderr captured in a fresh temporary directory.
Outcome estimate(const std::vector<std::string>& args) {
  const TempDir tmp("estimate-e2e");
  std::vector<std::string> argv{"estimate"};
  argv.insert(argv.end(), args.begin(), args.end());
  zerosim::test::RunOptions opt;
  opt.chdir = false;
  return zerosim::test::run_zerosim(tmp.path(), argv, opt);
}

std::size_t count_lines(const std::string& s) {
  std::size_t n = 0;
  for (char c : s)
    n += c == '\n' ? 1 : 0;
  return n;
}

} // namespace

TEST_CASE("zerosim estimate: a model's total params say they include the LM head, and what AutoModel counts", "[e2e]") {
  // Mistral-7B: untied head V x h = 32000 x 4096 = 131,072,000; 7,241,732,096 - 131,072,000 = 7,110,660,096 is what
  // AutoModel (MistralModel, no head) counts (trial 24 finding 14).
  auto o = estimate({"--model", "mistral-7b", "--gpus-per-node", "8"});
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("SW: Model with 7241M total params (7241732096)"));
  CHECK_THAT(o.out, Contains("AutoModel, without it, has 131072000 = V x h fewer"));
  // GPT-2's head is tied to the embedding: the same count either way.
  o = estimate({"--model", "gpt2"});
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("shares the embedding, so AutoModel counts the same"));
  // --params alone: no model, no such line.
  o = estimate({"--params", "2851e6"});
  CHECK_THAT(o.out, !Contains("AutoModel"));
}

TEST_CASE("zerosim estimate: t5-3b on 1x8 GPUs prints memory.rst's cold ZeRO-2 and ZeRO-3 rows", "[e2e]") {
  // memory.rst (calibration.md §1; zero_semantics.md §2.3), cold: Ψ = 2851e6, L = 32e6, 8 GPUs. ZeRO-2 without offload
  // uses the pre-v0.14.3 formula there: 4Ψ + 16Ψ/8 = 17.106e9 B = 15.93 GiB; offload 2Ψ = 5.31 GiB; CPU 48Ψ = 127.45.
  // ZeRO-3: (cpu, cpu, zero_init=1) CPU 27Ψ = 71.69, GPU 4L = 0.12; (none, none, 1) CPU 48L = 1.43, GPU 4L + 18Ψ/8
  // = 6.09.
  const auto o = estimate({"--params", "2851e6", "--largest-layer-params", "32e6", "--gpus-per-node", "8", "--nodes",
                           "1", "--formula", "pre-0.14.3"});
  REQUIRE(o.status == 0);
  CHECK(o.err.empty());
  CHECK_THAT(o.out, Contains("HW: Setup with 1 node, 8 GPUs per node."));
  CHECK_THAT(o.out, Contains("SW: Model with 2851M total params"));
  CHECK_THAT(o.out, Contains("GiB (DeepSpeed prints 'GB' but divides by 2^30)"));
  CHECK_THAT(o.out, Contains("127.45 GiB |    5.31 GiB | offload_optimizer=cpu"));
  CHECK_THAT(o.out, Contains("127.45 GiB |   15.93 GiB | offload_optimizer=none"));
  CHECK_THAT(o.out, Contains("71.69 GiB |    0.12 GiB | offload_param=cpu , offload_optimizer=cpu , zero_init=1"));
  CHECK_THAT(o.out, Contains("63.72 GiB |    0.78 GiB | offload_param=none, offload_optimizer=cpu , zero_init=1"));
  CHECK_THAT(o.out, Contains("1.43 GiB |    6.09 GiB | offload_param=none, offload_optimizer=none, zero_init=1"));
  CHECK_THAT(o.out, Contains("model states only"));
  // A teacher looked for the paper's Fig. 1 here: the output says whose formulas these are and where the paper's is.
  CHECK_THAT(o.out, Contains("not the ZeRO paper's (2 + 2 + K)P accounting of Fig. 1"));
  CHECK_THAT(o.out, Contains("zerosim run"));
}

TEST_CASE("zerosim estimate: the current ZeRO-2 formula is the default (t5-3b 8 GPUs: 11.28 GiB)", "[e2e]") {
  // zero_semantics.md §7 item 6: 2Ψ + 18Ψ/8 = 12.117e9 B = 11.28 GiB with DeepSpeed >= v0.14.3.
  const auto o = estimate({"--params", "2851M", "--gpus-per-node", "8", "--stage", "2"});
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("127.45 GiB |   11.28 GiB | offload_optimizer=none"));
  CHECK_THAT(o.out, Contains("formula: current"));
  CHECK_FALSE(Contains("ZeRO-3").match(o.out));
}

TEST_CASE("zerosim estimate: from 5 GPUs on, a note says the ZeRO-2 offload CPU figure grows with the cluster",
          "[e2e]") {
  // stage_1_and_2.py: cpu_mem = P x max(4 x total GPUs, 16) x 1.5 with cpu_offload. 1e9 params on 4 GPUs: the 16
  // wins (24e9 B = 22.35 GiB), no note; on 2 nodes x 8 = 16 GPUs: 64 x 1.5 = 96e9 B = 89.41 GiB, with the note.
  const auto four = estimate({"--params", "1e9", "--gpus-per-node", "4", "--stage", "2"});
  REQUIRE(four.status == 0);
  CHECK_THAT(four.out, Contains("22.35 GiB"));
  CHECK_FALSE(Contains("grows with the whole cluster").match(four.out));
  const auto sixteen = estimate({"--params", "1e9", "--gpus-per-node", "8", "--nodes", "2", "--stage", "2"});
  REQUIRE(sixteen.status == 0);
  CHECK_THAT(sixteen.out, Contains("89.41 GiB") && Contains("max(4 x 16 GPUs, 16) x 1.5") &&
                              Contains("grows with the whole cluster"));
}

TEST_CASE("zerosim estimate: Monkey#24's 9708M model on 4 GPUs (pre-0.14.3 formula)", "[e2e]") {
  // Yuliang-Liu/Monkey#24: offload CPU 24Ψ = 216.99, GPU 2Ψ = 18.08; none GPU 8Ψ = 72.33 (all GiB).
  const auto o = estimate({"--params", "9708M", "--gpus-per-node", "4", "--stage", "2", "--formula", "pre-0.14.3"});
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("216.99 GiB |   18.08 GiB | offload_optimizer=cpu"));
  CHECK_THAT(o.out, Contains("216.99 GiB |   72.33 GiB | offload_optimizer=none"));
}

TEST_CASE("zerosim estimate: --model gpt2-xl counts 1,557,611,200 params and the 80,411,200 embedding", "[e2e]") {
  // GPT-2 XL (h = 1600, L = 48, V = 50257, 1024 positions, tied head): per layer 12h² + 13h = 30,740,800
  // (Narayanan et al. 2021; zero_semantics.md §5.2), x 48 = 1,475,558,400; + token and position embeddings
  // (50257 + 1024) x 1600 = 82,049,600; + final LayerNorm 3200 -> 1,557,611,200. Largest module: the token
  // embedding 50257 x 1600 = 80,411,200. ZeRO-3 (none, none, zero_init=1) on 1 GPU: GPU 4L + 18Ψ = 28,358,646,400 B
  // = 26.41 GiB; CPU 6L = 482,467,200 B = 0.45 GiB.
  const auto o = estimate({"--model", "gpt2-xl", "--stage", "3"});
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("1557M total params (1557611200)"));
  CHECK_THAT(o.out, Contains("80M largest layer params (80411200)"));
  CHECK_THAT(o.out, Contains("0.45 GiB |   26.41 GiB | offload_param=none, offload_optimizer=none, zero_init=1"));
}

TEST_CASE("zerosim estimate: the large-model presets count the parameters of their Hugging Face checkpoints", "[e2e]") {
  // Llama family, untied: Ψ = 2Vh + L(h·a·d + 2h·kv·d + a·d·h + 3hI + 2h [+ a·d + 2·kv·d with q/k/v biases]) + h.
  //  llama-2-70b (h 8192, a 64, d 128, kv 8, I 28672, V 32000, L 80): per block 67,108,864 + 16,777,216 +
  //    67,108,864 + 704,643,072 + 16,384 = 855,654,400; x 80 = 68,452,352,000; + 524,288,000 + 8192.
  //  llama-3-70b: the same blocks, V 128256: + 2,101,346,304 + 8192.
  //  llama-3.1-405b (h 16384, a 128, d 128, kv 8, I 53248, V 128256, L 126): per block 268,435,456 + 33,554,432 +
  //    268,435,456 + 2,617,245,696 + 32,768 = 3,187,703,808; x 126 = 401,650,679,808; + 4,202,692,608 + 16384.
  //  mistral-7b (h 4096, a 32, d 128, kv 8, I 14336, V 32000, L 32): per block 218,112,000; x 32 + 262,144,000 + 4096.
  //  qwen2.5-72b (h 8192, a 64, kv 8, I 29568, V 152064, L 80, q/k/v biases 10,240): per block 877,684,736;
  //    x 80 = 70,214,778,880; + 2,491,416,576 + 8192.
  // OPT, tied head, learned positions with 2 offset rows: Ψ = L(4h² + 4h + 2hF + F + h + 4h) + Vh + (P + 2)h + 2h.
  //  opt-13b (h 5120, F 20480, L 40, V 50272, P 2048): per block 314,639,360; x 40 = 12,585,574,400;
  //    + 257,392,640 + 10,496,000 + 10,240.
  for (const auto& [model, count] :
       std::vector<std::pair<std::string, std::string>>{{"llama-2-70b", "(68976648192)"},
                                                        {"llama-3-70b", "(70553706496)"},
                                                        {"llama-3.1-405b", "(405853388800)"},
                                                        {"mistral-7b", "(7241732096)"},
                                                        {"qwen2.5-72b", "(72706203648)"},
                                                        {"opt-13b", "(12853473280)"}}) {
    INFO(model);
    const auto o = estimate({"--model", model, "--stage", "3"});
    REQUIRE(o.status == 0);
    CHECK_THAT(o.out, Contains("total params " + count));
  }
  // ZeRO-Infinity's working memory of the largest linear: Qwen2.5-7B's MLP is h x I = 3584 x 18944, so 4 B x h x I
  // = 271,581,184 B = 0.25 GiB, not the paper's GPT form 16 h^2 = 205,520,896 B = 0.19 GiB (I = 4h).
  const auto q = estimate({"--model", "qwen2.5-7b", "--stage", "3"});
  REQUIRE(q.status == 0);
  CHECK_THAT(q.out, Contains("4 B x h x I, h = 3584, I = 18944): 0.25 GiB per GPU, untiled (the paper's 16 h^2 = "
                             "0.19 GiB assumes I = 4h)"));
}

TEST_CASE("zerosim estimate: without --largest-layer-params the ZeRO-3 table is skipped with a note", "[e2e]") {
  const auto o = estimate({"--params", "1e9"});
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("ZeRO-3: skipped (give --largest-layer-params L)"));
}

TEST_CASE("zerosim estimate: the table stays aligned when a figure needs more than 7 characters", "[e2e]") {
  // GPT-3 175B on 128 one-GPU nodes: ZeRO-2 with CPU offload needs over 1e5 GiB per CPU (wider than 7 characters).
  const auto o = estimate({"--model", "gpt3-175b", "--nodes", "128"});
  REQUIRE(o.status == 0);
  std::size_t bar = std::string::npos;
  std::stringstream in(o.out);
  for (std::string line; std::getline(in, line);) {
    if (line.find(" GiB |") == std::string::npos && line.find("per CPU |") == std::string::npos)
      continue;
    const std::size_t at = line.find(" | ");
    if (line.find("per CPU |") != std::string::npos) // each table has its own width
      bar = at;
    CHECK(at == bar);
  }
  CHECK(bar != std::string::npos);
  CHECK_THAT(o.out, Contains("124886.70 GiB |"));
}

TEST_CASE("zerosim estimate: --params takes K/M/B/T suffixes in either case and rejects what is no count", "[e2e]") {
  // 2.851B = 2851M = 2851e6 = 2851000k: the same count, so the same table.
  const std::string ref = estimate({"--params", "2851e6", "--gpus-per-node", "8", "--stage", "2"}).out;
  REQUIRE_FALSE(ref.empty());
  for (const std::string same : {"2851M", "2851m", "2.851B", "2.851b", "2.851G", "2851000k", "0.002851T"})
    CHECK(estimate({"--params", same, "--gpus-per-node", "8", "--stage", "2"}).out == ref);
  for (const std::string bad : {"0", "0.5", "-1e9", "inf", "nan", "1e999", "M", "1e9x", "1.5e"}) {
    const auto o = estimate({"--params", bad});
    INFO(bad << ": " << o.err);
    CHECK(o.status == 2);
    CHECK_THAT(o.err, Contains("--params expects a positive count such as 2851e6 or 2851M, got '" + bad + "'"));
  }
  CHECK_THAT(estimate({"--params", ""}).err, Contains("--params needs a number"));
}

TEST_CASE("zerosim estimate: bad input is one line on stderr and exit status 2", "[e2e]") {
  const std::vector<std::vector<std::string>> bad = {
      {"--params", "many"},
      {"--params", "1e9", "--nodes", "0"},
      {"--params", "1e9", "--stage", "1"},
      {"--params", "1e9", "--stage", "3"},
      {"--params", "1e9", "--formula", "old"},
      {"--params", "1e9", "--largest-layer-params", "2e9"},
      {"--model", "no-such-model"},
      {"--params", "1e9", "--model", "gpt2"},
      {"--model", "gpt2-xl", "--stage", "3", "--formula", "pre-0.14.3"},
      {"--model", "caf\xe9"},
      {},
  };
  for (const auto& args : bad) {
    std::string joined;
    for (const auto& a : args)
      joined += a + " ";
    INFO("zerosim estimate " << joined);
    const auto o = estimate(args);
    CHECK(o.status == 2);
    CHECK(o.out.empty());
    CHECK(count_lines(o.err) == 1);
    CHECK_THAT(o.err, Contains("zerosim: "));
  }
  CHECK_THAT(estimate({"--params", "1e9", "--stage", "3"}).err, Contains("--largest-layer-params"));
  CHECK_THAT(estimate({"--model", "no-such-model"}).err, Contains("unknown preset 'no-such-model'"));
  CHECK_THAT(estimate({"--model", "caf\xe9"}).err, Contains("--model: not valid UTF-8"));
  CHECK_THAT(estimate({"--model", "gpt2-xl", "--stage", "3", "--formula", "pre-0.14.3"}).err,
             Contains("--formula selects the ZeRO-2 formula, but --stage 3 prints only the ZeRO-3 table"));
}

TEST_CASE("zerosim estimate: --model takes a Hugging Face snapshot directory relative to the working directory",
          "[e2e]") {
  // facebook/opt-1.3b's config.json in ./opt13/: 1,315,758,080 params (workload_test.cpp's hand count), run from the
  // directory that holds opt13/ (chdir), as a user in a checkout of the model would.
  const TempDir tmp("estimate-e2e-dir");
  fs::create_directories(tmp.path() / "opt13");
  std::ofstream(tmp.path() / "opt13" / "config.json")
      << R"({"model_type": "opt", "hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 32,
             "ffn_dim": 8192, "vocab_size": 50272, "max_position_embeddings": 2048})";
  const auto o = zerosim::test::run_zerosim(tmp.path(), {"estimate", "--model", "opt13"});
  INFO(o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("(1315758080)"));
}

TEST_CASE("zerosim estimate: the throwaway scenario of --model goes in $TMPDIR and is removed", "[e2e]") {
  const TempDir tmp("estimate-e2e");
  const std::string exe = std::string(ZEROSIM_EXE) + " estimate --model gpt2 --gpus-per-node 1 2>&1";
  auto o = zerosim::test::run_shell("TMPDIR=" + tmp.path().string() + " " + exe);
  REQUIRE(o.status == 0);
  CHECK(fs::is_empty(tmp.path()));
  const std::string missing = (tmp.path() / "nosuch").string();
  o = zerosim::test::run_shell("TMPDIR=" + missing + " " + exe);
  CHECK(o.status != 0);
  CHECK_THAT(o.text, Contains("estimate: cannot create a temporary directory in " + missing));
}
