// d2h_lab: what one decode step's logits copy to the host costs (a Qwen3 row
// of 151936 floats, 1 and 4 rows): cudaMemcpyAsync + stream sync into pageable
// memory (malloc, what the engine passes today), into pinned memory, and into
// pinned staging followed by a host memcpy into the pageable buffer.
//   nvcc -O3 -o /tmp/d2h bench/lab/d2h_lab.cu && /tmp/d2h
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

static double now_us() {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main() {
    const size_t rows[2] = {1, 4};
    cudaStream_t st;
    cudaStreamCreate(&st);
    for (size_t r : rows) {
        const size_t bytes = r * 151936 * sizeof(float);
        void *d, *pin;
        cudaMalloc(&d, bytes);
        cudaMemset(d, 1, bytes);
        cudaMallocHost(&pin, bytes);
        char *pg = (char *)malloc(bytes);
        memset(pg, 0, bytes);
        const int N = 300;
        double best[3] = {1e30, 1e30, 1e30}, sum[3] = {0, 0, 0};
        for (int i = 0; i < N; i++) {
            for (int v = 0; v < 3; v++) {
                const double t0 = now_us();
                if (v == 0) cudaMemcpyAsync(pg, d, bytes, cudaMemcpyDeviceToHost, st);
                else cudaMemcpyAsync(pin, d, bytes, cudaMemcpyDeviceToHost, st);
                cudaStreamSynchronize(st);
                if (v == 2) memcpy(pg, pin, bytes);
                const double t = now_us() - t0;
                sum[v] += t;
                if (t < best[v]) best[v] = t;
            }
        }
        printf("%zu row(s), %zu KiB: pageable %.1f us (best %.1f), pinned %.1f (%.1f), pinned + memcpy %.1f (%.1f)\n",
               r, bytes / 1024, sum[0] / N, best[0], sum[1] / N, best[1], sum[2] / N, best[2]);
        cudaFree(d);
        cudaFreeHost(pin);
        free(pg);
    }
    return 0;
}
