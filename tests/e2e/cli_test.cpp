// End-to-end tests: run the built `zerosim` binary (path from the ZEROSIM_EXE compile definition) as a child
// process and check its exit status, stderr and output files.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/support/cli_runner.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace fs = std::filesystem;
using Catch::Contains;
using nlohmann::json;

using zerosim::test::Outcome;
using zerosim::test::read_json;
using zerosim::test::run_zerosim;
using zerosim::test::slurp;
using zerosim::test::TempDir;
using zerosim::test::write_file;

namespace {

/// A small, fast scenario: GPT-2 small (124M) on one RTX 4090, 2 steps.
std::string small_scenario(const std::string& extra = "") {
  return "name: e2e-small\n"
         "model: gpt2\n"
         "training:\n"
         "  micro_batch: 1\n"
         "  seq_len: 256\n"
         "zero:\n"
         "  stage: 2\n"
         "cluster:\n"
         "  topology: one-rtx4090\n"
         "simulation:\n"
         "  steps: 2\n"
         "  on_oom: continue\n" +
         extra;
}

std::size_t lines(const std::string& s) { return zerosim::test::count_lines(s); }

void check_result(const fs::path& dir) {
  INFO("variant dir " << dir);
  const json r = read_json(dir / "result.json");
  CHECK(r.at("summary").at("step_time_s").get<double>() > 0);
  CHECK(r.at("summary").at("peak_memory_bytes").get<double>() > 0);
  CHECK_NOTHROW(read_json(dir / "trace.json"));
  CHECK(fs::exists(dir / "memory.csv"));
}

/// Checks the bad-input contract: exit 2, exactly one stderr line starting "zerosim: " and naming `what`, and no
/// output directory.
void check_rejected(const Outcome& o, const fs::path& out_dir, const std::string& what) {
  INFO("stderr: " << o.err);
  CHECK(o.status == 2);
  CHECK(lines(o.err) == 1);
  CHECK(o.err.rfind("zerosim: ", 0) == 0);
  CHECK_THAT(o.err, Contains(what));
  CHECK_FALSE(fs::exists(out_dir));
}

} // namespace

TEST_CASE("zerosim run: the single-GPU example runs every ZeRO stage and the offload options", "[e2e]") {
  TempDir tmp;
  const fs::path out = tmp.path() / "out";
  const std::string example = std::string(ZEROSIM_DATA_DIR) + "/scenarios/examples/single-gpu-zero-stages.yaml";
  const Outcome o = run_zerosim(tmp.path(), {"run", example, "--out", out.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  const std::vector<std::string> dirs = {"zero-stage-0",
                                         "zero-stage-1",
                                         "zero-stage-2",
                                         "zero-stage-3",
                                         "zero-stage-2-offload_optimizer-cpu",
                                         "zero-stage-3-offload_optimizer-cpu-offload_param-cpu"};
  for (const auto& d : dirs)
    check_result(out / d);
  const json s = read_json(out / "summary.json");
  REQUIRE(s.at("variants").size() == dirs.size());
  CHECK(s.at("variants").at(2).at("dir") == "zero-stage-2");
  CHECK_THAT(o.out, Contains("GiB = 2^30"));
  // GPT-2 XL, Ψ = 1,557,611,200 on a 24 GiB card. Stages 0-3 at N_d = 1: 16 B/param of model states (24.9e9 B)
  // plus fp32 gradients built at the optimizer step (4 B/param, or 4 x 1e9 B per stage-3 sub-group) exceed
  // 24 GiB = 25.77e9 B (ZeRO paper §3.1; zero_semantics.md §3.3-3.5). With the optimizer on the CPU the GPU keeps
  // 2 B/param of bf16 params (3.1e9 B) plus activations and buffers: it fits.
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    INFO(dirs[i]);
    const bool offload = i >= 4;
    CHECK(read_json(out / dirs[i] / "result.json").at("summary").at("fits").get<bool>() == offload);
  }
}

TEST_CASE("zerosim run: an OOM on several GPUs at once ends the run cleanly with on_oom stop", "[e2e]") {
  // Regression: stopping the run (Actor::kill_all) unwound actors blocked in a Wait, and the RAII unlock of the
  // event mutex made a simcall during that unwinding: SimGrid aborted the process. llama-2-7b at micro-batch 4,
  // seq 4096 keeps 32 layers x ~2.4 GiB of activations, far beyond 80 GiB, on every one of the 8 GPUs.
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "oom.yaml",
                                 "name: oom8\nmodel: llama-2-7b\n"
                                 "training: {micro_batch: 4, seq_len: 4096, flash_attention: true}\n"
                                 "zero: {stage: 3}\ncluster: {topology: dgx-h100, nodes: 1}\n"
                                 "simulation: {steps: 2}\noutputs: {trace_json: false, memory_csv: false}\n");
  const fs::path out = tmp.path() / "out";
  const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.err, !Contains("failed"));
  CHECK_THAT(o.out, Contains("out of GPU memory"));
  const json r = read_json(out / "result.json");
  CHECK(r.at("summary").at("oom").get<bool>());
  CHECK_FALSE(r.at("summary").at("fits").get<bool>());
}

TEST_CASE("zerosim run: a single variant writes its files directly into --out", "[e2e]") {
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "small.yaml", small_scenario());
  const fs::path out = tmp.path() / "out";
  const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  check_result(out);
  CHECK(fs::exists(out / "summary.json"));
  CHECK_THAT(o.out, Contains("step time"));
  CHECK_THAT(o.out, Contains("tokens/s"));
  CHECK_THAT(o.out, Contains("fits in"));
}

TEST_CASE("zerosim run: outputs.trace_steps keeps the first steps in trace.json and memory.csv only", "[e2e]") {
  // 2 steps simulated, 1 traced: trace.json has step 0's marks and no event after step 0 ends; memory.csv no sample
  // after it; result.json still reports both steps.
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "small.yaml", small_scenario());
  const fs::path out = tmp.path() / "out";
  const Outcome o =
      run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string(), "--set", "outputs.trace_steps=1"});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  const json trace = read_json(out / "trace.json");
  double step0_end = -1;
  std::vector<std::string> marks;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == "i") {
      marks.push_back(e.at("name"));
      if (e.at("name") == "step 0 end")
        step0_end = e.at("ts").get<double>();
    }
  CHECK(marks == std::vector<std::string>{"step 0 begin", "step 0 end"});
  REQUIRE(step0_end > 0);
  std::size_t spans = 0;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == "X" || e.at("ph") == "C") {
      spans += e.at("ph") == "X";
      CHECK(e.at("ts").get<double>() < step0_end);
    }
  CHECK(spans > 0);
  std::istringstream csv(slurp(out / "memory.csv"));
  std::string line;
  std::getline(csv, line); // header
  while (std::getline(csv, line))
    CHECK(std::stod(line.substr(0, line.find(','))) * 1e6 < step0_end); // time_s in s, ts in us
  const json r = read_json(out / "result.json");
  CHECK(r.at("step_times_s").size() == 2);
  CHECK(r.at("scenario").at("outputs").at("trace_steps") == 1);
}

TEST_CASE("zerosim run: the steady step time with the throughput timer's sync does not depend on simulation.steps",
          "[e2e]") {
  // DeepSpeed's ThroughputTimer (start_step=2) syncs the device from step 2 on; with training.loss_sync off nothing
  // else holds the host back, so step 1 (no sync, the host runs ahead) is shorter than every later step. The steady
  // window starts at step 2 (first_steady_step), so 3 and 9 steps give the same mean. Steps 2..8 repeat one program
  // on the same state: their durations differ only by the rounding of the absolute clock (~1e-16 x 1 s per event),
  // far below the 1e-9 relative tolerance; step 1 left in would move the 3-step mean by about 3 %.
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "timer.yaml",
                                 "name: e2e-timer\n"
                                 "model: gpt2\n"
                                 "training: {micro_batch: 2, seq_len: 512, grad_accum: 4, precision: bf16, "
                                 "flash_attention: true, loss_sync: false}\n"
                                 "zero: {stage: 2, throughput_timer_sync: true}\n"
                                 "cluster: {topology: dgx-a100, nodes: 1}\n"
                                 "simulation: {steps: 3, fidelity: analytic}\n");
  const auto summary_at = [&](int steps) {
    const fs::path out = tmp.path() / ("out" + std::to_string(steps));
    const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string(), "--set",
                                               "simulation.steps=" + std::to_string(steps)});
    INFO("stdout: " << o.out << "\nstderr: " << o.err);
    REQUIRE(o.status == 0);
    CHECK_THAT(o.out, Contains("mean of steps >= 2"));
    return read_json(out / "result.json").at("summary");
  };
  const json s3 = summary_at(3);
  const json s9 = summary_at(9);
  REQUIRE(s3.at("step_times_s").size() == 3);
  REQUIRE(s9.at("step_times_s").size() == 9);
  CHECK(s3.at("steady_first_step") == 2);
  const double t3 = s3.at("step_time_s").get<double>();
  const double t9 = s9.at("step_time_s").get<double>();
  CHECK(t3 == Approx(t9).epsilon(1e-9));
  // The window excludes step 1: the 3-step mean is step 2 alone, and step 1 is measurably shorter.
  CHECK(t3 == Approx(s3.at("step_times_s")[2].get<double>()).epsilon(1e-12));
  CHECK(s3.at("step_times_s")[1].get<double>() < 0.97 * t3);
}

TEST_CASE("zerosim run: stage 3 with parameter and optimizer offload runs every stream to the end", "[e2e]") {
  // Regression: a Record could find a waiter's condition-variable slot before it was filled (creating it is a
  // SimGrid simcall, so other actors ran in between) and the simulation crashed. The run must finish and say so.
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "small.yaml", small_scenario());
  const fs::path out = tmp.path() / "out";
  const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string(), "--set", "zero.stage=3",
                                             "--set", "zero.offload_optimizer=cpu", "--set", "zero.offload_param=cpu"});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  check_result(out);
  CHECK_THAT(o.out, !Contains("did not finish"));
}

TEST_CASE("zerosim run: ranks stepping together hold torch's CPU Adam temporaries at once on their node", "[e2e]") {
  // Two GPUs of one node, stage 2 + CPU optimizer offload with torch.optim's single-tensor Adam on the host: each
  // rank's host peak is during its step, with v.sqrt() and its quotient (2 x 4 B per partition element) live. The
  // ranks are symmetric and step at the same time, so the node's host peak is exactly twice a rank's.
  TempDir tmp;
  const fs::path sc =
      write_file(tmp.path(), "np.yaml",
                 "name: np\nmodel: gpt2\ntraining: {seq_len: 128, optimizer_impl: torch-single-tensor}\n"
                 "zero: {stage: 2, offload_optimizer: cpu}\ncluster: {topology: 2x-rtx3090-nvlink}\n");
  const fs::path out = tmp.path() / "out";
  const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  const json s = read_json(out / "result.json").at("summary");
  const double rank = s.at("host_peak_memory_bytes").get<double>();
  REQUIRE(rank > 0);
  CHECK(s.at("host_node_peak_memory_bytes").get<double>() == Approx(2 * rank).epsilon(1e-9));
}

