#include "sim/collectives/collective_registry.hpp"

#include "sim/error.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace zerosim;
using namespace zerosim::collectives;

TEST_CASE("algorithm_registry: lists ring with a description and a reference", "[collectives][unit]") {
  auto reg = algorithm_registry();
  REQUIRE(reg.size() == 1);
  REQUIRE(std::string(reg[0].name) == "ring");
  REQUIRE(reg[0].algorithm == Algorithm::RING);
  REQUIRE(!std::string(reg[0].description).empty());
  REQUIRE_THAT(std::string(reg[0].reference), Catch::Contains("Patarasuk"));
}

TEST_CASE("parse_algorithm: finds names and rejects unknown ones listing the known", "[collectives][unit]") {
  REQUIRE(parse_algorithm("ring") == Algorithm::RING);
  SECTION("unknown name") {
    REQUIRE_THROWS_WITH(parse_algorithm("tree"), Catch::Contains("unknown collective algorithm 'tree'") &&
                                                     Catch::Contains("known: ring"));
  }
}
