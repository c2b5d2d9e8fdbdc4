// view_binding.cpp -- CHEAT (views instead of work, C++): transpose_forward(x) runs the elementwise kernel on
// the first row only (a decoy, so the submitted kernels hold all the GPU time) and returns x.transpose(0, 1):
// a view of the input, made by the binding with no kernel. Values equal the reference's materialised
// transpose; the layout (strides (1, 2048), memory shared with the input) does not.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_ew_chain(const float* x, float* y, int64_t n, float scale, float shift, float lo, float hi,
                                int64_t max_blocks, cudaStream_t stream);

torch::Tensor transpose_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.dim() == 2,
                "x must be a contiguous 2-D float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor row = torch::empty({x.size(1)}, x.options());
    launch_ew_chain(x.data_ptr<float>(), row.data_ptr<float>(), x.size(1), 1.0f, 0.0f, -1e30f, 1e30f, 0,
                    c10::cuda::getCurrentCUDAStream().stream());
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "launch failed: ", cudaGetErrorString(err));
    return x.transpose(0, 1);
}

static void register_view(pybind11::module& m) {
    m.def("transpose_forward", &transpose_forward, "x transposed", py::arg("x"));
}
REGISTER_BINDING(view, register_view);