TEST_CASE("zerosim run: the DGX presets check host RAM (datasheet size) and report a host OOM", "[e2e]") {
  // NVIDIA DGX A100 640GB datasheet: 2 TB system memory (32 x 64 GiB DIMMs = 2048 GiB). ZeRO-Infinity stage 3 with
  // optimizer and parameter offload keeps per parameter on the host: fp32 master 4 B + Adam m, v 8 B + fp32 grads
  // 4 B + bf16 param partition 2 B + bf16 grad partition 2 B = 20 B. GPT-3 175B (174.6e9 params, preset) needs
  // ~3.5e12 B = 3250 GiB per node whatever N_d within the node, more than 2048 GiB: a host OOM without any
  // cluster.host_memory in the scenario. GPT-2 XL (1.56e9 x 20 B = 29 GiB) fits the same node.
  TempDir tmp;
  const std::string body =
      "training: {micro_batch: 1, seq_len: 1024, activation_checkpointing: true}\n"
      "zero: {stage: 3, offload_optimizer: cpu, offload_param: cpu}\n"
      "cluster: {topology: dgx-a100}\n"
      "simulation: {steps: 1, fidelity: analytic, on_oom: continue}\n";
  const fs::path big = write_file(tmp.path(), "big.yaml", "name: big\nmodel: gpt3-175b\n" + body);
  const Outcome o = run_zerosim(tmp.path(), {"run", big.string(), "--out", (tmp.path() / "big").string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("of 2048.00 GiB"));
  CHECK_THAT(o.out, Contains("host OOM"));
  const json r = json::parse(slurp(tmp.path() / "big" / "result.json"));
  CHECK(r["summary"]["fits"] == false);

  const fs::path small = write_file(tmp.path(), "small.yaml", "name: small\nmodel: gpt2-xl\n" + body);
  const Outcome ok = run_zerosim(tmp.path(), {"run", small.string(), "--out", (tmp.path() / "small").string()});
  INFO("stdout: " << ok.out << "\nstderr: " << ok.err);
  REQUIRE(ok.status == 0);
  CHECK_THAT(ok.out, !Contains("host OOM"));
  CHECK_THAT(ok.out, Contains("of 2048.00 GiB"));
}

TEST_CASE("zerosim run: NVMe optimizer offload names the swap buffers that size its host memory, in GB", "[e2e]") {
  // DeepSpeed's PartitionedOptimizerSwapper keeps offload_optimizer.buffer_count (4) pinned fp32 buffers, each the
  // largest sub-group. GPT-2 small on one GPU (N_d = 1): the 124,439,808 trainable params stay below the default
  // sub_group_size 1e9, so they form one sub-group: 4 x 124439808 x 4 B = 1,991,036,928 B = 1.99 GB, plus its fp32
  // gradient buffer 124439808 x 4 B = 0.50 GB. The host peak per rank is those plus the 2 B/param lp grad partition
  // (0.25 GB) and little else: the buffers are far more than a quarter of it, so the note is due.
  // A smaller sub_group_size, 1e7 (the power of ten below 1.24e8): params pack in order, wte (50257 x 768 =
  // 38,597,376 elements) first, which alone passes 1e7 and is a sub-group; the rest (wpe 786,432, then the 12
  // blocks' tensors, the largest 3072 x 768 = 2,359,296) close groups below 1e7 + 2,359,296. The largest is wte's:
  // 4 x 38597376 x 4 B = 617,558,016 B = 0.62 GB.
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "nvme.yaml",
                                 "name: nvme\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 256}\n"
                                 "zero: {stage: 3, offload_optimizer: nvme}\ncluster: {topology: one-rtx4090}\n"
                                 "simulation: {steps: 2, fidelity: analytic}\n"
                                 "outputs: {trace_json: false, memory_csv: false}\n");
  const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--out", (tmp.path() / "o").string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("note: host memory: offload_optimizer=nvme keeps offload_optimizer.buffer_count = 4 "
                             "pinned swap buffers, each the largest optimizer sub-group (124439808 fp32 elements at "
                             "zero.sub_group_size = 1e9): 4 x 124439808 x 4 B = 1.99 GB per rank, plus a 0.50 GB fp32 "
                             "gradient buffer of that sub-group"));
  CHECK_THAT(o.out, Contains("--set zero.sub_group_size=1e7: largest sub-group 38597376 elements, swap buffers 0.62 GB "
                             "per rank"));
  const json r = json::parse(slurp(tmp.path() / "o" / "result.json"));
  const std::string diags = r["summary"]["diagnostics"].dump();
  CHECK_THAT(diags, Contains("1.99 GB per rank"));
  // The steady step's exposed offload time splits into PCIe copies and NVMe swaps, which add up to it; the step's NVMe
  // bytes are DeepSpeed's swap_in_optimizer_state / swap-out of the one sub-group: fp32 params, exp_avg, exp_avg_sq
  // and the fp32 gradients, 4 x 4 B x 124439808 = 1,991,036,928 B each way (the whole run's "copies" has more).
  const json& b = r["summary"]["breakdown"];
  CHECK(b["exposed_offload_nvme_s"].get<double>() > 0);
  CHECK(b["exposed_offload_pcie_s"].get<double>() > 0);
  CHECK(b["exposed_offload_pcie_s"].get<double>() + b["exposed_offload_nvme_s"].get<double>() ==
        Approx(b["exposed_offload_s"].get<double>()).epsilon(1e-12));
  const json& ps = r["copies_per_step"];
  CHECK(ps["step"] == 1);
  CHECK(ps["nvme_read_bytes"].get<double>() == Approx(16.0 * 124439808).epsilon(1e-12));
  CHECK(ps["nvme_write_bytes"].get<double>() == Approx(16.0 * 124439808).epsilon(1e-12));
  CHECK(r["copies"]["nvme_read_bytes"].get<double>() > ps["nvme_read_bytes"].get<double>());
  CHECK_THAT(o.out, Contains("offload per step:  rank 0, step 1: PCIe H2D ") &&
                        Contains("; NVMe read 1.99 GB, write 1.99 GB\n") && Contains(" s, NVMe swaps "));

  // CPU offload has no swap buffers: no such note.
  const Outcome cpu = run_zerosim(tmp.path(), {"run", sc.string(), "--set", "zero.offload_optimizer=cpu", "--out",
                                               (tmp.path() / "cpu").string()});
  INFO("cpu stdout: " << cpu.out);
  REQUIRE(cpu.status == 0);
  CHECK_THAT(cpu.out, !Contains("swap buffers"));
}

TEST_CASE("zerosim run: pin_memory without offload is accepted with a note that it has no effect", "[e2e]") {
  // DeepSpeed accepts offload_optimizer: {device: none, pin_memory: true} and ignores pin_memory (it is read only from
  // an active offload config); zerosim runs it too, but says so. The flat key for offload_param likewise.
  TempDir tmp;
  const std::string head =
      "name: pin\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 256}\ncluster: {topology: one-rtx4090}\n"
      "simulation: {steps: 2, fidelity: analytic}\noutputs: {trace_json: false, memory_csv: false}\n";
  const fs::path sc = write_file(tmp.path(), "pin.yaml",
                                 head + "zero: {stage: 3, offload_optimizer: {device: none, pin_memory: true}}\n");
  const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--set", "zero.offload_param_pin_memory=false",
                                             "--out", (tmp.path() / "o").string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("note: offload_optimizer.pin_memory is set (true) but offload_optimizer is none: "
                             "pin_memory only places offloaded states in pinned host memory, so it has no effect "
                             "without offload_optimizer/offload_param"));
  CHECK_THAT(o.out, Contains("note: offload_param.pin_memory is set (false) but offload_param is none"));
  // With the offload on, pin_memory applies: no such note.
  const fs::path on_sc = write_file(tmp.path(), "on.yaml",
                                    head + "zero: {stage: 3, offload_optimizer: {device: cpu, pin_memory: true}}\n");
  const Outcome on = run_zerosim(tmp.path(), {"run", on_sc.string(), "--out", (tmp.path() / "on").string()});
  INFO("stdout: " << on.out << "\nstderr: " << on.err);
  REQUIRE(on.status == 0);
  CHECK_THAT(on.out, !Contains("pin_memory is set"));
}

TEST_CASE("zerosim run: a GPU or CPU preset changed inline is labelled modified in the header and result.json",
          "[e2e]") {
  // a100-80gb with memory: 80GB (80e9 B = 74.51 GiB, where the card exposes 80 GiB = 85.9e9 B): the header names
  // the card by its label, and the GB-vs-GiB note still reads the 80 out of the preset's name.
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "gpu.yaml",
                                 "name: gpu\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 256}\n"
                                 "zero: {stage: 2, offload_optimizer: cpu}\n"
                                 "cluster: {topology: one-rtx4090, gpu: {preset: a100-80gb, memory: 80GB}}\n"
                                 "simulation: {steps: 2, fidelity: analytic}\n"
                                 "outputs: {trace_json: false, memory_csv: false}\n");
  const fs::path out = tmp.path() / "o";
  const Outcome o =
      run_zerosim(tmp.path(), {"run", sc.string(), "--set", "cluster.cpu.cores=8", "--out", out.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("1 node(s) x 1 a100-80gb (modified: memory=80GB) (74.51 GiB each)"));
  CHECK_THAT(o.out, Contains("cluster.gpu.memory is 80 GB = 74.51 GiB (GB = 1e9 B), but a 80 GB card such as "
                             "a100-80gb exposes 80 GiB (the preset's value): write 80GiB if you meant the card"));
  // The one-rtx4090 topology's CPU is a Ryzen 9 7950X; cores set from the command line (named where the report
  // gives the offloaded optimizer's host time).
  CHECK_THAT(o.out, Contains("CPU ryzen9-7950x (--set cores=8)"));
  const json r = read_json(out / "result.json");
  CHECK(r.at("scenario").at("gpu").at("name") == "a100-80gb (modified: memory=80GB)");
  CHECK(r.at("scenario").at("gpu").at("preset") == "a100-80gb");
  CHECK(r.at("scenario").at("cpu").at("name") == "ryzen9-7950x (--set cores=8)");
  CHECK(r.at("scenario").at("cpu").at("preset") == "ryzen9-7950x");
}

TEST_CASE("zerosim run: on_oom continue runs past a huge OOM to the end (no retry waits after the OOM)", "[e2e]") {
  // Regression (session 8 new-user test): 12 GPT-3-175B layers at stage 3 with CPU optimizer offload on one 24 GiB
  // card OOM at initialisation (41.7 GiB of bf16 partitions). Every later cudaMalloc is over the capacity too; its
  // retry used to wait for other streams' record_stream'd blocks while those streams waited on it: a SimGrid
  // deadlock, no step time. With memory counted as unlimited after the OOM the two steps complete.
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "huge.yaml",
                                 "name: huge\nmodel: {preset: gpt3-175b, layers: 12}\n"
                                 "training: {micro_batch: 1, seq_len: 1024, flash_attention: true}\n"
                                 "zero: {stage: 3, offload_optimizer: cpu}\ncluster: {topology: one-rtx4090}\n"
                                 "simulation: {steps: 2, fidelity: analytic, on_oom: continue}\n");
  const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--out", (tmp.path() / "o").string()});
  INFO(o.out << o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("out of GPU memory"));
  CHECK_THAT(o.out + o.err, !Contains("eadlock"));
  CHECK_THAT(o.out, !Contains("Free ops ran before"));
  const json r = json::parse(slurp(tmp.path() / "o" / "result.json"));
  CHECK(r["finished"] == true);
  CHECK(r["summary"]["steps_completed"] == 2);
}

TEST_CASE("zerosim run: the report gives the parameter count, GPT-2 small's 124,439,808", "[e2e]") {
  // Hugging Face gpt2: model.num_parameters() = 124,439,808 (wte 50257 x 768 tied with the head, wpe 1024 x 768,
  // 12 blocks of 7,087,872, final LayerNorm 1,536).
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "small.yaml", small_scenario());
  const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--out", (tmp.path() / "o").string()});
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("parameters:        124.4 million (Ψ = 124439808)"));
  const json r = json::parse(slurp(tmp.path() / "o" / "result.json"));
  CHECK(r["summary"]["params"].get<double>() == 124439808.0);
}

TEST_CASE("zerosim run: one step's collectives per rank match the ZeRO paper's 2Ψ and 3Ψ on a ring of 8", "[e2e]") {
  // GPT-2 small, Ψ = 124,439,808: 2Ψ B = 248,879,616 B of bf16. One DGX A100 node, N_d = 8, rings forced. Stage 3
  // with stage3_max_reuse_distance 0, no prefetch (a prefetch walk passing a gathered parameter's backward use keeps
  // it until then) and no persistent parameters gathers every parameter in forward and again in backward. Per step,
  // by hand (ZeRO paper §7; a ring rank sends (n-1)/n of an all-gather or reduce-scatter and 2(n-1)/n of an
  // all-reduce):
  //   stage 0: all-reduce 2Ψ B = 248,879,616 B, wire 2 x 7/8 x 248,879,616 = 435,539,328 B (= 1.75Ψ x 2 B);
  //   stage 3: all-gather 4Ψ B = 497,759,232 B, wire 7/8 of it = 435,539,328 B; reduce-scatter 2Ψ B = 248,879,616 B,
  //            wire 217,769,664 B; in all 653,308,992 B = 2.625Ψ x 2 B = 3Ψ x 7/8. Besides, the step's all-reduce of
  //            the grad norm's square (8 B double, stage3.py get_grad_norm_direct; bf16: no overflow flag), wire
  //            2 x 7/8 x 8 = 14 B: 653,309,006 B = 2.62500006Ψ x 2 B, printed 2.63Ψ.
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "ring.yaml",
                                 "name: ring-traffic\nmodel: gpt2\ntraining:\n  micro_batch: 1\n  seq_len: 256\n"
                                 "zero:\n  stage3_max_reuse_distance: 0\n  stage3_param_persistence_threshold: 0\n"
                                 "  stage3_prefetch_bucket_size: 0\n"
                                 "cluster:\n  topology: dgx-a100\n  collective_algorithm: ring\n"
                                 "simulation:\n  steps: 3\ncompare:\n  zero.stage: [0, 3]\n");
  const fs::path out = tmp.path() / "o";
  const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  const json r0 = read_json(out / "stage-0" / "result.json");
  const json& c0 = r0.at("collectives_per_step");
  CHECK(c0.at("step") == 2);
  CHECK(c0.at("steady_state") == true);
  CHECK(c0.at("all_reduce").at("payload_bytes").get<double>() == Approx(248879616.0).epsilon(1e-12));
  CHECK(c0.at("all_reduce").at("wire_bytes").get<double>() == Approx(435539328.0).epsilon(1e-12));
  CHECK(c0.at("all_gather").at("calls").get<double>() == 0);
  CHECK(c0.at("reduce_scatter").at("calls").get<double>() == 0);
  const json r3 = read_json(out / "stage-3" / "result.json");
  const json& c3 = r3.at("collectives_per_step");
  CHECK(c3.at("all_gather").at("payload_bytes").get<double>() == Approx(497759232.0).epsilon(1e-12));
  CHECK(c3.at("all_gather").at("wire_bytes").get<double>() == Approx(435539328.0).epsilon(1e-12));
  CHECK(c3.at("reduce_scatter").at("payload_bytes").get<double>() == Approx(248879616.0).epsilon(1e-12));
  CHECK(c3.at("reduce_scatter").at("wire_bytes").get<double>() == Approx(217769664.0).epsilon(1e-12));
  CHECK(c3.at("all_reduce").at("calls").get<double>() == 1);
  CHECK(c3.at("all_reduce").at("payload_bytes").get<double>() == 8.0);
  CHECK(c3.at("all_reduce").at("wire_bytes").get<double>() == Approx(14.0).epsilon(1e-12));
  // Every step carries its own figures; the steady steps 1 and 2 are alike, and the steps add up to the whole
  // run's "collectives" (warm-up included).
  for (const json* r : {&r0, &r3}) {
    const json& steps = r->at("steps");
    REQUIRE(steps.size() == 3);
    CHECK(steps[1].at("collectives") == steps[2].at("collectives"));
    for (const char* kind : {"all_reduce", "all_gather", "reduce_scatter"})
      for (const char* field : {"calls", "payload_bytes", "wire_bytes"}) {
        double sum = 0;
        for (const auto& st : steps)
          sum += st.at("collectives").at(kind).at(field).get<double>();
        INFO(kind << " " << field);
        CHECK(sum == Approx(r->at("collectives").at(kind).at(field).get<double>()).epsilon(1e-12));
      }
  }
  // The console: one line per variant, in GB (1e9 B), against the paper.
  CHECK_THAT(o.out, Contains("  comm per step: step 2, per rank: all-reduce 0.25 GB (wire 0.44 GB, 1 call); wire "
                             "0.44 GB = 1.75Ψ elements of 2 B; ZeRO paper §7: 2Ψ x 7/8 = 1.75Ψ\n"));
  CHECK_THAT(o.out, Contains("per rank: all-reduce 0.00 GB (wire 0.00 GB, 1 call), all-gather"));
  CHECK_THAT(o.out, Contains("reduce-scatter 0.25 GB (wire 0.22 GB, 1 call); wire 0.65 GB = 2.63Ψ elements of 2 B; "
                             "ZeRO paper §7: 3Ψ x 7/8 = 2.62Ψ\n"));
}

