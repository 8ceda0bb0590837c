// A kernel that never ends unless *flag becomes non-zero, for server_session_test's teardown
// of a client whose frees wait for another client's kernel.
extern "C" __global__ void SpinUntil(volatile int* flag) {
  while (*flag == 0) {
  }
}
