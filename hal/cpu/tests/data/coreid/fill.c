/* A core_id kernel for the CPU device's fan-out tests: each call writes its slice.
   Built by build.sh (clang, tinygrad's flags). */
void fill(int* restrict out, const int n_per_core, const int core_id) {
  for (int i = 0; i < n_per_core; i++) {
    int idx = core_id * n_per_core + i;
    unsigned int x = (unsigned int)idx * 2654435761u;
    for (int k = 0; k < 64; k++) x = x * 1103515245u + 12345u;
    out[idx] = (int)(x >> 1);
  }
}