TEST_CASE("zerosim run: a fabric_oversubscription that leaves a leaf switch no whole uplinks is an input error",
          "[e2e]") {
  // newuser23 finding 3. A fat-tree leaf switch of `leaf` nodes has leaf / fabric_oversubscription uplinks, which must
  // be a whole number >= 1 (topologies/builder/platform_builder.cpp). 16 DGX A100 nodes at fat_tree_leaf_radix 4: 4
  // nodes per leaf, so 1, 2 and 4 are the valid values; 3 (4/3 uplinks), 1.5 (8/3), 0.5 (8 uplinks for 4 nodes, an
  // undersubscribed leaf) and 64 (1/16 uplink) are not. Each is refused by the loader, before anything runs: one
  // line with the place and the key, exit 2, the value as written.
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "fab.yaml",
                                 "name: fab\nmodel: gpt2\ntraining:\n  micro_batch: 1\n  seq_len: 128\n"
                                 "zero:\n  stage: 1\ncluster:\n  topology: dgx-a100\n  nodes: 16\n"
                                 "  fat_tree_leaf_radix: 4\n  fabric_oversubscription: 3\n"
                                 "simulation:\n  steps: 1\n  fidelity: analytic\n");
  const fs::path out = tmp.path() / "o";
  check_rejected(run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()}), out,
                 "fab.yaml:12: cluster.fabric_oversubscription: must be at least 1 and divide the 4 nodes per leaf "
                 "switch into whole uplinks, got '3'; use a fabric_oversubscription that divides 4 (1, 2, 4)");
  for (const char* v : {"1.5", "0.5", "64"})
    check_rejected(run_zerosim(tmp.path(),
                               {"run", sc.string(), "--set", std::string("cluster.fabric_oversubscription=") + v,
                                "--out", out.string()}),
                   out,
                   std::string(
                       "<cli>: cluster.fabric_oversubscription: must be at least 1 and divide the 4 nodes per leaf "
                       "switch into whole uplinks, got '") +
                       v + "'");
  // 6 nodes and no radix: the default 32 is lowered to 6 nodes per leaf (a divisor of the nodes), which 4 does not
  // divide; the message says where the 6 comes from.
  check_rejected(run_zerosim(tmp.path(),
                             {"run", sc.string(), "--set", "cluster.nodes=6", "--set", "cluster.fat_tree_leaf_radix=0",
                              "--set", "cluster.fabric_oversubscription=4", "--out", out.string()}),
                 out,
                 "divide the 6 nodes per leaf switch (the default 32 lowered to a divisor of the 6 nodes) into whole "
                 "uplinks, got '4'; use a fabric_oversubscription that divides 6 (1, 2, 3, 6)");
  // The radix given on the command line against the file's 3: blamed on the radix, the file's line quoted.
  check_rejected(run_zerosim(tmp.path(),
                             {"run", sc.string(), "--set", "cluster.fat_tree_leaf_radix=8", "--out", out.string()}),
                 out,
                 "<cli>: cluster.fat_tree_leaf_radix: 8 nodes per leaf switch do not make whole uplinks at "
                 "fabric_oversubscription '3' (cluster.fabric_oversubscription = 3 at fab.yaml:12)");
  check_rejected(run_zerosim(tmp.path(),
                             {"run", sc.string(), "--set", "cluster.fabric_levels=4", "--out", out.string()}),
                 out,
                 "<cli>: cluster.fabric_levels: a fat tree has 2 (leaf, spine) or 3 (leaf, aggregation, core) "
                 "switch levels, got '4'");
  // A divisor runs: 4 nodes per leaf / 2 = 2 uplinks per leaf switch.
  const Outcome ok = run_zerosim(tmp.path(), {"run", sc.string(), "--set", "cluster.fabric_oversubscription=2", "--set",
                                              "cluster.nodes=4", "--out", out.string()});
  INFO(ok.err);
  CHECK(ok.status == 0);
}

TEST_CASE("zerosim run: the comm per step line says why stage 3 at a huge N_d sends more than the paper's 3Ψ",
          "[e2e]") {
  // newuser23 finding 6. GPT-2 small on 100,000 DGX H100 nodes, N_d = 800,000. DeepSpeed pads each parameter tensor
  // to a multiple of N_d elements (partition_parameters.py), and stage 3 reduce-scatters the padded gradients. By
  // hand, ceil(numel / 800,000) x 800,000 over GPT-2's 148 tensors:
  //   wte 50257 x 768 = 38,597,376 -> 49 x 800,000 = 39,200,000;  wpe 1024 x 768 = 786,432 -> 800,000;
  //   per block: 8 vectors (ln_1, ln_2 weight and bias, 4 biases) -> 8 x 800,000 = 6,400,000; c_attn 768 x 2304 =
  //   1,769,472 -> 2,400,000; attn c_proj 768 x 768 -> 800,000; c_fc and mlp c_proj 768 x 3072 = 2,359,296 ->
  //   2,400,000 each; a block 14,400,000, 12 blocks 172,800,000;  ln_f weight and bias -> 1,600,000.
  //   In all 214,400,000 elements for Ψ = 124,439,808: 89,960,192 of padding = 0.72Ψ. 148 = 2 + 12 x 12 + 2 tensors.
  // The reduce-scatter's payload is the padded gradients, 214,400,000 x 2 B = 428,800,000 B (the paper's 2Ψ B is
  // 248,879,616 B).
  TempDir tmp;
  const std::string scenario = std::string(ZEROSIM_DATA_DIR) + "/scenarios/teaching/stages-at-scale.yaml";
  const fs::path out = tmp.path() / "o";
  const Outcome o = run_zerosim(tmp.path(), {"run", scenario, "--set", "compare=null", "--set", "zero.stage=3", "--set",
                                             "model=gpt2", "--set", "training.seq_len=1024", "--set",
                                             "cluster.nodes=100000", "--out", out.string()});
  INFO(o.out << o.err);
  REQUIRE(o.status == 0);
  const json r = read_json(out / "result.json");
  CHECK(r.at("collectives_per_step").at("reduce_scatter").at("payload_bytes").get<double>() ==
        Approx(428800000.0).epsilon(1e-12));
  CHECK(r.at("summary").at("stage3_padding_params").get<double>() == 89960192.0);
  CHECK(r.at("summary").at("param_tensors").get<int>() == 148);
  CHECK_THAT(o.out, Contains("ZeRO paper §7: 3Ψ x 799999/800000 = 3.00Ψ (more: stage 3 pads each of the 148 parameter "
                             "tensors to a multiple of N_d = 800000 elements before it gathers or reduce-scatters it, "
                             "0.72Ψ of padding in all)"));
}

TEST_CASE("zerosim run: stage 0 under BF16_Optimizer says what it holds and why it sends 3Ψ", "[e2e]") {
  // newuser23 finding 6. bf16 at stage 0 before DeepSpeed 0.17.6 accumulates gradients in fp32, so DeepSpeed runs
  // BF16_Optimizer (engine.py), which partitions the fp32 master and Adam states over N_d like stage 1 and all-gathers
  // the updated bf16 params after the gradient all-reduce. GPT-2 small (Ψ = 124,439,808) on one DGX A100, N_d = 8:
  //   holds 2Ψ bf16 params + 4Ψ fp32 gradient buffer + 12Ψ/8 = 7.5Ψ = 933,298,560 B = 0.93 GB = 0.869 GiB;
  //   sends all-reduce 2 x 7/8 x Ψ + all-gather 7/8 x Ψ elements = 3Ψ x 7/8 = 2.62Ψ (the paper's stage 0: 1.75Ψ).
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "bf.yaml",
                                 "name: bf\nmodel: gpt2\ntraining:\n  micro_batch: 1\n  seq_len: 128\n"
                                 "  precision: bf16\nzero:\n  stage: 0\n  deepspeed_version: 0.12.0\n"
                                 "cluster:\n  topology: dgx-a100\nsimulation:\n  steps: 3\n  fidelity: analytic\n");
  const fs::path out = tmp.path() / "o";
  const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()});
  INFO(o.out << o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("model states:      16Ψ = 1.99 GB (1.854 GiB) as the ZeRO paper counts them"));
  CHECK_THAT(o.out, Contains("but DeepSpeed runs BF16_Optimizer here (bf16 with fp32 gradient accumulation), which "
                             "partitions the fp32 master and Adam states over N_d: 2Ψ bf16 params + 4Ψ fp32 gradient "
                             "buffer + 12Ψ/N_d = 0.93 GB (0.869 GiB)"));
  CHECK_THAT(o.out, Contains("= 2.62Ψ elements of 2 B; ZeRO paper §7: 2Ψ x 7/8 = 1.75Ψ (DeepSpeed's BF16_Optimizer, "
                             "stage 1 in all but name: gradient all-reduce + parameter all-gather: 3Ψ x 7/8 = "
                             "2.62Ψ)\n"));
  // From DeepSpeed 0.17.6 bf16 accumulates in bf16 at stage 0: FP16_Optimizer, the paper's 16Ψ, no note.
  const Outcome f = run_zerosim(tmp.path(), {"run", sc.string(), "--set", "zero.deepspeed_version=0.17.6", "--out",
                                             (tmp.path() / "f").string()});
  INFO(f.out << f.err);
  REQUIRE(f.status == 0);
  CHECK_THAT(f.out, !Contains("BF16_Optimizer"));
  CHECK_THAT(f.out, Contains("ZeRO paper §7: 2Ψ x 7/8 = 1.75Ψ\n"));
}

TEST_CASE("zerosim run: --set and compare make one sub-directory per variant", "[e2e]") {
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "small.yaml", small_scenario("compare:\n  zero.stage: [0, 3]\n"));
  const fs::path out = tmp.path() / "out";
  const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--set", "training.micro_batch=2", "--out",
                                             out.string(), "--quiet"});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  check_result(out / "stage-0");
  check_result(out / "stage-3");
  CHECK(read_json(out / "stage-0" / "result.json").at("scenario").at("training").at("micro_batch") == 2);
  CHECK(read_json(out / "stage-3" / "result.json").at("variant") == "zero.stage=3");
  CHECK(o.out.empty()); // --quiet
}

TEST_CASE("zerosim run: a run into an earlier run's --out removes that run's variants it does not write", "[e2e]") {
  // First stages 0 and 3 (two sub-directories), then stage 0 alone into the same directory (files at the top):
  // stage-0/ and stage-3/ go, a user's own file in stage-3/ keeps that directory. Then the compare again: the
  // single run's top-level files go.
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "small.yaml", small_scenario("compare:\n  zero.stage: [0, 3]\n"));
  const fs::path out = tmp.path() / "out";
  REQUIRE(run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string(), "--quiet"}).status == 0);
  REQUIRE(fs::exists(out / "stage-3" / "result.json"));
  write_file(out / "stage-3", "notes.txt", "mine");
  const Outcome single =
      run_zerosim(tmp.path(), {"run", sc.string(), "--set", "compare=null", "--out", out.string(), "--quiet"});
  INFO("stderr: " << single.err);
  REQUIRE(single.status == 0);
  check_result(out);
  CHECK_FALSE(fs::exists(out / "stage-0"));
  CHECK_FALSE(fs::exists(out / "stage-3" / "result.json"));
  CHECK(fs::exists(out / "stage-3" / "notes.txt"));
  REQUIRE(run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string(), "--quiet"}).status == 0);
  CHECK_FALSE(fs::exists(out / "result.json"));
  CHECK_FALSE(fs::exists(out / "trace.json"));
  check_result(out / "stage-0");
}

TEST_CASE("zerosim run: pictures and scripts drawn from an earlier run go with it, a user's own files stay", "[e2e]") {
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "small.yaml", small_scenario());
  // A directory zerosim never ran into: files named like its pictures are the user's and stay.
  const fs::path mine = tmp.path() / "mine";
  fs::create_directories(mine);
  for (const char* f : {"report.html", "peak-memory.png", "peak-memory.gp", "notes.gp"})
    write_file(mine, f, "mine");
  REQUIRE(run_zerosim(tmp.path(), {"run", sc.string(), "--out", mine.string(), "--quiet"}).status == 0);
  for (const char* f : {"report.html", "peak-memory.png", "peak-memory.gp", "notes.gp"})
    CHECK(slurp(mine / f) == "mine");
  // After a zerosim run: the same names were drawn from it (plot writes the .gp beside the .png) and go with it.
  const fs::path out = tmp.path() / "out";
  REQUIRE(run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string(), "--quiet"}).status == 0);
  for (const char* f : {"report.html", "peak-memory.png", "peak-memory.gp", "step-breakdown.gp"})
    write_file(out, f, "drawn");
  write_file(out, "notes.gp", "mine");
  REQUIRE(run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string(), "--quiet"}).status == 0);
  for (const char* f : {"report.html", "peak-memory.png", "peak-memory.gp", "step-breakdown.gp"})
    CHECK_FALSE(fs::exists(out / f));
  CHECK(slurp(out / "notes.gp") == "mine");
}

