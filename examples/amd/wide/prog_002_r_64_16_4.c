typedef float float4 __attribute__((aligned(16),ext_vector_type(4)));
void r_64_16_4(float* restrict data0_64, float* restrict data1_4096) {
  float buf0[1];
  for (int Lidx1 = 0; Lidx1 < 64; Lidx1++) {
    *(buf0+0) = ((float)(-__builtin_inff()));
    for (int Ridx0 = 0; Ridx0 < 16; Ridx0++) {
      float val0 = (*(buf0+0));
      float4 val1 = (*((float4*)((data1_4096+((Ridx0<<2)+(Lidx1<<6))))));
      float alu1 = ((val1[0]<val1[1])?val1[1]:val1[0]);
      float alu2 = ((alu1<val1[2])?val1[2]:alu1);
      float alu3 = ((alu2<val1[3])?val1[3]:alu2);
      float alu4 = ((val0<alu3)?alu3:val0);
      *(buf0+0) = alu4;
    }
    *(data0_64+Lidx1) = (*(buf0+0));
  }
}
