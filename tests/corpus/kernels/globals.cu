// Corpus: module-scope variables with initialisers: __constant__ and __device__ arrays,
// pointers to other globals (and into them), strings, structs, and __managed__ variables.

struct Pair {
  int key;
  float value;
};

__constant__ float kCoefficients[8] = {0.5f, -1.25f, 2.0f, 3.5f, -0.75f, 1e-3f, 100.0f, 0.0f};
__constant__ int kLookup[4][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}, {13, 14, 15, 16}};
__constant__ double kDoubleConstants[3] = {3.141592653589793, -2.718281828459045, 1.0 / 3.0};
__constant__ unsigned char kBytes[5] = {0x01, 0x7f, 0x80, 0xfe, 0xff};
__constant__ float kUnsetConstant[32];

__device__ int g_counter = 42;
__device__ int g_table[5] = {10, 20, 30, 40, 50};
__device__ int* g_table_start = g_table;
__device__ int* g_table_middle = &g_table[2];
__device__ const char* g_message = "corpus";
__device__ Pair g_pairs[3] = {{1, 0.5f}, {2, -1.5f}, {3, 2.25f}};
__device__ long long g_wide = -1234567890123ll;
__device__ short g_shorts[4] = {-1, 2, -3, 4};
__device__ float g_scratch[256];
static __device__ unsigned g_internal = 0xdeadbeefu;

__managed__ int m_value = 7;
__managed__ float m_array[16];

__global__ void ReadGlobals(float* out, int* ints) {
  int t = threadIdx.x;
  out[t] = kCoefficients[t % 8] * kLookup[t % 4][(t / 4) % 4] + kUnsetConstant[t % 32] +
           static_cast<float>(kDoubleConstants[t % 3]) + g_pairs[t % 3].value + g_scratch[t % 256];
  ints[t] = g_table_start[t % 5] + g_table_middle[t % 3] + g_message[t % 6] + g_counter +
            kBytes[t % 5] + g_shorts[t % 4] + static_cast<int>(g_wide >> 20) +
            static_cast<int>(g_internal & 0xff) + m_value;
}

__global__ void WriteGlobals(int delta) {
  int t = threadIdx.x;
  if (t == 0) g_counter += delta;
  if (t < 16) m_array[t] = t * 0.5f + m_value;
  g_scratch[t % 256] = static_cast<float>(t);
  g_table_middle[0] = delta;
}
