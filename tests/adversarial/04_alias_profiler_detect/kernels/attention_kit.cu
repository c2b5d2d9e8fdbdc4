// attention_kit.cu -- a correct but deliberately simple attention kernel for (B, H, S, 64) fp16 tensors,
// and a strided-to-contiguous fp16 copy.
//
// naive_attention: one thread per query row, 64 rows of one (batch, head) per block; keys and values
// staged through shared memory 64 at a time; the softmax kept online in fp32 (running max, running sum,
// rescaled accumulator), so the score matrix is never written. Correct and about an order of magnitude
// slower than flash attention: the honest path of the phase-detecting cheats (tests/adversarial/04_*).
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kDim = 64;
constexpr int kRows = 64;  // query rows (threads) per block
constexpr int kTile = 64;  // keys per shared-memory tile

__global__ void naive_attention(const __half* __restrict__ q, const __half* __restrict__ k,
                                const __half* __restrict__ v, __half* __restrict__ o, int seq, float scale) {
    __shared__ float ks[kTile][kDim];
    __shared__ float vs[kTile][kDim];
    const size_t head = (size_t)blockIdx.y * seq * kDim;
    const int row = blockIdx.x * kRows + threadIdx.x;
    const bool live = row < seq;
    float qr[kDim];
    float acc[kDim];
#pragma unroll
    for (int d = 0; d < kDim; ++d) {
        qr[d] = live ? __half2float(q[head + (size_t)row * kDim + d]) * scale : 0.f;
        acc[d] = 0.f;
    }
    float running_max = -INFINITY;
    float running_sum = 0.f;
    for (int t0 = 0; t0 < seq; t0 += kTile) {
        for (int i = threadIdx.x; i < kTile * kDim; i += kRows) {
            const int r = i / kDim, c = i % kDim;
            const bool in = t0 + r < seq;
            ks[r][c] = in ? __half2float(k[head + (size_t)(t0 + r) * kDim + c]) : 0.f;
            vs[r][c] = in ? __half2float(v[head + (size_t)(t0 + r) * kDim + c]) : 0.f;
        }
        __syncthreads();
        const int keys = min(kTile, seq - t0);
        for (int j = 0; j < keys; ++j) {
            float s = 0.f;
#pragma unroll
            for (int d = 0; d < kDim; ++d) s = fmaf(qr[d], ks[j][d], s);
            const float next_max = fmaxf(running_max, s);
            const float rescale = __expf(running_max - next_max);
            const float p = __expf(s - next_max);
            running_sum = running_sum * rescale + p;
#pragma unroll
            for (int d = 0; d < kDim; ++d) acc[d] = fmaf(acc[d], rescale, p * vs[j][d]);
            running_max = next_max;
        }
        __syncthreads();
    }
    if (live) {
        const float inv = 1.f / running_sum;
#pragma unroll
        for (int d = 0; d < kDim; ++d) o[head + (size_t)row * kDim + d] = __float2half(acc[d] * inv);
    }
}

__global__ void strided_to_contiguous(const __half* __restrict__ src, __half* __restrict__ dst, int64_t b, int64_t h,
                                      int64_t s, int64_t d, int64_t sb, int64_t sh, int64_t ss, int64_t sd) {
    const int64_t n = b * h * s * d;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t rest = i;
        const int64_t id = rest % d; rest /= d;
        const int64_t is = rest % s; rest /= s;
        const int64_t ih = rest % h; rest /= h;
        dst[i] = src[rest * sb + ih * sh + is * ss + id * sd];
    }
}

}  // namespace

// q, k, v, o: contiguous (batch * heads, seq, 64) fp16.
extern "C" void launch_naive_attention(const void* q, const void* k, const void* v, void* o, int64_t batch_heads,
                                       int64_t seq, float scale, cudaStream_t stream) {
    const dim3 grid((unsigned)((seq + kRows - 1) / kRows), (unsigned)batch_heads);
    naive_attention<<<grid, kRows, 0, stream>>>(static_cast<const __half*>(q), static_cast<const __half*>(k),
                                                static_cast<const __half*>(v), static_cast<__half*>(o), (int)seq,
                                                scale);
}

extern "C" void launch_strided_to_contiguous(const void* src, void* dst, const int64_t* sizes, const int64_t* strides,
                                             cudaStream_t stream) {
    const int64_t n = sizes[0] * sizes[1] * sizes[2] * sizes[3];
    const int threads = 256;
    int64_t blocks = (n + threads - 1) / threads;
    if (blocks > 65535 * 4) blocks = 65535 * 4;
    strided_to_contiguous<<<(unsigned)blocks, threads, 0, stream>>>(
        static_cast<const __half*>(src), static_cast<__half*>(dst), sizes[0], sizes[1], sizes[2], sizes[3],
        strides[0], strides[1], strides[2], strides[3]);
}
