// The single Catch2 main shared by every unit-test binary (compiled once, linked everywhere).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
