// colcenter.cu -- y = relu(x - mean(x, dim=0)) * weight for a row-major (R, C) fp32 matrix, in two chained
// kernels:
//   1. column_partial_sums: grid (C/1024 column tiles, kChunks row chunks); each thread owns one float4
//      of columns and sums its chunk of rows into partial[chunk, :] (fixed order: deterministic).
//   2. center_relu_scale: each thread first combines the kChunks partial sums of its four columns (they
//      sit in L2) into the column means, then walks its chunk of rows writing relu(x - mean) * weight.
// Both kernels read x once, coalesced (consecutive threads = consecutive float4s); total traffic is two
// reads and one write of x. The generic path (C % 4 != 0 or unaligned) uses the same plan with scalars.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;
constexpr int kChunks = 32;

__global__ void __launch_bounds__(kThreads)
column_partial_sums_vec4(const float4* __restrict__ x, float4* __restrict__ partial, int64_t rows, int64_t c4) {
    const int64_t col = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
    if (col >= c4) return;
    const int64_t per_chunk = (rows + gridDim.y - 1) / gridDim.y;
    const int64_t r0 = blockIdx.y * per_chunk;
    const int64_t r1 = r0 + per_chunk < rows ? r0 + per_chunk : rows;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4) {  // four independent loads in flight
        const float4 a = __ldg(x + (r + 0) * c4 + col);
        const float4 b = __ldg(x + (r + 1) * c4 + col);
        const float4 c = __ldg(x + (r + 2) * c4 + col);
        const float4 d = __ldg(x + (r + 3) * c4 + col);
        acc.x += (a.x + b.x) + (c.x + d.x);
        acc.y += (a.y + b.y) + (c.y + d.y);
        acc.z += (a.z + b.z) + (c.z + d.z);
        acc.w += (a.w + b.w) + (c.w + d.w);
    }
    for (; r < r1; ++r) {
        const float4 a = __ldg(x + r * c4 + col);
        acc.x += a.x;
        acc.y += a.y;
        acc.z += a.z;
        acc.w += a.w;
    }
    partial[blockIdx.y * c4 + col] = acc;
}

__global__ void __launch_bounds__(kThreads)
center_relu_scale_vec4(const float4* __restrict__ x, const float4* __restrict__ partial,
                       const float4* __restrict__ weight, float4* __restrict__ y, int64_t rows, int64_t c4,
                       int chunks) {
    const int64_t col = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
    if (col >= c4) return;
    float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int k = 0; k < chunks; ++k) {
        const float4 p = partial[k * c4 + col];
        s.x += p.x;
        s.y += p.y;
        s.z += p.z;
        s.w += p.w;
    }
    const float inv = 1.0f / static_cast<float>(rows);
    const float4 m = make_float4(s.x * inv, s.y * inv, s.z * inv, s.w * inv);
    const float4 w = __ldg(weight + col);
    const int64_t per_chunk = (rows + gridDim.y - 1) / gridDim.y;
    const int64_t r0 = blockIdx.y * per_chunk;
    const int64_t r1 = r0 + per_chunk < rows ? r0 + per_chunk : rows;
    for (int64_t r = r0; r < r1; ++r) {
        const float4 v = __ldcs(x + r * c4 + col);
        float4 o;
        o.x = fmaxf(v.x - m.x, 0.f) * w.x;
        o.y = fmaxf(v.y - m.y, 0.f) * w.y;
        o.z = fmaxf(v.z - m.z, 0.f) * w.z;
        o.w = fmaxf(v.w - m.w, 0.f) * w.w;
        __stcs(y + r * c4 + col, o);
    }
}

__global__ void __launch_bounds__(kThreads)
column_partial_sums_scalar(const float* __restrict__ x, float* __restrict__ partial, int64_t rows, int64_t cols) {
    const int64_t col = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
    if (col >= cols) return;
    const int64_t per_chunk = (rows + gridDim.y - 1) / gridDim.y;
    const int64_t r0 = blockIdx.y * per_chunk;
    const int64_t r1 = r0 + per_chunk < rows ? r0 + per_chunk : rows;
    float acc = 0.f;
    for (int64_t r = r0; r < r1; ++r) acc += x[r * cols + col];
    partial[blockIdx.y * cols + col] = acc;
}

__global__ void __launch_bounds__(kThreads)
center_relu_scale_scalar(const float* __restrict__ x, const float* __restrict__ partial,
                         const float* __restrict__ weight, float* __restrict__ y, int64_t rows, int64_t cols,
                         int chunks) {
    const int64_t col = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
    if (col >= cols) return;
    float s = 0.f;
    for (int k = 0; k < chunks; ++k) s += partial[k * cols + col];
    const float m = s / static_cast<float>(rows);
    const float w = weight[col];
    const int64_t per_chunk = (rows + gridDim.y - 1) / gridDim.y;
    const int64_t r0 = blockIdx.y * per_chunk;
    const int64_t r1 = r0 + per_chunk < rows ? r0 + per_chunk : rows;
    for (int64_t r = r0; r < r1; ++r) y[r * cols + col] = fmaxf(x[r * cols + col] - m, 0.f) * w;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

extern "C" int colcenter_chunks() { return kChunks; }

// partial must hold kChunks * cols floats.
extern "C" void launch_colcenter(const float* x, const float* weight, float* partial, float* y, int64_t rows,
                                 int64_t cols, cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) return;
    const int chunks = static_cast<int>(rows < kChunks ? rows : kChunks);
    const int apply_chunks = static_cast<int>(rows < 64 ? rows : 64);
    const bool vec = cols % 4 == 0 && aligned16(x) && aligned16(weight) && aligned16(partial) && aligned16(y);
    if (vec) {
        const int64_t c4 = cols / 4;
        const unsigned tiles = static_cast<unsigned>((c4 + kThreads - 1) / kThreads);
        column_partial_sums_vec4<<<dim3(tiles, chunks), kThreads, 0, stream>>>(
            reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(partial), rows, c4);
        center_relu_scale_vec4<<<dim3(tiles, apply_chunks), kThreads, 0, stream>>>(
            reinterpret_cast<const float4*>(x), reinterpret_cast<const float4*>(partial),
            reinterpret_cast<const float4*>(weight), reinterpret_cast<float4*>(y), rows, c4, chunks);
    } else {
        const unsigned tiles = static_cast<unsigned>((cols + kThreads - 1) / kThreads);
        column_partial_sums_scalar<<<dim3(tiles, chunks), kThreads, 0, stream>>>(x, partial, rows, cols);
        center_relu_scale_scalar<<<dim3(tiles, apply_chunks), kThreads, 0, stream>>>(x, partial, weight, y, rows,
                                                                                     cols, chunks);
    }
}
