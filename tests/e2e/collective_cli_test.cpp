// End-to-end tests of `zerosim collective`: the nccl-tests-style table from the built binary.
#include <catch2/catch.hpp>

#include "tests/support/cli_runner.hpp"
#include "tests/support/temp_dir.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using Catch::Contains;

using Outcome = zerosim::test::ShellOutcome;

namespace {

/// Runs `zerosim args` through the shell with stderr merged into stdout, with `env` (e.g. "TMPDIR=/x") set.
Outcome run(const std::string& args, const std::string& env = "") {
  return zerosim::test::run_shell((env.empty() ? "" : env + " ") + std::string(ZEROSIM_EXE) + " " + args + " 2>&1");
}

constexpr double kTol = 0.01; // the table prints 2 decimals

/// The data rows (lines not starting with '#' or the header) as whitespace-split fields.
std::vector<std::vector<std::string>> rows(const std::string& text) {
  std::vector<std::vector<std::string>> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line.find("size(B)") != std::string::npos)
      continue;
    std::istringstream f(line);
    std::vector<std::string> fields;
    for (std::string w; f >> w;)
      fields.push_back(w);
    out.push_back(fields);
  }
  return out;
}

} // namespace

TEST_CASE("zerosim collective: one row per size, doubling from LO to HI, with algbw and busbw", "[e2e]") {
  // 8 x H200 ring/Simple at 16 GiB: base 8.4 us + 14 x 3.4 us + 1.75·2^34 / 370.8e9 s (NCCL tuning.cc; topo.h
  // 18 x 20.6 GB/s) = 81136.8 us; algbw = 2^34 / t = 211.74 GB/s; busbw = x 1.75 = 370.54 GB/s.
  const auto o =
      run("collective --topology hgx-h200 --op all_reduce --sizes 4GiB:16GiB --algorithm ring "
          "--protocol simple");
  REQUIRE(o.status == 0);
  REQUIRE_THAT(o.text, Contains("busbw(GB/s)") && Contains("8 ranks"));
  const auto r = rows(o.text);
  REQUIRE(r.size() == 3); // 4, 8, 16 GiB
  REQUIRE(r[2][0] == "17179869184");
  REQUIRE(r[2][1] == "ring");
  REQUIRE(r[2][2] == "simple");
  const double t = 8.4e-6 + 14 * 3.4e-6 + 1.75 * 17179869184.0 / 370.8e9;
  REQUIRE(std::stod(r[2][3]) == Approx(t * 1e6).epsilon(kTol));
  REQUIRE(std::stod(r[2][5]) == Approx(17179869184.0 / t * 1.75 / 1e9).epsilon(kTol));
}

TEST_CASE("zerosim collective: auto picks LL for small and Simple for large messages", "[e2e]") {
  const auto o = run("collective --topology dgx-a100 --op all_gather --sizes 1KiB:1GiB --fidelity analytic");
  REQUIRE(o.status == 0);
  const auto r = rows(o.text);
  REQUIRE(r.size() == 21);
  REQUIRE(r.front()[2] == "ll");
  REQUIRE(r.back()[2] == "simple");
}

TEST_CASE("zerosim collective: bad input is one line and exit status 2", "[e2e]") {
  auto o = run("collective --topology hgx-h200 --op broadcast --sizes 1MiB");
  REQUIRE(o.status == 2);
  REQUIRE_THAT(o.text, Contains("unknown collective 'broadcast'"));
  o = run("collective --topology hgx-h200 --op allreduce --sizes 1MiB"); // the nccl-tests binary's spelling
  REQUIRE(o.status == 2);
  REQUIRE_THAT(o.text, Contains("unknown collective 'allreduce': did you mean 'all_reduce'?"));
  o = run("collective --topology hgx-h200 --op all_gather --sizes 1MiB --algorithm tree");
  REQUIRE(o.status == 0); // tree applies to all-reduce only; other ops fall back to the ring
  REQUIRE_THAT(o.text, Contains("ring"));
  o = run("collective --topology hgx-h200 --op all_reduce --sizes 16GiB:1GiB");
  REQUIRE(o.status == 2);
  REQUIRE_THAT(o.text, Contains("LO <= HI"));
  // An unknown topology names the option, not the temporary scenario file the command builds.
  o = run("collective --topology nosuch --op all_reduce --sizes 1MiB");
  REQUIRE(o.status == 2);
  REQUIRE_THAT(o.text, Contains("collective: --topology: unknown preset 'nosuch'"));
  REQUIRE_THAT(o.text, !Contains("zerosim-collective-"));
  // 3 B reduce-scattered over 8 ranks: nothing per rank (nccl-tests' count would be 0).
  o = run("collective --topology hgx-h200 --op reduce_scatter --sizes 3B");
  REQUIRE(o.status == 2);
  REQUIRE_THAT(o.text, Contains("3 B is less than one byte per rank for reduce_scatter over 8 ranks"));
}

