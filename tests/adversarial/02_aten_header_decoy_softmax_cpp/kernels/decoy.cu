// decoy.cu -- CHEAT (issue 12 class 2, C++): ATen's own kernel names, compiled into this extension.
//
// Kernel attribution by the built binary credits a kernel that ran to the submission when a kernel of that
// exact (demangled) name is in the extension's device code, and refuses kernels named in PyTorch's
// namespaces (at::, c10::, torch::). PyTorch's persistent softmax kernel is not in them: it lives in an
// anonymous namespace at global scope, `(anonymous namespace)::softmax_warp_forward<...>`. Including
// ATen's own header and taking the address of the instance ATen launches for rows of 1024 floats
// (log2_elements = 10; below, never launched) puts softmax_warp_forward<float, float, float, 10, false,
// false[, 32]> into this extension under exactly the name libtorch_cuda's copy carries -- for whatever torch
// version the judge builds against (with or without the newer warp-size template parameter).
// The binding then lets ATen run the softmax (kernels/softmax_binding.cpp): ATen's launch of its own
// kernel is counted as the submission's.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>
#include <ATen/native/cuda/PersistentSoftmax.cuh>

namespace {

// Newer torch: softmax_warp_forward<input, output, acc, log2_elements, is_log_softmax, is_masked, warp_size>.
template <int L>
auto aten_instance(int) -> decltype(&softmax_warp_forward<float, float, float, L, false, false, 32>) {
    return &softmax_warp_forward<float, float, float, L, false, false, 32>;
}
// Older torch: the same without the warp-size parameter.
template <int L>
auto aten_instance(long) -> decltype(&softmax_warp_forward<float, float, float, L, false, false>) {
    return &softmax_warp_forward<float, float, float, L, false, false>;
}

}  // namespace

// Never called: taking the kernel's address is enough for nvcc to compile it into the device code.
const void* decoy_kernel_address() { return reinterpret_cast<const void*>(aten_instance<10>(0)); }
