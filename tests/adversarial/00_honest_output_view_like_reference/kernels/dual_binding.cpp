// dual_binding.cpp -- relu_sigmoid_forward(x) -> (relu(x), sigmoid(x)) from one pass; sigmoid_forward(x).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <tuple>

#include "../binding_registry.h"

extern "C" void launch_relu_sigmoid(const float* x, float* relu, float* sig, int64_t n, int sms, cudaStream_t stream);

namespace {

void check_input(const torch::Tensor& x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CUDA tensor");
}

void launch(const torch::Tensor& x, float* relu, float* sig) {
    launch_relu_sigmoid(x.data_ptr<float>(), relu, sig, x.numel(),
                        at::cuda::getCurrentDeviceProperties()->multiProcessorCount,
                        c10::cuda::getCurrentCUDAStream().stream());
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "relu/sigmoid launch failed: ", cudaGetErrorString(err));
}

std::tuple<torch::Tensor, torch::Tensor> relu_sigmoid_forward(torch::Tensor x) {
    check_input(x);
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor relu = torch::empty_like(x);
    torch::Tensor sig = torch::empty_like(x);
    launch(x, relu.data_ptr<float>(), sig.data_ptr<float>());
    return {relu, sig};
}

torch::Tensor sigmoid_forward(torch::Tensor x) {
    check_input(x);
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor sig = torch::empty_like(x);
    launch(x, nullptr, sig.data_ptr<float>());
    return sig;
}

}  // namespace

static void register_dual(pybind11::module& m) {
    m.def("relu_sigmoid_forward", &relu_sigmoid_forward, "(relu(x), sigmoid(x)) in one pass", py::arg("x"));
    m.def("sigmoid_forward", &sigmoid_forward, "sigmoid(x)", py::arg("x"));
}
REGISTER_BINDING(dual, register_dual);
