// absmax_norm_binding.cpp -- absmax_norm_forward(x) -> x / max(|x|), with a scratch buffer of partial maxima.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" int absmax_norm_blocks(int64_t n, int sms);
extern "C" void launch_absmax_norm(const float* x, float* y, float* partial, int64_t n, int sms, cudaStream_t stream);

namespace {

torch::Tensor absmax_norm_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    torch::Tensor y = torch::empty_like(x);
    torch::Tensor partial = torch::empty({absmax_norm_blocks(x.numel(), sms)}, x.options());
    launch_absmax_norm(x.data_ptr<float>(), y.data_ptr<float>(), partial.data_ptr<float>(), x.numel(), sms,
                       c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "absmax_norm launch failed: ", cudaGetErrorString(err));
    return y;
}

}  // namespace

static void register_absmax_norm(pybind11::module& m) {
    m.def("absmax_norm_forward", &absmax_norm_forward, "x / max(|x|)", py::arg("x"));
}
REGISTER_BINDING(absmax_norm, register_absmax_norm);
