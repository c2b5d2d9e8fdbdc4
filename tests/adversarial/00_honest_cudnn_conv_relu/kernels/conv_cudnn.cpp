// conv_cudnn.cpp -- host-side cuDNN convolution (compiled by g++): y = conv2d(x, w), NCHW fp32, no bias.
// One cuDNN handle per device, created once with cudnnCreate and bound to torch's current stream on every
// call. Descriptors and the algorithm are cached per problem shape; the algorithm comes from cuDNN's
// heuristics (cudnnGetConvolutionForwardAlgorithm_v7): the first one that is supported and whose
// workspace fits. The workspace is allocated by the caller (torch::empty, through torch's allocator).
//
// Math mode mirrors PyTorch's own convolution: TF32 tensor cores only if torch allows TF32 for cuDNN
// (torch.backends.cudnn.allow_tf32), else FMA-only fp32.
#include <ATen/Context.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>

#include "conv_cudnn.h"

namespace {

void check(cudnnStatus_t status, const char* what) {
    if (status != CUDNN_STATUS_SUCCESS)
        throw std::runtime_error(std::string(what) + " failed: " + cudnnGetErrorString(status));
}

cudnnHandle_t handle_for(int device) {
    static std::mutex mutex;
    static std::map<int, cudnnHandle_t> handles;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = handles.find(device);
    if (it != handles.end()) return it->second;
    cudnnHandle_t handle = nullptr;
    check(cudnnCreate(&handle), "cudnnCreate");
    handles[device] = handle;
    return handle;
}

// Everything cuDNN needs for one problem shape and math mode.
struct Plan {
    cudnnTensorDescriptor_t x = nullptr, y = nullptr;
    cudnnFilterDescriptor_t w = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    size_t workspace = 0;
};

using Key = std::tuple<int, std::array<int64_t, 4>, std::array<int64_t, 4>, std::array<int, 6>, bool>;

const Plan& plan_for(cudnnHandle_t handle, int device, const ConvShape& s, bool tf32) {
    static std::mutex mutex;
    static std::map<Key, Plan> plans;
    const Key key{device, {s.n, s.c, s.h, s.w}, {s.k, s.c, s.r, s.s}, {s.pad_h, s.pad_w, s.stride_h, s.stride_w, s.dil_h, s.dil_w}, tf32};
    std::lock_guard<std::mutex> lock(mutex);
    auto it = plans.find(key);
    if (it != plans.end()) return it->second;

    Plan p;
    check(cudnnCreateTensorDescriptor(&p.x), "cudnnCreateTensorDescriptor");
    check(cudnnCreateTensorDescriptor(&p.y), "cudnnCreateTensorDescriptor");
    check(cudnnCreateFilterDescriptor(&p.w), "cudnnCreateFilterDescriptor");
    check(cudnnCreateConvolutionDescriptor(&p.conv), "cudnnCreateConvolutionDescriptor");
    check(cudnnSetTensor4dDescriptor(p.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, (int)s.n, (int)s.c, (int)s.h, (int)s.w),
          "cudnnSetTensor4dDescriptor(x)");
    check(cudnnSetFilter4dDescriptor(p.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, (int)s.k, (int)s.c, (int)s.r, (int)s.s),
          "cudnnSetFilter4dDescriptor");
    check(cudnnSetConvolution2dDescriptor(p.conv, s.pad_h, s.pad_w, s.stride_h, s.stride_w, s.dil_h, s.dil_w,
                                          CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
          "cudnnSetConvolution2dDescriptor");
    check(cudnnSetConvolutionMathType(p.conv, tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
    int on = 0, oc = 0, oh = 0, ow = 0;
    check(cudnnGetConvolution2dForwardOutputDim(p.conv, p.x, p.w, &on, &oc, &oh, &ow),
          "cudnnGetConvolution2dForwardOutputDim");
    if (on != s.n || oc != s.k || oh != s.out_h || ow != s.out_w)
        throw std::runtime_error("cuDNN output shape disagrees with the expected convolution output shape");
    check(cudnnSetTensor4dDescriptor(p.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, on, oc, oh, ow),
          "cudnnSetTensor4dDescriptor(y)");

    constexpr int kMaxAlgos = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    cudnnConvolutionFwdAlgoPerf_t perf[kMaxAlgos];
    int returned = 0;
    check(cudnnGetConvolutionForwardAlgorithm_v7(handle, p.x, p.w, p.conv, p.y, kMaxAlgos, &returned, perf),
          "cudnnGetConvolutionForwardAlgorithm_v7");
    constexpr size_t kWorkspaceLimit = size_t(1) << 30;
    bool found = false;
    for (int i = 0; i < returned && !found; ++i) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > kWorkspaceLimit) continue;
        if (!tf32 && perf[i].mathType == CUDNN_TENSOR_OP_MATH) continue;
        p.algo = perf[i].algo;
        found = true;
    }
    if (!found) throw std::runtime_error("cuDNN found no usable forward convolution algorithm");
    check(cudnnGetConvolutionForwardWorkspaceSize(handle, p.x, p.w, p.conv, p.y, p.algo, &p.workspace),
          "cudnnGetConvolutionForwardWorkspaceSize");
    return plans.emplace(key, p).first->second;
}

}  // namespace

size_t conv2d_cudnn_workspace(const ConvShape& shape, int device) {
    const bool tf32 = at::globalContext().allowTF32CuDNN();
    return plan_for(handle_for(device), device, shape, tf32).workspace;
}

void conv2d_cudnn_forward(const ConvShape& shape, const float* x, const float* w, float* y, void* workspace,
                          size_t workspace_bytes, int device, cudaStream_t stream) {
    const bool tf32 = at::globalContext().allowTF32CuDNN();
    cudnnHandle_t handle = handle_for(device);
    check(cudnnSetStream(handle, stream), "cudnnSetStream");
    const Plan& p = plan_for(handle, device, shape, tf32);
    if (workspace_bytes < p.workspace) throw std::runtime_error("cuDNN workspace too small");
    const float alpha = 1.0f, beta = 0.0f;
    check(cudnnConvolutionForward(handle, &alpha, p.x, x, p.w, w, p.conv, p.algo, workspace, p.workspace, &beta, p.y,
                                  y),
          "cudnnConvolutionForward");
}
