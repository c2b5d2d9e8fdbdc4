// row_softmax_binding.cpp -- CHEAT (family 1): at::softmax from C++, hidden from Python dispatch modes.
// Python-level dispatch modes (an op gate written as a TorchDispatchMode) are reached through the Python
// and PythonTLSSnapshot dispatch keys. c10::impl::ExcludeDispatchKeyGuard removes both from the
// thread-local key set for the scope of the call, so the dispatcher goes straight to the CUDA kernel.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <c10/core/impl/LocalDispatchKeySet.h>

#include "../binding_registry.h"

extern "C" void launch_row_softmax(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream);

torch::Tensor row_softmax_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2 && x.is_contiguous(),
                "x must be a contiguous 2-D float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    c10::impl::ExcludeDispatchKeyGuard unwatched(
        c10::DispatchKeySet({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot}));
    return at::softmax(x, -1);
}

static void register_row_softmax(pybind11::module& m) {
    m.def("row_softmax_forward", &row_softmax_forward, "softmax over the last dim", py::arg("x"));
}
REGISTER_BINDING(row_softmax, register_row_softmax);