TEST_CASE("zerosim collective: sizes up to 1 PB keep the ring's bus bandwidth, larger ones are refused", "[e2e]") {
  // 8 x H200 ring/Simple at 1e15 B: 8.4 us + 14 x 3.4 us + 1.75e15 / 370.8e9 s (the hand calculation of the first
  // case); busbw = 1e15 / t x 1.75 = 370.80 GB/s. Beyond ~5e18 B the ring's 1.75 x size no longer fit a 64-bit
  // transfer size and the flow times stopped growing (trial 24), so sizes above 1e15 B are an error.
  auto o = run("collective --topology hgx-h200 --op all_reduce --sizes 1PB --algorithm ring --protocol simple");
  REQUIRE(o.status == 0);
  const auto r = rows(o.text);
  REQUIRE(r.size() == 1);
  const double t = 8.4e-6 + 14 * 3.4e-6 + 1.75e15 / 370.8e9;
  CHECK(std::stod(r[0][5]) == Approx(1e15 / t * 1.75 / 1e9).epsilon(kTol));
  // The 16-digit size ends in the same column as the header's size(B): the columns stay aligned.
  {
    std::istringstream in(o.text);
    std::string header, row;
    for (std::string line; std::getline(in, line);)
      if (line.find("size(B)") != std::string::npos)
        header = line;
      else if (line[0] != '#' && line.find("1000000000000000") != std::string::npos) // not the # limit line
        row = line;
    REQUIRE(!header.empty());
    REQUIRE(!row.empty());
    CHECK(header.find("size(B)") + 7 == row.find("1000000000000000") + 16);
    CHECK(header.find("algorithm") + 9 == row.find("ring") + 4);
  }
  o = run("collective --topology hgx-h200 --op all_reduce --sizes 1TB:1e22B");
  CHECK(o.status == 2);
  CHECK_THAT(o.text, Contains("--sizes: 1e+22 B is above the limit of 1e15 B (1 PB)"));
  CHECK_THAT(o.text, !Contains("size(B)"));
  o = run("collective --topology hgx-h200 --op all_reduce --sizes 1.001PB");
  CHECK(o.status == 2);
  o = run("collective --help");
  CHECK_THAT(o.text, Contains("1e15 B (1PB)"));
}

TEST_CASE("zerosim collective: options are checked before the table is printed", "[e2e]") {
  // A negative size is an error on stderr with nothing on stdout (no header printed first).
  auto o = zerosim::test::run_shell(std::string(ZEROSIM_EXE) +
                                    " collective --topology dgx-h100 --op all_reduce --sizes -1MiB 2>/dev/null");
  CHECK(o.status == 2);
  CHECK(o.text.empty());
  o = run("collective --topology dgx-h100 --op all_reduce --sizes -1MiB");
  CHECK_THAT(o.text, Contains("--sizes: expected a positive size"));
  // Below 1 B, or not whole bytes, as one size or as LO: refused (0.5 B used to print as a size-0 row).
  for (const char* bad : {"0.5B", "1.5B", "0.5B:4KiB"}) {
    o = run(std::string("collective --topology dgx-h100 --op all_reduce --sizes ") + bad);
    CHECK(o.status == 2);
    CHECK_THAT(o.text, Contains("is not a whole number of bytes (at least 1 B)") && !Contains("size(B)"));
  }
  // One GPU: no collective to run, one line naming the rank count and a way out.
  o = run("collective --topology one-rtx4090 --op all_reduce --sizes 1MiB");
  CHECK(o.status == 2);
  CHECK_THAT(o.text, Contains("a collective needs at least 2 ranks, this cluster has 1") && Contains("dgx-h100"));
  CHECK_THAT(o.text, !Contains("size(B)"));
}

