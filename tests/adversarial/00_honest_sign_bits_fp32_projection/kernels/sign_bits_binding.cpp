// sign_bits_binding.cpp -- sign_bits(x, proj) -> the bool (M, N) tensor (x @ proj) > 0 (kernels/sign_bits.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdint>

#include "../binding_registry.h"

extern "C" void launch_sign_bits(const float* x, const float* proj, float* ws, bool* y, int M, int N, int K,
                                 cudaStream_t stream);

torch::Tensor sign_bits(torch::Tensor x, torch::Tensor proj) {
    for (const torch::Tensor* t : {&x, &proj}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous() && t->dim() == 2,
                    "inputs must be contiguous 2-D float32 CUDA tensors");
    }
    TORCH_CHECK(x.size(1) == proj.size(0), "expected x (M, K), proj (K, N)");
    const int64_t M = x.size(0), K = x.size(1), N = proj.size(1);
    TORCH_CHECK(M % 64 == 0 && N % 64 == 0 && K % 16 == 0, "needs M, N multiples of 64 and K of 16");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor ws = torch::empty({M, N}, x.options());
    torch::Tensor y = torch::empty({M, N}, x.options().dtype(torch::kBool));
    launch_sign_bits(x.data_ptr<float>(), proj.data_ptr<float>(), ws.data_ptr<float>(), y.data_ptr<bool>(),
                     static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "sign_bits launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_sign_bits(pybind11::module& m) {
    m.def("sign_bits", &sign_bits, "(x @ proj) > 0 as bool", py::arg("x"), py::arg("proj"));
}
REGISTER_BINDING(sign_bits, register_sign_bits);
