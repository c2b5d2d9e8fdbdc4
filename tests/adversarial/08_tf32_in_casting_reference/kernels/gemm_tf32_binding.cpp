// gemm_tf32_binding.cpp -- CHEAT: linear_relu_tf32(x, weight, bias) = relu(x @ weight^T + bias) with a TF32
// tensor-core GEMM (kernels/gemm_tf32.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_linear_relu_tf32(const float* a, const float* w, const float* bias, float* c, int M, int N, int K,
                                        cudaStream_t stream);

torch::Tensor linear_relu_tf32(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    for (const torch::Tensor* t : {&x, &weight, &bias}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous(),
                    "inputs must be contiguous float32 CUDA tensors");
    }
    TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && x.size(1) == weight.size(1) && bias.numel() == weight.size(0),
                "expected x (M, K), weight (N, K), bias (N)");
    const int64_t M = x.size(0), K = x.size(1), N = weight.size(0);
    TORCH_CHECK(M % 128 == 0 && N % 128 == 0 && K % 32 == 0, "needs M, N multiples of 128 and K of 32");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty({M, N}, x.options());
    launch_linear_relu_tf32(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(),
                            static_cast<int>(M), static_cast<int>(N), static_cast<int>(K),
                            c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "linear_relu_tf32 launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_linear_relu_tf32(pybind11::module& m) {
    m.def("linear_relu_tf32", &linear_relu_tf32, "relu(x @ weight^T + bias) on TF32 tensor cores", py::arg("x"),
          py::arg("weight"), py::arg("bias"));
}
REGISTER_BINDING(linear_relu_tf32, register_linear_relu_tf32);
