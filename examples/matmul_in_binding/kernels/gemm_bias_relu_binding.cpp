// gemm_bias_relu_binding.cpp -- REJECTED ON PURPOSE: the GEMM is torch::matmul (aten::mm) called from C++
// instead of a custom kernel or a direct cuBLAS call. The judge's op gate sees it at the dispatcher, even
// though it happens inside the extension. The bias + ReLU epilogue kernel (bias_relu.cu) is fine.
#include <torch/torch.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_bias_relu(float* y, const float* bias, int64_t M, int64_t N, cudaStream_t stream);

torch::Tensor gemm_bias_relu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    for (const torch::Tensor* t : {&x, &weight, &bias}) {
        TORCH_CHECK(t->is_cuda(), "all inputs must be CUDA tensors");
        TORCH_CHECK(t->scalar_type() == torch::kFloat32, "all inputs must be float32");
        TORCH_CHECK(t->is_contiguous(), "all inputs must be contiguous");
    }
    TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && bias.dim() == 1, "expected x (M, K), weight (N, K), bias (N)");
    TORCH_CHECK(weight.size(1) == x.size(1) && bias.size(0) == weight.size(0), "shape mismatch");
    const c10::cuda::CUDAGuard guard(x.device());

    torch::Tensor y = torch::matmul(x, weight.t());  // FORBIDDEN: PyTorch compute (aten::mm) in the binding
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    launch_bias_relu(y.data_ptr<float>(), bias.data_ptr<float>(), y.size(0), y.size(1), stream);
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "bias_relu kernel launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_gemm_bias_relu(pybind11::module& m) {
    m.def("gemm_bias_relu_forward", &gemm_bias_relu_forward, "relu(x @ weight^T + bias)", py::arg("x"),
          py::arg("weight"), py::arg("bias"));
}
REGISTER_BINDING(gemm_bias_relu, register_gemm_bias_relu);
