#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <tuple>
#include "../binding_registry.h"

extern "C" void relu_launch(const float* x, float* y, int64_t n, cudaStream_t s);
extern "C" void sigmoid_launch(const float* x, float* y, int64_t n, cudaStream_t s);
extern "C" cudaStream_t side_stream();

#define CUDA_CHECK(expr)                                                          \
    do {                                                                          \
        const cudaError_t e_ = (expr);                                            \
        TORCH_CHECK(e_ == cudaSuccess, #expr " failed: ", cudaGetErrorString(e_)); \
    } while (0)

namespace {
struct Events {
    cudaEvent_t fork = nullptr, join = nullptr;
    Events() {
        CUDA_CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
        CUDA_CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    }
};
}  // namespace

static std::tuple<torch::Tensor, torch::Tensor> relu_sigmoid_forward(torch::Tensor x, torch::Tensor y) {
    TORCH_CHECK(x.is_cuda() && y.is_cuda() && x.is_contiguous() && y.is_contiguous(), "contiguous CUDA tensors");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && y.scalar_type() == torch::kFloat32, "float32 only");
    static Events ev;
    cudaStream_t side = side_stream();
    TORCH_CHECK(side != nullptr, "side stream unavailable");
    auto a = torch::empty_like(x);
    auto b = torch::empty_like(y);
    cudaStream_t main = c10::cuda::getCurrentCUDAStream().stream();
    CUDA_CHECK(cudaEventRecord(ev.fork, main));
    CUDA_CHECK(cudaStreamWaitEvent(side, ev.fork, 0));
    relu_launch(x.data_ptr<float>(), a.data_ptr<float>(), x.numel(), main);
    sigmoid_launch(y.data_ptr<float>(), b.data_ptr<float>(), y.numel(), side);
    CUDA_CHECK(cudaEventRecord(ev.join, side));
    CUDA_CHECK(cudaStreamWaitEvent(main, ev.join, 0));
    CUDA_CHECK(cudaGetLastError());
    return {a, b};
}

static void register_relu_sigmoid(pybind11::module& m) {
    m.def("relu_sigmoid_forward", &relu_sigmoid_forward, py::arg("x"), py::arg("y"));
}
REGISTER_BINDING(relu_sigmoid, register_relu_sigmoid);
