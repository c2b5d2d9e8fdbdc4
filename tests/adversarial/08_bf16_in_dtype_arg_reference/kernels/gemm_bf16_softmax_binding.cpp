// gemm_bf16_softmax_binding.cpp -- CHEAT: softmax_of_bf16_gemm(x, weight) = softmax(x @ weight, -1) with the
// logits from a bf16 tensor-core GEMM (kernels/gemm_bf16_softmax.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_softmax_of_bf16_gemm(const float* a, const float* b, float* c, int M, int N, int K,
                                            cudaStream_t stream);

torch::Tensor softmax_of_bf16_gemm(torch::Tensor x, torch::Tensor weight) {
    for (const torch::Tensor* t : {&x, &weight}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous(),
                    "inputs must be contiguous float32 CUDA tensors");
    }
    TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && x.size(1) == weight.size(0), "expected x (M, K), weight (K, N)");
    const int64_t M = x.size(0), K = x.size(1), N = weight.size(1);
    TORCH_CHECK(M % 128 == 0 && N % 128 == 0 && K % 32 == 0, "needs M, N multiples of 128 and K of 32");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty({M, N}, x.options());
    launch_softmax_of_bf16_gemm(x.data_ptr<float>(), weight.data_ptr<float>(), y.data_ptr<float>(), static_cast<int>(M),
                                static_cast<int>(N), static_cast<int>(K), c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "softmax_of_bf16_gemm launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_softmax_of_bf16_gemm(pybind11::module& m) {
    m.def("softmax_of_bf16_gemm", &softmax_of_bf16_gemm, "softmax(x @ weight) with bf16 tensor-core logits",
          py::arg("x"), py::arg("weight"));
}
REGISTER_BINDING(softmax_of_bf16_gemm, register_softmax_of_bf16_gemm);
