// A kernel that makes clang emit the relocations tinygrad's bundles do not contain:
//  - a static table indexed at run time: ADRP + ADD_ABS_LO12_NC (aarch64), PC32 (x86-64)
//  - a float4 constant: LDST128_ABS_LO12_NC (aarch64), PC32 (x86-64)
//  - hidden globals of 1, 2, 4 and 8 bytes: LDST8/16/32/64_ABS_LO12_NC (aarch64), PC32 (x86-64)
//  - calls to expf and memset (resolved by the loader's resolver) and to a global function in
//    another section (-ffunction-sections): CALL26 (aarch64), PLT32 (x86-64)
// Build: ./build.sh. Semantics (checked by tests/relocs_clang.rs), for i in 0..16:
//   scratch[0..n] = 0
//   out[i] = in[i] * m[i % 4] + table[i % 8] + expf(in[i] / 8) + relocs_helper(in[i])
//   m = {1.25, -2, 0.75, 4}, table = {0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, -3.5}
//   relocs_helper(x) = x * 0.1234 + 0.5 + 3 - 2
typedef float float4 __attribute__((aligned(16), ext_vector_type(4)));

float expf(float);
void *memset(void *, int, unsigned long);

static const float table[8] = {0.5f, 1.5f, 2.5f, 3.5f, -0.5f, -1.5f, -2.5f, -3.5f};
__attribute__((visibility("hidden"))) float gain32 = 0.1234f;
__attribute__((visibility("hidden"))) double gain64 = 0.5;
__attribute__((visibility("hidden"))) short gain16 = 3;
__attribute__((visibility("hidden"))) signed char gain8 = -2;

__attribute__((noinline)) float relocs_helper(float x) {
  return x * gain32 + (float)gain64 + (float)gain16 + (float)gain8;
}

void relocs_kernel(float *restrict out, const float *restrict in, float *restrict scratch, int n) {
  memset(scratch, 0, (unsigned long)n * sizeof(float));
  for (int i = 0; i < 16; i += 4) {
    float4 v = *(const float4 *)(in + i);
    float4 w = v * (float4){1.25f, -2.0f, 0.75f, 4.0f};
    *(float4 *)(out + i) = w;
  }
  for (int i = 0; i < 16; i++) {
    volatile int k = i & 7;  // keep the table lookup dynamic
    out[i] += table[k] + expf(in[i] * 0.125f) + relocs_helper(in[i]);
  }
}
