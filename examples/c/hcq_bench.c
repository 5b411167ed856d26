/* The native cost of a call through libhcq, for the Python overhead figure:
 *
 *   hcq_bench BUNDLE [CALLS]   (CPU device)
 *
 * prints the median of hcq_model_run and of hcq_model_call (every input copied in, every
 * output copied out: what Python's m.run(x) asks for) over CALLS calls, in nanoseconds. */
#define _POSIX_C_SOURCE 199309L
#include "hcq.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

static long long median(long long *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[n / 2];
}

#define CHECK(call)                                                              \
    do {                                                                         \
        enum hcq_status s_ = (call);                                             \
        if (s_ != HCQ_OK) {                                                      \
            fprintf(stderr, "%s: %s: %s\n", #call, hcq_status_name(s_), hcq_last_error()); \
            return 1;                                                            \
        }                                                                        \
    } while (0)

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: hcq_bench BUNDLE [CALLS]\n");
        return 2;
    }
    int n = argc > 2 ? atoi(argv[2]) : 20000;
    if (n < 1) n = 1;
    hcq_device dev;
    CHECK(hcq_device_open("CPU", 0, &dev));
    hcq_model m;
    CHECK(hcq_model_load(dev, argv[1], &m));
    size_t n_in, n_out;
    CHECK(hcq_model_count(m, &n_in, &n_out));
    const void **ins = calloc(n_in ? n_in : 1, sizeof *ins);
    size_t *in_lens = calloc(n_in ? n_in : 1, sizeof *in_lens);
    void **outs = calloc(n_out ? n_out : 1, sizeof *outs);
    size_t *out_lens = calloc(n_out ? n_out : 1, sizeof *out_lens);
    for (size_t i = 0; i < n_in; i++) {
        hcq_tensor_info t;
        CHECK(hcq_model_input(m, i, &t));
        in_lens[i] = t.nbytes;
        ins[i] = calloc(1, t.nbytes);
    }
    for (size_t i = 0; i < n_out; i++) {
        hcq_tensor_info t;
        CHECK(hcq_model_output(m, i, &t));
        out_lens[i] = t.nbytes;
        outs[i] = malloc(t.nbytes);
    }
    long long *t = malloc(sizeof *t * (size_t)n);
    for (int i = 0; i < 1000; i++) CHECK(hcq_model_run(m)); /* warm-up */
    for (int i = 0; i < n; i++) {
        long long t0 = now_ns();
        CHECK(hcq_model_run(m));
        t[i] = now_ns() - t0;
    }
    long long run = median(t, n);
    for (int i = 0; i < n; i++) {
        long long t0 = now_ns();
        CHECK(hcq_model_call(m, ins, in_lens, n_in, (void *const *)outs, out_lens, n_out));
        t[i] = now_ns() - t0;
    }
    long long call = median(t, n);
    printf("native_run_median_ns %lld\nnative_call_median_ns %lld\n", run, call);
    CHECK(hcq_model_close(m));
    CHECK(hcq_device_close(dev));
    return 0;
}
