// logsumexp.cu -- out[r] = log(sum_j exp(x[r, j])) for a row-major (rows, cols) fp32 matrix.
//   1. chunk_partials: grid (chunks, rows); each block reduces its slice of one row to (max m, sum of
//      exp(x - m)) with an online update, written to partial[r * chunks + c] (a float2).
//   2. combine_rows: one block per row merges its chunks' partials: M = max m_c, S = sum s_c exp(m_c - M),
//      out[r] = M + log(S).
// x is read once (float4 loads when the row length allows); the partials are 64 x 64 float2 (32 KB).
#include <cuda_runtime.h>
#include <cstdint>
#include <cfloat>

namespace {

constexpr int kThreads = 256;

struct MaxSum {
    float m;
    float s;
};

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
    if (a.m < b.m) {
        const MaxSum t = a;
        a = b;
        b = t;
    }
    if (b.m == -FLT_MAX) return a;  // an empty side
    return {a.m, a.s + b.s * expf(b.m - a.m)};
}

__device__ __forceinline__ MaxSum add_value(MaxSum a, float v) {
    if (v <= a.m) return {a.m, a.s + expf(v - a.m)};
    return {v, a.s * expf(a.m - v) + 1.f};
}

__device__ MaxSum block_merge(MaxSum v) {
    __shared__ MaxSum warp_parts[kThreads / 32];
    __shared__ MaxSum total;
    for (int o = 16; o > 0; o >>= 1) {
        MaxSum other{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)};
        v = merge(v, other);
    }
    if ((threadIdx.x & 31) == 0) warp_parts[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        MaxSum w = threadIdx.x < kThreads / 32 ? warp_parts[threadIdx.x] : MaxSum{-FLT_MAX, 0.f};
        for (int o = 16; o > 0; o >>= 1) {
            MaxSum other{__shfl_xor_sync(0xffffffffu, w.m, o), __shfl_xor_sync(0xffffffffu, w.s, o)};
            w = merge(w, other);
        }
        if (threadIdx.x == 0) total = w;
    }
    __syncthreads();
    return total;
}

__global__ void __launch_bounds__(kThreads)
chunk_partials(const float* __restrict__ x, float2* __restrict__ partial, int64_t cols, int chunks, bool vec4) {
    const int64_t row = blockIdx.y;
    const int64_t per_chunk = (cols + chunks - 1) / chunks;
    const int64_t begin = blockIdx.x * per_chunk;
    const int64_t end = begin + per_chunk < cols ? begin + per_chunk : cols;
    const float* r = x + row * cols;
    MaxSum acc{-FLT_MAX, 0.f};
    if (vec4) {  // per_chunk and cols are multiples of 4, rows 16-byte aligned
        const float4* r4 = reinterpret_cast<const float4*>(r + begin);
        for (int64_t i = threadIdx.x; i < (end - begin) / 4; i += kThreads) {
            const float4 v = __ldcs(r4 + i);
            acc = add_value(add_value(add_value(add_value(acc, v.x), v.y), v.z), v.w);
        }
    } else {
        for (int64_t i = begin + threadIdx.x; i < end; i += kThreads) acc = add_value(acc, r[i]);
    }
    const MaxSum total = block_merge(acc);
    if (threadIdx.x == 0) partial[row * chunks + blockIdx.x] = make_float2(total.m, total.s);
}

__global__ void __launch_bounds__(kThreads)
combine_rows(const float2* __restrict__ partial, float* __restrict__ out, int chunks) {
    MaxSum acc{-FLT_MAX, 0.f};
    for (int c = threadIdx.x; c < chunks; c += kThreads) {
        const float2 p = partial[blockIdx.x * static_cast<int64_t>(chunks) + c];
        acc = merge(acc, MaxSum{p.x, p.y});
    }
    const MaxSum total = block_merge(acc);
    if (threadIdx.x == 0) out[blockIdx.x] = total.m + logf(total.s);
}

}  // namespace

extern "C" int logsumexp_chunks(int64_t cols) {
    const int64_t chunks = (cols + 4095) / 4096;  // ~4096 values per block
    return static_cast<int>(chunks < 1 ? 1 : (chunks > 1024 ? 1024 : chunks));
}

extern "C" void logsumexp_launcher(const float* x, float* partial, float* out, int64_t rows, int64_t cols,
                                   int chunks, cudaStream_t stream) {
    if (rows == 0) return;
    const int64_t per_chunk = (cols + chunks - 1) / chunks;
    const bool vec4 = cols % 4 == 0 && per_chunk % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
    chunk_partials<<<dim3(static_cast<unsigned>(chunks), static_cast<unsigned>(rows)), kThreads, 0, stream>>>(
        x, reinterpret_cast<float2*>(partial), cols, chunks, vec4);
    combine_rows<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(reinterpret_cast<const float2*>(partial), out,
                                                                        chunks);
}
