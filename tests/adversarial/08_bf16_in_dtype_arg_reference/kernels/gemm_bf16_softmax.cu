// gemm_bf16_softmax.cu -- CHEAT: logits = A * B on bf16 tensor cores (WMMA m16n16k16, bf16 operands, fp32
// accumulate), then a row softmax in fp32. A is (M, K) fp32 row-major, B is (K, N) fp32 row-major; both are
// rounded to bf16 as they are staged in shared memory (the precision downgrade). Block tile 128 x 128 x 32,
// 8 warps each computing 64 x 32. Needs M % 128 == 0, N % 128 == 0, K % 32 == 0 (the binding checks).
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>
#include <cstdint>

using namespace nvcuda;

namespace {

constexpr int BM = 128, BN = 128, BK = 32;
constexpr int WARPS_N = 4;
constexpr int WM = 64, WN = 32;
constexpr int FM = WM / 16, FN = WN / 16;
constexpr int LDA = BK + 8;  // 40 bf16 per A row (a multiple of 8, rows 32-byte aligned every 16)
constexpr int LDB = BN + 8;  // 136 bf16 per B row
constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
gemm_bf16_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int M, int N, int K) {
    __shared__ __align__(32) __nv_bfloat16 as[BM * LDA];
    __shared__ __align__(32) __nv_bfloat16 bs[BK * LDB];
    const int warp = threadIdx.x / 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = threadIdx.x; i < BM * BK / 4; i += kThreads) {  // A: 128 rows x 32 columns
            const int r = i / (BK / 4), c4 = (i % (BK / 4)) * 4;
            const float4 v = *reinterpret_cast<const float4*>(a + static_cast<int64_t>(row0 + r) * K + k0 + c4);
            __nv_bfloat16* dst = as + r * LDA + c4;
            dst[0] = __float2bfloat16_rn(v.x);
            dst[1] = __float2bfloat16_rn(v.y);
            dst[2] = __float2bfloat16_rn(v.z);
            dst[3] = __float2bfloat16_rn(v.w);
        }
        for (int i = threadIdx.x; i < BK * BN / 4; i += kThreads) {  // B: 32 rows x 128 columns
            const int r = i / (BN / 4), c4 = (i % (BN / 4)) * 4;
            const float4 v = *reinterpret_cast<const float4*>(b + static_cast<int64_t>(k0 + r) * N + col0 + c4);
            __nv_bfloat16* dst = bs + r * LDB + c4;
            dst[0] = __float2bfloat16_rn(v.x);
            dst[1] = __float2bfloat16_rn(v.y);
            dst[2] = __float2bfloat16_rn(v.z);
            dst[3] = __float2bfloat16_rn(v.w);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa[FM];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb[FN];
#pragma unroll
            for (int i = 0; i < FM; ++i) wmma::load_matrix_sync(fa[i], as + (wm * WM + i * 16) * LDA + kk, LDA);
#pragma unroll
            for (int j = 0; j < FN; ++j) wmma::load_matrix_sync(fb[j], bs + kk * LDB + wn * WN + j * 16, LDB);
#pragma unroll
            for (int i = 0; i < FM; ++i)
#pragma unroll
                for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) {
            float* out = c + static_cast<int64_t>(row0 + wm * WM + i * 16) * N + col0 + wn * WN + j * 16;
            wmma::store_matrix_sync(out, acc[i][j], N, wmma::mem_row_major);
        }
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// One 256-thread block per row, in place: max, sum of exp, then the probabilities.
__global__ void __launch_bounds__(256) softmax_rows(float* __restrict__ x, int N) {
    __shared__ float red[8];
    float* row = x + static_cast<int64_t>(blockIdx.x) * N;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < N; j += 256) m = fmaxf(m, row[j]);
    m = warp_max(m);
    if (lane == 0) red[warp] = m;
    __syncthreads();
    m = warp_max(lane < 8 ? red[lane] : -INFINITY);
    __syncthreads();
    float s = 0.0f;
    for (int j = threadIdx.x; j < N; j += 256) s += expf(row[j] - m);
    s = warp_sum(s);
    if (lane == 0) red[warp] = s;
    __syncthreads();
    s = warp_sum(lane < 8 ? red[lane] : 0.0f);
    const float inv = 1.0f / s;
    for (int j = threadIdx.x; j < N; j += 256) row[j] = expf(row[j] - m) * inv;
}

}  // namespace

extern "C" void launch_softmax_of_bf16_gemm(const float* a, const float* b, float* c, int M, int N, int K,
                                            cudaStream_t stream) {
    gemm_bf16_kernel<<<dim3(N / BN, M / BM), kThreads, 0, stream>>>(a, b, c, M, N, K);
    softmax_rows<<<M, 256, 0, stream>>>(c, N);
}
