// Device printf for server/device_output_ring_test.cc: every kind of argument the format takes,
// and what printf returned (the count of arguments, or -1 when the text was dropped).
#include <cstdio>

__device__ const char kWord[] = "word";

extern "C" __global__ void PrintEverything(int* returned, int i, unsigned u, long long l,
                                           double d, const char* null_string) {
  returned[threadIdx.x] =
      printf("t%u: %d %u %x %lld %llu %c %5.2f %e %s %s %% [%*d] [%-*d] %hd %zu %.*f\n",
             threadIdx.x, i, u, u, l, static_cast<unsigned long long>(l), 'A' + threadIdx.x, d,
             d, kWord, null_string, 6, i, 4, i, static_cast<short>(i), sizeof(double), 3, d);
}

extern "C" __global__ void PrintLine(int* returned, int round) {
  returned[threadIdx.x] = printf("round %d thread %u of the ring test\n", round, threadIdx.x);
}

// A format of the caller's choosing: printf reads its bytes wherever it points.
extern "C" __global__ void PrintFormat(int* returned, const char* format) {
  returned[threadIdx.x] = printf(format);
}
