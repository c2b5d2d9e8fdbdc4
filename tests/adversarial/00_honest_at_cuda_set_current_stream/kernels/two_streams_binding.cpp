#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <cuda_runtime.h>
#include <tuple>
#include "../binding_registry.h"

extern "C" void relu_launch(const float* x, float* y, int64_t n, cudaStream_t s);
extern "C" void sigmoid_launch(const float* x, float* y, int64_t n, cudaStream_t s);

static std::tuple<torch::Tensor, torch::Tensor> relu_sigmoid_forward(torch::Tensor x, torch::Tensor y) {
    TORCH_CHECK(x.is_cuda() && y.is_cuda() && x.is_contiguous() && y.is_contiguous(), "contiguous CUDA tensors");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && y.scalar_type() == torch::kFloat32, "float32 only");
    auto a = torch::empty_like(x);
    auto b = torch::empty_like(y);
    const at::cuda::CUDAStream main = at::cuda::getCurrentCUDAStream();
    const at::cuda::CUDAStream side = at::cuda::getStreamFromPool();

    at::cuda::CUDAEvent forked;
    forked.record(main);
    forked.block(side);  // side sees the inputs and outputs as allocated on main

    relu_launch(x.data_ptr<float>(), a.data_ptr<float>(), x.numel(), main.stream());
    at::cuda::setCurrentCUDAStream(side);
    sigmoid_launch(y.data_ptr<float>(), b.data_ptr<float>(), y.numel(), at::cuda::getCurrentCUDAStream().stream());
    at::cuda::setCurrentCUDAStream(main);

    at::cuda::CUDAEvent joined;
    joined.record(side);
    joined.block(main);  // main waits for the side stream before anything reads b
    auto err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "launch failed: ", cudaGetErrorString(err));
    return {a, b};
}

static void register_relu_sigmoid(pybind11::module& m) {
    m.def("relu_sigmoid_forward", &relu_sigmoid_forward, py::arg("x"), py::arg("y"));
}
REGISTER_BINDING(relu_sigmoid, register_relu_sigmoid);
