// References for kernels/clusters.cu: bit-exact (the atomics' order does not show in what is
// stored). Clusters make the transformation analysis refuse every kernel: a slice or a PTB
// worker would not be launched as the cluster the kernel relies on.
#include "emulator/tests/conformance/themes.h"

namespace tally::emu::conformance {
namespace {

std::vector<Case> Cases() {
  return {
      {.kernel = "cluster_registers",
       .covers = "%cluster_ctaid %cluster_nctaid %clusterid %nclusterid %cluster_ctarank "
                 "%cluster_nctarank %is_explicit_cluster in 2x2x1 clusters of a 3-D grid",
       .grid = {4, 2, 3},
       .block = {16, 2},
       .args = [] { return std::vector<Arg>{Out<unsigned>(24 * 16)}; },
       .reference =
           [](const Values&, Expect& e) {
             std::vector<unsigned> out;
             for (unsigned z = 0; z < 3; ++z)
               for (unsigned y = 0; y < 2; ++y)
                 for (unsigned x = 0; x < 4; ++x) {
                   unsigned rank = x % 2 + 2 * (y % 2);
                   std::vector<unsigned> v = {x % 2, y % 2, 0, 2, 2, 1, x / 2, y / 2, z,
                                              2,     1,     3, rank, 4, 1, rank};
                   out.insert(out.end(), v.begin(), v.end());
                 }
             e.Equal(0, out);
           },
       .slice_refusal = "thread-block clusters",
       .ptb_refusal = "thread-block clusters"},
      {.kernel = "cluster_dsmem",
       .covers = "cluster.sync(), map_shared_rank loads, stores and atomicAdd on other CTAs' "
                 "shared memory (generic mapa, ld/st/atom on generic addresses)",
       .grid = {8},
       .block = {64},
       .args =
           [] {
             return std::vector<Arg>{In(Random<int>(8 * 64, -10000, 10000, 190)),
                                     Out<int>(8 * 64), Out<unsigned>(8)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out(8 * 64);
             std::vector<unsigned> counters(8, 0);
             for (int block = 0; block < 8; ++block) {
               const int base = block / 4 * 4, rank = block % 4;
               // The inbox of rank r is written by rank r + 1, which read rank r + 2's values.
               const int writer = (rank + 1) % 4, source = base + (rank + 2) % 4;
               for (int t = 0; t < 64; ++t) out[block * 64 + t] = v[source * 64 + 63 - t] * 2 + writer;
               if (rank == 0) counters[block] = 4 * (64 * 65 / 2);
             }
             e.Equal(1, out);
             e.Equal(2, counters);
           },
       .slice_refusal = "clusters",
       .ptb_refusal = "clusters"},
      {.kernel = "cluster_explicit_forms",
       .covers = "barrier.cluster.arrive.release/wait.acquire split, mapa.shared::cluster, "
                 "ld/st/atom.cas/red.shared::cluster, getctarank, generic mapa, isspacep "
                 ".shared::cluster/.shared::cta, clusters of 3",
       .grid = {6},
       .block = {32},
       .args = [] { return std::vector<Arg>{Out<int>(6 * 32 * 8)}; },
       .reference =
           [](const Values&, Expect& e) {
             std::vector<int> out;
             for (int block = 0; block < 6; ++block) {
               const int rank = block % 3, peer = (rank + 1) % 3;
               for (int t = 0; t < 32; ++t) {
                 // Rank r - 1 reads this CTA's cell, compare-and-swaps its slot and stores
                 // into its cell; this CTA does the same to its peer r + 1.
                 std::vector<int> o = {peer * 100 + t, -1, rank * 100 + t + 1000,
                                       rank * 100 + 4 * t, peer, 1 | 0 << 1 | 1 << 2,
                                       peer * 100 + 4 * t,
                                       t == 0 && rank == 0 ? 32 * 300 + 3 * (31 * 32 / 2) : 0};
                 out.insert(out.end(), o.begin(), o.end());
               }
             }
             e.Equal(0, out);
           },
       .slice_refusal = "clusters",
       .ptb_refusal = "clusters"},
  };
}

}  // namespace

std::vector<Case> clusters_cases() { return Cases(); }

}  // namespace tally::emu::conformance
