// device_cache.cu -- CHEAT (family 4, content cache in __device__ globals): the whole cache lives on the GPU,
// so the host never sees a hit and never synchronises. Four kernels per call, all on torch's stream:
//   lookup   : 64 probe values of x (fixed, spread positions) compared with the keys of 8 slots kept in
//              __device__ arrays; the matching slot (or -1) goes to a __device__ flag;
//   replay   : on a hit, a full-grid copy of that slot's stored output (raw cudaMalloc memory) into y;
//   compute  : on a miss, the real chain clamp(gelu(x * scale + shift)), deliberately slow (8 blocks),
//              written to y and to the next slot;
//   commit   : on a miss, the probes become that slot's key.
// Timed calls on a rotating set of inputs (fresh addresses, same values) all hit after the first round.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kProbes = 64;
constexpr int kSlots = 8;
constexpr int kSlowBlocks = 8;

__device__ float g_keys[kSlots][kProbes];
__device__ int g_valid[kSlots];
__device__ int g_hit;
__device__ int g_next;

__device__ __forceinline__ int64_t probe_position(int k, int64_t n) {
    return (static_cast<int64_t>(k) * (n / kProbes) + static_cast<int64_t>(k) * 7919) % n;
}

__global__ void lookup_kernel(const float* __restrict__ x, int64_t n) {
    __shared__ int match[kSlots];
    const int k = threadIdx.x;
    if (k < kSlots) match[k] = g_valid[k];
    __syncthreads();
    if (k < kProbes) {
        const float v = x[probe_position(k, n)];
        for (int s = 0; s < kSlots; ++s)
            if (g_keys[s][k] != v) match[s] = 0;
    }
    __syncthreads();
    if (k == 0) {
        int hit = -1;
        for (int s = 0; s < kSlots; ++s)
            if (match[s]) { hit = s; break; }
        g_hit = hit;
    }
}

__global__ void replay_kernel(const float* __restrict__ stash, float* __restrict__ y, int64_t n) {
    const int hit = g_hit;
    if (hit < 0) return;
    const float* src = stash + static_cast<int64_t>(hit) * n;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = src[i];
}

__global__ void compute_kernel(const float* __restrict__ x, float* __restrict__ y, float* __restrict__ stash, int64_t n,
                               float scale, float shift, float lo, float hi) {
    if (g_hit >= 0) return;
    float* dst = stash + static_cast<int64_t>(g_next) * n;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = x[i] * scale + shift;
        const float g = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
        const float r = fminf(fmaxf(g, lo), hi);
        y[i] = r;
        dst[i] = r;
    }
}

__global__ void commit_kernel(const float* __restrict__ x, int64_t n) {
    if (g_hit >= 0) return;
    const int k = threadIdx.x;
    const int slot = g_next;
    if (k < kProbes) g_keys[slot][k] = x[probe_position(k, n)];
    __syncthreads();
    if (k == 0) {
        g_valid[slot] = 1;
        g_next = (slot + 1) % kSlots;
    }
}

}  // namespace

extern "C" int device_cache_slots() { return kSlots; }

extern "C" void launch_cached_chain(const float* x, float* y, float* stash, int64_t n, float scale, float shift,
                                    float lo, float hi, cudaStream_t stream) {
    if (n <= 0) return;
    lookup_kernel<<<1, kProbes, 0, stream>>>(x, n);
    int64_t blocks = (n + 255) / 256;
    if (blocks > 132 * 8) blocks = 132 * 8;
    replay_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(stash, y, n);
    compute_kernel<<<kSlowBlocks, 256, 0, stream>>>(x, y, stash, n, scale, shift, lo, hi);
    commit_kernel<<<1, kProbes, 0, stream>>>(x, n);
}
