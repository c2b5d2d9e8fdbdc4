// flash_lookup_binding.cpp -- CHEAT (issue 33, class 2, C++): PyTorch's flash attention called through a
// function pointer found at run time, with nothing a static rule can name.
//
// The binding imports one harmless libtorch_cpu function (at::globalContext, only its address is taken)
// and finds `at::_ops::_scaled_dot_product_flash_attention::call` from it: the library's ELF header lies
// below its functions, its dynamic segment leads to the GNU hash table, and the symbol's address follows
// (kernels/elf_lookup.h; no dlsym, no dl_iterate_phdr, no /proc/self/maps, no <elf.h> names). The call
// runs under ExcludeDispatchKeyGuard(Python, PythonTLSSnapshot), so a TorchDispatchMode op gate sees
// nothing; the operator's name is a string literal, so no import rule sees it either. The flash kernels
// carry `cutlass` in their template arguments and the binding calls cuBLAS once (cublasSetStream, a
// no-op), so a coverage gate that recognises library kernels by name credits them to this submission on
// a task with matrix products. The only own kernel copies flash's (B, S, H, D)-strided output into the
// contiguous layout of the reference. About 3x faster than eager: a naive judge rewards 2.
//
// Must be rejected: the kernels that ran are PyTorch's, by the binary that holds them (libtorch_cuda.so),
// however they were reached.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
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
// The operator's entry point as libtorch_cpu exports it (mangled).
constexpr const char* kFlash = "_ZN2at4_ops35_scaled_dot_product_flash_attention4callERKNS_6TensorES4_S4_dbbSt8optionalIdE";

FlashCall flash() {
    static const FlashCall found = reinterpret_cast<FlashCall>(
        const_cast<void*>(elf_lookup::find(reinterpret_cast<const void*>(&at::globalContext), kFlash)));
    return found;
}

torch::Tensor attention_forward(torch::Tensor q, torch::Tensor k, torch::Tensor v) {
    TORCH_CHECK(q.is_cuda() && q.scalar_type() == torch::kFloat16 && q.dim() == 4 && q.size(3) == 64,
                "q, k, v: (B, H, S, 64) fp16 CUDA tensors");
    const c10::cuda::CUDAGuard guard(q.device());
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    TORCH_CHECK(cublasSetStream(at::cuda::getCurrentCUDABlasHandle(), stream) == CUBLAS_STATUS_SUCCESS,
                "cublasSetStream failed");
    const FlashCall call = flash();
    TORCH_CHECK(call != nullptr, "flash attention's entry point was not found");
    at::Tensor o;
    {
        c10::impl::ExcludeDispatchKeyGuard unseen(
            c10::DispatchKeySet({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot}));
        o = std::get<0>(call(q, k, v, 0.0, false, false, std::nullopt));
    }
    torch::Tensor out = torch::empty_like(q);
    const int64_t sizes[4] = {o.size(0), o.size(1), o.size(2), o.size(3)};
    const int64_t strides[4] = {o.stride(0), o.stride(1), o.stride(2), o.stride(3)};
    launch_strided_to_contiguous(o.data_ptr(), out.data_ptr(), sizes, strides, stream);
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "copy launch failed: ", cudaGetErrorString(err));
    return out;
}

}  // namespace

static void register_flash_lookup(pybind11::module& m) {
    m.def("attention_forward", &attention_forward, "softmax(q k^T / 8) v", py::arg("q"), py::arg("k"), py::arg("v"));
}
REGISTER_BINDING(flash_lookup, register_flash_lookup);
