// Corpus: large switch statements, and a jump table. nvcc 13 lowers dense switches to
// compare-and-branch chains, so the table form (`brx.idx` over a `.branchtargets` list, which
// newer LLVM NVPTX back ends emit) is written here in inline PTX.

__device__ __noinline__ int Sink(int value) { return value * 3 + 1; }

// A tiny stack-machine interpreter: one case per opcode.
__global__ void Interpret(const unsigned char* program, int length, const int* inputs, int* out) {
  int stack[8];
  int sp = 0;
  int acc = inputs[threadIdx.x];
  for (int pc = 0; pc < length; ++pc) {
    switch (program[pc]) {
      case 0:
        acc += 1;
        break;
      case 1:
        acc -= 3;
        break;
      case 2:
        acc *= 5;
        break;
      case 3:
        acc ^= 0x55;
        break;
      case 4:
        acc = Sink(acc);
        break;
      case 5:
        acc <<= 1;
        break;
      case 6:
        acc >>= 2;
        break;
      case 7:
        if (sp < 8) stack[sp++] = acc;
        break;
      case 8:
        if (sp > 0) acc += stack[--sp];
        break;
      case 9:
        acc = -acc;
        break;
      case 10:
        acc = acc & 0xffff;
        break;
      case 11:
        acc |= 0x100;
        break;
      case 12:
        acc = acc % 97;
        break;
      case 13:
        acc = acc / 7;
        break;
      case 14:
        acc = max(acc, 0);
        break;
      case 15:
        acc = min(acc, 1000);
        break;
      case 16:
        acc += threadIdx.x;
        break;
      case 17:
        acc += blockIdx.x;
        break;
      case 18:
        acc = __popc(acc);
        break;
      case 19:
        acc = __clz(acc);
        break;
      case 20:
        acc = Sink(acc + 20);
        break;
      case 21:
        acc += inputs[(threadIdx.x + 1) % blockDim.x];
        break;
      case 22:
        pc = length;
        break;
      case 23:
        acc *= acc;
        break;
      default:
        acc += 1000;
        break;
    }
  }
  out[threadIdx.x] = acc;
}

__device__ float ConstantFor(int k) {
  switch (k) {
    case 0:
      return 0.5f;
    case 1:
      return 1.25f;
    case 2:
      return -2.0f;
    case 3:
      return 3.75f;
    case 4:
      return 8.0f;
    case 5:
      return -0.125f;
    case 6:
      return 100.0f;
    case 7:
      return 6.5f;
    case 8:
      return 1e-3f;
    case 9:
      return -9.0f;
    default:
      return 0.0f;
  }
}

__global__ void LookupTable(const int* keys, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = ConstantFor(keys[i]);
}

// Selects one of four transformations with an indexed branch (PTX ISA "brx.idx").
// __noinline__ keeps the labels unique within the module.
__device__ __noinline__ unsigned JumpTable(unsigned selector, unsigned x) {
  unsigned r;
  asm volatile(
      "{\n\t"
      ".reg .u32 index;\n\t"
      "and.b32 index, %1, 3;\n\t"
      "bra.uni DISPATCH;\n"
      "CASE_0:\n\t"
      "add.u32 %0, %2, 11;\n\t"
      "bra.uni CASE_END;\n"
      "CASE_1:\n\t"
      "mul.lo.u32 %0, %2, 3;\n\t"
      "bra.uni CASE_END;\n"
      "CASE_2:\n\t"
      "xor.b32 %0, %2, 0xff;\n\t"
      "bra.uni CASE_END;\n"
      "CASE_3:\n\t"
      "shl.b32 %0, %2, 4;\n\t"
      "bra.uni CASE_END;\n"
      "CASE_TABLE: .branchtargets CASE_0, CASE_1, CASE_2, CASE_3;\n"
      "DISPATCH:\n\t"
      "brx.idx index, CASE_TABLE;\n"
      "CASE_END:\n\t"
      "}"
      : "=r"(r)
      : "r"(selector), "r"(x));
  return r;
}

__global__ void IndexedBranch(const unsigned* selectors, unsigned* values, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) values[i] = JumpTable(selectors[i], values[i]);
}