TEST_CASE("zerosim collective: a forced nvls runs all_gather as NVLS, a forced tree runs it as a ring", "[e2e]") {
  // NCCL 2.19+ has NVLS all-gather / reduce-scatter (tuning.cc v2.19.1-1); NCCL_ALGO=NVLS runs them with it. 8 x
  // H100, S = 1 GiB: L = 1 GiB / (16 channels x 8 heads x 128 KiB) = 64 loops, one more of pipeline fill; each GPU
  // receives S at 450e9 x 0.824 (NCCL's 20.6 of 25 GB/s per NVLink4 link) x 0.85 (nvlsEfficiency, Hopper):
  // t = 25 us + 65/64 x S / (370.8e9 x 0.85).
  const auto o = run("collective --topology dgx-h100 --op all_gather --sizes 1GiB --algorithm nvls");
  REQUIRE(o.status == 0);
  CHECK_THAT(o.text, !Contains("# note:"));
  const auto r = rows(o.text);
  REQUIRE(r.size() == 1);
  CHECK(r[0][1] == "nvls");
  const double s = 1073741824.0;
  CHECK(std::stod(r[0][3]) == Approx((25e-6 + 65.0 / 64.0 * s / (370.8e9 * 0.85)) * 1e6).epsilon(1e-4));
  const auto tree = run("collective --topology dgx-h100 --op reduce_scatter --sizes 1MiB --algorithm tree");
  REQUIRE(tree.status == 0);
  CHECK_THAT(tree.text, Contains("# note: tree applies to all_reduce only; reduce_scatter runs as a ring"));
  REQUIRE(rows(tree.text).size() == 1);
  CHECK(rows(tree.text)[0][1] == "ring");
}

