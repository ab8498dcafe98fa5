#include "sim/program/program.hpp"

#include <catch2/catch.hpp>

using namespace zerosim;
using namespace zerosim::program;

TEST_CASE("ProgramBuilder: join makes the waiter wait on a fresh event of the producer", "[program][unit]") {
  ProgramBuilder b;
  auto comp = b.add_stream("compute", StreamKind::COMPUTE);
  auto comm = b.add_stream("comm", StreamKind::COMM);
  b.compute(comp, Phase::FORWARD, "fwd", Flops(1e9), Bytes(0));
  b.join(comm, comp);
  auto p = b.build(1);
  REQUIRE(p.streams.size() == 2);
  REQUIRE(p.num_events == 1);
  REQUIRE(std::holds_alternative<Record>(p.streams[0].ops.back().body));
  REQUIRE(std::holds_alternative<Wait>(p.streams[1].ops.front().body));
  REQUIRE(validate(p).empty());
}

TEST_CASE("ProgramBuilder: labels are interned once", "[program][unit]") {
  ProgramBuilder b;
  REQUIRE(b.label("fwd block.0") == b.label("fwd block.0"));
  REQUIRE(b.label("a") != b.label("b"));
  REQUIRE(b.label("") == 0);
}

TEST_CASE("validate: rejects a wait on an event never recorded, a double free and an unknown group",
          "[program][unit]") {
  SECTION("wait without record") {
    ProgramBuilder b;
    auto s = b.add_stream("compute", StreamKind::COMPUTE);
    b.wait(s, b.new_event());
    REQUIRE_THAT(validate(b.build(1)), Catch::Contains("never recorded"));
  }
  SECTION("double free") {
    ProgramBuilder b;
    auto s = b.add_stream("compute", StreamKind::COMPUTE);
    auto buf = b.alloc(s, Phase::FORWARD, "act", MemTag::ACTIVATIONS, Bytes(10));
    b.free(s, Phase::BACKWARD, buf);
    b.free(s, Phase::BACKWARD, buf);
    REQUIRE_THAT(validate(b.build(1)), Catch::Contains("freed twice"));
  }
  SECTION("two-part frees: each part once, both parts, GPU buffers only") {
    ProgramBuilder b;
    auto s = b.add_stream("compute", StreamKind::COMPUTE);
    auto ok = b.alloc(s, Phase::BACKWARD, "grad", MemTag::LP_GRADS, Bytes(10));
    b.free_tensor(s, Phase::BACKWARD, ok);
    b.free_block(s, Phase::BACKWARD, ok);
    REQUIRE(validate(b.build(1)).empty());
    ProgramBuilder t;
    auto s2 = t.add_stream("compute", StreamKind::COMPUTE);
    auto half = t.alloc(s2, Phase::BACKWARD, "grad", MemTag::LP_GRADS, Bytes(10));
    t.free_tensor(s2, Phase::BACKWARD, half);
    REQUIRE_THAT(validate(t.build(1)), Catch::Contains("tensor freed, block never"));
    ProgramBuilder d;
    auto s3 = d.add_stream("compute", StreamKind::COMPUTE);
    auto twice = d.alloc(s3, Phase::BACKWARD, "grad", MemTag::LP_GRADS, Bytes(10));
    d.free_tensor(s3, Phase::BACKWARD, twice);
    d.free(s3, Phase::BACKWARD, twice);
    REQUIRE_THAT(validate(d.build(1)), Catch::Contains("freed twice"));
    ProgramBuilder h;
    auto s4 = h.add_stream("cpu", StreamKind::CPU);
    auto host = h.alloc(s4, Phase::INIT, "host", MemTag::FP32_MASTER, Bytes(10), Device::HOST);
    h.free_tensor(s4, Phase::INIT, host);
    h.free_block(s4, Phase::INIT, host);
    REQUIRE_THAT(validate(h.build(1)), Catch::Contains("host buffer freed in two parts"));
  }
  SECTION("unknown group") {
    ProgramBuilder b;
    auto s = b.add_stream("comm", StreamKind::COMM);
    b.collective(s, Phase::GRAD_REDUCE, "ar", CollectiveKind::ALL_REDUCE, Bytes(1), 3);
    REQUIRE_THAT(validate(b.build(1)), Catch::Contains("unknown group"));
  }
  SECTION("GEMM utilization outside (0, 1]") {
    for (const double u : {0.0, 1.5}) {
      ProgramBuilder b;
      auto s = b.add_stream("compute", StreamKind::COMPUTE);
      b.compute(s, Phase::FORWARD, "fwd", Flops(1), Bytes(0), Flops(0), u);
      REQUIRE_THAT(validate(b.build(1)), Catch::Contains("gemm_utilization"));
    }
  }
}

