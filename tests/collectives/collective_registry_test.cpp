#include "sim/collectives/collective_registry.hpp"

#include "sim/error.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace zerosim;
using namespace zerosim::collectives;

TEST_CASE("algorithm_registry: lists ring, tree, hierarchical, nvls and direct with descriptions and references",
          "[collectives][unit]") {
  auto reg = algorithm_registry();
  REQUIRE(reg.size() == 5);
  REQUIRE(std::string(reg[4].name) == "direct");
  REQUIRE(reg[4].algorithm == Algorithm::DIRECT);
  REQUIRE(std::string(reg[3].name) == "nvls");
  REQUIRE_THAT(std::string(reg[3].reference), Catch::Contains("nccl"));
  REQUIRE(std::string(reg[1].name) == "tree");
  REQUIRE(std::string(reg[2].name) == "hierarchical");
  REQUIRE(std::string(reg[0].name) == "ring");
  REQUIRE(reg[0].algorithm == Algorithm::RING);
  REQUIRE(!std::string(reg[0].description).empty());
  REQUIRE_THAT(std::string(reg[0].reference), Catch::Contains("Patarasuk"));
}

TEST_CASE("parse_algorithm: finds names and rejects unknown ones listing the known", "[collectives][unit]") {
  REQUIRE(parse_algorithm("ring") == Algorithm::RING);
  REQUIRE(parse_algorithm("tree") == Algorithm::TREE);
  REQUIRE(parse_algorithm("hierarchical") == Algorithm::HIERARCHICAL);
  REQUIRE(parse_algorithm("direct") == Algorithm::DIRECT);
  SECTION("unknown name") {
    REQUIRE_THROWS_WITH(parse_algorithm("butterfly"),
                        Catch::Contains("unknown collective algorithm 'butterfly'") &&
                            Catch::Contains("known: ring, tree, hierarchical, nvls, direct"));
  }
}
