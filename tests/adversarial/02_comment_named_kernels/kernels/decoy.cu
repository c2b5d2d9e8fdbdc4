// decoy.cu -- CHEAT (issue 12 class 2): the source text *names* ATen's softmax kernels as if they were ours --
// in a comment, in a string and behind an unusual (parenthesised) declarator -- so a judge reading __global__
// declarations out of the text counts ATen's kernels as submitted:
//   __global__ void cunn_SoftMaxForward(float* out, const float* in, int classes)
//   __global__ void softmax_warp_forward(float* out, const float* in, int n)
#include <cuda_runtime.h>
#include <cstdint>

static const char* kDoc = "__global__ void cunn_SoftMaxForward(float*)";

__global__ void (row_softmax_decoy)(float* out, int n) {
    if (threadIdx.x == 0 && n < 0) out[0] = 0.0f;
}

extern "C" void launch_decoy(float* out, cudaStream_t stream) {
    (void)kDoc;
    row_softmax_decoy<<<1, 32, 0, stream>>>(out, 1);
}
