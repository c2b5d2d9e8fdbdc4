#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <cstdint>

namespace cg = cooperative_groups;

namespace {
constexpr int kThreads = 256;

__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(kThreads)
cluster_rowsum(const float* __restrict__ x, float* __restrict__ out, int cols) {
    cg::cluster_group cluster = cg::this_cluster();
    __shared__ float warp_part[kThreads / 32];
    __shared__ float cta_sum;
    const unsigned rank = cluster.block_rank();
    const int row = blockIdx.x / 2;
    const int half = cols / 2;
    const float* xr = x + (int64_t)row * cols + rank * half;
    const int n = rank == 0 ? half : cols - half;
    float s = 0.f;
    for (int c = threadIdx.x; c < n; c += kThreads) s += xr[c];
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (threadIdx.x % 32 == 0) warp_part[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.f;
        for (int i = 0; i < kThreads / 32; ++i) t += warp_part[i];
        cta_sum = t;
    }
    cluster.sync();  // both partials written and visible cluster-wide
    if (rank == 0 && threadIdx.x == 0) {
        const float* partner = cluster.map_shared_rank(&cta_sum, 1);
        out[row] = cta_sum + *partner;
    }
    cluster.sync();  // the partner's shared memory stays alive until it has been read
}
}  // namespace

extern "C" void cluster_rowsum_launcher(const float* x, float* out, int rows, int cols, cudaStream_t stream) {
    if (rows > 0) cluster_rowsum<<<rows * 2, kThreads, 0, stream>>>(x, out, cols);
}
