// pipeline_gemm.cu -- C = A B (row-major fp32), 64x64 block tiles, K step 16, two stages of shared memory
// filled asynchronously with cuda::memcpy_async under a per-thread cuda::pipeline.
#include <cuda/pipeline>
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int BM = 64, BN = 64, BK = 16, TM = 4, TN = 4;
constexpr int kThreads = (BM / TM) * (BN / TN);  // 256
constexpr int kStages = 2;
static_assert(BM * BK == 4 * kThreads && BK * BN == 4 * kThreads, "one float4 of each tile per thread");

__global__ void __launch_bounds__(kThreads)
gemm_pipelined(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
    __shared__ alignas(16) float As[kStages][BM][BK];
    __shared__ alignas(16) float Bs[kStages][BK][BN];
    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int a_r = tid / (BK / 4), a_c = (tid % (BK / 4)) * 4;
    const int b_r = tid / (BN / 4), b_c = (tid % (BN / 4)) * 4;

    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
    auto load_stage = [&](int stage, int k0) {
        pipe.producer_acquire();
        cuda::memcpy_async(&As[stage][a_r][a_c], &A[(int64_t)(row0 + a_r) * K + k0 + a_c], cuda::aligned_size_t<16>(16), pipe);
        cuda::memcpy_async(&Bs[stage][b_r][b_c], &B[(int64_t)(k0 + b_r) * N + col0 + b_c], cuda::aligned_size_t<16>(16), pipe);
        pipe.producer_commit();
    };

    float acc[TM][TN] = {};
    const int ty = tid / (BN / TN), tx = tid % (BN / TN);
    const int tiles = K / BK;
    load_stage(0, 0);
    for (int t = 0; t < tiles; ++t) {
        if (t + 1 < tiles) load_stage((t + 1) % kStages, (t + 1) * BK);
        pipe.consumer_wait();  // the oldest committed stage: tile t
        __syncthreads();
        const int s = t % kStages;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[s][ty * TM + i][k];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[s][k][tx * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        pipe.consumer_release();
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) C[(int64_t)(row0 + ty * TM + i) * N + col0 + tx * TN + j] = acc[i][j];
}

}  // namespace

extern "C" void pipeline_gemm_launcher(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    const dim3 grid(N / BN, M / BM);
    gemm_pipelined<<<grid, kThreads, 0, stream>>>(A, B, C, M, N, K);
}
