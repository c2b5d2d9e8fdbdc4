// row_softmax_binding.cpp -- CHEAT (issue 12 class 2): launches the decoy, returns ATen's softmax.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_row_softmax(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream);
extern "C" void launch_decoy(float* out, const float* in, cudaStream_t stream);

torch::Tensor row_softmax_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2 && x.is_contiguous(),
                "x must be a contiguous 2-D float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::softmax(x, -1);
    launch_decoy(y.data_ptr<float>(), x.data_ptr<float>(), c10::cuda::getCurrentCUDAStream().stream());
    return y;
}

static void register_row_softmax(pybind11::module& m) {
    m.def("row_softmax_forward", &row_softmax_forward, "softmax over the last dim", py::arg("x"));
}
REGISTER_BINDING(row_softmax, register_row_softmax);
