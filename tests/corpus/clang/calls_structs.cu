// Corpus (clang): non-inlined calls with struct arguments and returns, recursion, a switch
// returning constants, globals with initialisers, constant memory and a 3-D index.
// (clang 14's NVPTX back end cannot initialise a global with another global's address.)
#include "nvptx_shim.h"

struct Vec3 {
  float x, y, z;
};

struct Particle {
  Vec3 position;
  Vec3 velocity;
  double mass;
  int id;
};

__constant__ float kGravity[3] = {0.0f, -9.81f, 0.0f};
__device__ int g_steps = 4;
__device__ int g_primes[6] = {2, 3, 5, 7, 11, 13};

__device__ __noinline__ Vec3 Advance(Vec3 p, Vec3 v, float dt) {
  return Vec3{p.x + v.x * dt, p.y + v.y * dt, p.z + v.z * dt};
}

__device__ __noinline__ int Gcd(int a, int b) { return b == 0 ? a : Gcd(b, a % b); }

__device__ float Weight(int kind) {
  switch (kind) {
    case 0:
      return 1.0f;
    case 1:
      return 0.5f;
    case 2:
      return 0.25f;
    case 3:
      return 2.0f;
    case 4:
      return 4.0f;
    case 5:
      return -1.0f;
    case 6:
      return 3.5f;
    default:
      return 0.0f;
  }
}

__global__ void Simulate(Particle* particles, unsigned n, float dt) {
  unsigned i = GlobalX();
  if (i >= n) return;
  Particle p = particles[i];
  for (int s = 0; s < g_steps; ++s) {
    p.velocity.x += kGravity[0] * dt;
    p.velocity.y += kGravity[1] * dt;
    p.velocity.z += kGravity[2] * dt;
    p.position = Advance(p.position, p.velocity, dt);
  }
  p.mass *= Weight(p.id % 8);
  p.id = Gcd(p.id, g_primes[3] * 6);
  particles[i] = p;
}

__global__ void ByValue(Particle p, int* out) {
  unsigned flat = (BlockZ() * 4 + BlockY()) * 4 + BlockX();
  unsigned t = (ThreadZ() * 8 + ThreadY()) * 8 + ThreadX();
  out[flat * 512 + t] = p.id + static_cast<int>(p.mass) + static_cast<int>(p.velocity.y);
}
