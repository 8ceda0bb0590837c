// 2-D and 3-D copies and memsets between pitched device memory, pageable and page-locked host
// memory, with positions inside the boxes, checked against a host reference; a kernel reads the
// pitched layout to show the device sees what the copies wrote.
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "check.h"

__global__ void SumSlices(cudaPitchedPtr volume, int width, int height, int depth, int* out) {
  const int x = threadIdx.x;
  if (x >= width) return;
  int total = 0;
  for (int z = 0; z < depth; ++z) {
    for (int y = 0; y < height; ++y) {
      const char* slice = static_cast<const char*>(volume.ptr) + z * volume.pitch * volume.ysize;
      total += slice[y * volume.pitch + x];
    }
  }
  out[x] = total;
}

// cudaMemcpy3D of a whole volume between two pitched pointers, from their origins.
cudaError_t CopyVolume(cudaPitchedPtr dst, cudaPitchedPtr src, cudaExtent extent,
                       cudaMemcpyKind kind) {
  cudaMemcpy3DParms parms = {};
  parms.srcPtr = src;
  parms.dstPtr = dst;
  parms.extent = extent;
  parms.kind = kind;
  return cudaMemcpy3D(&parms);
}

int main() {
  // A 3-D volume of 37 x 5 x 4 bytes; the host copy has its own (dense) layout.
  const size_t w = 37, h = 5, d = 4;
  cudaPitchedPtr volume;
  CHECK_CUDA(cudaMalloc3D(&volume, make_cudaExtent(w, h, d)));
  EXPECT(volume.pitch >= w && volume.xsize == w && volume.ysize == h);
  std::vector<char> host(w * h * d), back(w * h * d, 0);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<char>(i * 13 + 1);

  const cudaPitchedPtr host_volume = make_cudaPitchedPtr(host.data(), w, w, h);
  const cudaPitchedPtr back_volume = make_cudaPitchedPtr(back.data(), w, w, h);
  const cudaExtent whole = make_cudaExtent(w, h, d);
  CHECK_CUDA(CopyVolume(volume, host_volume, whole, cudaMemcpyHostToDevice));
  CHECK_CUDA(CopyVolume(back_volume, volume, whole, cudaMemcpyDeviceToHost));
  EXPECT(back == host);

  // The kernel walks the pitched layout.
  int* sums = nullptr;
  CHECK_CUDA(cudaMallocManaged(&sums, w * sizeof(int)));
  SumSlices<<<1, 64>>>(volume, w, h, d, sums);
  CHECK_CUDA(cudaDeviceSynchronize());
  for (size_t x = 0; x < w; ++x) {
    int total = 0;
    for (size_t i = x; i < host.size(); i += w) total += host[i];
    EXPECT(sums[x] == total);
  }

  // A 3-D memset of an inner box, then a sub-box (with positions on both sides) into
  // page-locked memory with cudaMemcpy3DAsync.
  cudaPitchedPtr inner = volume;
  inner.ptr = static_cast<char*>(volume.ptr) + 1 * volume.pitch * h + 2 * volume.pitch + 3;
  CHECK_CUDA(cudaMemset3D(inner, 0x7f, make_cudaExtent(10, 2, 3)));
  std::vector<char> expected = host;
  for (size_t z = 1; z < 4; ++z)
    for (size_t y = 2; y < 4; ++y)
      for (size_t x = 3; x < 13; ++x) expected[(z * h + y) * w + x] = 0x7f;
  char* pinned = nullptr;
  const size_t pw = 64, ph = 8;  // the destination box lives in a 64 x 8 x 4 layout
  CHECK_CUDA(cudaMallocHost(&pinned, pw * ph * 4));
  std::memset(pinned, 0, pw * ph * 4);
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  cudaMemcpy3DParms sub = {};
  sub.srcPtr = volume;
  sub.srcPos = make_cudaPos(2, 1, 1);
  sub.dstPtr = make_cudaPitchedPtr(pinned, pw, pw, ph);
  sub.dstPos = make_cudaPos(5, 3, 0);
  sub.extent = make_cudaExtent(20, 4, 3);
  sub.kind = cudaMemcpyDefault;
  CHECK_CUDA(cudaMemcpy3DAsync(&sub, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  for (size_t z = 0; z < 4; ++z)
    for (size_t y = 0; y < ph; ++y)
      for (size_t x = 0; x < pw; ++x) {
        const bool in_box = z < 3 && y >= 3 && y < 7 && x >= 5 && x < 25;
        const char want =
            in_box ? expected[((z + 1) * h + (y - 3 + 1)) * w + (x - 5 + 2)] : char{0};
        EXPECT(pinned[(z * ph + y) * pw + x] == want);
      }

  // And back from page-locked memory into the volume (asynchronously), device to device into a
  // second volume, and down again: the whole volume matches the reference.
  cudaMemcpy3DParms sub_up = {};
  sub_up.srcPtr = make_cudaPitchedPtr(pinned, pw, pw, ph);
  sub_up.srcPos = make_cudaPos(5, 3, 0);
  sub_up.dstPtr = volume;
  sub_up.dstPos = make_cudaPos(2, 1, 0);
  sub_up.extent = make_cudaExtent(20, 4, 3);
  sub_up.kind = cudaMemcpyHostToDevice;
  CHECK_CUDA(cudaMemcpy3DAsync(&sub_up, stream));
  for (size_t z = 0; z < 3; ++z)
    for (size_t y = 0; y < 4; ++y)
      for (size_t x = 0; x < 20; ++x)
        expected[(z * h + y + 1) * w + x + 2] = pinned[(z * ph + y + 3) * pw + x + 5];
  cudaPitchedPtr copy;
  CHECK_CUDA(cudaMalloc3D(&copy, make_cudaExtent(w, h, d)));
  cudaMemcpy3DParms across = {};
  across.srcPtr = volume;
  across.dstPtr = copy;
  across.extent = make_cudaExtent(w, h, d);
  across.kind = cudaMemcpyDeviceToDevice;
  CHECK_CUDA(cudaMemcpy3DAsync(&across, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::fill(back.begin(), back.end(), 0);
  CHECK_CUDA(CopyVolume(back_volume, copy, whole, cudaMemcpyDeviceToHost));
  EXPECT(back == expected);

  // 2-D: pitched allocation, memset, copies in every direction and a device-to-device copy of a
  // sub-rectangle.
  const size_t rw = 50, rh = 9;
  unsigned char* image = nullptr;
  size_t pitch = 0;
  CHECK_CUDA(cudaMallocPitch(reinterpret_cast<void**>(&image), &pitch, rw, rh));
  CHECK_CUDA(cudaMemset2D(image, pitch, 0xaa, rw, rh));
  CHECK_CUDA(cudaMemset2DAsync(image + pitch + 4, pitch, 0x11, 8, 3, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<unsigned char> rect(rw * rh);
  CHECK_CUDA(cudaMemcpy2D(rect.data(), rw, image, pitch, rw, rh, cudaMemcpyDeviceToHost));
  for (size_t y = 0; y < rh; ++y)
    for (size_t x = 0; x < rw; ++x) {
      const bool inner_rect = y >= 1 && y < 4 && x >= 4 && x < 12;
      EXPECT(rect[y * rw + x] == (inner_rect ? 0x11 : 0xaa));
    }
  unsigned char* pinned_rect = nullptr;
  CHECK_CUDA(cudaMallocHost(&pinned_rect, rw * rh));
  for (size_t i = 0; i < rw * rh; ++i) pinned_rect[i] = static_cast<unsigned char>(i);
  CHECK_CUDA(
      cudaMemcpy2DAsync(image, pitch, pinned_rect, rw, rw, rh, cudaMemcpyHostToDevice, stream));
  unsigned char* other = nullptr;
  size_t other_pitch = 0;
  CHECK_CUDA(cudaMallocPitch(reinterpret_cast<void**>(&other), &other_pitch, 16, 4));
  CHECK_CUDA(cudaMemcpy2DAsync(other, other_pitch, image + 2 * pitch + 30, pitch, 16, 4,
                               cudaMemcpyDeviceToDevice, stream));
  std::vector<unsigned char> small(16 * 4);
  CHECK_CUDA(
      cudaMemcpy2DAsync(small.data(), 16, other, other_pitch, 16, 4, cudaMemcpyDefault, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  for (size_t y = 0; y < 4; ++y)
    for (size_t x = 0; x < 16; ++x)
      EXPECT(small[y * 16 + x] == static_cast<unsigned char>((y + 2) * rw + x + 30));

  // Boxes larger than a 4 MiB chunk of the bulk area: a 2-D copy staged in runs of rows of one
  // slice, a 3-D copy staged in runs of whole slices; both ways, checked byte for byte.
  {
    // 6 MB each: 3000 x 2000 x 1 takes rows of one slice per chunk, 1000 x 1000 x 6 (1 MB
    // slices) whole slices per chunk.
    const cudaExtent boxes[] = {make_cudaExtent(3000, 2000, 1), make_cudaExtent(1000, 1000, 6)};
    for (const cudaExtent& box : boxes) {
      const size_t bx = box.width, by = box.height, bz = box.depth;
      cudaPitchedPtr big;
      CHECK_CUDA(cudaMalloc3D(&big, make_cudaExtent(bx, by, bz)));
      std::vector<unsigned char> src(bx * by * bz), dst(bx * by * bz, 0);
      for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 31 + i / 977);
      CHECK_CUDA(CopyVolume(big, make_cudaPitchedPtr(src.data(), bx, bx, by), box,
                            cudaMemcpyHostToDevice));
      CHECK_CUDA(CopyVolume(make_cudaPitchedPtr(dst.data(), bx, bx, by), big, box,
                            cudaMemcpyDeviceToHost));
      EXPECT(dst == src);
      CHECK_CUDA(cudaFree(big.ptr));
    }
  }

  // Unsupported and invalid forms fail with the runtime's codes.
  cudaArray_t array = reinterpret_cast<cudaArray_t>(0x1000);
  cudaMemcpy3DParms with_array = {};
  with_array.dstArray = array;
  with_array.srcPtr = make_cudaPitchedPtr(host.data(), w, w, h);
  with_array.extent = make_cudaExtent(w, h, 1);
  with_array.kind = cudaMemcpyHostToDevice;
  EXPECT(cudaMemcpy3D(&with_array) == cudaErrorNotSupported);
  EXPECT(cudaMemcpy2DToArray(array, 0, 0, host.data(), w, w, h, cudaMemcpyHostToDevice) ==
         cudaErrorNotSupported);
  EXPECT(cudaMemcpy2D(image, rw - 1, rect.data(), rw, rw, rh, cudaMemcpyHostToDevice) ==
         cudaErrorInvalidPitchValue);
  EXPECT(cudaMemset2D(image, pitch, 0, rw, rh + 1) == cudaErrorInvalidValue);  // past the end
  // A box past its device allocation fails before its host side is touched (as CUDA's does):
  // here a host volume of the box's allocation's size ends at an unreadable page.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  char* const pages = static_cast<char*>(
      mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  EXPECT(pages != MAP_FAILED && mprotect(pages + page, page, PROT_NONE) == 0);
  const cudaPitchedPtr edge_volume = make_cudaPitchedPtr(pages + page - w * h * d, w, w, h);
  EXPECT(CopyVolume(volume, edge_volume, make_cudaExtent(w, h, d + 1), cudaMemcpyHostToDevice) ==
         cudaErrorInvalidValue);
  EXPECT(CopyVolume(edge_volume, volume, make_cudaExtent(w, h, d + 1), cudaMemcpyDeviceToHost) ==
         cudaErrorInvalidValue);
  EXPECT(cudaMemcpy(volume.ptr, pages + page - 16, volume.pitch * h * d + 1,
                    cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
  munmap(pages, 2 * page);
  cudaGetLastError();

  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(volume.ptr));
  CHECK_CUDA(cudaFree(copy.ptr));
  CHECK_CUDA(cudaFree(image));
  CHECK_CUDA(cudaFree(other));
  CHECK_CUDA(cudaFree(sums));
  CHECK_CUDA(cudaFreeHost(pinned));
  CHECK_CUDA(cudaFreeHost(pinned_rect));
  std::printf("copy3d: 2-D and 3-D copies and memsets match the host reference\n");
  return 0;
}
