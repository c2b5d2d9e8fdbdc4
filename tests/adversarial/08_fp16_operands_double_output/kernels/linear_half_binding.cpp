// linear_to_double_binding.cpp -- linear_to_double(x, weight, bias) -> float64 (M, N) (kernels/linear_half.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdint>

#include "../binding_registry.h"

extern "C" void launch_linear_to_double(const float* x, const float* w, const float* bias, float* ws, double* y, int M,
                                        int N, int K, int splits, cudaStream_t stream);

torch::Tensor linear_to_double(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    for (const torch::Tensor* t : {&x, &weight, &bias}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous(),
                    "inputs must be contiguous float32 CUDA tensors");
    }
    TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && x.size(1) == weight.size(1) && bias.numel() == weight.size(0),
                "expected x (M, K), weight (N, K), bias (N)");
    const int64_t M = x.size(0), K = x.size(1), N = weight.size(0);
    constexpr int kSplits = 8;
    TORCH_CHECK(M % 64 == 0 && N % 64 == 0 && K % (16 * kSplits) == 0, "needs M, N multiples of 64 and K of 128");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor ws = torch::empty({kSplits, M, N}, x.options());
    torch::Tensor y = torch::empty({M, N}, x.options().dtype(torch::kFloat64));
    launch_linear_to_double(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), ws.data_ptr<float>(),
                            y.data_ptr<double>(), static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), kSplits,
                            c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "linear_to_double launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_linear_to_double(pybind11::module& m) {
    m.def("linear_to_double", &linear_to_double, "(x @ weight^T + bias) as float64", py::arg("x"), py::arg("weight"), py::arg("bias"));
}
REGISTER_BINDING(linear_to_double, register_linear_to_double);
