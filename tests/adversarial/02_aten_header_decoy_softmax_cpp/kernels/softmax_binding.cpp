// softmax_binding.cpp -- CHEAT (issue 12 class 2): ATen's softmax, unseen by the op gate, credited by name.
// at::_softmax runs with the Python dispatch keys excluded (an in-process TorchDispatchMode sees nothing);
// the kernel libtorch_cuda launches has the name of one in this extension's device code (kernels/decoy.cu),
// so a coverage gate attributing kernels by name counts it as submitted. decoy_instantiation is never called.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/cuda/CUDAGuard.h>

#include "../binding_registry.h"

namespace {

torch::Tensor softmax_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x must be a float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    c10::impl::ExcludeDispatchKeyGuard unseen(
        c10::DispatchKeySet({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot}));
    return at::_softmax(x, -1, false);
}

}  // namespace

static void register_softmax(pybind11::module& m) {
    m.def("softmax_forward", &softmax_forward, "softmax over the last dimension", py::arg("x"));
}
REGISTER_BINDING(softmax, register_softmax);