TEST_CASE("ProgramBuilder: alloc carries the pinned flag, and validate rejects a pinned GPU buffer",
          "[program][unit]") {
  ProgramBuilder b;
  auto cpu = b.add_stream("cpu", StreamKind::CPU);
  b.alloc(cpu, Phase::INIT, "fp32 master", MemTag::FP32_MASTER, Bytes(16), Device::HOST, true);
  b.alloc(cpu, Phase::INIT, "adam m,v", MemTag::OPTIMIZER_STATES, Bytes(32), Device::HOST);
  const auto p = b.build(1);
  REQUIRE(std::get<Alloc>(p.streams[0].ops[0].body).pinned);
  REQUIRE_FALSE(std::get<Alloc>(p.streams[0].ops[1].body).pinned); // pageable by default
  REQUIRE(validate(p).empty());
  ProgramBuilder g;
  auto comp = g.add_stream("compute", StreamKind::COMPUTE);
  g.alloc(comp, Phase::INIT, "lp params", MemTag::LP_PARAMS, Bytes(16), Device::GPU, true);
  REQUIRE_THAT(validate(g.build(1)), Catch::Contains("pinned but not a host buffer"));
}

TEST_CASE("ProgramBuilder: free_record_streamed is two Frees across streams, one plain Free on one stream",
          "[program][unit]") {
  ProgramBuilder b;
  const auto host = b.add_stream("host", StreamKind::HOST);
  const auto compute = b.add_stream("compute", StreamKind::COMPUTE);
  const auto x = b.alloc(host, Phase::FORWARD, "x", MemTag::GATHER_BUFFER, Bytes(1024));
  const auto y = b.alloc(compute, Phase::FORWARD, "y", MemTag::GATHER_BUFFER, Bytes(1024));
  b.free_record_streamed(host, compute, Phase::FORWARD, x);
  b.free_record_streamed(compute, compute, Phase::FORWARD, y);
  const auto p = b.build(1);
  REQUIRE(validate(p).empty());
  const auto& h = std::get<Free>(p.streams[host].ops.back().body);
  CHECK(h.buffer == x);
  CHECK(h.kind == FreeKind::TENSOR);
  const auto& ops = p.streams[compute].ops;
  REQUIRE(ops.size() == 3); // alloc y, BLOCK of x, plain free of y
  CHECK(std::get<Free>(ops[1].body).kind == FreeKind::BLOCK);
  CHECK(std::get<Free>(ops[1].body).buffer == x);
  CHECK(std::get<Free>(ops[2].body).kind == FreeKind::TENSOR_AND_BLOCK);
  CHECK(std::get<Free>(ops[2].body).buffer == y);
}

TEST_CASE("ProgramBuilder: copy carries the pageable flag, and validate rejects a pageable device-to-device copy",
          "[program][unit]") {
  // Only a copy with a host side can touch pageable memory (program::Copy::pageable).
  ProgramBuilder b;
  auto copy = b.add_stream("copy", StreamKind::COPY);
  b.copy(copy, Phase::OFFLOAD, "h2d", CopyDir::H2D, Bytes(16), true);
  b.copy(copy, Phase::OFFLOAD, "d2h", CopyDir::D2H, Bytes(16));
  const auto p = b.build(1);
  REQUIRE(std::get<Copy>(p.streams[0].ops[0].body).pageable);
  REQUIRE_FALSE(std::get<Copy>(p.streams[0].ops[1].body).pageable); // pinned by default
  REQUIRE(validate(p).empty());
  ProgramBuilder g;
  auto s = g.add_stream("copy", StreamKind::COPY);
  g.copy(s, Phase::OFFLOAD, "d2d", CopyDir::D2D, Bytes(16), true);
  REQUIRE_THAT(validate(g.build(1)), Catch::Contains("pageable copy that is neither H2D nor D2H"));
}

