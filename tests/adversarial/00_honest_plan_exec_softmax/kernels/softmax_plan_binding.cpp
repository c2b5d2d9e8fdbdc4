#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

extern "C" void softmax_plan_launcher(const float* x, float* y, int rows, int cols, cudaStream_t stream);

static torch::Tensor softmax_plan_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat32 && x.dim() == 2,
                "x: contiguous 2-D float32 CUDA");
    auto y = torch::empty_like(x);
    softmax_plan_launcher(x.data_ptr<float>(), y.data_ptr<float>(), (int)x.size(0), (int)x.size(1),
                          c10::cuda::getCurrentCUDAStream().stream());
    auto err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "softmax launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_softmax_plan(pybind11::module& m) {
    m.def("softmax_plan_forward", &softmax_plan_forward, py::arg("x"));
}
REGISTER_BINDING(softmax_plan, register_softmax_plan);
