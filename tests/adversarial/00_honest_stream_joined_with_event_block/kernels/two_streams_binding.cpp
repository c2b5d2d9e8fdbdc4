#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <cuda_runtime.h>
#include <tuple>
#include "../binding_registry.h"

extern "C" void relu_launch(const float* x, float* y, int64_t n, cudaStream_t s);
extern "C" void sigmoid_launch(const float* x, float* y, int64_t n, cudaStream_t s);

namespace {
cudaStream_t side_stream() {
    static cudaStream_t s = [] {
        cudaStream_t created = nullptr;
        const cudaError_t err = cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking);
        TORCH_CHECK(err == cudaSuccess, "cudaStreamCreateWithFlags failed: ", cudaGetErrorString(err));
        return created;
    }();
    return s;
}
}  // namespace

static std::tuple<torch::Tensor, torch::Tensor> relu_sigmoid_forward(torch::Tensor x, torch::Tensor y) {
    TORCH_CHECK(x.is_cuda() && y.is_cuda() && x.is_contiguous() && y.is_contiguous(), "contiguous CUDA tensors");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && y.scalar_type() == torch::kFloat32, "float32 only");
    auto a = torch::empty_like(x);
    auto b = torch::empty_like(y);
    const at::cuda::CUDAStream main = at::cuda::getCurrentCUDAStream();
    const at::cuda::CUDAStream side = at::cuda::getStreamFromExternal(side_stream(), x.get_device());
    at::cuda::CUDAEvent forked, joined;
    forked.record(main);
    forked.block(side);
    relu_launch(x.data_ptr<float>(), a.data_ptr<float>(), x.numel(), main.stream());
    sigmoid_launch(y.data_ptr<float>(), b.data_ptr<float>(), y.numel(), side.stream());
    joined.record(side);
    joined.block(main);  // the caller's stream waits for the side stream before returning
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "launch failed: ", cudaGetErrorString(err));
    return {a, b};
}

static void register_relu_sigmoid(pybind11::module& m) {
    m.def("relu_sigmoid_forward", &relu_sigmoid_forward, py::arg("x"), py::arg("y"));
}
REGISTER_BINDING(relu_sigmoid, register_relu_sigmoid);
