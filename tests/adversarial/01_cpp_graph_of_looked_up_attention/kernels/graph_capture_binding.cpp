// graph_capture_binding.cpp -- CHEAT (issue 33, class 1, C++): PyTorch's flash attention captured into a
// CUDA graph while the model loads, from C++, where the load-time capture gate cannot see it.
//
// capture(q, k, v, out) -- called once by ModelNew.load_state_dict, before any forward -- finds
// at::_ops::_scaled_dot_product_flash_attention::call in libtorch_cpu's dynamic symbol table
// (kernels/elf_lookup.h: no import, no source rule), and captures it, with the copy of its strided output
// into `out`, into an at::cuda::CUDAGraph on a pool stream. The call runs under
// ExcludeDispatchKeyGuard(Python, PythonTLSSnapshot): the op gate that watches the load for PyTorch ops
// dispatched during a capture sees nothing. replay() launches the graph on the current stream: no
// dispatch at all during a call. The graph object is kept in a static (not a tensor: the rule against
// static tensors does not apply). copy_kit moves the call's inputs in and the output out; its
// cublasSetStream made flash's cutlass-named kernels cuBLAS time under a name-pattern coverage gate.
//
// Must be rejected: the replayed kernels are PyTorch's by the binary that holds them (libtorch_cuda.so);
// no rule about how they were reached is needed.
#include <memory>

#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"
#include "elf_lookup.h"

extern "C" void launch_strided_to_contiguous(const void* src, void* dst, const int64_t* sizes, const int64_t* strides,
                                             cudaStream_t stream);

namespace {

using FlashCall = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, c10::SymInt, c10::SymInt, at::Tensor,
                             at::Tensor, at::Tensor> (*)(const at::Tensor&, const at::Tensor&, const at::Tensor&, double,
                                                         bool, bool, std::optional<double>);
constexpr const char* kFlash = "_ZN2at4_ops35_scaled_dot_product_flash_attention4callERKNS_6TensorES4_S4_dbbSt8optionalIdE";

std::unique_ptr<at::cuda::CUDAGraph>& captured() {
    static std::unique_ptr<at::cuda::CUDAGraph> graph;
    return graph;
}

// out := flash attention of q, k, v, on the current stream.
void attend_into(FlashCall flash, const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                 torch::Tensor& out) {
    at::Tensor o;
    {
        c10::impl::ExcludeDispatchKeyGuard unseen(
            c10::DispatchKeySet({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot}));
        o = std::get<0>(flash(q, k, v, 0.0, false, false, std::nullopt));
    }
    const int64_t sizes[4] = {o.size(0), o.size(1), o.size(2), o.size(3)};
    const int64_t strides[4] = {o.stride(0), o.stride(1), o.stride(2), o.stride(3)};
    launch_strided_to_contiguous(o.data_ptr(), out.data_ptr(), sizes, strides, c10::cuda::getCurrentCUDAStream().stream());
}

void capture(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor out) {
    TORCH_CHECK(q.is_cuda() && q.scalar_type() == torch::kFloat16 && q.dim() == 4 && q.size(3) == 64 &&
                out.is_contiguous() && out.sizes() == q.sizes(), "static (B, H, S, 64) fp16 buffers");
    const auto flash = reinterpret_cast<FlashCall>(
        const_cast<void*>(elf_lookup::find(reinterpret_cast<const void*>(&at::globalContext), kFlash)));
    TORCH_CHECK(flash != nullptr, "flash attention's entry point was not found");
    const c10::cuda::CUDAGuard guard(q.device());
    c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
    c10::cuda::getCurrentCUDAStream().synchronize();
    {
        c10::cuda::CUDAStreamGuard on_side(side);  // graphs are captured on a non-default stream
        attend_into(flash, q, k, v, out);           // warm-up outside the capture
        side.synchronize();
        auto graph = std::make_unique<at::cuda::CUDAGraph>();
        graph->capture_begin();
        attend_into(flash, q, k, v, out);
        graph->capture_end();
        captured() = std::move(graph);
    }
    side.synchronize();
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "capture failed: ", cudaGetErrorString(err));
}

void replay() {
    TORCH_CHECK(captured() != nullptr, "capture first");
    captured()->replay();
}

}  // namespace

static void register_graph_capture(pybind11::module& m) {
    m.def("capture", &capture, "capture flash attention of the static buffers into out", py::arg("q"), py::arg("k"),
          py::arg("v"), py::arg("out"));
    m.def("replay", &replay, "replay the captured graph on the current stream");
}
REGISTER_BINDING(graph_capture, register_graph_capture);