TEST_CASE(
    "zerosim run: when the earlier run's outputs cannot all be replaced, none are, and one line says where the "
    "new ones are",
    "[e2e]") {
  // A directory where this run writes a file (out/trace.json): found before anything moves. The earlier run's
  // outputs stay as they were, this run's stay in out/.zerosim-partial with their summary.json, exit 2.
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "small.yaml", small_scenario());
  const fs::path out = tmp.path() / "out";
  REQUIRE(run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string(), "--quiet"}).status == 0);
  const std::string result = slurp(out / "result.json");
  const std::string summary = slurp(out / "summary.json");
  fs::remove(out / "trace.json");
  fs::create_directories(out / "trace.json" / "mine");
  const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--set", "zero.stage=1", "--out", out.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  CHECK(o.status == 2);
  CHECK(lines(o.err) == 1);
  CHECK_THAT(o.err, Contains("zerosim: " + (out / "trace.json").string() +
                             ": is a directory, where this run writes "
                             "its trace.json; nothing was replaced: " +
                             out.string() + " keeps the previous run's outputs, and this run's are in " +
                             (out / ".zerosim-partial").string()));
  CHECK_THAT(o.out, Contains("step time")); // the simulation finished: its report is printed
  CHECK(slurp(out / "result.json") == result);
  CHECK(slurp(out / "summary.json") == summary);
  CHECK(fs::exists(out / "memory.csv"));
  CHECK(fs::is_directory(out / "trace.json" / "mine"));
  CHECK(read_json(out / ".zerosim-partial" / "result.json").at("scenario").at("zero").at("stage") == 1);
  CHECK(fs::exists(out / ".zerosim-partial" / "summary.json"));
  CHECK_FALSE(fs::exists(out / ".zerosim-previous"));
  // No earlier run there (no summary.json): nothing to keep, and the line does not claim one (trial 24 finding 10).
  const fs::path fresh = tmp.path() / "fresh";
  fs::create_directories(fresh / "result.json");
  const Outcome f = run_zerosim(tmp.path(), {"run", sc.string(), "--out", fresh.string(), "--quiet"});
  CHECK(f.status == 2);
  CHECK_THAT(f.err, Contains("nothing was replaced: " + fresh.string() + " is left as it was, and this run's are in " +
                             (fresh / ".zerosim-partial").string()));
  CHECK_THAT(f.err, !Contains("previous run"));

  // A failure in the middle (this run's second variant directory, out/stage-2, is a dangling symbolic link, which
  // the check before the run does not see): the first variant's files had moved in and the earlier run's had moved
  // aside; every move is undone.
  const fs::path cmp = write_file(tmp.path(), "cmp.yaml", small_scenario("compare:\n  zero.stage: [0, 3]\n"));
  const fs::path out2 = tmp.path() / "out2";
  REQUIRE(run_zerosim(tmp.path(), {"run", cmp.string(), "--out", out2.string(), "--quiet"}).status == 0);
  const std::string stage0 = slurp(out2 / "stage-0" / "result.json");
  const std::string stage3 = slurp(out2 / "stage-3" / "result.json");
  const std::string summary2 = slurp(out2 / "summary.json");
  fs::create_symlink(tmp.path() / "nowhere", out2 / "stage-2");
  const fs::path cmp2 = write_file(tmp.path(), "cmp2.yaml", small_scenario("compare:\n  zero.stage: [0, 2]\n"));
  const Outcome mid = run_zerosim(tmp.path(), {"run", cmp2.string(), "--out", out2.string(), "--quiet"});
  INFO("stderr: " << mid.err);
  CHECK(mid.status == 2);
  CHECK(lines(mid.err) == 1);
  CHECK_THAT(mid.err,
             Contains((out2 / "stage-2" / "result.json").string() + ": cannot move this run's output into place ("));
  CHECK_THAT(mid.err, Contains("nothing was replaced: " + out2.string() + " keeps the previous run's outputs"));
  CHECK(slurp(out2 / "stage-0" / "result.json") == stage0);
  CHECK(slurp(out2 / "stage-3" / "result.json") == stage3);
  CHECK(slurp(out2 / "summary.json") == summary2);
  CHECK(fs::exists(out2 / "stage-0" / "trace.json"));
  CHECK(fs::exists(out2 / "stage-3" / "memory.csv"));
  for (const char* v : {"stage-0", "stage-2"})
    CHECK(fs::exists(out2 / ".zerosim-partial" / v / "result.json"));
  CHECK(fs::exists(out2 / ".zerosim-partial" / "summary.json"));
  CHECK_FALSE(fs::exists(out2 / ".zerosim-previous"));
  // Once the obstacle is gone the same run replaces the outputs whole.
  fs::remove(out2 / "stage-2");
  REQUIRE(run_zerosim(tmp.path(), {"run", cmp2.string(), "--out", out2.string(), "--quiet"}).status == 0);
  CHECK(read_json(out2 / "stage-2" / "result.json").at("scenario").at("zero").at("stage") == 2);
  CHECK_FALSE(fs::exists(out2 / "stage-3"));
  CHECK_FALSE(fs::exists(out2 / ".zerosim-partial"));
  CHECK_FALSE(fs::exists(out2 / ".zerosim-previous"));
}

TEST_CASE("zerosim run: without --out, outputs go to out/<scenario name> in the current directory", "[e2e]") {
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "small.yaml", small_scenario());
  const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--quiet"});
  INFO("stderr: " << o.err);
  REQUIRE(o.status == 0);
  check_result(tmp.path() / "out" / "e2e-small");
}

TEST_CASE("zerosim run: an unknown key is rejected naming the key", "[e2e]") {
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "bad.yaml",
                                 "name: bad\nmodel: gpt2\nzero:\n  stagee: 2\ncluster:\n  topology: one-rtx4090\n");
  const fs::path out = tmp.path() / "out";
  check_rejected(run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()}), out, "stagee");
}

TEST_CASE("zerosim run: a missing scenario file is rejected", "[e2e]") {
  TempDir tmp;
  const fs::path out = tmp.path() / "out";
  check_rejected(run_zerosim(tmp.path(), {"run", (tmp.path() / "nope.yaml").string(), "--out", out.string()}), out,
                 "nope.yaml");
}

TEST_CASE("zerosim run: a --set without '=' is rejected", "[e2e]") {
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "small.yaml", small_scenario());
  const fs::path out = tmp.path() / "out";
  check_rejected(run_zerosim(tmp.path(), {"run", sc.string(), "--set", "zero.stage", "--out", out.string()}), out,
                 "zero.stage");
}

TEST_CASE("zerosim run: a --set of an unknown key is rejected naming the key", "[e2e]") {
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "small.yaml", small_scenario());
  const fs::path out = tmp.path() / "out";
  check_rejected(run_zerosim(tmp.path(), {"run", sc.string(), "--set", "zero.bogus_knob=1", "--out", out.string()}),
                 out, "bogus_knob");
}

TEST_CASE("zerosim run, sweep and plan: the same key given twice with --set is rejected, not the later one kept",
          "[e2e]") {
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "small.yaml", small_scenario());
  const fs::path out = tmp.path() / "out";
  // Blanks around the key do not make it another key (normalize_override).
  check_rejected(run_zerosim(tmp.path(), {"run", sc.string(), "--set", "zero.stage=1", "--set", " zero.stage = 2",
                                          "--out", out.string()}),
                 out, "--set gives this key twice ('1', then '2')");
  check_rejected(run_zerosim(tmp.path(), {"sweep", sc.string(), "--axis", "training.micro_batch=1,2", "--set",
                                          "zero.stage=1", "--set", "zero.stage=3", "--out", out.string()}),
                 out, "zero.stage");
  const Outcome plan = run_zerosim(tmp.path(), {"plan", "--model", "gpt2", "--gpu", "rtx4090", "--set",
                                                "training.kernel_impl=fused", "--set", "training.kernel_impl=hf"});
  CHECK(plan.status == 2);
  CHECK_THAT(plan.err, Contains("training.kernel_impl") && Contains("twice"));
}

TEST_CASE("zerosim run: malformed YAML is rejected with its file name", "[e2e]") {
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "broken.yaml", "name: broken\nmodel: [gpt2\ntraining: {micro_batch: 1\n");
  const fs::path out = tmp.path() / "out";
  check_rejected(run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()}), out, "broken.yaml");
}

TEST_CASE("zerosim: bad command-line usage is one line and exit 2", "[e2e]") {
  TempDir tmp;
  const fs::path out = tmp.path() / "out";
  check_rejected(run_zerosim(tmp.path(), {"frobnicate"}), out, "frobnicate");
  check_rejected(run_zerosim(tmp.path(), {"run"}), out, "scenario");
  check_rejected(run_zerosim(tmp.path(), {"run", "x.yaml", "--no-such-option"}), out, "no-such-option");
  check_rejected(run_zerosim(tmp.path(), {}), out, "command");
}

TEST_CASE("zerosim: --help, --version and list", "[e2e]") {
  TempDir tmp;
  const Outcome h = run_zerosim(tmp.path(), {"--help"});
  CHECK(h.status == 0);
  CHECK_THAT(h.out, Contains("zerosim run"));
  const Outcome v = run_zerosim(tmp.path(), {"--version"});
  CHECK(v.status == 0);
  CHECK(v.out.rfind("zerosim ", 0) == 0);
  const Outcome l = run_zerosim(tmp.path(), {"list"});
  INFO("stderr: " << l.err);
  CHECK(l.status == 0);
  CHECK_THAT(l.out, Contains("gpt2"));
  CHECK_THAT(l.out, Contains("ring"));
  // The 4 x RTX 4090 box has no GPU peer-to-peer: no intra-node GPU link figure that does not exist.
  CHECK_THAT(l.out, Contains("4 x rtx4090 per node, no GPU peer-to-peer (GPU traffic through host memory)"));
  // The CPU presets (cluster.cpu, the host of optimizer offload): Ryzen 9 7950X, 2 channels of DDR5-5200 x 8 B =
  // 83.2 GB/s (its product page).
  CHECK_THAT(l.out, Contains("cpu presets:") && Contains("ryzen9-7950x             16 cores, 83.2 GB/s DRAM"));
  // Maintainers' review markers ("[m: re-check]") stay in YAML comments, never in a source a user reads.
  CHECK_THAT(l.out, !Contains("[m:"));
  CHECK_THAT(l.out, Contains("128 PCIe 4.0 lanes) (unverified)"));
  const Outcome x = run_zerosim(tmp.path(), {"list", "extra"}); // a stray word is a usage error, not ignored
  CHECK(x.status == 2);
  CHECK(lines(x.err) == 1);
}

TEST_CASE("zerosim: every command that --help lists accepts --help and -h: its usage, exit 0", "[e2e]") {
  TempDir tmp;
  const Outcome h = run_zerosim(tmp.path(), {"--help"});
  REQUIRE(h.status == 0);
  // The commands are the lines "  zerosim CMD ..." of the top-level usage (not "zerosim --help | --version").
  std::vector<std::string> commands;
  std::istringstream in(h.out);
  for (std::string l; std::getline(in, l);) {
    const std::string head = "  zerosim ";
    if (l.rfind(head, 0) != 0 || l.size() <= head.size() || l[head.size()] == '-')
      continue;
    const std::string cmd = l.substr(head.size(), l.find(' ', head.size()) - head.size());
    if (std::find(commands.begin(), commands.end(), cmd) == commands.end())
      commands.push_back(cmd);
  }
  CHECK(commands.size() >= 11); // run, collective, plot, sweep, merge, plan, validate, report, diff, list, estimate
  for (const auto& cmd : commands) {
    for (const char* flag : {"--help", "-h"}) {
      INFO("zerosim " << cmd << " " << flag);
      const Outcome o = run_zerosim(tmp.path(), {cmd, flag});
      INFO("stdout:\n" << o.out << "stderr:\n" << o.err);
      CHECK(o.status == 0);
      CHECK(o.out.rfind("usage: zerosim " + cmd + " ", 0) == 0);
      CHECK(o.err.empty());
    }
  }
  // Nothing written but the captured output (plot and report draw nothing, run and sweep create no out/).
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(tmp.path()))
    left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"stderr.txt", "stdout.txt"});
}

// ---- input handling found by a new-user test: each bad input is one stderr line, exit 2, nothing written.

TEST_CASE("zerosim run: --set of the compared key runs that one value, and is validated", "[e2e]") {
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "small.yaml", small_scenario("compare:\n  zero.stage: [0, 1, 2, 3]\n"));
  const fs::path out = tmp.path() / "out";
  for (const char* bad : {"5", "-1", "abc", "2.5"}) {
    INFO("zero.stage=" << bad);
    check_rejected(run_zerosim(tmp.path(),
                               {"run", sc.string(), "--set", std::string("zero.stage=") + bad, "--out", out.string()}),
                   out, "<cli>: zero.stage:");
  }
  check_rejected(run_zerosim(tmp.path(), {"run", sc.string(), "--set", "compare={}", "--out", out.string()}), out,
                 "<cli>: compare:");
  const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--set", "zero.stage=1", "--out", out.string(), "-q"});
  INFO("stderr: " << o.err);
  REQUIRE(o.status == 0);
  check_result(out); // one run: files directly in --out, no stage-* sub-directories
  CHECK_FALSE(fs::exists(out / "stage-0"));
  CHECK(read_json(out / "result.json").at("scenario").at("zero").at("stage") == 1);
}

