// Corpus: device-side assert, malloc/free and new/delete (calls into the device runtime's
// __assertfail, malloc and free).
#include <cassert>

struct Node {
  int value;
  Node* next;
};

__global__ void CheckedCopy(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  assert(n > 0);
  if (i >= n) return;
  assert(in[i] >= 0 && "inputs are non-negative");
  out[i] = in[i];
}

// Builds a per-thread linked list on the device heap, sums it, and frees it again.
__global__ void HeapList(const int* lengths, long long* sums) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  Node* head = nullptr;
  for (int k = 0; k < lengths[t]; ++k) {
    Node* node = static_cast<Node*>(malloc(sizeof(Node)));
    if (node == nullptr) break;
    node->value = k * t;
    node->next = head;
    head = node;
  }
  long long sum = 0;
  while (head != nullptr) {
    Node* next = head->next;
    sum += head->value;
    free(head);
    head = next;
  }
  int* scratch = new int[4];
  for (int k = 0; k < 4; ++k) scratch[k] = k + t;
  sums[t] = sum + scratch[3];
  delete[] scratch;
}
