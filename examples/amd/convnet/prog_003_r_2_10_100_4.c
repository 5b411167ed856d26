typedef float float4 __attribute__((aligned(16),ext_vector_type(4)));
void r_2_10_100_4(float* restrict data0_20, float* restrict data1_800, float* restrict data2_4000, float* restrict data3_10) {
  float buf0[1];
  for (int Lidx1 = 0; Lidx1 < 2; Lidx1++) {
    for (int Lidx2 = 0; Lidx2 < 10; Lidx2++) {
      *(buf0+0) = 0.0f;
      for (int Ridx0 = 0; Ridx0 < 100; Ridx0++) {
        int alu1 = (Ridx0<<2);
        float4 val0 = (*((float4*)((data1_800+(alu1+(Lidx1*400))))));
        float4 val1 = (*((float4*)((data2_4000+(alu1+(Lidx2*400))))));
        *(buf0+0) = ((*(buf0+0))+(val0[0]*val1[0])+(val0[1]*val1[1])+(val0[2]*val1[2])+(val0[3]*val1[3]));
      }
      float val2 = (*(data3_10+Lidx2));
      *(data0_20+((Lidx1*10)+Lidx2)) = ((*(buf0+0))+val2);
    }
  }
}
