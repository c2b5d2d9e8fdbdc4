// row_softmax_binding.cpp -- entry point; the work is cuDNN's softmax (kernels/softmax_cudnn.cpp).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <stdexcept>

#include "../binding_registry.h"

void cudnn_row_softmax(const float* x, float* y, int64_t rows, int64_t cols, int device, cudaStream_t stream);

torch::Tensor row_softmax_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2 && x.is_contiguous(),
                "x must be a contiguous 2-D float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    try {
        cudnn_row_softmax(x.data_ptr<float>(), y.data_ptr<float>(), x.size(0), x.size(1), x.get_device(),
                          c10::cuda::getCurrentCUDAStream().stream());
    } catch (const std::exception& e) {
        TORCH_CHECK(false, e.what());
    }
    return y;
}

static void register_row_softmax(pybind11::module& m) {
    m.def("row_softmax_forward", &row_softmax_forward, "softmax over the last dim", py::arg("x"));
}
REGISTER_BINDING(row_softmax, register_row_softmax);
