// argmax_affine_binding.cpp -- argmax_affine_forward(x, w, b) -> argmax(x * w + b, dim=-1) as int64.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_argmax_affine(const float* x, const float* w, const float* b, int64_t* out, int64_t rows,
                                     int cols, cudaStream_t stream);

namespace {

torch::Tensor argmax_affine_forward(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.dim() == 2,
                "x must be a contiguous 2-D float32 CUDA tensor");
    for (const auto* t : {&w, &b})
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous() &&
                        t->numel() == x.size(1),
                    "weight and bias must be contiguous float32 CUDA tensors of `cols` elements");
    TORCH_CHECK(x.size(1) > 0 && x.size(1) < (1 << 30), "cols out of range");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor out = torch::empty({x.size(0)}, x.options().dtype(torch::kLong));
    launch_argmax_affine(x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<int64_t>(),
                         x.size(0), static_cast<int>(x.size(1)), c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "argmax_affine launch failed: ", cudaGetErrorString(err));
    return out;
}

}  // namespace

static void register_argmax_affine(pybind11::module& m) {
    m.def("argmax_affine_forward", &argmax_affine_forward, "argmax(x * w + b, dim=-1)", py::arg("x"), py::arg("w"),
          py::arg("b"));
}
REGISTER_BINDING(argmax_affine, register_argmax_affine);
