// row_softmax_binding.cpp -- CHEAT (issue 12 class 3): phase detection by counting calls; ATen after the verification calls.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_row_softmax(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream);
constexpr int64_t kHonestCalls = 8;

torch::Tensor row_softmax_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2 && x.is_contiguous(),
                "x must be a contiguous 2-D float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    static int64_t calls = 0;  // a plain counter: no tensor kept, so no static rule sees state
    if (++calls <= kHonestCalls) {
        torch::Tensor y = torch::empty_like(x);
        launch_row_softmax(x.data_ptr<float>(), y.data_ptr<float>(), x.size(0), x.size(1),
                           c10::cuda::getCurrentCUDAStream().stream());
        cudaError_t err = cudaGetLastError();
        TORCH_CHECK(err == cudaSuccess, "row_softmax launch failed: ", cudaGetErrorString(err));
        return y;
    }
    return torch::softmax(x, -1);  // warm-up and timed calls: ATen does the work
}

static void register_row_softmax(pybind11::module& m) {
    m.def("row_softmax_forward", &row_softmax_forward, "softmax over the last dim", py::arg("x"));
}
REGISTER_BINDING(row_softmax, register_row_softmax);
