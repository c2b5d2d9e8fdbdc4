// gemm_3xtf32_binding.cpp -- gemm_3xtf32(a, b) -> a @ b in fp32 accuracy on TF32 tensor cores (3xTF32 split,
// WMMA, split-K with an in-order final sum: kernels/gemm_3xtf32.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdint>

#include "../binding_registry.h"

extern "C" void gemm_3xtf32_plan(int M, int N, int K, int* splits, int* tiles_per_split);
extern "C" void launch_gemm_3xtf32(const float* a, const float* b, float* ws, float* y, int M, int N, int K,
                                   int splits, int tiles_per_split, cudaStream_t stream);

torch::Tensor gemm_3xtf32(torch::Tensor x, torch::Tensor b) {
    for (const torch::Tensor* t : {&x, &b}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous() && t->dim() == 2,
                    "inputs must be contiguous 2-D float32 CUDA tensors");
    }
    TORCH_CHECK(x.size(1) == b.size(0), "expected a (M, K), b (K, N)");
    const int64_t M = x.size(0), K = x.size(1), N = b.size(1);
    TORCH_CHECK(M < (int64_t{1} << 31) && N < (int64_t{1} << 31) && K < (int64_t{1} << 30) &&
                    (M + 63) / 64 <= 65535,
                "sizes out of range");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty({M, N}, x.options());
    if (M == 0 || N == 0) return y;
    int splits = 1, tiles_per_split = 1;
    gemm_3xtf32_plan(static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), &splits, &tiles_per_split);
    torch::Tensor ws = torch::empty({splits, M, N}, x.options());
    launch_gemm_3xtf32(x.data_ptr<float>(), b.data_ptr<float>(), ws.data_ptr<float>(), y.data_ptr<float>(),
                       static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), splits, tiles_per_split,
                       c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "gemm_3xtf32 launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_gemm_3xtf32(pybind11::module& m) {
    m.def("gemm_3xtf32", &gemm_3xtf32, "a @ b, fp32-accurate 3xTF32 on tensor cores", py::arg("a"), py::arg("b"));
}
REGISTER_BINDING(gemm_3xtf32, register_gemm_3xtf32);
