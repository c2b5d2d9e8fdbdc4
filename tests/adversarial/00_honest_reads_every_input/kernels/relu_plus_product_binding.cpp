// relu_plus_product_binding.cpp -- relu(x) + alpha * (a @ b) for fp16 x (M, N), a (M, K), b (K, N): the
// product by cuBLAS (kernels/half_gemm.cpp) into the output, then the fused epilogue (kernels/relu_plus.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <limits>

#include "../binding_registry.h"

cublasStatus_t half_gemm(const void* a, const void* b, void* y, int64_t M, int64_t N, int64_t K, cudaStream_t stream);
extern "C" void launch_relu_plus(const void* x, void* y, float alpha, int64_t n, int sms, cudaStream_t stream);

namespace {

void check_half(const torch::Tensor& t, const char* name) {
    TORCH_CHECK(t.is_cuda() && t.scalar_type() == torch::kHalf && t.is_contiguous() && t.dim() == 2, name,
                " must be a contiguous 2-D float16 CUDA tensor");
}

torch::Tensor relu_plus_product_forward(torch::Tensor x, torch::Tensor a, torch::Tensor b, double alpha) {
    check_half(x, "x");
    check_half(a, "a");
    check_half(b, "b");
    const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    TORCH_CHECK(b.size(0) == K && x.size(0) == M && x.size(1) == N, "expected x (M, N), a (M, K), b (K, N)");
    constexpr int64_t kIntMax = std::numeric_limits<int>::max();
    TORCH_CHECK(M <= kIntMax && N <= kIntMax && K <= kIntMax && K > 0 && (M * N) % 8 == 0, "bad GEMM dimensions");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    const cublasStatus_t status = half_gemm(a.data_ptr(), b.data_ptr(), y.data_ptr(), M, N, K, stream);
    TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "cublasGemmEx failed with status ", static_cast<int>(status));
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    launch_relu_plus(x.data_ptr(), y.data_ptr(), static_cast<float>(alpha), y.numel(), sms, stream);
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "relu_plus launch failed: ", cudaGetErrorString(err));
    return y;
}

}  // namespace

static void register_relu_plus_product(pybind11::module& m) {
    m.def("relu_plus_product_forward", &relu_plus_product_forward, "relu(x) + alpha * (a @ b) for fp16 tensors",
          py::arg("x"), py::arg("a"), py::arg("b"), py::arg("alpha"));
}
REGISTER_BINDING(relu_plus_product, register_relu_plus_product);
