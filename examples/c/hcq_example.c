/* hcq from C: load a bundle, list its tensors, run it, check the outputs against the bundle's
 * expected bytes, then run it again with its first input bound zero-copy to a frame of ours.
 *
 *   cc examples/c/hcq_example.c -Iinclude -Ltarget/release -lhcq -o hcq_example
 *   LD_LIBRARY_PATH=target/release ./hcq_example examples/chain100 [DEVICE]
 *
 * Exit status 0 when every check passed. */
#include "hcq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                         \
    do {                                                                                    \
        enum hcq_status s_ = (call);                                                        \
        if (s_ != HCQ_OK) {                                                                 \
            fprintf(stderr, "%s failed: %s: %s\n", #call, hcq_status_name(s_), hcq_last_error()); \
            return 1;                                                                       \
        }                                                                                   \
    } while (0)

static const char *dtype_name(enum hcq_dtype d) {
    static const char *names[] = {"bool",   "int8",    "int16",    "int32",   "int64",
                                  "uint8",  "uint16",  "uint32",   "uint64",  "float16",
                                  "bfloat16", "float32", "float64"};
    return (unsigned)d < sizeof names / sizeof names[0] ? names[d] : "?";
}

static void print_tensor(const char *kind, const hcq_tensor_info *t) {
    printf("  %s %s %s[", kind, t->name, dtype_name(t->dtype));
    for (size_t d = 0; d < t->ndim; d++) printf("%s%llu", d ? ", " : "", (unsigned long long)t->shape[d]);
    printf("] %zu bytes\n", t->nbytes);
}

int main(int argc, char **argv) {
    const char *bundle = argc > 1 ? argv[1] : "examples/chain100";
    const char *device = argc > 2 ? argv[2] : NULL; /* NULL: $DEV, else CPU */
    printf("libhcq %s\n", hcq_version());

    hcq_device dev;
    CHECK(hcq_device_open(device, 0, &dev));
    char desc[256];
    CHECK(hcq_device_describe(dev, desc, sizeof desc, NULL));
    printf("device %s\n", desc);

    hcq_model m;
    CHECK(hcq_model_load(dev, bundle, &m));
    CHECK(hcq_device_close(dev)); /* the model keeps the device open */
    char name[128];
    CHECK(hcq_model_name(m, name, sizeof name, NULL));
    size_t n_in, n_out;
    CHECK(hcq_model_count(m, &n_in, &n_out));
    printf("model %s: %zu inputs, %zu outputs\n", name, n_in, n_out);
    for (size_t i = 0; i < n_in; i++) {
        hcq_tensor_info t;
        CHECK(hcq_model_input(m, i, &t));
        print_tensor("input ", &t);
    }
    for (size_t i = 0; i < n_out; i++) {
        hcq_tensor_info t;
        CHECK(hcq_model_output(m, i, &t));
        print_tensor("output", &t);
    }

    /* 1. run with the bundle's own inputs, compare with its expected outputs */
    CHECK(hcq_model_run(m));
    int ok = 0;
    size_t compared = 0;
    CHECK(hcq_model_check(m, &ok, &compared));
    printf("check %s (%zu outputs compared)\n", ok ? "PASS" : "FAIL", compared);
    if (!ok) return 1;

    /* 2. errors are statuses with a message: a wrong size is refused */
    char small[3] = {0};
    enum hcq_status s = hcq_model_set_input(m, 0, small, sizeof small);
    printf("wrong size: %s: %s\n", hcq_status_name(s), hcq_last_error());
    if (s != HCQ_ERR_SIZE) return 1;

    /* 3. submit, wait with a timeout, read the output by copy and by pointer */
    hcq_tensor_info out0;
    CHECK(hcq_model_output(m, 0, &out0));
    unsigned char *copy = malloc(out0.nbytes);
    CHECK(hcq_model_submit(m));
    CHECK(hcq_model_wait(m, 10000));
    CHECK(hcq_model_read_output(m, 0, copy, out0.nbytes));
    const void *ptr;
    size_t len;
    CHECK(hcq_model_output_ptr(m, 0, &ptr, &len));
    if (len != out0.nbytes || memcmp(ptr, copy, len) != 0) {
        fprintf(stderr, "output pointer and copy differ\n");
        return 1;
    }
    free(copy);

    /* 4. chain100 adds 1 a hundred times: bind its input to our frame, zero-copy */
    if (strcmp(name, "chain100") == 0) {
        hcq_tensor_info in0;
        CHECK(hcq_model_input(m, 0, &in0));
        size_t n = in0.nbytes / sizeof(float);
        float *frame = aligned_alloc(HCQ_BIND_ALIGN, in0.nbytes);
        s = hcq_model_bind_input(m, 0, frame, in0.nbytes);
        if (s == HCQ_ERR_UNSUPPORTED || s == HCQ_ERR_OS) {
            /* a device that copies between its own memories, or a kernel that refused the pages */
            printf("bind: %s (this device)\n", hcq_last_error());
        } else {
            CHECK(s);
            float *result = malloc(out0.nbytes);
            for (int f = 0; f < 3; f++) {
                for (size_t i = 0; i < n; i++) frame[i] = (float)(f * 1000 + (int)i); /* the next frame, in place */
                CHECK(hcq_model_run(m));
                CHECK(hcq_model_read_output(m, 0, result, out0.nbytes));
                for (size_t i = 0; i < n; i++) {
                    if (result[i] != frame[i] + 100.0f) {
                        fprintf(stderr, "frame %d element %zu: %g, expected %g\n", f, i, result[i], frame[i] + 100.0f);
                        return 1;
                    }
                }
            }
            printf("bound input: 3 frames PASS (zero-copy)\n");
            /* refused binds name what is wrong, and leave the frame bound */
            hcq_status bad[3] = {
                hcq_model_bind_input(m, 0, (char *)frame + 4, in0.nbytes),
                hcq_model_bind_input(m, 0, frame, in0.nbytes - 4),
                hcq_model_bind_input(m, 0, NULL, in0.nbytes),
            };
            hcq_status want[3] = {HCQ_ERR_MISALIGNED, HCQ_ERR_SIZE, HCQ_ERR_NULL_POINTER};
            for (int k = 0; k < 3; k++) {
                if (bad[k] != want[k]) {
                    fprintf(stderr, "bad bind %d: %s, expected %s\n", k, hcq_status_name(bad[k]), hcq_status_name(want[k]));
                    return 1;
                }
            }
            printf("bad binds: %s %s %s\n", hcq_status_name(bad[0]), hcq_status_name(bad[1]), hcq_status_name(bad[2]));
            CHECK(hcq_model_bind_input(m, 0, NULL, 0)); /* unbind: waits for the calls */
            free(result);
        }
        free(frame);
    }

    CHECK(hcq_model_close(m));
    s = hcq_model_run(m);
    printf("after close: %s: %s\n", hcq_status_name(s), hcq_last_error());
    if (s != HCQ_ERR_CLOSED) return 1;
    printf("OK\n");
    return 0;
}
