// solve_lower_binding.cpp -- Python entry point: solve_triangular(l, b, upper=False) for contiguous fp32
// l (N, N) and b (N, K) (kernels/trsm.cpp).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <limits>

#include "../binding_registry.h"

cublasStatus_t solve_lower(const float* l, const float* b, float* x, int n, int k, cudaStream_t stream);

namespace {

torch::Tensor solve_lower_forward(torch::Tensor l, torch::Tensor b) {
    for (const torch::Tensor* t : {&l, &b}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous() && t->dim() == 2,
                    "l and b must be contiguous 2-D float32 CUDA tensors");
    }
    const int64_t n = l.size(0), k = b.size(1);
    TORCH_CHECK(l.size(1) == n && b.size(0) == n, "expected a square l (N, N) and b (N, K)");
    TORCH_CHECK(n <= std::numeric_limits<int>::max() && k <= std::numeric_limits<int>::max(), "sizes must fit in int");
    const c10::cuda::CUDAGuard guard(l.device());
    torch::Tensor x = torch::empty({n, k}, b.options());
    if (n == 0 || k == 0) return x;
    const cublasStatus_t status = solve_lower(l.data_ptr<float>(), b.data_ptr<float>(), x.data_ptr<float>(),
                                              static_cast<int>(n), static_cast<int>(k),
                                              c10::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "copy + cublasStrsm failed with status ", static_cast<int>(status));
    return x;
}

}  // namespace

static void register_solve_lower(pybind11::module& m) {
    m.def("solve_lower_forward", &solve_lower_forward, "solve_triangular(l, b, upper=False) (cublasStrsm)",
          py::arg("l"), py::arg("b"));
}
REGISTER_BINDING(solve_lower, register_solve_lower);
