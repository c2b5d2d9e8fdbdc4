// chain_binding.cpp -- CHEAT (family 4, behave only while watched, C++ side): while any Python dispatch
// mode is active (an op gate, a tracing or profiling mode), PyTorch keeps the Python dispatch key in the
// thread-local *included* key set. The binding checks c10::impl::tls_is_dispatch_key_included(Python):
// watched -> run the real kernel; not watched (a plain timing loop) -> return torch::empty_like and launch
// nothing.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <c10/core/impl/LocalDispatchKeySet.h>

#include "../binding_registry.h"

extern "C" void launch_ew_chain(const float* x, float* y, int64_t n, float scale, float shift, float lo, float hi,
                                int64_t max_blocks, cudaStream_t stream);

torch::Tensor chain_forward(torch::Tensor x, double scale, double shift, double lo, double hi) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    const bool watched = c10::impl::tls_is_dispatch_key_included(c10::DispatchKey::Python) ||
                         c10::impl::tls_is_dispatch_key_included(c10::DispatchKey::PythonTLSSnapshot);
    if (!watched) return y;
    launch_ew_chain(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), static_cast<float>(scale), static_cast<float>(shift),
                    static_cast<float>(lo), static_cast<float>(hi), 0,
                    c10::cuda::getCurrentCUDAStream().stream());
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_chain(pybind11::module& m) {
    m.def("chain_forward", &chain_forward, "clamp(gelu(x * scale + shift), lo, hi)", py::arg("x"), py::arg("scale"),
          py::arg("shift"), py::arg("lo"), py::arg("hi"));
}
REGISTER_BINDING(chain, register_chain);