TEST_CASE("zerosim run: bad scenario files get a message naming file, line and key", "[e2e]") {
  TempDir tmp;
  const fs::path out = tmp.path() / "out";
  SECTION("a directory") {
    check_rejected(run_zerosim(tmp.path(), {"run", tmp.path().string(), "--out", out.string()}), out, "is a directory");
  }
  SECTION("no model") {
    const fs::path sc = write_file(tmp.path(), "nomodel.yaml", "name: x\ntraining:\n  seq_len: 128\n");
    check_rejected(run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()}), out,
                   "nomodel.yaml: model: required key missing");
  }
  SECTION("duplicate key") {
    // small_scenario() has `zero:` on line 6; the second block is on line 13.
    const fs::path sc = write_file(tmp.path(), "dup.yaml", small_scenario("zero:\n  stage: 3\n"));
    check_rejected(run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()}), out,
                   "dup.yaml:13: zero: duplicate key: first at line 6");
  }
  SECTION("a bad value in a compare list") {
    const fs::path sc = write_file(tmp.path(), "cmp.yaml", small_scenario("compare:\n  zero.stage: [1, 9]\n"));
    check_rejected(run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()}), out,
                   "cmp.yaml:14: zero.stage:");
  }
}

TEST_CASE("zerosim run: an alias bomb and an endless device are input errors, not a hang", "[e2e]") {
  // Nine levels of ten aliases each expand to 10^10 values: the loader stops after 1e6 and names the key. /dev/zero
  // never ends: the read stops after 16 MiB. Both are exit 2 with one line and no output directory.
  TempDir tmp;
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j)
      bomb += (j ? ", *a" : "*a") + std::to_string(i - 1);
    bomb += "]\n";
  }
  bomb += "description: *a9\n";
  const fs::path sc = write_file(tmp.path(), "bomb.yaml", bomb);
  const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--out", (tmp.path() / "o").string()});
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Contains("bomb.yaml:6: a5:")); // a5 expands to 10^6 scalars plus its sequences: over 1e6
  CHECK_THAT(o.err, Contains("YAML aliases"));
  CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
  CHECK_FALSE(fs::exists(tmp.path() / "o"));
  const Outcome z = run_zerosim(tmp.path(), {"run", "/dev/zero", "--out", (tmp.path() / "z").string()});
  CHECK(z.status == 2);
  CHECK_THAT(z.err, Contains("larger than 16 MiB"));
  CHECK_FALSE(fs::exists(tmp.path() / "z"));
}

TEST_CASE("zerosim run: fp8 precision says it is not simulated, tf32 names the keys, fp32 runs", "[e2e]") {
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "small.yaml", small_scenario());
  const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--set", "training.precision=fp8"});
  INFO(o.err);
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Contains("training.precision"));
  CHECK_THAT(o.err, Contains("is not simulated"));
  CHECK_THAT(o.err, !Contains("did you mean"));
  const Outcome t = run_zerosim(tmp.path(), {"run", sc.string(), "--set", "training.precision=tf32"});
  CHECK(t.status == 2);
  CHECK_THAT(t.err, Contains("use training.precision: fp32 with training.tf32: true"));
  // On 4 GPUs (at N_d = 1 the comm line says the collectives are no-ops and gives no element size).
  const Outcome f =
      run_zerosim(tmp.path(), {"run", sc.string(), "--set", "training.precision=fp32", "--set",
                               "cluster.topology=4x-rtx4090-pcie", "--out", (tmp.path() / "fp32").string()});
  INFO(f.err);
  CHECK(f.status == 0);
  // The report counts collectives in 4-byte elements and leaves out the ZeRO paper's mixed-precision model states.
  CHECK_THAT(f.out, Contains("elements of 4 B"));
  CHECK_THAT(f.out, !Contains("as the ZeRO paper counts them"));
}

TEST_CASE("zerosim run: unsupported offload combinations are rejected before anything runs, supported ones run",
          "[e2e]") {
  TempDir tmp;
  const fs::path out = tmp.path() / "out";
  SECTION("stage 0 in a comparison with optimizer offload") {
    const fs::path sc = write_file(tmp.path(), "off.yaml",
                                   "name: off\nmodel: gpt2\ntraining:\n  seq_len: 128\nzero:\n"
                                   "  offload_optimizer: cpu\nsimulation:\n  steps: 1\n"
                                   "compare:\n  zero.stage: [2, 0]\n");
    const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()});
    check_rejected(o, out, "off.yaml:6: zero.offload_optimizer: optimizer offload needs ZeRO stage 1, 2 or 3");
    CHECK_THAT(o.err, Contains("compare variant zero.stage=0"));
    CHECK(o.err.find("FP16_Optimizer") == std::string::npos);
  }
  SECTION("stage-3 nvme offload on a node without NVMe") {
    const fs::path sc = write_file(tmp.path(), "small.yaml", small_scenario());
    check_rejected(run_zerosim(tmp.path(),
                               {"run", sc.string(), "--set", "zero.stage=3", "--set", "zero.offload_optimizer=nvme",
                                "--set", "cluster.nvme.read_bandwidth=0GBps", "--out", out.string()}),
                   out, "zero.offload_optimizer: offload to nvme needs the node's NVMe");
  }
  SECTION("an NVMe swap buffer smaller than the largest parameter partition") {
    // GPT-2 small on one GPU: the 50257 x 768 embedding = 38,597,376 elements > buffer_size 1e7.
    const fs::path sc = write_file(tmp.path(), "small.yaml", small_scenario());
    check_rejected(run_zerosim(tmp.path(), {"run", sc.string(), "--set", "zero.stage=3", "--set",
                                            "zero.offload_optimizer=cpu", "--set", "zero.offload_param=nvme", "--set",
                                            "zero.offload_param_buffer_size=1e7", "--out", out.string()}),
                   out,
                   "<cli>: zero.offload_param_buffer_size: 10000000 elements per swap buffer is smaller than the "
                   "largest parameter partition, 38597376 elements");
  }
  SECTION("the swap buffer error names the line of the buffer size in the scenario") {
    // small_scenario's zero: is on line 6, stage on 7; the map on line 9 (its buffer_size field is the key).
    const fs::path sc = write_file(tmp.path(), "buf.yaml",
                                   "name: e2e-small\nmodel: gpt2\ntraining:\n  micro_batch: 1\n  seq_len: 256\n"
                                   "zero:\n  stage: 3\n  offload_optimizer: cpu\n"
                                   "  offload_param: {device: nvme, buffer_size: 1e7}\n"
                                   "cluster:\n  topology: one-rtx4090\nsimulation:\n  steps: 1\n");
    check_rejected(run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()}), out,
                   "buf.yaml:9: zero.offload_param.buffer_size: 10000000 elements per swap buffer");
  }
  SECTION("the swap buffer error at DeepSpeed's default buffer names the line that chose NVMe") {
    // LLaMA-2 7B on one GPU: the 32000 x 4096 embedding = 131,072,000 elements > the default 1e8; the buffer size is
    // not written, so the error is at zero.offload_param (line 9).
    const fs::path sc = write_file(tmp.path(), "deflt.yaml",
                                   "name: e2e-small\nmodel: llama-2-7b\ntraining:\n  micro_batch: 1\n"
                                   "  seq_len: 256\nzero:\n  stage: 3\n  offload_optimizer: cpu\n"
                                   "  offload_param: nvme\n"
                                   "cluster:\n  topology: one-rtx4090\nsimulation:\n  steps: 1\n");
    check_rejected(run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()}), out,
                   "deflt.yaml:9: zero.offload_param: 100000000 elements per swap buffer (DeepSpeed's default) is "
                   "smaller than the largest parameter partition, 131072000 elements");
  }
  SECTION("a pipelined NVMe optimizer swapper with DeepSpeed's default 4 buffers names the pipeline key") {
    // sub_group_size 1e7 splits GPT-2 small's 124M parameters into several sub-groups; pipeline_read then needs 8.
    const fs::path sc = write_file(tmp.path(), "pipe.yaml",
                                   "name: e2e-small\nmodel: gpt2\ntraining:\n  micro_batch: 1\n  seq_len: 256\n"
                                   "zero:\n  stage: 3\n  offload_optimizer: {device: nvme, pipeline_read: true}\n"
                                   "  sub_group_size: 1e7\n"
                                   "cluster:\n  topology: one-rtx4090\nsimulation:\n  steps: 1\n");
    check_rejected(run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()}), out,
                   "pipe.yaml:8: zero.offload_optimizer.pipeline_read: 4 optimizer swap buffers are too few for "
                   "pipeline_read over ");
    const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--set", "zero.offload_optimizer_buffer_count=8",
                                               "--out", out.string()});
    INFO(o.out << o.err);
    CHECK(o.status == 0);
  }
  SECTION("offload_param=cpu alone runs (the optimizer stays on the GPU)") {
    const fs::path sc = write_file(tmp.path(), "small.yaml", small_scenario());
    const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--set", "zero.stage=3", "--set",
                                               "zero.offload_param=cpu", "--out", out.string()});
    INFO(o.out << o.err);
    CHECK(o.status == 0);
    CHECK_THAT(o.out, Contains("host memory peak"));
    CHECK_THAT(o.out, Contains("CPU optimizer 0.0000 s"));
  }
}

TEST_CASE("zerosim run: ds_config.json typos and unsupported optimizers are rejected", "[e2e]") {
  TempDir tmp;
  const fs::path out = tmp.path() / "out";
  const fs::path sc =
      write_file(tmp.path(), "ds.yaml",
                 "name: ds\nmodel: gpt2\ntraining:\n  seq_len: 128\nzero:\n  deepspeed_config: ds.json\n");
  SECTION("unknown zero_optimization field") {
    write_file(tmp.path(), "ds.json",
               "{\n  \"zero_optimization\": {\n    \"stage\": 2,\n    \"reduce_bucket_sise\": 5e8\n  }\n}\n");
    const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()});
    check_rejected(o, out, "ds.json:4: zero_optimization.reduce_bucket_sise");
    CHECK_THAT(o.err, Contains("did you mean 'reduce_bucket_size'?"));
  }
  SECTION("optimizer other than Adam/AdamW") {
    write_file(tmp.path(), "ds.json", "{\n  \"optimizer\": {\"type\": \"Lamb\"}\n}\n");
    check_rejected(run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()}), out,
                   "ds.json:2: optimizer.type: zerosim models Adam and AdamW only");
  }
  SECTION("a misspelt top-level key, which DeepSpeed would ignore") {
    write_file(tmp.path(), "ds.json", "{\n  \"zero_optimisation\": {\"stage\": 3}\n}\n");
    const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()});
    check_rejected(o, out, "ds.json:2: zero_optimisation: unknown DeepSpeed config key");
    CHECK_THAT(o.err, Contains("did you mean 'zero_optimization'?"));
  }
  SECTION("tensor or pipeline parallelism above size 1") {
    write_file(tmp.path(), "ds.json",
               "{\n  \"zero_optimization\": {\"stage\": 3},\n  \"pipeline\": {\n    \"stages\": 2\n  }\n}\n");
    check_rejected(run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()}), out,
                   "ds.json:4: pipeline.stages: not modelled: zerosim simulates ZeRO data parallelism only");
  }
  SECTION("the DeepSpeed config given as the scenario") {
    write_file(tmp.path(), "ds.json", "{\n  \"zero_optimization\": {\"stage\": 3}\n}\n");
    const Outcome o = run_zerosim(tmp.path(), {"run", (tmp.path() / "ds.json").string(), "--out", out.string()});
    check_rejected(o, out, "ds.json:2: zero_optimization: this is a DeepSpeed config, not a scenario");
    CHECK_THAT(o.err, Contains("zero: {deepspeed_config: ds.json}"));
  }
}

TEST_CASE("zerosim run: a ds_config's blocks that are not simulated are named in summary.diagnostics", "[e2e]") {
  // docs/outputs.md: summary.diagnostics carries the import's notes, "ignored blocks" among them.
  TempDir tmp;
  const fs::path out = tmp.path() / "out";
  write_file(tmp.path(), "ds.json",
             "{\n  \"zero_optimization\": {\"stage\": 2},\n  \"bf16\": {\"enabled\": true},\n"
             "  \"steps_per_print\": 10,\n  \"sparse_attention\": {\"mode\": \"fixed\"},\n"
             "  \"wall_clock_breakdown\": false\n}\n");
  const fs::path sc = write_file(tmp.path(), "ds.yaml",
                                 "name: ds\nmodel: gpt2\ntraining:\n  seq_len: 128\nzero:\n  deepspeed_config: "
                                 "ds.json\nsimulation:\n  steps: 2\noutputs: {trace_json: false, memory_csv: false}\n");
  const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string(), "--quiet"});
  INFO("stderr: " << o.err);
  REQUIRE(o.status == 0);
  std::vector<std::string> notes;
  const json result = read_json(out / "result.json"); // named: a range-for over a temporary's member dangles
  for (const auto& d : result.at("summary").at("diagnostics"))
    if (d.get<std::string>().rfind("ds.json:", 0) == 0)
      notes.push_back(d.get<std::string>());
  // wall_clock_breakdown false is DeepSpeed's default: no note.
  REQUIRE(notes.size() == 2);
  CHECK_THAT(notes[0], Contains("ds.json:4: steps_per_print is not imported"));
  CHECK_THAT(notes[1], Contains("ds.json:5: sparse_attention is not imported"));
}

