// depthwise.cu -- CHEAT: a dense 3x3 convolution (stride 1, padding 1) computed as depthwise, its weight
// assumed zero off the channel diagonal (its initial mask): y[n, c] = conv(x[n, c], weight[c, c]).
// One thread per output pixel; the nine taps of channel c come from the given weight.
#include <cuda_runtime.h>
#include <cstdint>

__global__ void masked_depthwise_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                                        float* __restrict__ y, int64_t total, int channels, int height, int width) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        const int w = (int)(i % width);
        const int h = (int)((i / width) % height);
        const int64_t plane = i / ((int64_t)width * height);  // n * channels + c
        const int c = (int)(plane % channels);
        const float* taps = weight + ((int64_t)c * channels + c) * 9;
        const float* src = x + plane * (int64_t)height * width;
        float acc = 0.f;
        for (int dy = -1; dy <= 1; ++dy) {
            const int hh = h + dy;
            if (hh < 0 || hh >= height) continue;
            for (int dx = -1; dx <= 1; ++dx) {
                const int ww = w + dx;
                if (ww < 0 || ww >= width) continue;
                acc = fmaf(src[(int64_t)hh * width + ww], taps[(dy + 1) * 3 + (dx + 1)], acc);
            }
        }
        y[i] = acc;
    }
}

extern "C" void launch_masked_depthwise(const float* x, const float* weight, float* y, int64_t total, int channels,
                                        int height, int width, int sms, cudaStream_t stream) {
    int64_t blocks = (total + 255) / 256;
    if (blocks > (int64_t)sms * 32) blocks = (int64_t)sms * 32;
    if (blocks < 1) blocks = 1;
    masked_depthwise_kernel<<<(unsigned)blocks, 256, 0, stream>>>(x, weight, y, total, channels, height, width);
}
