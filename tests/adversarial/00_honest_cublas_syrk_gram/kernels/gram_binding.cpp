// gram_binding.cpp -- Python entry point: a @ a^T for a contiguous fp32 a (N, K): cublasSsyrk for the upper
// triangle (kernels/syrk.cpp), then the own mirror kernel for the lower one (kernels/mirror.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <limits>

#include "../binding_registry.h"

cublasStatus_t gram_upper(const float* a, float* c, int n, int k);
extern "C" void launch_mirror_upper_to_lower(float* c, int n, cudaStream_t stream);

namespace {

torch::Tensor gram_forward(torch::Tensor a) {
    TORCH_CHECK(a.is_cuda() && a.scalar_type() == torch::kFloat32 && a.is_contiguous() && a.dim() == 2,
                "a must be a contiguous 2-D float32 CUDA tensor");
    const int64_t n = a.size(0), k = a.size(1);
    TORCH_CHECK(n <= 46340 && k <= std::numeric_limits<int>::max() && k > 0, "sizes out of range");
    const c10::cuda::CUDAGuard guard(a.device());
    torch::Tensor c = torch::empty({n, n}, a.options());
    if (n == 0) return c;
    const cublasStatus_t status = gram_upper(a.data_ptr<float>(), c.data_ptr<float>(), static_cast<int>(n), static_cast<int>(k));
    TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "cublasSsyrk failed with status ", static_cast<int>(status));
    launch_mirror_upper_to_lower(c.data_ptr<float>(), static_cast<int>(n), c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "mirror launch failed: ", cudaGetErrorString(err));
    return c;
}

}  // namespace

static void register_gram(pybind11::module& m) {
    m.def("gram_forward", &gram_forward, "a @ a^T (cublasSsyrk + mirror)", py::arg("a"));
}
REGISTER_BINDING(gram, register_gram);
