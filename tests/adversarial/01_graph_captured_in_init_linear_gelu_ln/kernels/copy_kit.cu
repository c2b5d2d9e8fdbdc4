// copy_kit.cu -- a byte copy between two device buffers (16-byte vectors where both are aligned).
// The only kernel of the graph-replay cheats (tests/adversarial/01_graph_captured_*): it moves the call's
// inputs into the buffers a captured CUDA graph reads and its output out of the buffer the graph writes.
#include <cuda_runtime.h>
#include <cstdint>

__global__ void copy_kit_bytes(const unsigned char* __restrict__ src, unsigned char* __restrict__ dst, size_t n) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const bool vector = ((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst)) & 15) == 0;
    size_t done = 0;
    if (vector) {
        const size_t words = n / 16;
        const uint4* s = reinterpret_cast<const uint4*>(src);
        uint4* d = reinterpret_cast<uint4*>(dst);
        for (size_t i = first; i < words; i += stride) d[i] = s[i];
        done = words * 16;
    }
    for (size_t i = done + first; i < n; i += stride) dst[i] = src[i];
}

extern "C" void launch_copy_kit(const void* src, void* dst, size_t n, cudaStream_t stream) {
    if (n == 0) return;
    const int threads = 256;
    size_t blocks = (n / 16 + threads - 1) / threads;
    if (blocks < 1) blocks = 1;
    if (blocks > 65535) blocks = 65535;
    copy_kit_bytes<<<(unsigned)blocks, threads, 0, stream>>>(static_cast<const unsigned char*>(src),
                                                               static_cast<unsigned char*>(dst), n);
}
