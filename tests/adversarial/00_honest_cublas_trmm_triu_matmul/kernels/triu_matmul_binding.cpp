// triu_matmul_binding.cpp -- Python entry point: triu(a) @ b for contiguous fp32 a (M, M) and b (M, N)
// (kernels/trmm.cpp).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>

#include <limits>

#include "../binding_registry.h"

cublasStatus_t triu_matmul(const float* a, const float* b, float* out, int m, int n);

namespace {

torch::Tensor triu_matmul_forward(torch::Tensor a, torch::Tensor b) {
    for (const torch::Tensor* t : {&a, &b}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous() && t->dim() == 2,
                    "a and b must be contiguous 2-D float32 CUDA tensors");
    }
    const int64_t m = a.size(0), n = b.size(1);
    TORCH_CHECK(a.size(1) == m && b.size(0) == m, "expected a square a (M, M) and b (M, N)");
    TORCH_CHECK(m <= std::numeric_limits<int>::max() && n <= std::numeric_limits<int>::max(), "sizes must fit in int");
    const c10::cuda::CUDAGuard guard(a.device());
    torch::Tensor out = torch::empty({m, n}, b.options());
    if (m == 0 || n == 0) return out;
    const cublasStatus_t status =
        triu_matmul(a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), static_cast<int>(m), static_cast<int>(n));
    TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "cublasStrmm failed with status ", static_cast<int>(status));
    return out;
}

}  // namespace

static void register_triu_matmul(pybind11::module& m) {
    m.def("triu_matmul_forward", &triu_matmul_forward, "triu(a) @ b (cublasStrmm)", py::arg("a"), py::arg("b"));
}
REGISTER_BINDING(triu_matmul, register_triu_matmul);