TEST_CASE("StepProgram::step_of: an op belongs to the step begun before it was appended, on every stream",
          "[program][unit]") {
  ProgramBuilder b;
  auto comp = b.add_stream("compute", StreamKind::COMPUTE);
  auto comm = b.add_stream("comm", StreamKind::COMM);
  b.collective(comm, Phase::INIT, "init broadcast", CollectiveKind::ALL_GATHER, Bytes(10)); // comm op 0: init
  b.mark(comp, MarkKind::STEP_BEGIN, 0); // compute op 0
  b.collective(comm, Phase::GRAD_REDUCE, "allreduce 0", CollectiveKind::ALL_REDUCE, Bytes(10)); // comm op 1
  b.mark(comp, MarkKind::STEP_END, 0); // compute op 1
  b.mark(comp, MarkKind::STEP_BEGIN, 1); // compute op 2
  b.collective(comm, Phase::PARAM_GATHER, "allgather 1", CollectiveKind::ALL_GATHER, Bytes(10)); // comm op 2
  b.mark(comp, MarkKind::STEP_END, 1); // compute op 3
  auto p = b.build(2);
  REQUIRE(p.step_begin_ops.size() == 2);
  CHECK(p.step_of(comm, 0) == -1);
  CHECK(p.step_of(comm, 1) == 0);
  CHECK(p.step_of(comm, 2) == 1);
  // The compute stream's STEP_BEGIN mark is the first op of its step.
  CHECK(p.step_of(comp, 0) == 0);
  CHECK(p.step_of(comp, 1) == 0);
  CHECK(p.step_of(comp, 2) == 1);
  CHECK(p.step_of(comp, 3) == 1);
  // Given the op itself (as the engine's actors have it): the same steps, from its position in its stream.
  CHECK(p.step_of(comm, p.streams[comm].ops[0]) == -1);
  CHECK(p.step_of(comm, p.streams[comm].ops[2]) == 1);
  CHECK(p.step_of(comp, p.streams[comp].ops[1]) == 0);
  CHECK(p.step_of(comp, p.streams[comp].ops[3]) == 1);
  // Without marks everything is initialisation.
  ProgramBuilder none;
  auto s = none.add_stream("compute", StreamKind::COMPUTE);
  none.compute(s, Phase::FORWARD, "fwd", Flops(1), Bytes(0));
  CHECK(none.build(1).step_of(s, 0) == -1);
}

TEST_CASE("ProgramBuilder: collectives are numbered in emission order per group, across streams", "[program][unit]") {
  // Group a gets 0 (stream 1), 1 (stream 2), 2 (stream 1); group b, numbered on its own, gets 0.
  ProgramBuilder b;
  const auto ga = b.add_group("a");
  const auto gb = b.add_group("b");
  const auto s1 = b.add_stream("s1", StreamKind::COMM);
  const auto s2 = b.add_stream("s2", StreamKind::COMM);
  b.collective(s1, Phase::PARAM_GATHER, "x", CollectiveKind::ALL_GATHER, Bytes(1), ga);
  b.collective(s2, Phase::GRAD_REDUCE, "y", CollectiveKind::REDUCE_SCATTER, Bytes(1), ga);
  b.collective(s2, Phase::GRAD_REDUCE, "z", CollectiveKind::ALL_REDUCE, Bytes(1), gb);
  b.collective(s1, Phase::PARAM_GATHER, "w", CollectiveKind::ALL_GATHER, Bytes(1), ga);
  const StepProgram p = b.build(1);
  const auto seq = [&](StreamId s, std::size_t i) { return std::get<Collective>(p.streams[s].ops[i].body).seq; };
  CHECK(seq(s1, 0) == 0);
  CHECK(seq(s2, 0) == 1);
  CHECK(seq(s2, 1) == 0);
  CHECK(seq(s1, 1) == 2);
  REQUIRE(validate(p).empty());
}

TEST_CASE("validate: rejects a group's issue numbers repeated, missing or falling along a stream", "[program][unit]") {
  const auto two_on_one_stream = [] {
    ProgramBuilder b;
    b.add_group("dp");
    const auto s = b.add_stream("s", StreamKind::COMM);
    b.collective(s, Phase::GRAD_REDUCE, "x", CollectiveKind::ALL_REDUCE, Bytes(1));
    b.collective(s, Phase::GRAD_REDUCE, "y", CollectiveKind::ALL_REDUCE, Bytes(1));
    return b.build(1);
  };
  SECTION("repeated") {
    StepProgram p = two_on_one_stream();
    std::get<Collective>(p.streams[0].ops[1].body).seq = 0;
    REQUIRE_THAT(validate(p), Catch::Contains("after a later one"));
  }
  SECTION("missing") {
    StepProgram p = two_on_one_stream();
    std::get<Collective>(p.streams[0].ops[1].body).seq = 2;
    REQUIRE_THAT(validate(p), Catch::Contains("no collective number 1"));
  }
  SECTION("falling along a stream") {
    StepProgram p = two_on_one_stream();
    std::get<Collective>(p.streams[0].ops[0].body).seq = 1;
    std::get<Collective>(p.streams[0].ops[1].body).seq = 0;
    REQUIRE_THAT(validate(p), Catch::Contains("after a later one"));
  }
  SECTION("twice across streams") {
    ProgramBuilder b;
    b.add_group("dp");
    const auto s1 = b.add_stream("s1", StreamKind::COMM);
    const auto s2 = b.add_stream("s2", StreamKind::COMM);
    b.collective(s1, Phase::GRAD_REDUCE, "x", CollectiveKind::ALL_REDUCE, Bytes(1));
    b.collective(s2, Phase::GRAD_REDUCE, "y", CollectiveKind::ALL_REDUCE, Bytes(1));
    StepProgram p = b.build(1);
    std::get<Collective>(p.streams[1].ops[0].body).seq = 0;
    REQUIRE_THAT(validate(p), Catch::Contains("collective number 0 twice"));
  }
}

