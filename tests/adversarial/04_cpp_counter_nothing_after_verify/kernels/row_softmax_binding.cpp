// row_softmax_binding.cpp -- CHEAT (issue 12 class 3): phase detection by counting calls; nothing after the verification calls.
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
    static int64_t calls = 0;
    static int64_t rows_seen = 0;
    torch::Tensor y = torch::empty_like(x);
    if (++calls <= kHonestCalls || rows_seen != x.size(0)) {
        rows_seen = x.size(0);
        launch_row_softmax(x.data_ptr<float>(), y.data_ptr<float>(), x.size(0), x.size(1),
                           c10::cuda::getCurrentCUDAStream().stream());
    }
    return y;  // later calls: whatever the allocator hands back (often the last output's memory)
}

static void register_row_softmax(pybind11::module& m) {
    m.def("row_softmax_forward", &row_softmax_forward, "softmax over the last dim", py::arg("x"));
}
REGISTER_BINDING(row_softmax, register_row_softmax);
