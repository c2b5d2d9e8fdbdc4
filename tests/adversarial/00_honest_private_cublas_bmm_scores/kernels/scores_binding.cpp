// scores_binding.cpp -- Python entry point: scale * bmm(q, k^T) for contiguous fp32 q (B, Lq, D), k (B, Lk, D)
// (kernels/private_bmm.cpp).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <limits>

#include "../binding_registry.h"

cublasStatus_t private_scores_bmm(const float* q, const float* k, float* s, int batch, int lq, int lk, int d,
                                  float scale, cudaStream_t stream);

namespace {

torch::Tensor scores_forward(torch::Tensor q, torch::Tensor k, double scale) {
    for (const torch::Tensor* t : {&q, &k}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous() && t->dim() == 3,
                    "q and k must be contiguous 3-D float32 CUDA tensors");
    }
    TORCH_CHECK(q.size(0) == k.size(0) && q.size(2) == k.size(2), "q (B, Lq, D) and k (B, Lk, D) must agree on B and D");
    const int64_t b = q.size(0), lq = q.size(1), lk = k.size(1), d = q.size(2);
    constexpr int64_t kIntMax = std::numeric_limits<int>::max();
    TORCH_CHECK(b <= kIntMax && lq <= kIntMax && lk <= kIntMax && d <= kIntMax && d > 0, "sizes must fit in int");
    const c10::cuda::CUDAGuard guard(q.device());
    torch::Tensor s = torch::empty({b, lq, lk}, q.options());
    if (s.numel() == 0) return s;
    const cublasStatus_t status =
        private_scores_bmm(q.data_ptr<float>(), k.data_ptr<float>(), s.data_ptr<float>(), static_cast<int>(b),
                           static_cast<int>(lq), static_cast<int>(lk), static_cast<int>(d), static_cast<float>(scale),
                           c10::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "cublasGemmStridedBatchedEx failed with status ",
                static_cast<int>(status));
    return s;
}

}  // namespace

static void register_scores(pybind11::module& m) {
    m.def("scores_forward", &scores_forward, "scale * bmm(q, k^T) (private cuBLAS handle)", py::arg("q"), py::arg("k"),
          py::arg("scale"));
}
REGISTER_BINDING(scores, register_scores);
