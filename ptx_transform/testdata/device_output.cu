// Device printf and assert, for ptx_transform/device_output_test.cc (device_output.ptx is what
// nvcc -arch=sm_80 -ptx makes of this file).
#include <cassert>
#include <cstdio>

__global__ void report(int a, double d, const char* s, long long l) {
  printf("hello %d %5.2f %s %lld %c %*d %%\n", a, d, s, l, 'x', 4, a);
  printf("plain\n");
  assert(a != 3);
}
