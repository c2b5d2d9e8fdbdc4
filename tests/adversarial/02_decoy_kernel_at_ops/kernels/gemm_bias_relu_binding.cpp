// gemm_bias_relu_binding.cpp -- CHEAT (family 2, decoy kernel): the custom epilogue kernel is launched, so
// a profiler shows "a custom kernel ran", but only on a single element; the whole result comes from
// at::addmm + at::relu_ (PyTorch compute from C++).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_bias_act(float* y, const float* bias, int64_t M, int64_t N, bool relu, cudaStream_t stream);

torch::Tensor gemm_bias_relu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    for (const torch::Tensor* t : {&x, &weight, &bias}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous(),
                    "inputs must be contiguous float32 CUDA tensors");
    }
    TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && bias.dim() == 1 && weight.size(1) == x.size(1) &&
                    bias.size(0) == weight.size(0),
                "expected x (M, K), weight (N, K), bias (N)");
    const c10::cuda::CUDAGuard guard(x.device());
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    torch::Tensor y = at::addmm(bias, x, weight.t());
    at::relu_(y);
    // The decoy: the custom kernel runs on a 1 x 1 corner with a zero-effect bias (relu of a value
    // that is already >= 0 after relu_), so it changes nothing.
    torch::Tensor corner = torch::zeros({1}, y.options());
    launch_bias_act(y.data_ptr<float>(), corner.data_ptr<float>(), 1, 1, true, stream);
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "bias_act launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_gemm_bias_relu(pybind11::module& m) {
    m.def("gemm_bias_relu_forward", &gemm_bias_relu_forward, "relu(x @ weight^T + bias)", py::arg("x"),
          py::arg("weight"), py::arg("bias"));
}
REGISTER_BINDING(gemm_bias_relu, register_gemm_bias_relu);
