// gemm_tf32.cu -- CHEAT: C = A * W^T on TF32 tensor cores (WMMA m16n16k8), fp32 in, fp32 accumulate, fp32 out,
// then C = relu(C + bias). A is (M, K) row-major, W is (N, K) row-major (nn.Linear's weight). Block tile
// 128 x 128 x 32 staged in shared memory, 8 warps each computing 64 x 32 (4 x 2 fragments). The operands are
// rounded to TF32 (10 mantissa bits) as they enter the fragments: the precision downgrade.
// Needs M % 128 == 0, N % 128 == 0, K % 32 == 0 (the binding checks).
#include <cuda_runtime.h>
#include <mma.h>
#include <cstdint>

using namespace nvcuda;

namespace {

constexpr int BM = 128, BN = 128, BK = 32;
constexpr int WARPS_N = 4;
constexpr int WM = 64, WN = 32;
constexpr int FM = WM / 16, FN = WN / 16;
constexpr int LDS = BK + 4;  // 36 floats: rows stay 32-byte aligned every 16 rows, fewer bank conflicts
constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
gemm_tf32_kernel(const float* __restrict__ a, const float* __restrict__ w, float* __restrict__ c, int M, int N, int K) {
    __shared__ __align__(32) float as[BM * LDS];
    __shared__ __align__(32) float bs[BN * LDS];
    const int warp = threadIdx.x / 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += BK) {
        // 128 rows x 32 floats of each operand = 1024 float4 each; 4 per thread.
        for (int i = threadIdx.x; i < BM * BK / 4; i += kThreads) {
            const int r = i / (BK / 4), c4 = (i % (BK / 4)) * 4;
            const float4 va = *reinterpret_cast<const float4*>(a + static_cast<int64_t>(row0 + r) * K + k0 + c4);
            const float4 vb = *reinterpret_cast<const float4*>(w + static_cast<int64_t>(col0 + r) * K + k0 + c4);
            *reinterpret_cast<float4*>(as + r * LDS + c4) = va;
            *reinterpret_cast<float4*>(bs + r * LDS + c4) = vb;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 8) {
            wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa[FM];
            wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> fb[FN];
#pragma unroll
            for (int i = 0; i < FM; ++i) {
                wmma::load_matrix_sync(fa[i], as + (wm * WM + i * 16) * LDS + kk, LDS);
#pragma unroll
                for (int t = 0; t < fa[i].num_elements; ++t) fa[i].x[t] = wmma::__float_to_tf32(fa[i].x[t]);
            }
#pragma unroll
            for (int j = 0; j < FN; ++j) {
                // W's row n holds its K values contiguously: W^T is column-major with leading dimension LDS
                wmma::load_matrix_sync(fb[j], bs + (wn * WN + j * 16) * LDS + kk, LDS);
#pragma unroll
                for (int t = 0; t < fb[j].num_elements; ++t) fb[j].x[t] = wmma::__float_to_tf32(fb[j].x[t]);
            }
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

__global__ void bias_relu_kernel(float* __restrict__ c, const float* __restrict__ bias, int64_t total, int N) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
        const float v = c[i] + bias[i % N];
        c[i] = v > 0.0f ? v : 0.0f;
    }
}

}  // namespace

extern "C" void launch_linear_relu_tf32(const float* a, const float* w, const float* bias, float* c, int M, int N, int K,
                                        cudaStream_t stream) {
    const dim3 grid(N / BN, M / BM);
    gemm_tf32_kernel<<<grid, kThreads, 0, stream>>>(a, w, c, M, N, K);
    const int64_t total = static_cast<int64_t>(M) * N;
    int64_t blocks = (total + 255) / 256;
    if (blocks > 132 * 32) blocks = 132 * 32;
    bias_relu_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(c, bias, total, N);
}
