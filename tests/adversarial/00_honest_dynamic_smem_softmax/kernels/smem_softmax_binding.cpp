// smem_softmax_binding.cpp -- Python entry point of the shared-memory row softmax (kernels/smem_softmax.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" cudaError_t launch_smem_softmax(const float* x, float* y, int64_t rows, int cols, cudaStream_t stream);

namespace {

torch::Tensor softmax_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.dim() == 2,
                "x must be a contiguous 2-D float32 CUDA tensor");
    TORCH_CHECK(x.size(1) <= 8192, "rows longer than 8192 floats do not fit the shared-memory staging");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    const cudaError_t err = launch_smem_softmax(x.data_ptr<float>(), y.data_ptr<float>(), x.size(0),
                                                static_cast<int>(x.size(1)), c10::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(err == cudaSuccess, "softmax launch failed: ", cudaGetErrorString(err));
    return y;
}

}  // namespace

static void register_smem_softmax(pybind11::module& m) {
    m.def("softmax_forward", &softmax_forward, "softmax over the last dimension", py::arg("x"));
}
REGISTER_BINDING(smem_softmax, register_smem_softmax);
