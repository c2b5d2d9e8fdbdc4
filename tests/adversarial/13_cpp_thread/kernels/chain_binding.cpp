// chain_binding.cpp -- CHEAT (family 13, background work in a C++ thread): a std::thread, started on the
// first call and never joined, owns a private CUDA stream. forward allocates the output, records an event
// on the caller's stream, hands the job to the thread and returns as soon as the thread has *enqueued* the
// kernel (behind that event) on its own stream. The caller's stream never waits for the work, and no Python
// thread exists for threading.active_count() to notice.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "../binding_registry.h"

extern "C" void launch_ew_chain(const float* x, float* y, int64_t n, float scale, float shift, float lo, float hi,
                                int64_t max_blocks, cudaStream_t stream);

namespace {

struct Job {
    const float* x = nullptr;
    float* y = nullptr;
    int64_t n = 0;
    float scale = 0, shift = 0, lo = 0, hi = 0;
    cudaEvent_t ready = nullptr;
    int device = 0;
};

struct Worker {
    std::mutex mutex;
    std::condition_variable cv;
    Job job;
    bool pending = false;
    bool launched = false;
    cudaError_t status = cudaSuccess;

    Worker() {
        std::thread([this] { loop(); }).detach();
    }

    void loop() {
        cudaStream_t stream = nullptr;
        for (;;) {
            std::unique_lock<std::mutex> lock(mutex);
            cv.wait(lock, [this] { return pending; });
            cudaSetDevice(job.device);
            if (stream == nullptr) cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
            cudaStreamWaitEvent(stream, job.ready, 0);
            launch_ew_chain(job.x, job.y, job.n, job.scale, job.shift, job.lo, job.hi, 0, stream);
            status = cudaGetLastError();
            pending = false;
            launched = true;
            cv.notify_all();
        }
    }

    cudaError_t run(const Job& j) {
        std::unique_lock<std::mutex> lock(mutex);
        job = j;
        pending = true;
        launched = false;
        cv.notify_all();
        cv.wait(lock, [this] { return launched; });
        return status;
    }
};

Worker& worker() {
    static Worker* w = new Worker();  // leaked on purpose: the thread outlives everything
    return *w;
}

cudaEvent_t ready_event() {
    static cudaEvent_t e = [] {
        cudaEvent_t v = nullptr;
        cudaEventCreateWithFlags(&v, cudaEventDisableTiming);
        return v;
    }();
    return e;
}

}  // namespace

torch::Tensor chain_forward(torch::Tensor x, double scale, double shift, double lo, double hi) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    cudaEventRecord(ready_event(), c10::cuda::getCurrentCUDAStream().stream());
    Job job;
    job.x = x.data_ptr<float>();
    job.y = y.data_ptr<float>();
    job.n = x.numel();
    job.scale = static_cast<float>(scale);
    job.shift = static_cast<float>(shift);
    job.lo = static_cast<float>(lo);
    job.hi = static_cast<float>(hi);
    job.ready = ready_event();
    job.device = x.get_device();
    const cudaError_t err = worker().run(job);
    TORCH_CHECK(err == cudaSuccess, "launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_chain(pybind11::module& m) {
    m.def("chain_forward", &chain_forward, "clamp(gelu(x * scale + shift), lo, hi)", py::arg("x"), py::arg("scale"),
          py::arg("shift"), py::arg("lo"), py::arg("hi"));
}
REGISTER_BINDING(chain, register_chain);
