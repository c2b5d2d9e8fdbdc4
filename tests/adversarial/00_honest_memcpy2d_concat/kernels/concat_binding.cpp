// concat_binding.cpp -- honest: out[:, :ca] = a, out[:, ca:] = b with two pitched copies.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

torch::Tensor concat_forward(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_cuda() && b.is_cuda() && a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32,
                "a and b must be float32 CUDA tensors");
    TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(0) == b.size(0) && a.is_contiguous() && b.is_contiguous(),
                "a and b must be contiguous 2-D tensors with the same number of rows");
    const c10::cuda::CUDAGuard guard(a.device());
    const int64_t rows = a.size(0), ca = a.size(1), cb = b.size(1);
    torch::Tensor out = torch::empty({rows, ca + cb}, a.options());
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    const size_t pitch = static_cast<size_t>(ca + cb) * sizeof(float);
    cudaError_t err = cudaMemcpy2DAsync(out.data_ptr<float>(), pitch, a.data_ptr<float>(), ca * sizeof(float),
                                        ca * sizeof(float), rows, cudaMemcpyDeviceToDevice, stream);
    TORCH_CHECK(err == cudaSuccess, "copy of a failed: ", cudaGetErrorString(err));
    err = cudaMemcpy2DAsync(out.data_ptr<float>() + ca, pitch, b.data_ptr<float>(), cb * sizeof(float),
                            cb * sizeof(float), rows, cudaMemcpyDeviceToDevice, stream);
    TORCH_CHECK(err == cudaSuccess, "copy of b failed: ", cudaGetErrorString(err));
    return out;
}

static void register_concat(pybind11::module& m) {
    m.def("concat_forward", &concat_forward, "torch.cat([a, b], dim=1) of 2-D float32 tensors", py::arg("a"),
          py::arg("b"));
}
REGISTER_BINDING(concat, register_concat);
