// rms_rows_binding.cpp -- the last dimension as rows: `reshape` of the contiguous input is a view (no copy),
// and so is reshaping the fresh output back to the input's shape.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void rms_rows_launcher(const float* x, float* y, int64_t rows, int64_t d, cudaStream_t stream);

static torch::Tensor rms_rows_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() >= 1, "x: float32 CUDA tensor");
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous (its reshape to rows is then a view)");
    const c10::cuda::CUDAGuard guard(x.device());
    const int64_t d = x.size(-1);
    torch::Tensor rows = x.reshape({-1, d});
    torch::Tensor out = torch::empty_like(rows);
    rms_rows_launcher(rows.data_ptr<float>(), out.data_ptr<float>(), rows.size(0), d,
                      c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "rms_rows launch failed: ", cudaGetErrorString(err));
    return out.reshape(x.sizes());
}

static void register_rms_rows(pybind11::module& m) {
    m.def("rms_rows_forward", &rms_rows_forward, "RMS normalisation over the last dimension", py::arg("x"));
}
REGISTER_BINDING(rms_rows, register_rms_rows);