TEST_CASE("zerosim run --check: a one-line verdict on stdout and exit 3 when the run does not pass", "[e2e]") {
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "s.yaml", small_scenario("outputs: {trace_json: false}\n"));
  const fs::path out = tmp.path() / "out";
  const auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"run", sc.string(), "--out", out.string(), "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_zerosim(tmp.path(), args);
  };
  SECTION("a fitting run passes, with its verdict even under --quiet") {
    const Outcome o = run({"--check", "--max-step-time", "1h"});
    INFO("stdout: " << o.out << "\nstderr: " << o.err);
    CHECK(o.status == 0);
    CHECK(lines(o.out) == 1);
    CHECK_THAT(o.out, Contains("check: pass: fits (nvidia-smi ") && Contains(" <= 3600 s"));
  }
  SECTION("an OOM fails with exit 3, and the outputs are written in full") {
    // GPT-2 small at micro-batch 256, seq 256: the logits alone are 256 x 256 x 50257 elements (3.3e9, over 6 GB
    // in 16 bits), with 12 layers of activations on top: far beyond the RTX 4090's 24 GB.
    const Outcome o = run({"--check", "--set", "training.micro_batch=256"});
    INFO("stdout: " << o.out << "\nstderr: " << o.err);
    CHECK(o.status == 3);
    CHECK(lines(o.out) == 1);
    CHECK_THAT(o.out, Contains("check: FAIL: does not fit"));
    CHECK_FALSE(read_json(out / "result.json").at("summary").at("fits").get<bool>());
    CHECK(fs::exists(out / "summary.json"));
  }
  SECTION("--headroom implies --check: 99 % of the card leaves less than the CUDA context and model states") {
    // 1 % of 24 GB is 0.24 GB; GPT-2 small's fp32 master weights and Adam states alone are 124M x 12 B = 1.5 GB.
    const Outcome o = run({"--headroom", "99%"});
    INFO("stdout: " << o.out << "\nstderr: " << o.err);
    CHECK(o.status == 3);
    CHECK_THAT(o.out, Contains("check: FAIL: leaves less than --headroom free: it cannot give back "));
    CHECK(read_json(out / "result.json").at("summary").at("fits").get<bool>());
  }
  SECTION("--max-step-time tests the simulated step, times --time-margin") {
    // 1 ms is below any GPT-2 small step: Adam alone reads and writes at least 124M x 16 B = 2 GB of fp32 weights,
    // gradients and moments, over 2 ms at the RTX 4090's 1 TB/s.
    const Outcome o = run({"--max-step-time", "1ms"});
    INFO("stdout: " << o.out << "\nstderr: " << o.err);
    CHECK(o.status == 3);
    CHECK_THAT(o.out, Contains("check: FAIL: misses --max-step-time: ") && Contains(" > 0.001 s"));
    // A margin multiplies the simulated step, with limits from hand bounds rather than the run's own step time.
    // Fails by construction: the Adam bound above, 124M x 16 B = 1.99 GB at the RTX 4090's 1008 GB/s, is a step
    // over 1.97 ms, so 100 x step > 197 ms > 100 ms.
    const Outcome fail = run({"--max-step-time", "100ms", "--time-margin", "100"});
    INFO("fail stdout: " << fail.out << "\nfail stderr: " << fail.err);
    CHECK(fail.status == 3);
    CHECK_THAT(fail.out,
               Contains("check: FAIL: misses --max-step-time: ") && Contains("(100 x ") && Contains(" > 0.1 s"));
    // Passes by construction: a step needs 6 x 124M x 256 tokens = 1.9e11 FLOP (forward and backward) and moves a
    // few GB; at 36 s that is 5 GFLOP/s and 0.1 GB/s, far below any GPU, so 100 x step < 3600 s.
    const Outcome pass = run({"--max-step-time", "1h", "--time-margin", "100"});
    INFO("pass stdout: " << pass.out << "\npass stderr: " << pass.err);
    CHECK(pass.status == 0);
    CHECK_THAT(pass.out, Contains("check: pass: ") && Contains("(100 x ") && Contains(" <= 3600 s"));
  }
  SECTION("bad limits are input errors before anything is written") {
    check_rejected(run({"--check", "--max-step-time", "10"}), out, "run: --max-step-time: expected a duration");
    check_rejected(run({"--headroom", "2 apples"}), out, "run: --headroom: expected memory with a unit");
    check_rejected(run({"--time-margin", "1.2"}), out, "run: --time-margin needs --max-step-time");
  }
}

TEST_CASE("zerosim run: a host peak within a tenth of the node's RAM is marginal, and --host-headroom gates it",
          "[e2e]") {
  // GPT-2 small (Ψ = 124,439,808) with ZeRO-3 and optimizer + parameter offload on one GPU keeps 20 B per parameter
  // on the host (fp32 master 4 + Adam m, v 8 + fp32 grads 4 + bf16 params 2 + bf16 grad partition 2; the host peak
  // attribution of this run): 20 x 124,439,808 = 2,488,796,160 B = 2.318 GiB per node. Of 2.5 GiB that leaves
  // 0.182 GiB, under 10 % (0.25 GiB): marginal by the host. Of 3 GiB it leaves 0.682 GiB, over 0.3 GiB: not.
  TempDir tmp;
  const auto scenario = [&](const std::string& host_memory) {
    return write_file(tmp.path(), "h.yaml",
                      "name: h\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 256, activation_checkpointing: true}\n"
                      "zero: {stage: 3, offload_optimizer: cpu, offload_param: cpu}\n"
                      "cluster: {topology: one-rtx4090" +
                          (host_memory.empty() ? std::string() : ", host_memory: " + host_memory) +
                          "}\n"
                          "simulation: {steps: 2, fidelity: analytic}\n"
                          "outputs: {trace_json: false}\n");
  };
  const fs::path out = tmp.path() / "out";
  const auto run = [&](const fs::path& sc, std::vector<std::string> extra) {
    std::vector<std::string> args{"run", sc.string(), "--out", out.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_zerosim(tmp.path(), args);
  };
  {
    // --check keeps plan's default --host-headroom, 10 % of the node's RAM: 2.318 GiB > 2.5 - 0.25 = 2.25 GiB fails
    // (exit 3), as plan rejects the same plan.
    const Outcome gated = run(scenario("2.5GiB"), {"--check", "--quiet"});
    INFO("stdout: " << gated.out << "\nstderr: " << gated.err);
    CHECK(gated.status == 3);
    CHECK_THAT(gated.out,
               Contains("check: FAIL: leaves less than --host-headroom free: host RAM 2.32 GiB per node > 2.25 GiB"));
    // --host-headroom 0 keeps only the run's own host OOM rule: it passes, marked marginal.
    const Outcome o = run(scenario("2.5GiB"), {"--check", "--host-headroom", "0"});
    INFO("stdout: " << o.out << "\nstderr: " << o.err);
    CHECK(o.status == 0); // marginal is a mark, not a gate
    CHECK_THAT(o.out, Contains("host memory peak:  2.318 GiB per rank, 2.318 GiB per node of 2.50 GiB"));
    CHECK_THAT(o.out, Contains("note: that leaves 0.18 GiB of the node's RAM, under 10 %, for what is not simulated"));
    CHECK_THAT(o.out, Contains("yes, marginal: host RAM under 10 % free (the node's host memory peak leaves 0.18 of "
                               "2.50 GiB)"));
    CHECK_THAT(o.out, Contains("check: pass: fits (nvidia-smi ") &&
                          Contains(", host RAM 2.32 of 2.50 GiB per node; marginal: host RAM under 10 % free (node "
                                   "peak 2.32 of 2.50 GiB leaves 0.18 GiB, under 0.25 GiB))"));
    const json summary = read_json(out / "summary.json").at("variants").at(0).at("summary");
    CHECK(summary.at("marginal").get<bool>());
    CHECK(summary.at("marginal_reason").get<std::string>() == "host RAM under 10 % free");
  }
  {
    const fs::path roomy = scenario("3GiB");
    const Outcome o = run(roomy, {"--check", "--quiet"});
    INFO("stdout: " << o.out << "\nstderr: " << o.err);
    CHECK(o.status == 0);
    // The default 10 % of 3 GiB = 0.30 GiB: 2.318 <= 2.7 GiB passes, and the line names the default.
    CHECK_THAT(o.out,
               Contains("host RAM 2.32 of 3.00 GiB per node, --host-headroom 0.30 GiB kept free (default 10%)") &&
                   !Contains("marginal"));
    // --host-headroom 0.5GiB: 2.318 <= 3 - 0.5 = 2.5 GiB passes. 25 % = 0.75 GiB: 2.318 > 2.25 GiB fails (exit 3).
    const Outcome kept = run(roomy, {"--host-headroom", "0.5GiB", "--quiet"});
    INFO("stdout: " << kept.out << "\nstderr: " << kept.err);
    CHECK(kept.status == 0);
    CHECK_THAT(kept.out, Contains("host RAM 2.32 of 3.00 GiB per node, --host-headroom 0.50 GiB kept free"));
    const Outcome miss = run(roomy, {"--host-headroom", "25%", "--quiet"});
    INFO("stdout: " << miss.out << "\nstderr: " << miss.err);
    CHECK(miss.status == 3);
    CHECK_THAT(miss.out,
               Contains("check: FAIL: leaves less than --host-headroom free: host RAM 2.32 GiB per node > 2.25 GiB"));
  }
  // Without cluster.host_memory there is nothing to keep free: an input error, nothing written.
  const fs::path none = tmp.path() / "none";
  const auto rejected = [&](const fs::path& sc, const std::string& host_headroom) {
    return run_zerosim(tmp.path(), {"run", sc.string(), "--out", none.string(), "--host-headroom", host_headroom});
  };
  check_rejected(rejected(scenario(""), "10%"), none, "run: --host-headroom 10%: the node's host RAM is not given");
  check_rejected(rejected(scenario("3GiB"), "3GiB"), none,
                 "run: --host-headroom 3GiB: must be at least 0 and below the node's host RAM of 3.00 GiB");
}

TEST_CASE("zerosim run: --set without key=value and an empty --out are usage errors", "[e2e]") {
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "small.yaml", small_scenario());
  const fs::path out = tmp.path() / "x";
  check_rejected(run_zerosim(tmp.path(), {"run", sc.string(), "--set", "--out", out.string()}), out,
                 "--set needs key=value");
  const auto before = std::distance(fs::directory_iterator(tmp.path()), fs::directory_iterator{});
  const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--out", ""});
  check_rejected(o, tmp.path() / "out", "--out: empty path");
  // Nothing new in the working directory (run_zerosim itself writes stdout.txt and stderr.txt there).
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(tmp.path()))
    entries.push_back(e.path().filename().string());
  INFO("entries: " << entries.size());
  CHECK(entries.size() <= static_cast<std::size_t>(before) + 2);
  for (const auto& e : entries)
    CHECK((e == "small.yaml" || e == "stdout.txt" || e == "stderr.txt"));
}

TEST_CASE("zerosim run: on a DGX A100 (8 NUMA nodes) 2 ranks' host step weighs their pinned bytes 4x, 8 ranks' not",
          "[e2e]") {
  // Hand calculation (sim/zero/cpu_adam.hpp). Stage 2 + CPU offload, DeepSpeed 0.19.5 (pin_memory true): per
  // partition element the host step moves 26 B of pinned buffers (unscale 8, Adam master 8 + grads 4, lp cast 6) and
  // 16 B of pageable m, v. One rank's per-byte rate is R / (eta B) with B = 409.6e9 B/s and eta = 0.5327. The
  // pinned weight is N ceil(R/N) / R: R = 2 -> 8 x 1 / 2 = 4, R = 8 -> 1. Host step per rank, partition P = Ψ/R:
  //   R = 2: (Ψ/2) x 2 x (4 x 26 + 16) / (eta B) = 120 Ψ / (eta B);   R = 8: (Ψ/8) x 8 x 42 / (eta B) = 42 Ψ / (eta B).
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "numa.yaml",
                                 "name: numa\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 128}\n"
                                 "zero: {stage: 2, offload_optimizer: cpu}\n"
                                 "cluster: {topology: dgx-a100, nodes: 1}\nsimulation: {steps: 2}\n"
                                 "outputs: {trace_json: false, memory_csv: false}\n"
                                 "compare:\n  cluster.gpus_per_node: [2, 8]\n");
  const fs::path out = tmp.path() / "out";
  const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  const auto host_step = [&](const std::string& dir) {
    const json s = read_json(out / dir / "result.json").at("summary");
    const json& h = s.at("host_step");
    return std::pair{h.at("cpu_adam_s").get<double>() + h.at("unscale_s").get<double>() +
                         h.at("lp_cast_s").get<double>(),
                     s.at("params").get<double>()};
  };
  const auto [two, psi] = host_step("gpus_per_node-2");
  const auto [eight, psi8] = host_step("gpus_per_node-8");
  CHECK(psi8 == psi);
  const double eta_b = 0.5327 * 409.6e9;
  // The flat partition is padded to a multiple of R (a few elements): 1e-3 covers it and the 4-digit efficiency.
  CHECK(two == Approx(120.0 * psi / eta_b).epsilon(1e-3));
  CHECK(eight == Approx(42.0 * psi / eta_b).epsilon(1e-3));
  CHECK_THAT(o.out, Contains("409.6 GB/s DRAM in 8 NUMA nodes, each rank's pinned buffers on one, shared by 2 ranks"));
}

