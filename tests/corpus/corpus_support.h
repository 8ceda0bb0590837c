// Shared by the corpus tests: the manifest of generated PTX modules, file reading, a scratch
// directory and running ptxas.
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tally::ptx::corpus {

struct CorpusModule {
  std::string producer;  // nvcc, nvcc-lineinfo, nvcc-debug, nvrtc, clang, clang-O0, llc, llc-O0
  std::string arch;      // sm_XX: the target ptxas assembles for
  std::filesystem::path path;
};

inline std::vector<CorpusModule> ReadManifest() {
  std::ifstream in(TALLY_CORPUS_MANIFEST);
  REQUIRE(in);
  std::vector<CorpusModule> modules;
  CorpusModule m;
  while (in >> m.producer >> m.arch >> m.path) modules.push_back(m);
  return modules;
}

inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A scratch directory for printed modules, removed with everything in it.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tally-corpus-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

struct Assembled {
  bool ok = false;
  std::string output;  // ptxas's messages, for the failure report
};

// Assembles `ptx` for `arch` into the cubin `cubin`, with extra ptxas `flags`.
inline Assembled RunPtxas(const std::string& arch, const std::filesystem::path& ptx,
                          const std::filesystem::path& cubin, const std::string& flags = "") {
  std::string command = std::string(TALLY_PTXAS) + " -arch=" + arch + " " + flags + " -o '" +
                        cubin.string() + "' '" + ptx.string() + "' 2>&1";
  Assembled result;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
  int status = pclose(pipe);
  result.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return result;
}

}  // namespace tally::ptx::corpus