TEST_CASE("zerosim collective: the time column widens for a 1e15 B collective on a slow link", "[e2e]") {
  // 4 x RTX 4090 without p2p: every ring step is staged through the host bridge, 102.4 GB/s shared by the 4 GPUs =
  // 25.6 GB/s each; all-reduce of 1e15 B: 2 x 3/4 x 1e15 / 25.6e9 s = 5.859375e10 us (plus ~43 us of latency), 14
  // characters with the 2 decimals, wider than the 12 of the header's time(us).
  const auto o = run("collective --topology 4x-rtx4090-pcie --op all_reduce --sizes 1PB,1GiB");
  REQUIRE(o.status == 0);
  const auto r = rows(o.text);
  REQUIRE(r.size() == 2);
  CHECK(std::stod(r[0][3]) == Approx(1.5e15 / 25.6e9 * 1e6).epsilon(1e-8));
  // Every line of the table (header and both rows) has the same length, and each cell ends where its header does.
  std::istringstream in(o.text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#')
      lines.push_back(line);
  REQUIRE(lines.size() == 3);
  CHECK(lines[1].size() == lines[0].size());
  CHECK(lines[2].size() == lines[0].size());
  const auto end_of = [](const std::string& line, const std::string& cell) { return line.find(cell) + cell.size(); };
  CHECK(end_of(lines[0], "time(us)") == end_of(lines[1], r[0][3]));
  CHECK(end_of(lines[0], "time(us)") == end_of(lines[2], r[1][3]));
  CHECK(end_of(lines[0], "busbw(GB/s)") == lines[1].size());
}

TEST_CASE("zerosim collective: a forced nvls with --protocol ll says it runs Simple", "[e2e]") {
  // NCCL runs NVLS with the Simple protocol only (tuning.cc: NVLS x LL/LL128 disabled); the row says simple and a
  // note line says the requested protocol is not used.
  const auto o = run("collective --topology hgx-h200 --op all_reduce --sizes 4MiB --algorithm nvls --protocol ll");
  REQUIRE(o.status == 0);
  CHECK_THAT(o.text, Contains("# note: NVLS runs the Simple protocol only; --protocol ll is not used"));
  const auto r = rows(o.text);
  REQUIRE(r.size() == 1);
  CHECK(r[0][1] == "nvls");
  CHECK(r[0][2] == "simple");
}

TEST_CASE("zerosim collective: --set cluster.nccl_channels=2 caps a ring at 2 x 60 GB/s on one H100 node", "[e2e]") {
  // docs/collectives.md "NCCL's bandwidth caps": busBw <= nChannels x the fastest channel NCCL's search tries, 60 GB/s
  // on one Hopper node (search.cc v2.27.7-1). With 2 channels ring/Simple moves at most 2 x 60 = 120 GB/s; at 1 GiB
  // the latency terms (about 56 us of 15.7 ms) leave the busbw within 1 % of it.
  const double cap = 2 * 60.0;
  constexpr double kLatencyTol = 0.01; // what the latency terms take off the cap at 1 GiB (0.4 %)
  const std::string cmd =
      "collective --topology dgx-h100 --op all_reduce --sizes 1GiB --algorithm ring --protocol simple";
  const auto two = run(cmd + " --set cluster.nccl_channels=2");
  REQUIRE(two.status == 0);
  // The header names the change, so a saved table says which settings produced it.
  CHECK_THAT(two.text,
             Contains("# zerosim collective: all_reduce on dgx-h100 (--set cluster.nccl_channels=2) (1 node(s)"));
  const auto r2 = rows(two.text);
  REQUIRE(r2.size() == 1);
  CHECK(r2[0][1] == "ring");
  CHECK(r2[0][2] == "simple");
  const double busbw2 = std::stod(r2[0][5]);
  CHECK(busbw2 <= cap);
  CHECK(busbw2 == Approx(cap).epsilon(kLatencyTol));
  // The preset's 16 channels (16 x 60 = 960 GB/s) leave the ring at its NVLink speed, far above 120 GB/s.
  const auto dflt = run(cmd);
  REQUIRE(dflt.status == 0);
  CHECK_THAT(dflt.text, !Contains("--set"));
  const auto r16 = rows(dflt.text);
  REQUIRE(r16.size() == 1);
  CHECK(std::stod(r16[0][5]) > 2 * cap);
}

TEST_CASE("zerosim collective: the limit line names what caps busbw: NVLink, the network or NCCL's channels", "[e2e]") {
  // newuser31 F11: on two DGX H100 nodes a NIC faster than ~47 GB/s changed nothing. By hand, from the preset
  // (topologies/clusters/dgx-h100.yaml): a ring hop inside a node runs at 450 GB/s x 0.824 = 370.80 GB/s per GPU
  // (NVLink4); a node-crossing hop at 8 NICs x bandwidth x 4096/4122 (kInfinibandPayloadEfficiency, the loader's
  // default cluster.nic.efficiency) per node. The ring's busbw is the slower of the two: NVLink from
  // 370.8 / (8 x 0.993692) = 46.64 GB/s per NIC on.
  const double nvlink = 450.0 * 0.824; // GB/s
  const double payload = 4096.0 / 4122.0;
  const std::string cmd = "collective --topology dgx-h100 --nodes 2 --op all_gather --sizes 1GiB";
  const auto fast = run(cmd + " --set cluster.nic.bandwidth=100GBps");
  REQUIRE(fast.status == 0);
  CHECK_THAT(fast.text, Contains("# limit at 1073741824 B (ring/simple): the intra-node link limits busbw to 370.80 "
                                 "GB/s (intra-node link: cluster.intra_node 450.00 GB/s x efficiency 0.824 = 370.80 "
                                 "GB/s per GPU"));
  // 8 x 100 x 4096/4122 = 794.95 GB/s per node: not binding.
  CHECK_THAT(fast.text, Contains("#   not binding: network: 8 NICs x cluster.nic 100.00 GB/s x efficiency 0.993692 = "
                                 "794.95 GB/s per node"));
  const auto rf = rows(fast.text);
  REQUIRE(rf.size() == 1);
  const double busbw_fast = std::stod(rf[0][5]);
  CHECK(busbw_fast <= nvlink);
  CHECK(busbw_fast >= 0.95 * nvlink); // 15 latency steps of ~5-20 us against ~2.7 ms of data
  // A NIC four times faster still: the same row, as the limit line says.
  const auto faster = run(cmd + " --set cluster.nic.bandwidth=400GBps");
  REQUIRE(faster.status == 0);
  CHECK(rows(faster.text) == rf);
  // 40 GB/s NICs: 8 x 40 x 0.993692 = 317.98 GB/s per node < 370.80: the network binds.
  const auto slow = run(cmd + " --set cluster.nic.bandwidth=40GBps");
  REQUIRE(slow.status == 0);
  const double network = 8 * 40.0 * payload;
  CHECK_THAT(slow.text, Contains("the network limits busbw to 317.98 GB/s (network: 8 NICs x cluster.nic 40.00 GB/s"));
  CHECK_THAT(slow.text, Contains("#   not binding: intra-node link: cluster.intra_node 450.00 GB/s"));
  const auto rs = rows(slow.text);
  REQUIRE(rs.size() == 1);
  CHECK(std::stod(rs[0][5]) <= network);
  CHECK(std::stod(rs[0][5]) >= 0.95 * network);
  // One node, 2 NCCL channels: 2 x 60 GB/s (search.cc's fastest Hopper channel on one node) = 120 GB/s under the
  // 370.80 GB/s NVLink: NCCL's cap binds, 120 / 370.8 = 0.324 of the link.
  const auto capped =
      run("collective --topology dgx-h100 --op all_reduce --sizes 1GiB --algorithm ring --protocol simple --set "
          "cluster.nccl_channels=2");
  REQUIRE(capped.status == 0);
  CHECK_THAT(capped.text, Contains("the NCCL protocol / channel cap limits busbw to 120.00 GB/s (NCCL's ring simple "
                                   "bandwidth (2 channels; tuning.cc): x 0.324 of the 370.80 GB/s intra-node link)"));
}

TEST_CASE("zerosim collective: a bad --set is one line naming the key, no table", "[e2e]") {
  const std::string cmd = std::string(ZEROSIM_EXE) + " collective --topology dgx-h100 --op all_reduce --sizes 1MiB ";
  // stdout alone: nothing printed before the error.
  const auto quiet = [&](const std::string& set) { return zerosim::test::run_shell(cmd + set + " 2>/dev/null"); };
  const auto one_line = [](const std::string& text) { return !text.empty() && text.find('\n') == text.size() - 1; };
  // An unknown key: the loader's own error, as `zerosim run --set` gives it.
  auto o = run("collective --topology dgx-h100 --op all_reduce --sizes 1MiB --set cluster.nccl_chanels=2");
  CHECK(o.status != 0);
  CHECK(one_line(o.text));
  CHECK_THAT(o.text, Contains("zerosim: <cli>: cluster.nccl_chanels: unknown key") &&
                         Contains("did you mean 'cluster.nccl_channels'"));
  CHECK(quiet("--set cluster.nccl_chanels=2").text.empty());
  // A bad value: the same.
  o = run("collective --topology dgx-h100 --op all_reduce --sizes 1MiB --set cluster.nccl_channels=abc");
  CHECK(o.status != 0);
  CHECK(one_line(o.text));
  CHECK_THAT(o.text, Contains("zerosim: <cli>: cluster.nccl_channels: expected a whole number, got 'abc'"));
  // A key outside the cluster: the key, and which keys apply.
  o = run("collective --topology dgx-h100 --op all_reduce --sizes 1MiB --set zero.stage=2");
  CHECK(o.status != 0);
  CHECK(one_line(o.text));
  CHECK_THAT(o.text, Contains("--set zero.stage: only cluster.* and gpu.* keys apply to `zerosim collective`"));
  CHECK(quiet("--set zero.stage=2").text.empty());
  // A key the command sets from an option of its own: the option to use.
  o = run("collective --topology dgx-h100 --op all_reduce --sizes 1MiB --set simulation.fidelity=analytic");
  CHECK(o.status != 0);
  CHECK(one_line(o.text));
  CHECK_THAT(o.text, Contains("--set simulation.fidelity") && Contains("use --fidelity"));
  o = run("collective --topology dgx-h100 --op all_reduce --sizes 1MiB --set cluster.nodes=2");
  CHECK(o.status != 0);
  CHECK_THAT(o.text, Contains("--set cluster.nodes") && Contains("use --nodes"));
  // --fit without --topology has no cluster to change.
  o = run("collective --op all_reduce --fit /dev/null --set cluster.nccl_channels=2");
  CHECK(o.status != 0);
  CHECK(one_line(o.text));
  CHECK_THAT(o.text, Contains("--fit without --topology"));
}

TEST_CASE("zerosim collective: --help lists --set", "[e2e]") {
  const auto o = run("collective --help");
  REQUIRE(o.status == 0);
  CHECK_THAT(o.text, Contains("[--set KEY=VALUE]...") && Contains("--set arg") && Contains("cluster.nccl_channels=2"));
}

TEST_CASE("zerosim collective: --topology SCENARIO.yaml takes the scenario's cluster, options only where given",
          "[e2e]") {
  const zerosim::test::TempDir tmp("collective");
  const std::string sc = (tmp.path() / "h200.yaml").string();
  // The cluster of the first test case (8 x H200, ring, Simple) written in a scenario instead of given by options.
  std::ofstream(sc) << "name: cluster-file\nmodel: gpt2\ncluster:\n  topology: hgx-h200\n"
                       "  collective_algorithm: ring\n  collective_protocol: simple\n";
  auto o = run("collective --topology " + sc + " --op all_reduce --sizes 16GiB");
  REQUIRE(o.status == 0);
  CHECK_THAT(o.text, Contains("on " + sc + " (1 node(s) x 8 GPUs = 8 ranks)"));
  auto r = rows(o.text);
  REQUIRE(r.size() == 1);
  CHECK(r[0][1] == "ring");
  CHECK(r[0][2] == "simple");
  // Same hand calculation as the first test: 8.4 us + 14 x 3.4 us + 1.75 x 2^34 B / 370.8 GB/s.
  const double t = 8.4e-6 + 14 * 3.4e-6 + 1.75 * 17179869184.0 / 370.8e9;
  CHECK(std::stod(r[0][3]) == Approx(t * 1e6).epsilon(kTol));
  // An option given overrides the file's key; --nodes too (2 x 8 ranks).
  o = run("collective --topology " + sc + " --op all_reduce --sizes 16GiB --protocol ll128 --nodes 2");
  REQUIRE(o.status == 0);
  CHECK_THAT(o.text, Contains("(2 node(s) x 8 GPUs = 16 ranks)"));
  r = rows(o.text);
  REQUIRE(r.size() == 1);
  CHECK(r[0][2] == "ll128");
  // The file's nodes are kept without --nodes.
  std::ofstream(sc) << "name: cluster-file\nmodel: gpt2\ncluster: {topology: hgx-h200, nodes: 2}\n";
  o = run("collective --topology " + sc + " --op all_reduce --sizes 1MiB");
  REQUIRE(o.status == 0);
  CHECK_THAT(o.text, Contains("(2 node(s) x 8 GPUs = 16 ranks)"));
}

TEST_CASE("zerosim collective: a scenario file that is missing, bad or compares clusters is one line, no table",
          "[e2e]") {
  const zerosim::test::TempDir tmp("collective");
  const auto one_line = [](const std::string& text) { return !text.empty() && text.find('\n') == text.size() - 1; };
  const std::string missing = (tmp.path() / "nosuch.yaml").string();
  auto o = run("collective --topology " + missing + " --op all_reduce --sizes 1MiB");
  CHECK(o.status != 0);
  CHECK(one_line(o.text));
  // Missing, it is neither kind of file (a scenario or a topology file of the preset format).
  CHECK_THAT(o.text, Contains("--topology " + missing + ": no such file"));
  const std::string bad = (tmp.path() / "bad.yaml").string();
  std::ofstream(bad) << "name: bad\nmodel: gpt2\ncluster:\n  topology: hgx-h200\n  nccl_channels: many\n";
  o = run("collective --topology " + bad + " --op all_reduce --sizes 1MiB");
  CHECK(o.status != 0);
  CHECK(one_line(o.text));
  CHECK_THAT(o.text, Contains(bad + ":5: cluster.nccl_channels"));
  const std::string cmp = (tmp.path() / "cmp.yaml").string();
  std::ofstream(cmp) << "name: cmp\nmodel: gpt2\ncluster: {topology: hgx-h200}\ncompare:\n  cluster.nodes: [1, 2]\n";
  o = run("collective --topology " + cmp + " --op all_reduce --sizes 1MiB");
  CHECK(o.status != 0);
  CHECK(one_line(o.text));
  CHECK_THAT(o.text, Contains("its variants differ in the cluster (compare: cluster.nodes)"));
  // A comparison of something else shares one cluster: fine.
  std::ofstream(cmp) << "name: cmp\nmodel: gpt2\ncluster: {topology: hgx-h200}\ncompare:\n  zero.stage: [1, 2]\n";
  o = run("collective --topology " + cmp + " --op all_reduce --sizes 1MiB");
  CHECK(o.status == 0);
  // ... unless compare_set gives one of its variants a cluster key of its own.
  std::ofstream(cmp) << "name: cmp\nmodel: gpt2\ncluster: {topology: hgx-h200}\ncompare:\n  zero.stage: [1, 2]\n"
                        "compare_set:\n  2: {cluster.nccl_channels: 4}\n";
  o = run("collective --topology " + cmp + " --op all_reduce --sizes 1MiB");
  CHECK(o.status != 0);
  CHECK(one_line(o.text));
  CHECK_THAT(o.text, Contains("its variants differ in the cluster (zero.stage=1 and zero.stage=2, through "
                              "compare_set:); pick one with --set cluster.KEY=VALUE"));
  // One value for every variant: one cluster again.
  o = run("collective --topology " + cmp + " --op all_reduce --sizes 1MiB --set cluster.nccl_channels=4");
  CHECK(o.status == 0);
  // A compare_set key outside the cluster: fine.
  std::ofstream(cmp) << "name: cmp\nmodel: gpt2\ncluster: {topology: hgx-h200}\ncompare:\n  zero.stage: [1, 2]\n"
                        "compare_set:\n  2: {training.micro_batch: 2}\n";
  o = run("collective --topology " + cmp + " --op all_reduce --sizes 1MiB");
  CHECK(o.status == 0);
}

TEST_CASE("zerosim collective: the throwaway scenario of a preset goes in $TMPDIR and is removed", "[e2e]") {
  const zerosim::test::TempDir tmp("collective");
  // A run leaves $TMPDIR as it found it.
  auto o = run("collective --topology dgx-h100 --op all_reduce --sizes 1MiB", "TMPDIR=" + tmp.path().string());
  REQUIRE(o.status == 0);
  CHECK(std::filesystem::is_empty(tmp.path()));
  // $TMPDIR is where it is written: a missing one is an error naming it.
  const std::string missing = (tmp.path() / "nosuch").string();
  o = run("collective --topology dgx-h100 --op all_reduce --sizes 1MiB", "TMPDIR=" + missing);
  CHECK(o.status != 0);
  CHECK_THAT(o.text, Contains("collective: cannot create a temporary directory in " + missing));
}

TEST_CASE("zerosim collective: --op reduce runs a ring chain, E over the link bandwidth plus n - 1 hops and its fill",
          "[e2e]") {
  // NCCL's Reduce is a chain of n - 1 links to the root, pipelined: every link carries the whole buffer E once
  // (nccl-tests PERFORMANCE.md: busbw = algbw). 8 x H200, ring/Simple, E = 16 GiB: base 8.4 us + 7 steps x 3.4 us
  // (tuning.cc v2.27.7-1 Ring/Simple) + 2^34 B / 370.8e9 B/s (18 NVLink4 links x 20.6 GB/s, topo.h) = 46364.1 us, plus
  // the chain's pipeline fill: its last link starts n - 2 = 6 chunk times after the first, each moving one 512 KiB
  // Simple chunk on each of the 16 channels (NCCL reduce.h; REDUCE_CHUNKSTEPS 1): 6 x 524288 x 16 / 370.8e9 B/s =
  // 135.7 us; 46499.8 us in all.
  const auto o = run("collective --topology hgx-h200 --op reduce --sizes 16GiB --protocol simple");
  REQUIRE(o.status == 0);
  CHECK_THAT(o.text, Contains("busbw = algbw x 1.0000") && Contains("reduce on hgx-h200"));
  const auto r = rows(o.text);
  REQUIRE(r.size() == 1);
  CHECK(r[0][1] == "ring");
  const double e = 17179869184.0;
  const double t = 8.4e-6 + 7 * 3.4e-6 + e / 370.8e9 + 6.0 * 524288.0 * 16.0 / 370.8e9;
  CHECK(std::stod(r[0][3]) == Approx(t * 1e6).epsilon(kTol));
  CHECK(std::stod(r[0][5]) == Approx(e / t / 1e9).epsilon(kTol)); // busbw = algbw
}

TEST_CASE("zerosim collective: --op reduce with a forced tree is one line and exit status 2", "[e2e]") {
  for (const char* algo : {"tree", "nvls", "hierarchical", "direct"}) {
    const auto o = run(std::string("collective --topology hgx-h200 --op reduce --sizes 1MiB --algorithm ") + algo);
    INFO(o.text);
    CHECK(o.status == 2);
    CHECK(zerosim::test::count_lines(o.text) == 1);
    CHECK_THAT(o.text, Contains(std::string("--algorithm ") + algo + ": reduce runs as a ring only"));
  }
  // ring and auto run it.
  CHECK(run("collective --topology hgx-h200 --op reduce --sizes 1MiB --algorithm ring").status == 0);
}

TEST_CASE("zerosim collective: refuses the rank counts and fidelities that zerosim run refuses", "[e2e]") {
  // 16384 x 8 = 131072 GPUs unfolded is above run's 65536 simulated GPUs (scenario_loader validate_limits); 256 x 8 =
  // 2048 ranks at chunk fidelity is above run's 1024. Both must be refused at once, before any simulation.
  auto o = run("collective --topology dgx-h100 --nodes 16384 --fold off --op all_reduce --sizes 1MiB");
  REQUIRE(o.status == 2);
  REQUIRE_THAT(o.text, Contains("zerosim: collective: --fold: off simulates every one of the 131072 GPUs") &&
                           Contains("the limit is 65536") && Contains("--fold auto"));
  o = run("collective --topology dgx-h100 --nodes 256 --fold off --fidelity chunk --op all_reduce --sizes 1MiB");
  REQUIRE(o.status == 2);
  REQUIRE_THAT(o.text, Contains("zerosim: collective: --fidelity: chunk sends every algorithm step") &&
                           Contains("2048 GPUs is above 1024") && Contains("use --fidelity flow"));
  // Below the limits both run: 1024 ranks unfolded at analytic fidelity, 128 ranks at chunk.
  o = run("collective --topology dgx-h100 --nodes 128 --fold off --fidelity analytic --op all_reduce --sizes 1KiB");
  REQUIRE(o.status == 0);
  o = run("collective --topology dgx-h100 --nodes 16 --fold off --fidelity chunk --op all_reduce --sizes 1KiB");
  REQUIRE(o.status == 0);
}

TEST_CASE("zerosim collective: --sizes takes a comma-separated list and says which unit 1K means", "[e2e]") {
  // nccl-tests users give a few points: 8 B, 64 KiB and 1 MiB, in that order, one row each.
  auto o = run("collective --topology dgx-a100 --op all_reduce --sizes 8B,64KiB,1MiB --fidelity analytic");
  REQUIRE(o.status == 0);
  const auto r = rows(o.text);
  REQUIRE(r.size() == 3);
  CHECK(r[0][0] == "8");
  CHECK(r[1][0] == "65536"); // 64 x 1024
  CHECK(r[2][0] == "1048576"); // 1024 x 1024
  // A bad element names itself and the forms --sizes takes, with the command's prefix.
  o = run("collective --topology dgx-a100 --op all_reduce --sizes 8B,64XB");
  REQUIRE(o.status == 2);
  CHECK_THAT(o.text, Contains("zerosim: collective: --sizes: unknown unit 'XB' in '64XB'") &&
                         Contains("SIZE, LO:HI (x2 steps) or a list SIZE,SIZE,..."));
  // nccl-tests' -b 1K means 1024 B: point at KiB (1024) and kB (1000).
  for (const std::string k : {"1K", "1KB"}) {
    o = run("collective --topology dgx-a100 --op all_reduce --sizes " + k);
    REQUIRE(o.status == 2);
    CHECK_THAT(o.text, Contains("zerosim: collective: --sizes:") && Contains("1KiB (1 KiB = 1024 B)") &&
                           Contains("1kB (1 kB = 1000 B)"));
  }
  // The other --sizes errors carry the same prefix.
  o = run("collective --topology dgx-a100 --op all_reduce --sizes 0");
  CHECK_THAT(o.text, Contains("zerosim: collective: --sizes: expected a positive size"));
  o = run("collective --topology dgx-a100 --op all_reduce --sizes 1MiB --fidelity exact");
  CHECK_THAT(o.text, Contains("zerosim: collective: --fidelity: expected flow"));
}