TEST_CASE(
    "zerosim run: training.launcher sets CPU Adam's threads per rank, torchrun's one thread is 2.57x slower "
    "on a DGX A100",
    "[e2e]") {
  // Hand calculation (sim/zero/cpu_adam.hpp). Stage 2 + CPU offload on 8 ranks of a DGX A100: the host step moves 42 B
  // per partition element (the test above), P = Ψ/8 elements per rank, at a / 30 s per byte, a = CPU Adam's seconds
  // per parameter. deepspeed (no OMP_NUM_THREADS, every core) and deepspeed-bind-cores (128 / 8 = 16 threads): the
  // rank's 16-core share, a = 8 x 30 / (eta B), host step 42 Ψ / (eta B). torchrun (OMP_NUM_THREADS=1, run.py):
  // one core, a = 30 / (eta b1) with b1 = 19.9 GB/s, host step (Ψ/8) x 42 / (eta b1): B / (8 b1) = 2.5729x.
  // The stage-2 host step is on the step's critical path, so the step grows by the host step's difference.
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "threads.yaml",
                                 "name: threads\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 128}\n"
                                 "zero: {stage: 2, offload_optimizer: cpu}\n"
                                 "cluster: {topology: dgx-a100, nodes: 1, gpus_per_node: 8}\nsimulation: {steps: 2}\n"
                                 "outputs: {trace_json: false, memory_csv: false}\n"
                                 "compare:\n  training.launcher: [deepspeed, deepspeed-bind-cores, torchrun]\n");
  const fs::path out = tmp.path() / "out";
  const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  struct Run {
    double host, step, psi;
  };
  const auto read = [&](const std::string& dir) {
    const json s = read_json(out / dir / "result.json").at("summary");
    const json& h = s.at("host_step");
    return Run{h.at("cpu_adam_s").get<double>() + h.at("unscale_s").get<double>() + h.at("lp_cast_s").get<double>(),
               s.at("step_time_s").get<double>(), s.at("params").get<double>()};
  };
  const Run ds = read("launcher-deepspeed");
  const Run bound = read("launcher-deepspeed-bind-cores");
  const Run tr = read("launcher-torchrun");
  const double eta = 0.5327;
  CHECK(ds.host == Approx(42.0 * ds.psi / (eta * 409.6e9)).epsilon(1e-3));
  CHECK(bound.host == Approx(ds.host).epsilon(1e-9));
  CHECK(tr.host == Approx(ds.psi / 8 * 42.0 / (eta * 19.9e9)).epsilon(1e-3));
  CHECK(tr.host / ds.host == Approx(409.6 / (8 * 19.9)).epsilon(1e-3));
  CHECK(tr.step - ds.step == Approx(tr.host - ds.host).epsilon(1e-2));
  // result.json records the launcher.
  CHECK(read_json(out / "launcher-torchrun" / "result.json").at("scenario").at("training").at("launcher") ==
        "torchrun");
}

TEST_CASE(
    "zerosim run: torchrun on 2 ranks of a DGX A100 takes the larger of the one-core and the NUMA bound, not their "
    "product",
    "[e2e]") {
  // Hand calculation (sim/zero/cpu_adam.hpp "Threads per rank"). Stage 2 + CPU offload, DeepSpeed 0.19.5 (pin_memory
  // true), R = 2 ranks on the DGX A100 (N = 8 NUMA nodes, B = 409.6 GB/s, pinned weight w = 8 x 1 / 2 = 4; the NUMA
  // test above). Per partition element (P = Ψ/2) the passes move pinned / pageable bytes: unscale 8 / 0, CPU Adam
  // 12 / 16 (28 B), lp cast 6 / 0. Node bound R / (eta B) = 1 / (eta 204.8 GB/s) per byte on w x pinned + pageable;
  // torchrun's one thread per rank, b1 = 19.9 GB/s: 1 / (eta b1) per byte on every byte once. Per pass:
  //   unscale max(32 / 204.8, 8 / 19.9), Adam max(64 / 204.8, 28 / 19.9), lp cast max(24 / 204.8, 6 / 19.9):
  //   the thread bound each time, so host step = (Ψ/2) x 42 / (eta b1), CPU Adam = (Ψ/2) x 28 / (eta b1).
  // The product of the two penalties (the code before) gave (Ψ/2) x (4 x 26 + 16) / (eta b1): 120 / 42 = 2.86x more.
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "numa1.yaml",
                                 "name: numa1\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 128, launcher: "
                                 "torchrun}\nzero: {stage: 2, offload_optimizer: cpu}\n"
                                 "cluster: {topology: dgx-a100, nodes: 1, gpus_per_node: 2}\nsimulation: {steps: 2}\n"
                                 "outputs: {trace_json: false, memory_csv: false}\n");
  const fs::path out = tmp.path() / "out";
  const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  const json s = read_json(out / "result.json").at("summary");
  const json& h = s.at("host_step");
  const double psi = s.at("params").get<double>();
  const double eta_b1 = 0.5327 * 19.9e9;
  CHECK(h.at("cpu_adam_s").get<double>() == Approx(psi / 2 * 28.0 / eta_b1).epsilon(1e-3));
  const double host =
      h.at("cpu_adam_s").get<double>() + h.at("unscale_s").get<double>() + h.at("lp_cast_s").get<double>();
  CHECK(host == Approx(psi / 2 * 42.0 / eta_b1).epsilon(1e-3));
  CHECK(s.at("cpu_adam_bound") == "thread_memory");
  CHECK_THAT(o.out, Contains("CPU Adam time set by its 1 thread's DRAM rate (1 x one core's 19.9 GB/s)\n"));
  // OMP_NUM_THREADS=6 (torchrun keeps it): 6 x 19.9 = 119.4 GB/s, below the 204.8 GB/s share, so the thread bound
  // exists, but the NUMA bound is the larger on every pass (B per GB/s): Adam max(64 / 204.8, 28 / 119.4) = 0.3125,
  // unscale max(32 / 204.8, 8 / 119.4), lp cast max(24 / 204.8, 6 / 119.4). CPU Adam = (Ψ/2) x 64 / (eta 204.8 GB/s),
  // set by the node's DRAM (its busiest NUMA node holding the rank's pinned bytes).
  const fs::path out6 = tmp.path() / "out6";
  const Outcome o6 =
      run_zerosim(tmp.path(), {"run", sc.string(), "--out", out6.string(), "--set", "training.omp_num_threads=6"});
  INFO("stdout: " << o6.out << "\nstderr: " << o6.err);
  REQUIRE(o6.status == 0);
  const json s6 = read_json(out6 / "result.json").at("summary");
  CHECK(s6.at("cpu_threads_per_rank") == 6);
  CHECK(s6.at("host_step").at("cpu_adam_s").get<double>() == Approx(psi / 2 * 64.0 / (0.5327 * 204.8e9)).epsilon(1e-3));
  CHECK(s6.at("cpu_adam_bound") == "node_memory");
  CHECK_THAT(o6.out, Contains("6 threads per rank (OMP_NUM_THREADS)), CPU Adam time set by the rank's share of the "
                              "node's DRAM\n"));
}

TEST_CASE(
    "zerosim run: one thread per rank on a CPU without a one-core bandwidth, or OMP_NUM_THREADS with "
    "--bind_cores_to_rank, is one line naming the key, exit 2",
    "[e2e]") {
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "t.yaml",
                                 "name: t\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 128}\n"
                                 "zero: {stage: 2, offload_optimizer: cpu}\n"
                                 "cluster: {topology: dgx2-v100, nodes: 1}\nsimulation: {steps: 1}\n");
  // dgx-h100-xeon-8480c gives no core_memory_bandwidth (no one-thread figure published); torchrun runs 1 thread per
  // rank of its 112 / 8 = 14 cores.
  const Outcome a = run_zerosim(tmp.path(), {"run", sc.string(), "--out", (tmp.path() / "a").string(), "--set",
                                             "cluster.topology=dgx-h100", "--set", "training.launcher=torchrun"});
  CHECK(a.status == 2);
  CHECK_THAT(a.err, Contains("training.launcher"));
  CHECK_THAT(a.err, Contains("cpu.core_memory_bandwidth"));
  // It says exactly what to set and how to measure it.
  CHECK_THAT(a.err, Contains("set cluster.cpu: {preset: dgx-h100-xeon-8480c, core_memory_bandwidth: RATE}"));
  CHECK_THAT(a.err, Contains("OMP_NUM_THREADS=1 numactl --physcpubind=0 --membind=0 ./stream"));
  CHECK(std::count(a.err.begin(), a.err.end(), '\n') == 1);
  // Every core in use needs no one-core figure: 3 threads x 16 ranks = 48 cores.
  const Outcome ok = run_zerosim(tmp.path(), {"run", sc.string(), "--out", (tmp.path() / "ok").string(), "--set",
                                              "training.precision=fp16", "--set", "training.flash_attention=false",
                                              "--set", "training.omp_num_threads=3"});
  CHECK(ok.status == 0);
  const Outcome b =
      run_zerosim(tmp.path(), {"run", sc.string(), "--out", (tmp.path() / "b").string(), "--set",
                               "training.launcher=deepspeed-bind-cores", "--set", "training.omp_num_threads=4"});
  CHECK(b.status == 2);
  CHECK_THAT(b.err, Contains("training.omp_num_threads"));
  CHECK_THAT(b.err, Contains("launch.py l.248"));
}

TEST_CASE(
    "zerosim run: torchrun runs on the RTX 3090 desktops, its one Zen 3 core per rank as fast as the share on 2 ranks, "
    "1.27x slower on 4",
    "[e2e]") {
  // Hand calculation (sim/zero/cpu_adam.hpp): a rank's CPU Adam is memory-bound at 30 B / min(B / R, c x b1) per
  // parameter over eta = 0.5327; the host step moves 42 B per partition element at that rate / 30 (the DGX A100 test
  // above). Compute, 64 FLOP / (peak x c / C), stays below it: one Zen 3 core's 3.4 GHz x 8 x 2 x 2 = 108.8 GFLOP/s
  // gives 0.588 ns per parameter. b1 = 40.4 GB/s (ryzen9-5950x and threadripper-pro-5975wx, 2 x 20.2 GB/s copied).
  // 2x-rtx3090-pcie, R = 2 on the 2-channel 5950X, B = 51.2 GB/s: deepspeed-bind-cores min(25.6, 8 x 40.4) = 25.6,
  // torchrun min(25.6, 1 x 40.4) = 25.6: the same, one core draws a rank's share of 2 channels.
  // 4x-rtx3090-pcie, R = 4 on the 8-channel 5975WX, B = 204.8 GB/s: bind-cores min(51.2, 8 x 40.4) = 51.2, torchrun
  // min(51.2, 40.4) = 40.4: 51.2 / 40.4 = 1.2673x the host step.
  TempDir tmp;
  const auto scenario = [&](const std::string& topology) {
    return write_file(tmp.path(), topology + ".yaml",
                      "name: t\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 128}\n"
                      "zero: {stage: 2, offload_optimizer: cpu}\n"
                      "cluster: {topology: " +
                          topology +
                          "}\nsimulation: {steps: 2}\noutputs: {trace_json: false, memory_csv: false}\n"
                          "compare:\n  training.launcher: [deepspeed-bind-cores, torchrun]\n");
  };
  struct Run {
    double host, psi;
  };
  const auto read = [&](const fs::path& out, const std::string& dir) {
    const json s = read_json(out / dir / "result.json").at("summary");
    const json& h = s.at("host_step");
    return Run{h.at("cpu_adam_s").get<double>() + h.at("unscale_s").get<double>() + h.at("lp_cast_s").get<double>(),
               s.at("params").get<double>()};
  };
  const double eta = 0.5327;
  {
    const fs::path out = tmp.path() / "two";
    const Outcome o = run_zerosim(tmp.path(), {"run", scenario("2x-rtx3090-pcie").string(), "--out", out.string()});
    INFO("stdout: " << o.out << "\nstderr: " << o.err);
    REQUIRE(o.status == 0);
    const Run bound = read(out, "launcher-deepspeed-bind-cores");
    const Run tr = read(out, "launcher-torchrun");
    CHECK(bound.host == Approx(bound.psi / 2 * 42.0 / (eta * 25.6e9)).epsilon(1e-3));
    CHECK(tr.host == Approx(bound.host).epsilon(1e-9));
    const json ts = read_json(out / "launcher-torchrun" / "result.json").at("summary");
    CHECK(ts.at("cpu_threads_per_rank") == 1);
    CHECK(ts.at("cpu_threads_set_by") == "torchrun");
    CHECK(read_json(out / "launcher-deepspeed-bind-cores" / "result.json").at("summary").at("cpu_threads_per_rank") ==
          0);
    CHECK_THAT(o.out, Contains("(51.2 GB/s DRAM, shared by 2 ranks, 1 thread per rank (torchrun)), CPU Adam time "
                               "set by the rank's share of the node's DRAM\n"));
    // One core's 40.4 GB/s draws the rank's 25.6 GB/s share: the node's DRAM sets both.
    CHECK(ts.at("cpu_adam_bound") == "node_memory");
    CHECK(read_json(out / "launcher-deepspeed-bind-cores" / "result.json").at("summary").at("cpu_adam_bound") ==
          "node_memory");
  }
  {
    const fs::path out = tmp.path() / "four";
    const Outcome o = run_zerosim(tmp.path(), {"run", scenario("4x-rtx3090-pcie").string(), "--out", out.string()});
    INFO("stdout: " << o.out << "\nstderr: " << o.err);
    REQUIRE(o.status == 0);
    const Run bound = read(out, "launcher-deepspeed-bind-cores");
    const Run tr = read(out, "launcher-torchrun");
    CHECK(bound.host == Approx(bound.psi / 4 * 42.0 / (eta * 51.2e9)).epsilon(1e-3));
    CHECK(tr.host == Approx(tr.psi / 4 * 42.0 / (eta * 40.4e9)).epsilon(1e-3));
    CHECK(tr.host / bound.host == Approx(51.2 / 40.4).epsilon(1e-3));
    // 40.4 < 51.2 GB/s: torchrun's one thread sets it, bind-cores' 8 cores draw the share.
    CHECK(read_json(out / "launcher-torchrun" / "result.json").at("summary").at("cpu_adam_bound") == "thread_memory");
    CHECK(read_json(out / "launcher-deepspeed-bind-cores" / "result.json").at("summary").at("cpu_adam_bound") ==
          "node_memory");
    CHECK_THAT(o.out, Contains("CPU Adam time set by its 1 thread's DRAM rate (1 x one core's 40.4 GB/s)\n"));
  }
}

