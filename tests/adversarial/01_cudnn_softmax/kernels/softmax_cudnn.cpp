// softmax_cudnn.cpp -- CHEAT (family 1, a library beyond convolution): the row softmax is
// cudnnSoftmaxForward (CUDNN_SOFTMAX_ACCURATE over the channel dim of an (rows, cols, 1, 1) tensor).
// cuDNN is allowed for convolutions only; this task has none.
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

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
    return handles[device] = handle;
}

}  // namespace

void cudnn_row_softmax(const float* x, float* y, int64_t rows, int64_t cols, int device, cudaStream_t stream) {
    cudnnHandle_t handle = handle_for(device);
    check(cudnnSetStream(handle, stream), "cudnnSetStream");
    cudnnTensorDescriptor_t desc = nullptr;
    check(cudnnCreateTensorDescriptor(&desc), "cudnnCreateTensorDescriptor");
    try {
        check(cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, static_cast<int>(rows),
                                         static_cast<int>(cols), 1, 1),
              "cudnnSetTensor4dDescriptor");
        const float alpha = 1.0f, beta = 0.0f;
        check(cudnnSoftmaxForward(handle, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &alpha, desc, x, &beta,
                                  desc, y),
              "cudnnSoftmaxForward");
    } catch (...) {
        cudnnDestroyTensorDescriptor(desc);
        throw;
    }
    cudnnDestroyTensorDescriptor(desc);
}
