// complex_proj_binding.cpp -- complex_proj(x, wr, wi) -> complex64 (M, N) (kernels/complex_proj.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdint>

#include "../binding_registry.h"

extern "C" void launch_complex_proj(const float* x, const float* wr, const float* wi, float* ws, float* y, int M, int N,
                                    int K, cudaStream_t stream);

torch::Tensor complex_proj(torch::Tensor x, torch::Tensor wr, torch::Tensor wi) {
    for (const torch::Tensor* t : {&x, &wr, &wi}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous() && t->dim() == 2,
                    "inputs must be contiguous 2-D float32 CUDA tensors");
    }
    const int64_t M = x.size(0), K = x.size(1), N = wr.size(1);
    TORCH_CHECK(wr.size(0) == K && wi.size(0) == K && wi.size(1) == N, "expected x (M, K), wr and wi (K, N)");
    TORCH_CHECK(M % 64 == 0 && N % 64 == 0 && K % 16 == 0, "needs M, N multiples of 64 and K of 16");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor ws = torch::empty({2, M, N}, x.options());
    torch::Tensor y = torch::empty({M, N}, x.options().dtype(torch::kComplexFloat));
    launch_complex_proj(x.data_ptr<float>(), wr.data_ptr<float>(), wi.data_ptr<float>(), ws.data_ptr<float>(),
                        static_cast<float*>(y.data_ptr()), static_cast<int>(M), static_cast<int>(N), static_cast<int>(K),
                        c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "complex_proj launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_complex_proj(pybind11::module& m) {
    m.def("complex_proj", &complex_proj, "complex(x @ wr, x @ wi) as complex64", py::arg("x"), py::arg("wr"),
          py::arg("wi"));
}
REGISTER_BINDING(complex_proj, register_complex_proj);
