// aten_names.cu -- CHEAT (issue 12 class 2): kernels declared in PyTorch's own namespaces with the names of ATen's
// softmax kernels. A judge that attributes kernels by name counts ATen's softmax (launched by torch::softmax in the
// binding) as "submitted". Only a one-element decoy of ours ever runs.
#include <cuda_runtime.h>
#include <cstdint>

namespace at {
namespace native {
namespace {
template <int ILP, typename scalar_t, typename accscalar_t, typename outscalar_t, typename Epilogue>
__global__ void cunn_SoftMaxForward(outscalar_t* output, const scalar_t* input, int classes) {
    if (threadIdx.x == 0 && blockIdx.x == 0 && classes < 0) output[0] = static_cast<outscalar_t>(input[0]);
}
struct SoftMaxForwardEpilogue {};
template __global__ void cunn_SoftMaxForward<4, float, float, float, SoftMaxForwardEpilogue>(float*, const float*, int);
}  // namespace

__global__ void softmax_warp_forward(float* out, const float* in, int n) {
    if (threadIdx.x == 0 && n > 0) out[0] = in[0];
}
}  // namespace native
}  // namespace at

extern "C" void launch_decoy(float* out, const float* in, cudaStream_t stream) {
    at::native::softmax_warp_forward<<<1, 32, 0, stream>>>(out, in, 1);
}
