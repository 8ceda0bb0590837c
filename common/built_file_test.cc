#include "common/built_file.h"

#include <catch2/catch.hpp>
#include <filesystem>

namespace tally {
namespace {

TEST_CASE("a built file is the build tree's for the build's executable") {
  const std::string build_dir = std::filesystem::temp_directory_path();
  const BuiltFile shim{"/build/client/libtally_client.so", build_dir,
                       "../lib/tally/libtally_client.so"};
  CHECK(LocateBuiltFile(shim, build_dir) == "/build/client/libtally_client.so");
  // The same folder by another name is still the build's.
  CHECK(LocateBuiltFile(shim, build_dir + "/.") == "/build/client/libtally_client.so");
}

TEST_CASE("a built file is found relative to an installed executable") {
  const BuiltFile shim{"/build/client/libtally_client.so", "/nonexistent/build/tools",
                       "../lib/tally/libtally_client.so"};
  CHECK(LocateBuiltFile(shim, "/opt/tally/bin") == "/opt/tally/lib/tally/libtally_client.so");
  CHECK(LocateBuiltFile(shim, "/stage/usr/bin") == "/stage/usr/lib/tally/libtally_client.so");
}

TEST_CASE("a file the build did not make is found nowhere") {
  CHECK(LocateBuiltFile({"", "/build/tools", "../lib/tally/stand-ins"}, "/usr/bin").empty());
}

TEST_CASE("the running executable's folder decides") {
  // This test runs from the build tree: its own folder is the build's.
  const std::string here = std::filesystem::read_symlink("/proc/self/exe").parent_path();
  CHECK(LocateBuiltFile({"/build/x.so", here, "../lib/x.so"}) == "/build/x.so");
  CHECK(LocateBuiltFile({"/build/x.so", "/nonexistent", "../lib/x.so"}) ==
        (std::filesystem::path(here) / "../lib/x.so").lexically_normal());
}

}  // namespace
}  // namespace tally
