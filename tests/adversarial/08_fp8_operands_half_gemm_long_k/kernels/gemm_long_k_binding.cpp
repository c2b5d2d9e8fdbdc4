// gemm_long_k_binding.cpp -- gemm_long_k(a, b) -> a @ b for fp16 a, b, fp8 e4m3 operands, fp32 split-K over 64 slices (kernels/gemm_long_k.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cuda_fp16.h>
#include <cstdint>

#include "../binding_registry.h"

extern "C" void launch_gemm_long_k(const __half* a, const __half* b, float* ws, __half* y, int M, int N, int K, int splits,
                                   cudaStream_t stream);

torch::Tensor gemm_long_k(torch::Tensor x, torch::Tensor b) {
    for (const torch::Tensor* t : {&x, &b}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kHalf && t->is_contiguous() && t->dim() == 2,
                    "inputs must be contiguous 2-D float16 CUDA tensors");
    }
    TORCH_CHECK(x.size(1) == b.size(0), "expected a (M, K), b (K, N)");
    const int64_t M = x.size(0), K = x.size(1), N = b.size(1);
    constexpr int kSplits = 64;
    TORCH_CHECK(M % 64 == 0 && N % 64 == 0 && K % (16 * kSplits) == 0, "needs M, N multiples of 64 and K of 1024");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor ws = torch::empty({kSplits, M, N}, x.options().dtype(torch::kFloat32));
    torch::Tensor y = torch::empty({M, N}, x.options());
    launch_gemm_long_k(reinterpret_cast<const __half*>(x.data_ptr<at::Half>()), reinterpret_cast<const __half*>(b.data_ptr<at::Half>()),
                       ws.data_ptr<float>(), reinterpret_cast<__half*>(y.data_ptr<at::Half>()),
                       static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), kSplits,
                       c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "gemm_long_k launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_gemm_long_k(pybind11::module& m) {
    m.def("gemm_long_k", &gemm_long_k, "a @ b, fp32 split-K", py::arg("a"), py::arg("b"));
}
REGISTER_BINDING(gemm_long_k, register_gemm_long_k);