TEST_CASE("zerosim run / list: a ZEROSIM_DATA_DIR without presets is one line naming it, exit 2", "[e2e]") {
  // Before: "model: unknown preset 'gpt2' in /nonexistent/scenarios/models (valid: )", and `list` listed no preset.
  TempDir tmp;
  std::ofstream(tmp.path() / "s.yaml") << "name: s\nmodel: gpt2\n";
  zerosim::test::RunOptions missing;
  missing.env = {"ZEROSIM_DATA_DIR=" + (tmp.path() / "nonexistent").string()};
  const Outcome run = run_zerosim(tmp.path(), {"run", "s.yaml", "--out", "o"}, missing);
  CHECK(run.status == 2);
  CHECK_THAT(run.err, Contains("ZEROSIM_DATA_DIR: '" + (tmp.path() / "nonexistent").string() + "' does not exist"));
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
  CHECK(!std::filesystem::exists(tmp.path() / "o"));
  zerosim::test::RunOptions empty;
  empty.env = {"ZEROSIM_DATA_DIR=" + tmp.path().string()}; // exists, holds only s.yaml
  const Outcome list = run_zerosim(tmp.path(), {"list"}, empty);
  CHECK(list.status == 2);
  CHECK_THAT(list.err, Contains("ZEROSIM_DATA_DIR: '" + tmp.path().string() + "' holds no zerosim presets"));
  // The data directory of the checkout itself is fine.
  zerosim::test::RunOptions repo;
  repo.env = {std::string("ZEROSIM_DATA_DIR=") + ZEROSIM_DATA_DIR};
  CHECK(run_zerosim(tmp.path(), {"list"}, repo).status == 0);
}

TEST_CASE("zerosim run: a CPU preset with more NUMA nodes than cores is one line naming the key, exit 2", "[e2e]") {
  // A copy of the data directory whose DGX A100 CPU (128 cores) claims 1000 NUMA nodes.
  TempDir tmp;
  const fs::path data = tmp.path() / "data";
  for (const char* sub : {"topologies", "scenarios/models"}) {
    fs::create_directories(data / sub);
    fs::copy(fs::path(ZEROSIM_DATA_DIR) / sub, data / sub, fs::copy_options::recursive);
  }
  const fs::path cpu = data / "topologies" / "cpus" / "dgx-a100-epyc-7742.yaml";
  std::string text = slurp(cpu);
  const std::size_t at = text.find("numa_nodes: 8");
  REQUIRE(at != std::string::npos);
  text.replace(at, 13, "numa_nodes: 1000");
  std::ofstream(cpu) << text;
  std::ofstream(tmp.path() / "s.yaml") << "name: s\nmodel: gpt2\nzero: {stage: 2, offload_optimizer: cpu}\n"
                                          "cluster: {topology: dgx-a100, nodes: 1, gpus_per_node: 2}\n";
  zerosim::test::RunOptions opts;
  opts.env = {"ZEROSIM_DATA_DIR=" + data.string()};
  const Outcome o = run_zerosim(tmp.path(), {"run", "s.yaml", "--out", "o"}, opts);
  INFO(o.err);
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Contains("cpu.numa_nodes") && Contains("1000 NUMA nodes is more than the CPU's 128 cores"));
  CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
  CHECK(!fs::exists(tmp.path() / "o"));
}

TEST_CASE("zerosim run, sweep, merge and plot: an --out that is the filesystem root is refused, nothing written",
          "[e2e]") {
  // New-user trial: `zerosim run X --out /` wrote summary.json and its variant folders into /. Each spelling of the
  // root ("/", "//", "/usr/..", and a scenario's outputs.dir) is one line naming the option, exit 2, and no file.
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "small.yaml", small_scenario());
  const auto check_root = [&](const std::vector<std::string>& args, const std::string& option) {
    INFO("zerosim " << args.front() << " " << args.back());
    const Outcome o = run_zerosim(tmp.path(), args);
    INFO("stderr: " << o.err);
    CHECK(o.status == 2);
    CHECK(lines(o.err) == 1);
    CHECK_THAT(o.err, Contains(option) && Contains("is the filesystem root"));
    for (const char* f : {"summary.json", "result.json", "sweep.json", "sweep.csv", "journal.jsonl"})
      CHECK_FALSE(fs::exists(fs::path("/") / f));
  };
  for (const std::string root : {"/", "//", "/usr/.."})
    check_root({"run", sc.string(), "--out", root}, "run: --out " + root);
  check_root({"sweep", sc.string(), "--axis", "zero.stage=1,2", "--out", "/"}, "sweep: --out /");
  check_root({"merge", tmp.path().string(), "--out", "/"}, "merge: --out /");
  check_root({"plot", tmp.path().string(), "--out", "/"}, "plot: --out /");
  const fs::path own = write_file(tmp.path(), "own.yaml", small_scenario("outputs:\n  dir: /\n"));
  check_root({"run", own.string()}, "run: outputs.dir /");
  // A directory below the root is still fine.
  const Outcome ok = run_zerosim(tmp.path(), {"run", sc.string(), "--out", (tmp.path() / "o").string(), "--quiet"});
  INFO(ok.err);
  CHECK(ok.status == 0);
  CHECK(fs::exists(tmp.path() / "o" / "summary.json"));
}

TEST_CASE("zerosim run: a long simulation says it is still running, unless --quiet", "[e2e]") {
  // A 4096-GPU run without folding took minutes and printed nothing. The line comes every
  // ZEROSIM_PROGRESS_SECONDS (30 s by default): at 1 ms, GPT-2 small's two steps on one GPU outlast it.
  TempDir tmp;
  std::ofstream(tmp.path() / "s.yaml") << "name: s\nmodel: gpt2\ncluster: {topology: one-rtx4090}\n";
  zerosim::test::RunOptions fast;
  fast.env = {"ZEROSIM_PROGRESS_SECONDS=0.001"};
  const Outcome o = run_zerosim(tmp.path(), {"run", "s.yaml", "--out", "o"}, fast);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.err, Contains("zerosim: still simulating variant 's' ("));
  const Outcome quiet = run_zerosim(tmp.path(), {"run", "s.yaml", "--out", "o", "--quiet"}, fast);
  REQUIRE(quiet.status == 0);
  CHECK_THAT(quiet.err, !Contains("still simulating"));
  // Without the variable the first line would come after 30 s: none for this run.
  const Outcome normal = run_zerosim(tmp.path(), {"run", "s.yaml", "--out", "o"});
  REQUIRE(normal.status == 0);
  CHECK_THAT(normal.err, !Contains("still simulating"));
}

TEST_CASE("zerosim run: a scenario with a sweep: block says run simulates it without the block", "[e2e]") {
  // New-user trial: `zerosim run` of a file with a 36-point sweep: block ran its base point in silence. The note
  // names the block's line (small_scenario has 12 lines, so sweep: is line 13); the run itself is unchanged.
  TempDir tmp;
  const fs::path sc =
      write_file(tmp.path(), "swept.yaml", small_scenario("sweep:\n  grid:\n    training.micro_batch: [1, 2]\n"));
  const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--out", (tmp.path() / "o").string(), "--quiet"});
  INFO(o.err);
  CHECK(o.status == 0);
  CHECK_THAT(o.err, Contains("zerosim: note: " + sc.string() +
                             ":13: sweep: is read by `zerosim sweep` only; `zerosim run` simulates the scenario "
                             "without it"));
  CHECK(fs::exists(tmp.path() / "o" / "summary.json"));
  // Without the block: no note.
  const fs::path plain = write_file(tmp.path(), "plain.yaml", small_scenario());
  const Outcome p = run_zerosim(tmp.path(), {"run", plain.string(), "--out", (tmp.path() / "p").string(), "--quiet"});
  CHECK(p.status == 0);
  CHECK_THAT(p.err, !Contains("sweep:"));
}

TEST_CASE("zerosim run, sweep and plan: a bad ZEROSIM_PROGRESS_SECONDS is one line naming it and its range, exit 2",
          "[e2e]") {
  // New-user trial: "abc", "-1" and "0" were silently ignored (lines every 30 s). Accepted: a number of seconds in
  // (0, 86400]; unset or empty means 30.
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "small.yaml", small_scenario());
  for (const std::string bad : {"abc", "-1", "0", "1e9", "nan", "5s"}) {
    zerosim::test::RunOptions env;
    env.env = {"ZEROSIM_PROGRESS_SECONDS=" + bad};
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"run", sc.string(), "--out", (tmp.path() / "o").string()},
          std::vector<std::string>{"sweep", sc.string(), "--axis", "zero.stage=1,2", "--out",
                                   (tmp.path() / "o").string()},
          std::vector<std::string>{"plan", "--model", "gpt2", "--gpu", "rtx4090"}}) {
      INFO("ZEROSIM_PROGRESS_SECONDS=" << bad << " zerosim " << args.front());
      const Outcome o = run_zerosim(tmp.path(), args, env);
      INFO("stderr: " << o.err);
      CHECK(o.status == 2);
      CHECK(lines(o.err) == 1);
      CHECK_THAT(o.err, Contains("ZEROSIM_PROGRESS_SECONDS=" + bad) && Contains("(0, 86400]"));
      CHECK(o.out.empty());
      CHECK_FALSE(fs::exists(tmp.path() / "o"));
    }
  }
  // Empty is unset: the run goes ahead.
  zerosim::test::RunOptions empty;
  empty.env = {"ZEROSIM_PROGRESS_SECONDS="};
  const Outcome o =
      run_zerosim(tmp.path(), {"run", sc.string(), "--out", (tmp.path() / "o").string(), "--quiet"}, empty);
  INFO(o.err);
  CHECK(o.status == 0);
}

TEST_CASE("zerosim run: result.json is byte for byte the same from any working directory (paths are canonical)",
          "[e2e]") {
  // New-user trial 27 F6: result.json recorded scenario.file as typed ("base13b.yaml" against
  // "/work/h5study/base13b.yaml"), so one scenario run from two directories gave two files. The paths the inputs
  // were read from (the scenario, its ds_config.json and a config.json model) are recorded absolute, with links and
  // ".." resolved; a preset model's source (a reference, no file) stays as written.
  TempDir tmp;
  const fs::path sc = tmp.path() / "sc";
  fs::create_directories(sc / "sub");
  std::ofstream(sc / "cfg.json") << R"({"_name_or_path": "gpt2", "model_type": "gpt2", "n_embd": 768, "n_layer": 12,
 "n_head": 12, "n_positions": 1024, "vocab_size": 50257})";
  std::ofstream(sc / "ds.json") << R"({"zero_optimization": {"stage": 2}, "bf16": {"enabled": true}})";
  std::ofstream(sc / "s.yaml") << "name: paths\nmodel: cfg.json\ntraining: {micro_batch: 1, seq_len: 128}\n"
                                  "zero: {deepspeed_config: ds.json}\ncluster: {topology: one-rtx4090}\n"
                                  "simulation: {steps: 2, fidelity: analytic}\n";
  fs::create_directory_symlink(sc, tmp.path() / "link");
  const Outcome a = run_zerosim(tmp.path(), {"run", "sc/s.yaml", "--out", "a", "-q"});
  const Outcome b = run_zerosim(sc / "sub", {"run", "../s.yaml", "--out", "b", "-q"});
  const Outcome c = run_zerosim(tmp.path(), {"run", (tmp.path() / "link" / "s.yaml").string(), "--out", "c", "-q"});
  INFO(a.err << b.err << c.err);
  REQUIRE(a.status == 0);
  REQUIRE(b.status == 0);
  REQUIRE(c.status == 0);
  const std::string ra = slurp(tmp.path() / "a" / "result.json");
  CHECK(ra == slurp(sc / "sub" / "b" / "result.json"));
  CHECK(ra == slurp(tmp.path() / "c" / "result.json"));
  const fs::path real = fs::canonical(sc);
  const json s = json::parse(ra).at("scenario");
  CHECK(s.at("file") == (real / "s.yaml").string());
  CHECK(s.at("zero").at("deepspeed_config") == (real / "ds.json").string());
  CHECK(s.at("model").at("source") == (real / "cfg.json").string());
  // A preset's source is its reference text.
  std::ofstream(tmp.path() / "p.yaml") << "name: preset\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 128}\n"
                                          "cluster: {topology: one-rtx4090}\nsimulation: {steps: 2, fidelity: "
                                          "analytic}\n";
  REQUIRE(run_zerosim(tmp.path(), {"run", "p.yaml", "--out", "p", "-q"}).status == 0);
  CHECK_THAT(
      json::parse(slurp(tmp.path() / "p" / "result.json")).at("scenario").at("model").at("source").get<std::string>(),
      Contains("huggingface.co/openai-community/gpt2"));
}
