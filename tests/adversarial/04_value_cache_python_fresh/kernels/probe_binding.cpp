// probe_binding.cpp -- CHEAT helper (family 4): probe(x) reads 64 values of x at fixed, spread positions
// (kernels/fingerprint.cu, one tiny gather kernel writing straight into mapped, page-locked host memory, so
// no copy call appears) and returns them as a Python list, the key of model_new.py's output cache. No ATen
// op is involved, so the op gate sees nothing.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <vector>

#include "../binding_registry.h"

extern "C" int fingerprint_probes();
extern "C" void launch_gather_probes(const float* x, int64_t n, float* out, cudaStream_t stream);

std::vector<double> probe(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    static float* host = nullptr;
    static float* device = nullptr;
    const int probes = fingerprint_probes();
    if (host == nullptr) {
        TORCH_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host), probes * sizeof(float), cudaHostAllocMapped) ==
                        cudaSuccess, "cudaHostAlloc failed");
        cudaHostGetDevicePointer(reinterpret_cast<void**>(&device), host, 0);
    }
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    launch_gather_probes(x.data_ptr<float>(), x.numel(), device, stream);
    cudaStreamSynchronize(stream);
    return std::vector<double>(host, host + probes);
}

static void register_probe(pybind11::module& m) {
    m.def("probe", &probe, "64 sampled values of x", py::arg("x"));
}
REGISTER_BINDING(probe, register_probe);
