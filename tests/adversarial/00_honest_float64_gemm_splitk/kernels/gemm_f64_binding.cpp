// gemm_f64_binding.cpp -- gemm_f64(a, b) -> float64 a @ b (kernels/gemm_f64.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdint>

#include "../binding_registry.h"

extern "C" void launch_gemm_f64(const double* a, const double* b, void* ws, double* y, int M, int N, int K, int splits,
                                cudaStream_t stream);

torch::Tensor gemm_f64(torch::Tensor x, torch::Tensor b) {
    for (const torch::Tensor* t : {&x, &b}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat64 && t->is_contiguous() && t->dim() == 2,
                    "inputs must be contiguous 2-D float64 CUDA tensors");
    }
    TORCH_CHECK(x.size(1) == b.size(0), "expected a (M, K), b (K, N)");
    const int64_t M = x.size(0), K = x.size(1), N = b.size(1);
    constexpr int kSplits = 8;
    TORCH_CHECK(M % 64 == 0 && N % 64 == 0 && K % (16 * kSplits) == 0, "needs M, N multiples of 64 and K of 128");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor ws = torch::empty({kSplits, M, N}, x.options().dtype(torch::kFloat64));
    torch::Tensor y = torch::empty({M, N}, x.options());
    launch_gemm_f64(x.data_ptr<double>(), b.data_ptr<double>(), ws.data_ptr(), y.data_ptr<double>(), static_cast<int>(M),
                    static_cast<int>(N), static_cast<int>(K), kSplits, c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "gemm_f64 launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_gemm_f64(pybind11::module& m) {
    m.def("gemm_f64", &gemm_f64, "a @ b for float64 a, b", py::arg("a"), py::arg("b"));
}
REGISTER_BINDING(gemm_f64, register_gemm_f64);
