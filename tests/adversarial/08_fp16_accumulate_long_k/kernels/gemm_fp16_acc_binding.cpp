// gemm_fp16_acc_binding.cpp -- CHEAT: linear_fp16_accumulate(x, weight, bias) = x @ weight^T + bias for fp16
// tensors, accumulated in fp16 (kernels/gemm_fp16_acc.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_linear_fp16_accumulate(const void* a, const void* w, const void* bias, void* c, int M, int N, int K,
                                              cudaStream_t stream);

torch::Tensor linear_fp16_accumulate(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    for (const torch::Tensor* t : {&x, &weight, &bias}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kHalf && t->is_contiguous(),
                    "inputs must be contiguous float16 CUDA tensors");
    }
    TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && x.size(1) == weight.size(1) && bias.numel() == weight.size(0),
                "expected x (M, K), weight (N, K), bias (N)");
    const int64_t M = x.size(0), K = x.size(1), N = weight.size(0);
    TORCH_CHECK(M % 128 == 0 && N % 128 == 0 && K % 32 == 0, "needs M, N multiples of 128 and K of 32");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty({M, N}, x.options());
    launch_linear_fp16_accumulate(x.data_ptr(), weight.data_ptr(), bias.data_ptr(), y.data_ptr(), static_cast<int>(M),
                                  static_cast<int>(N), static_cast<int>(K), c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "linear_fp16_accumulate launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_linear_fp16_accumulate(pybind11::module& m) {
    m.def("linear_fp16_accumulate", &linear_fp16_accumulate, "x @ weight^T + bias, fp16 accumulator", py::arg("x"),
          py::arg("weight"), py::arg("bias"));
}
REGISTER_BINDING(linear_fp16_accumulate, register_linear_fp16_accumulate);
