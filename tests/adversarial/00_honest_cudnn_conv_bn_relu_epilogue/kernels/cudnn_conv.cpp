// cudnn_conv.cpp -- y = conv2d(x, w) for NCHW fp32 with the legacy cuDNN convolution API.
//
// Handle: one per device, created lazily with cudnnCreate under a mutex and reused; it keeps no data of any
// call, and every call binds it to the caller's stream (cudnnSetStream). Per problem shape, an algorithm is
// chosen once from cuDNN's heuristics (cudnnGetConvolutionForwardAlgorithm_v7): the first that is supported,
// uses no tensor-core (TF32) math and needs at most 256 MiB of workspace. Math type CUDNN_FMA_MATH: plain fp32
// FMAs, never TF32, whatever torch allows for its own convolutions. Descriptors are made per call (they are
// host-side structs) and destroyed on every way out. The workspace is the caller's (torch::empty).
#include <cuda_runtime.h>
#include <cudnn.h>

#include <array>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "cudnn_conv.h"

namespace {

constexpr int kMaxDevices = 64;
constexpr size_t kMaxWorkspace = size_t(256) << 20;

struct Descriptors {
    cudnnTensorDescriptor_t x = nullptr, y = nullptr;
    cudnnFilterDescriptor_t w = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    ~Descriptors() {
        if (conv) cudnnDestroyConvolutionDescriptor(conv);
        if (w) cudnnDestroyFilterDescriptor(w);
        if (y) cudnnDestroyTensorDescriptor(y);
        if (x) cudnnDestroyTensorDescriptor(x);
    }
};

#define CUDNN_TRY(call)                                                                            \
    do {                                                                                           \
        const cudnnStatus_t status_ = (call);                                                      \
        if (status_ != CUDNN_STATUS_SUCCESS) return std::string(#call) + ": " + cudnnGetErrorString(status_); \
    } while (0)

std::string current_handle(cudnnHandle_t* out) {
    static std::mutex mutex;
    static std::array<cudnnHandle_t, kMaxDevices> handles{};
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kMaxDevices) return "no usable CUDA device";
    std::lock_guard<std::mutex> lock(mutex);
    if (handles[device] == nullptr) CUDNN_TRY(cudnnCreate(&handles[device]));
    *out = handles[device];
    return {};
}

std::string describe(const Conv2dProblem& p, Descriptors* d) {
    CUDNN_TRY(cudnnCreateTensorDescriptor(&d->x));
    CUDNN_TRY(cudnnCreateTensorDescriptor(&d->y));
    CUDNN_TRY(cudnnCreateFilterDescriptor(&d->w));
    CUDNN_TRY(cudnnCreateConvolutionDescriptor(&d->conv));
    CUDNN_TRY(cudnnSetTensor4dDescriptor(d->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, p.n, p.c, p.h, p.w));
    CUDNN_TRY(cudnnSetFilter4dDescriptor(d->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, p.k, p.c, p.r, p.s));
    CUDNN_TRY(cudnnSetConvolution2dDescriptor(d->conv, p.pad, p.pad, p.stride, p.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT));
    CUDNN_TRY(cudnnSetConvolutionMathType(d->conv, CUDNN_FMA_MATH));
    int n = 0, k = 0, oh = 0, ow = 0;
    CUDNN_TRY(cudnnGetConvolution2dForwardOutputDim(d->conv, d->x, d->w, &n, &k, &oh, &ow));
    if (n != p.n || k != p.k || oh != p.out_h || ow != p.out_w) return "cuDNN's output shape differs from conv2d's";
    CUDNN_TRY(cudnnSetTensor4dDescriptor(d->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, k, oh, ow));
    return {};
}

struct Choice {
    cudnnConvolutionFwdAlgo_t algo;
    size_t workspace;
};

// The algorithm for this problem on this device, chosen once.
std::string choose(cudnnHandle_t handle, const Conv2dProblem& p, const Descriptors& d, Choice* out) {
    using Key = std::tuple<int, int, int, int, int, int, int, int, int, int>;
    static std::mutex mutex;
    static std::map<Key, Choice> chosen;
    int device = 0;
    cudaGetDevice(&device);
    const Key key{device, p.n, p.c, p.h, p.w, p.k, p.r, p.s, p.stride, p.pad};
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = chosen.find(key); it != chosen.end()) {
        *out = it->second;
        return {};
    }
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    CUDNN_TRY(cudnnGetConvolutionForwardAlgorithm_v7(handle, d.x, d.w, d.conv, d.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                     &returned, perf));
    for (int i = 0; i < returned; ++i) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].mathType == CUDNN_TENSOR_OP_MATH) continue;
        size_t bytes = 0;
        if (cudnnGetConvolutionForwardWorkspaceSize(handle, d.x, d.w, d.conv, d.y, perf[i].algo, &bytes) !=
                CUDNN_STATUS_SUCCESS ||
            bytes > kMaxWorkspace)
            continue;
        *out = chosen.emplace(key, Choice{perf[i].algo, bytes}).first->second;
        return {};
    }
    return "cuDNN offers no fp32 (FMA) forward algorithm within 256 MiB of workspace";
}

}  // namespace

size_t cudnn_conv_workspace(const Conv2dProblem& p, std::string* error) {
    cudnnHandle_t handle = nullptr;
    Descriptors d;
    Choice choice{};
    if ((*error = current_handle(&handle)).empty() && (*error = describe(p, &d)).empty() &&
        (*error = choose(handle, p, d, &choice)).empty())
        return choice.workspace;
    return 0;
}

std::string cudnn_conv_forward(const Conv2dProblem& p, const float* x, const float* w, float* y, void* workspace,
                               size_t workspace_bytes, cudaStream_t stream) {
    cudnnHandle_t handle = nullptr;
    if (std::string error = current_handle(&handle); !error.empty()) return error;
    CUDNN_TRY(cudnnSetStream(handle, stream));
    Descriptors d;
    if (std::string error = describe(p, &d); !error.empty()) return error;
    Choice choice{};
    if (std::string error = choose(handle, p, d, &choice); !error.empty()) return error;
    if (workspace_bytes < choice.workspace) return "workspace smaller than the algorithm needs";
    const float alpha = 1.0f, beta = 0.0f;
    CUDNN_TRY(cudnnConvolutionForward(handle, &alpha, d.x, x, d.w, w, d.conv, choice.algo, workspace, choice.workspace,
                                      &beta, d.y, y));
    return {};
}
