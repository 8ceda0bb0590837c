// References for kernels/memory.cu: every result bit-exact.
#include <cstring>

#include "emulator/tests/conformance/themes.h"

namespace tally::emu::conformance {
namespace {

struct Int4 {
  int x, y, z, w;
};
struct Double2 {
  double x, y;
};
struct Char4 {
  int8_t x, y, z, w;
};
struct Float2 {
  float x, y;
};

// Layouts as the device compiler lays them out (CUDA keeps host and device layouts equal).
struct LargeParams {
  int weights[12];
  double scale;
  char tag;
  short offset;
  float bias[3];
  long long big;
};
static_assert(sizeof(LargeParams) == 80);

struct Record {
  char name[5];
  short code;
  int value;
};
static_assert(sizeof(Record) == 12);

const int kTable[16] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3};
const float kScale[4] = {0.5f, 1.5f, -2.0f, 0.25f};

LargeParams MakeParams() {
  LargeParams p{};
  for (int k = 0; k < 12; ++k) p.weights[k] = k * k - 20;
  p.scale = 0.75;
  p.tag = -3;
  p.offset = 1234;
  p.bias[0] = 0.5f;
  p.bias[1] = -1.25f;
  p.bias[2] = 2.0f;
  p.big = 123456789012345ll;
  return p;
}

std::vector<Case> Cases() {
  return {
      {.kernel = "shared_transpose",
       .covers = "static shared memory, 2-D blocks and grid, bar.sync",
       .grid = {2, 2},
       .block = {16, 16},
       .args =
           [] {
             return std::vector<Arg>{In(Random<int>(32 * 32, -1000000, 1000000, 80)),
                                     Out<int>(32 * 32), Value(32)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto m = in.Get<int>(0);
             std::vector<int> t(32 * 32);
             for (int y = 0; y < 32; ++y)
               for (int x = 0; x < 32; ++x) t[x * 32 + y] = m[y * 32 + x];
             e.Equal(1, t);
           }},
      {.kernel = "shared_dynamic",
       .covers = "dynamic shared memory (extern .shared) next to static, %dynamic_smem_size",
       .grid = {3},
       .block = {64},
       .dynamic_shared = 64 * 12,
       .args =
           [] {
             return std::vector<Arg>{In(Random<int>(192, -5000, 5000, 81)), Out<int>(192),
                                     Out<uint32_t>(3)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out(192);
             for (int b = 0; b < 3; ++b)
               for (int t = 0; t < 64; ++t) {
                 int r = 63 - t;
                 out[b * 64 + t] = int(v[b * 64 + r] * 0.5 * 4.0) +
                                   (v[b * 64 + (t + 1) % 64] ^ 0x55) + r % 64;
               }
             e.Equal(1, out);
             e.Equal(2, std::vector<uint32_t>(3, 64 * 12));
           }},
      {.kernel = "local_memory",
       .covers = "local memory: data-indexed arrays (ld.local/st.local)",
       .grid = {2},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<int>(128, -1000, 1000, 82)), Out<int>(128)}; },
       .reference =
           [](const Values& in, Expect& e) {
             std::vector<int> out;
             for (int seed : in.Get<int>(0)) {
               int values[40];
               for (int k = 0; k < 40; ++k) values[k] = seed * (k + 1) ^ k;
               int acc = 0;
               for (int k = 0; k < 40; ++k) {
                 acc += values[(seed + k * 7) & 31] + values[unsigned(seed >> 3) % 40];
               }
               out.push_back(acc);
             }
             e.Equal(1, out);
           }},
      {.kernel = "const_space",
       .covers = "const space: initialized __constant__ arrays, data-indexed ld.const",
       .grid = {2},
       .block = {64},
       .args =
           [] { return std::vector<Arg>{In(Random<int>(128, 0, 0xffff, 83)), Out<float>(128)}; },
       .reference =
           [](const Values& in, Expect& e) {
             std::vector<float> out;
             for (int v : in.Get<int>(0)) {
               out.push_back(kTable[v & 15] * kScale[(v >> 4) & 3] + kTable[(v >> 8) & 15]);
             }
             e.Equal(1, out);
           }},
      {.kernel = "global_variables",
       .covers = "module-scope __device__ variables (initialized and scratch), ld/st.global",
       .grid = {2},
       .block = {128},
       .args = [] { return std::vector<Arg>{In(Random<int>(256, -1000, 1000, 84)), Out<int>(256)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out;
             for (int i = 0; i < 256; ++i) out.push_back(v[i ^ 1] * 2 + 10 * ((i & 7) + 1));
             e.Equal(1, out);
           }},
      {.kernel = "generic_addressing",
       .covers = "generic addressing of shared/global/local through a .func, isspacep, cvta "
                 "to and from shared",
       .grid = {2},
       .block = {32},
       .args = [] { return std::vector<Arg>{In(Random<int>(64, -100, 100, 85)), Out<int>(64 * 6)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out;
             for (int gid = 0; gid < 64; ++gid) {
               int t = gid % 32;
               int values[8];
               int kind = t % 3;  // 0 shared, 1 global, 2 local
               for (int k = 0; k < 8; ++k) {
                 values[k] = kind == 0 ? v[k] + 100 : kind == 1 ? v[t % 8 + k] : v[(gid + k) % 64] - k;
               }
               int sum = 0;
               for (int k = 0; k < 8; ++k) sum += values[k] * (k + 1);
               out.insert(out.end(), {sum, kind == 0, kind == 1, kind == 2, v[t % 8] + 100,
                                      (t % 8) * 4});
             }
             e.Equal(1, out);
           }},
      {.kernel = "vector_access",
       .covers = "ld/st .v2 .v4 (int4, double2, char4, float2), global and shared",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             auto ints = Random<int>(128 * 4, -100000, 100000, 86);
             auto doubles = Random<double>(128 * 2, -10.0, 10.0, 87);
             auto chars = Random<int8_t>(128 * 4, -100, 100, 88);
             return std::vector<Arg>{In(ints), In(doubles), In(chars), Out<int>(128 * 4),
                                     Out<double>(128 * 2), Out<int8_t>(128 * 4),
                                     Out<float>(128 * 2)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<Int4>(0);
             auto b = in.Get<Double2>(1);
             auto c = in.Get<Char4>(2);
             std::vector<int> o4;
             std::vector<double> o2;
             std::vector<int8_t> oc;
             std::vector<float> of;
             for (int i = 0; i < 128; ++i) {
               int block = i / 64, t = i % 64;
               Int4 v = a[block * 64 + (t + 1) % 64];  // staged reversed, read by the neighbour
               o4.insert(o4.end(), {v.w + 1, v.z * 2, v.y ^ 3, v.x - 4});
               o2.insert(o2.end(), {b[i].y * 2.0, b[i].x + 1.0});
               oc.insert(oc.end(), {c[i].w, c[i].z, int8_t(c[i].y + 1), c[i].x});
               of.insert(of.end(), {float(a[i].x), float(a[i].y & 0xff)});
             }
             e.Equal(3, o4);
             e.Equal(4, o2);
             e.Equal(5, oc);
             e.Equal(6, of);
           }},
      {.kernel = "cache_qualifiers",
       .covers = "ld.global.nc/.cg/.ca/.cs/.lu/.cv, st.global.wb/.cg/.cs/.wt",
       .grid = {2},
       .block = {64},
       .args =
           [] { return std::vector<Arg>{In(Random<int>(128, -30000, 30000, 89)), Out<int>(512)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out;
             for (int i = 0; i < 128; ++i) {
               auto at = [&](int k) { return v[(i + k) % 128]; };
               out.insert(out.end(), {at(0) + at(1), at(2) - at(3), at(4) ^ at(5), at(0) * at(5)});
             }
             e.Equal(1, out);
           }},
      {.kernel = "params_by_value",
       .covers = "param space: an 80-byte struct by value, scalars of 1/2/8 bytes and f32/f64",
       .grid = {1},
       .block = {64},
       .args =
           [] {
             return std::vector<Arg>{Value(MakeParams()),    Value(char(-7)),
                                     Value(short(-3000)),    Value(uint8_t(200)),
                                     Value(-(1ll << 40) + 5), Value(2.375f),
                                     Value(-1.0625),         Out<int>(128)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             LargeParams p = in.Scalar<LargeParams>(0);
             std::vector<int> out;
             for (int i = 0; i < 64; ++i) {
               double v = p.weights[i % 12] * p.scale + p.bias[i % 3] + p.offset + p.tag;
               out.push_back(int(v * 4.0) + in.Scalar<char>(1) + in.Scalar<short>(2) +
                             in.Scalar<uint8_t>(3));
               out.push_back(int(in.Scalar<long long>(4) >> 20) + int(in.Scalar<float>(5) * 8.0f) +
                             int(in.Scalar<double>(6) * 16.0) + int(p.big % 1000));
             }
             e.Equal(7, out);
           }},
      {.kernel = "byte_access",
       .covers = "ld/st .u8 .u16 at every offset, struct copies (memcpy)",
       .grid = {2},
       .block = {128},
       .args =
           [] {
             std::vector<Record> records(32);
             auto random = Random<int>(32 * 3, -30000, 30000, 91);
             for (int k = 0; k < 32; ++k) {
               std::memcpy(records[k].name, "abcde", 5);
               records[k].name[k % 4] = char('A' + k % 26);
               records[k].code = short(random[k * 3]);
               records[k].value = random[k * 3 + 1] * 1000;
             }
             return std::vector<Arg>{In(Random<uint8_t>(256, 0, 255, 90)), Out<uint8_t>(384),
                                     In(records), Out<Record>(32)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto bytes = in.Get<uint8_t>(0);
             std::vector<uint8_t> out(384);
             for (int i = 0; i < 256; ++i) out[i] = bytes[(i * 7) % 256] ^ bytes[255 - i];
             for (int i = 0; i < 128; ++i) {
               uint16_t half;
               std::memcpy(&half, &bytes[i * 2], 2);
               out[256 + i] = uint8_t(half >> 4);
             }
             auto records = in.Get<Record>(2);
             std::vector<uint8_t> copies(32 * sizeof(Record));
             for (int i = 0; i < 32; ++i) {
               Record r = records[i];
               r.name[i % 5] = 'x';
               r.code = short(r.code + 1);
               r.value = -r.value;
               std::memcpy(&copies[i * sizeof(Record)], &r, sizeof(Record));
             }
             e.Equal(1, out);
             // Compared as bytes: the padding byte after `name` is copied as it was (zero).
             Values as_bytes({copies});
             e.Equal(3, as_bytes.Get<uint8_t>(0));
           }},
      {.kernel = "volatile_shared",
       .covers = "volatile shared memory (ld/st.volatile.shared), bar.warp.sync",
       .grid = {2},
       .block = {128},
       .args = [] { return std::vector<Arg>{In(Random<int>(256, -1000, 1000, 92)), Out<int>(8)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out(8, 0);
             for (int i = 0; i < 256; ++i) out[i / 32] += v[i];
             e.Equal(1, out);
           }},
  };
}

}  // namespace

std::vector<Case> memory_cases() { return Cases(); }

}  // namespace tally::emu::conformance