// review30 #7: validate dry-runs the engine's blocking rules (a Wait passes after its Record, a collective after its
// group's previous issue number) so a hand-built program that would deadlock is a validate() error naming the op,
// not a runtime "deadlock:" diagnostic.
TEST_CASE("validate: rejects a program whose streams would deadlock (a Wait ahead of its Record)", "[program][unit]") {
  SECTION("two streams each waiting on the other's later Record") {
    ProgramBuilder b;
    const auto a = b.add_stream("a", StreamKind::COMPUTE);
    const auto c = b.add_stream("c", StreamKind::COMM);
    b.compute(a, Phase::FORWARD, "fwd", Flops(1), Bytes(0));
    StepProgram p = b.build(1);
    p.num_events = 2;
    p.streams[a].ops.insert(p.streams[a].ops.begin(), Op{Wait{1}, Phase::OTHER, 0});
    p.streams[a].ops.push_back(Op{Record{0}, Phase::OTHER, 0});
    p.streams[c].ops = {Op{Wait{0}, Phase::OTHER, 0}, Op{Record{1}, Phase::OTHER, 0}};
    REQUIRE_THAT(validate(p), Catch::Contains("stream a op 0: waits on event 1, which stream c op 1 records only "
                                              "after it") &&
                                  Catch::Contains("deadlock"));
  }
  SECTION("a Wait before its Record on the same stream") {
    ProgramBuilder b;
    const auto a = b.add_stream("a", StreamKind::COMPUTE);
    StepProgram p = b.build(1);
    p.num_events = 1;
    p.streams[a].ops = {Op{Wait{0}, Phase::OTHER, 0}, Op{Record{0}, Phase::OTHER, 0}};
    REQUIRE_THAT(validate(p), Catch::Contains("stream a op 0: waits on event 0, which stream a op 1 records"));
  }
  SECTION("a collective whose predecessor on its group sits behind a Wait on the collective's own stream") {
    // Stream x issues collective 1 then records e; stream y waits on e, then runs collective 0. Collective 1 waits for
    // 0, 0 waits for e, e waits for 1: no order exists.
    ProgramBuilder b;
    b.add_group("dp");
    const auto x = b.add_stream("x", StreamKind::COMM);
    const auto y = b.add_stream("y", StreamKind::COMM);
    b.collective(y, Phase::GRAD_REDUCE, "first", CollectiveKind::ALL_REDUCE, Bytes(1));
    b.collective(x, Phase::GRAD_REDUCE, "second", CollectiveKind::ALL_REDUCE, Bytes(1));
    const EventId e = b.record(x);
    StepProgram p = b.build(1);
    p.streams[y].ops.insert(p.streams[y].ops.begin(), Op{Wait{e}, Phase::OTHER, 0});
    REQUIRE_THAT(validate(p), Catch::Contains("stream x op 0 ('second'): collective number 1 of group dp waits for "
                                              "number 0 at stream y op 1 ('first'), which never runs"));
  }
  SECTION("the same ops in an order that runs are valid") {
    ProgramBuilder b;
    b.add_group("dp");
    const auto x = b.add_stream("x", StreamKind::COMM);
    const auto y = b.add_stream("y", StreamKind::COMM);
    b.collective(y, Phase::GRAD_REDUCE, "first", CollectiveKind::ALL_REDUCE, Bytes(1));
    const EventId e = b.record(y);
    b.wait(x, e);
    b.collective(x, Phase::GRAD_REDUCE, "second", CollectiveKind::ALL_REDUCE, Bytes(1));
    REQUIRE(validate(b.build(1)).empty());
  }
}
