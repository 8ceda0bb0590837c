// Candidate forms for several grids and occupancies, kernels with one transformed form or none,
// and the PTB turnaround helper.
#include "profiler/candidates.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

#include "profiler/testing/kernels.h"

namespace tally::profiler {
namespace {

using namespace testing;
using Forms = std::vector<LaunchForm>;

LaunchForm Ptb(uint32_t workers) { return LaunchForm::Preemptible(workers); }
LaunchForm Sliced(uint32_t slices) { return LaunchForm::Sliced(slices); }
const LaunchForm kPtbFull = LaunchForm::Preemptible();

TEST_CASE("A large grid gets every PTB wave of SMs and slices halved down to two") {
  // 8 SMs x 4 resident = 32 blocks per wave; 1000 blocks are 32 waves.
  CHECK(Candidates(Kernel(1, 1000)) == Forms{kPtbFull, Ptb(24), Ptb(16), Ptb(8), Sliced(32),
                                             Sliced(16), Sliced(8), Sliced(4), Sliced(2)});
}

TEST_CASE("Worker counts are capped at the number of blocks") {
  // b = 2 would give 16 workers for 10 blocks: that is full occupancy, already a candidate.
  CHECK(Candidates(Kernel(1, 10)) == Forms{kPtbFull, Ptb(8), Sliced(1)});
  // Fewer blocks than SMs: full occupancy is every block at once.
  CHECK(Candidates(Kernel(1, 5)) == Forms{kPtbFull, Sliced(1)});
  // Exactly b x SMs blocks: 24 workers would run every block at once, as full occupancy does.
  CHECK(Candidates(Kernel(1, 24)) == Forms{kPtbFull, Ptb(16), Ptb(8), Sliced(1)});
}

TEST_CASE("Slice counts follow whole waves") {
  CHECK(Candidates(Kernel(1, 64, true, false)) == Forms{Sliced(2)});
  CHECK(Candidates(Kernel(1, 65, true, false)) == Forms{Sliced(3), Sliced(2)});
  CHECK(Candidates(Kernel(1, 160, true, false)) == Forms{Sliced(5), Sliced(2)});
  // 3-D grids count all their blocks: 4 x 4 x 8 = 128 blocks, 4 waves.
  scheduler::KernelInfo cube = Kernel(1, 1, true, false);
  cube.shape.grid = {4, 4, 8};
  CHECK(Candidates(cube) == Forms{Sliced(4), Sliced(2)});
}

TEST_CASE("Higher occupancy gives more PTB candidates") {
  CHECK(Candidates(Kernel(1, 4096, false, true, 1, 132)) == Forms{kPtbFull});
  CHECK(Candidates(Kernel(1, 4096, false, true, 2, 132)) == Forms{kPtbFull, Ptb(132)});
  CHECK(Candidates(Kernel(1, 4096, false, true, 8, 16)) ==
        Forms{kPtbFull, Ptb(112), Ptb(96), Ptb(80), Ptb(64), Ptb(48), Ptb(32), Ptb(16)});
}

TEST_CASE("Only the forms the kernel has") {
  CHECK(Candidates(Kernel(1, 1000, false, true)) == Forms{kPtbFull, Ptb(24), Ptb(16), Ptb(8)});
  CHECK(Candidates(Kernel(1, 1000, true, false)) ==
        Forms{Sliced(32), Sliced(16), Sliced(8), Sliced(4), Sliced(2)});
  CHECK(Candidates(Kernel(1, 1000, false, false)).empty());
}

TEST_CASE("Unknown occupancy: PTB at full occupancy alone, and a wave of one block") {
  CHECK(Candidates(Kernel(1, 6, true, true, 0, 8)) ==
        Forms{kPtbFull, Sliced(6), Sliced(3), Sliced(2)});
  CHECK(Candidates(Kernel(1, 6, true, true, 4, 0)) ==
        Forms{kPtbFull, Sliced(6), Sliced(3), Sliced(2)});
}

TEST_CASE("Candidates are distinct and within the grid over many shapes") {
  for (uint32_t blocks : {1u, 2u, 7u, 31u, 32u, 33u, 100u, 1000u, 65536u}) {
    for (uint32_t resident : {0u, 1u, 3u, 4u, 16u}) {
      const Forms forms = Candidates(Kernel(1, blocks, true, true, resident, 8));
      for (size_t i = 0; i < forms.size(); ++i) {
        CHECK(std::count(forms.begin(), forms.end(), forms[i]) == 1);
        CHECK(forms[i].workers < std::max(blocks, 2u));
        CHECK(forms[i].slices <= blocks);
      }
      CHECK(forms.front() == kPtbFull);
    }
  }
}

TEST_CASE("Full occupancy stands for resident blocks on every SM, at most the grid") {
  CHECK(FullOccupancyWorkers(Kernel(1, 1000)) == 32);
  CHECK(FullOccupancyWorkers(Kernel(1, 20)) == 20);
  CHECK(FullOccupancyWorkers(Kernel(1, 20, true, true, 0, 8)) == 0);
}

TEST_CASE("A PTB run's turnaround is one task on a worker") {
  // 1000 tasks on 100 workers: each runs 10 tasks one after another.
  CHECK(PtbTurnaround(Us(1000), 100, 1000) == Us(100));
  // 250 tasks on 100 workers: the busiest workers run 3.
  CHECK(PtbTurnaround(Us(900), 100, 250) == Us(300));
  // More workers than tasks: each task is the whole run.
  CHECK(PtbTurnaround(Us(40), 64, 10) == Us(40));
  // Nothing to split by.
  CHECK(PtbTurnaround(Us(40), 0, 10) == Us(40));
  CHECK(PtbTurnaround(Us(40), 8, 0) == Us(40));
}

}  // namespace
}  // namespace tally::profiler
