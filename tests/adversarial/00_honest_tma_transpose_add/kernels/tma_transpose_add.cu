// tma_transpose_add.cu -- out = x + y^T for row-major fp32 x (R, C), y (C, R), out (R, C), on sm_90 with the
// Tensor Memory Accelerator (TMA).
//
// Host: two 2-D tensor maps (x: dims {C, R}, y: dims {R, C}; 32 x 32 float boxes, no swizzle) encoded by
// cuTensorMapEncodeTiled. That is a driver API function; the runtime hands out its address with
// cudaGetDriverEntryPointByVersion (ABI version 12.0), so the extension needs no link against libcuda. A map
// holds the tensor's address, so both are encoded on every call (a few microseconds of host work) and passed
// by value as `const __grid_constant__ CUtensorMap` kernel parameters.
//
// Device, one block of 32 x 8 threads per 32 x 32 tile of out (rows r0.., columns c0..):
//   1. thread 0 initialises an mbarrier (arrival count 1) and fences it for the async proxy; __syncthreads.
//   2. thread 0 arms the barrier with the bytes to expect (two tiles) and issues two cp.async.bulk.tensor
//      loads: x's tile at coordinates {c0, r0}, y's tile at {r0, c0} (y rows c0.., columns r0..).
//   3. every thread waits for phase 0 of the barrier (try_wait.parity in a loop).
//   4. y's tile is transposed into a 33-column padded buffer (conflict-free both ways), __syncthreads, and
//      out[r0 + i][c0 + j] = xs[i][j] + ys[j][i] is written row by row, coalesced.
// Tiles past the edge of a tensor are filled with zeros by the TMA unit (and still count their full box in
// the transaction bytes); the stores are guarded. Only sm_90 features are used (cp.async.bulk.tensor,
// mbarrier expect_tx / try_wait.parity, fence.proxy.async), no sm_90a-only instructions.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kTile = 32;
constexpr int kRows = 8;  // threads per block: kTile x kRows
constexpr uint32_t kTileBytes = kTile * kTile * sizeof(float);

__device__ __forceinline__ uint32_t smem_address(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbarrier_init(uint32_t bar, uint32_t arrivals) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(arrivals) : "memory");
}

// Make the initialised barrier visible to the async proxy (the TMA unit) before any copy signals it.
__device__ __forceinline__ void fence_barrier_init() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, int c_inner, int c_outer,
                                            uint32_t bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(c_inner), "r"(c_outer), "r"(bar)
        : "memory");
}

__device__ __forceinline__ void mbarrier_wait_parity(uint32_t bar, uint32_t parity) {
    uint32_t done = 0;
    do {
        asm volatile(
            "{\n"
            " .reg .pred p;\n"
            " mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            " selp.u32 %0, 1, 0, p;\n"
            "}\n"
            : "=r"(done)
            : "r"(bar), "r"(parity)
            : "memory");
    } while (!done);
}

__global__ void __launch_bounds__(kTile * kRows)
transpose_add_tma(const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap y_map,
                  float* __restrict__ out, int rows, int cols) {
    __shared__ alignas(128) float xs[kTile][kTile];
    __shared__ alignas(128) float ys[kTile][kTile];
    __shared__ float yt[kTile][kTile + 1];
    __shared__ alignas(8) uint64_t bar;

    const int tx = threadIdx.x, ty = threadIdx.y;
    const bool leader = tx == 0 && ty == 0;
    const int c0 = blockIdx.x * kTile, r0 = blockIdx.y * kTile;
    const uint32_t bar_addr = smem_address(&bar);

    if (leader) {
        mbarrier_init(bar_addr, 1);
        fence_barrier_init();
    }
    __syncthreads();
    if (leader) {
        mbarrier_arrive_expect_tx(bar_addr, 2 * kTileBytes);
        tma_load_2d(smem_address(&xs[0][0]), &x_map, c0, r0, bar_addr);
        tma_load_2d(smem_address(&ys[0][0]), &y_map, r0, c0, bar_addr);
    }
    mbarrier_wait_parity(bar_addr, 0);

    // ys[i][j] = y[c0 + i][r0 + j]; yt[j][i] = ys[i][j].
    for (int i = ty; i < kTile; i += kRows) yt[tx][i] = ys[i][tx];
    __syncthreads();
    // out[r0 + i][c0 + tx] = x[r0 + i][c0 + tx] + y[c0 + tx][r0 + i] = xs[i][tx] + yt[i][tx].
    for (int i = ty; i < kTile; i += kRows) {
        const int r = r0 + i, c = c0 + tx;
        if (r < rows && c < cols) out[static_cast<int64_t>(r) * cols + c] = xs[i][tx] + yt[i][tx];
    }
}

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
    static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
        void* fn = nullptr;
        cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
        const cudaError_t err = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                                                 cudaEnableDefault, &found);
        return err == cudaSuccess && found == cudaDriverEntryPointSuccess
                   ? reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn)
                   : nullptr;
    }();
    return encode;
}

// A row-major (height, width) fp32 matrix as a 2-D tensor map with 32 x 32 boxes.
bool encode_matrix(PFN_cuTensorMapEncodeTiled_v12000 encode, CUtensorMap* map, const float* data, int64_t height,
                   int64_t width) {
    const cuuint64_t dims[2] = {static_cast<cuuint64_t>(width), static_cast<cuuint64_t>(height)};
    const cuuint64_t strides[1] = {static_cast<cuuint64_t>(width) * sizeof(float)};  // bytes between rows
    const cuuint32_t box[2] = {kTile, kTile};
    const cuuint32_t element_strides[2] = {1, 1};
    return encode(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, const_cast<float*>(data), dims, strides, box,
                  element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                  CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

}  // namespace

// nullptr on success, else what failed. Needs 16-byte aligned x and y and R, C multiples of 4 (TMA's
// alignment rules for the base address and the row pitch); the binding checks them.
extern "C" const char* launch_transpose_add_tma(const float* x, const float* y, float* out, int rows, int cols,
                                                cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) return nullptr;
    const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
    if (encode == nullptr) return "cuTensorMapEncodeTiled is not available from this driver";
    CUtensorMap x_map, y_map;
    if (!encode_matrix(encode, &x_map, x, rows, cols)) return "cuTensorMapEncodeTiled failed for x";
    if (!encode_matrix(encode, &y_map, y, cols, rows)) return "cuTensorMapEncodeTiled failed for y";
    const dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
    transpose_add_tma<<<grid, dim3(kTile, kRows), 0, stream>>>(x_map, y_map, out, rows, cols);
    return nullptr;
}
