typedef float float2 __attribute__((aligned(8),ext_vector_type(2)));
void r_2_10(float* restrict data0_2, float* restrict data1_20) {
  for (int Lidx1 = 0; Lidx1 < 2; Lidx1++) {
    int alu0 = (Lidx1*10);
    float2 val0 = (*((float2*)((data1_20+(alu0+2)))));
    float2 val1 = (*((float2*)((data1_20+(alu0+4)))));
    float2 val2 = (*((float2*)((data1_20+(alu0+6)))));
    float2 val3 = (*((float2*)((data1_20+(alu0+8)))));
    float2 val4 = (*((float2*)((data1_20+alu0))));
    float alu1 = ((val4[0]<val4[1])?val4[1]:val4[0]);
    float alu2 = ((alu1<val0[0])?val0[0]:alu1);
    float alu3 = ((alu2<val0[1])?val0[1]:alu2);
    float alu4 = ((alu3<val1[0])?val1[0]:alu3);
    float alu5 = ((alu4<val1[1])?val1[1]:alu4);
    float alu6 = ((alu5<val2[0])?val2[0]:alu5);
    float alu7 = ((alu6<val2[1])?val2[1]:alu6);
    float alu8 = ((alu7<val3[0])?val3[0]:alu7);
    float alu9 = ((alu8<val3[1])?val3[1]:alu8);
    *(data0_2+Lidx1) = alu9;
  }
}
