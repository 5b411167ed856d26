typedef float float4 __attribute__((aligned(16),ext_vector_type(4)));
void r_4_16_4_4_4_32_4(float* restrict data0_4096, float* restrict data1_8192, float* restrict data2_8192, float* restrict data3_64, const int data4_) {
  float buf0[16];
  for (int Lidx1 = 0; Lidx1 < 4; Lidx1++) {
    for (int Lidx2 = 0; Lidx2 < 16; Lidx2++) {
      *(buf0+0) = 0.0f;
      *(buf0+1) = 0.0f;
      *(buf0+2) = 0.0f;
      *(buf0+3) = 0.0f;
      *(buf0+4) = 0.0f;
      *(buf0+5) = 0.0f;
      *(buf0+6) = 0.0f;
      *(buf0+7) = 0.0f;
      *(buf0+8) = 0.0f;
      *(buf0+9) = 0.0f;
      *(buf0+10) = 0.0f;
      *(buf0+11) = 0.0f;
      *(buf0+12) = 0.0f;
      *(buf0+13) = 0.0f;
      *(buf0+14) = 0.0f;
      *(buf0+15) = 0.0f;
      for (int Ridx0 = 0; Ridx0 < 32; Ridx0++) {
        int alu16 = (Ridx0<<2);
        int alu17 = ((data4_<<11)+(Lidx1<<9)+alu16);
        float4 val0 = (*((float4*)((data1_8192+(alu17+128)))));
        float4 val1 = (*((float4*)((data1_8192+(alu17+256)))));
        float4 val2 = (*((float4*)((data1_8192+(alu17+384)))));
        float4 val3 = (*((float4*)((data1_8192+alu17))));
        int alu18 = (alu16+(Lidx2<<9));
        float4 val4 = (*((float4*)((data2_8192+(alu18+128)))));
        float4 val5 = (*((float4*)((data2_8192+(alu18+256)))));
        float4 val6 = (*((float4*)((data2_8192+(alu18+384)))));
        float4 val7 = (*((float4*)((data2_8192+alu18))));
        *(buf0+0) = ((*(buf0+0))+(val3[0]*val7[0])+(val3[1]*val7[1])+(val3[2]*val7[2])+(val3[3]*val7[3]));
        *(buf0+1) = ((*(buf0+1))+(val3[0]*val4[0])+(val3[1]*val4[1])+(val3[2]*val4[2])+(val3[3]*val4[3]));
        *(buf0+2) = ((*(buf0+2))+(val3[0]*val5[0])+(val3[1]*val5[1])+(val3[2]*val5[2])+(val3[3]*val5[3]));
        *(buf0+3) = ((*(buf0+3))+(val3[0]*val6[0])+(val3[1]*val6[1])+(val3[2]*val6[2])+(val3[3]*val6[3]));
        *(buf0+4) = ((*(buf0+4))+(val0[0]*val7[0])+(val0[1]*val7[1])+(val0[2]*val7[2])+(val0[3]*val7[3]));
        *(buf0+5) = ((*(buf0+5))+(val0[0]*val4[0])+(val0[1]*val4[1])+(val0[2]*val4[2])+(val0[3]*val4[3]));
        *(buf0+6) = ((*(buf0+6))+(val0[0]*val5[0])+(val0[1]*val5[1])+(val0[2]*val5[2])+(val0[3]*val5[3]));
        *(buf0+7) = ((*(buf0+7))+(val0[0]*val6[0])+(val0[1]*val6[1])+(val0[2]*val6[2])+(val0[3]*val6[3]));
        *(buf0+8) = ((*(buf0+8))+(val1[0]*val7[0])+(val1[1]*val7[1])+(val1[2]*val7[2])+(val1[3]*val7[3]));
        *(buf0+9) = ((*(buf0+9))+(val1[0]*val4[0])+(val1[1]*val4[1])+(val1[2]*val4[2])+(val1[3]*val4[3]));
        *(buf0+10) = ((*(buf0+10))+(val1[0]*val5[0])+(val1[1]*val5[1])+(val1[2]*val5[2])+(val1[3]*val5[3]));
        *(buf0+11) = ((*(buf0+11))+(val1[0]*val6[0])+(val1[1]*val6[1])+(val1[2]*val6[2])+(val1[3]*val6[3]));
        *(buf0+12) = ((*(buf0+12))+(val2[0]*val7[0])+(val2[1]*val7[1])+(val2[2]*val7[2])+(val2[3]*val7[3]));
        *(buf0+13) = ((*(buf0+13))+(val2[0]*val4[0])+(val2[1]*val4[1])+(val2[2]*val4[2])+(val2[3]*val4[3]));
        *(buf0+14) = ((*(buf0+14))+(val2[0]*val5[0])+(val2[1]*val5[1])+(val2[2]*val5[2])+(val2[3]*val5[3]));
        *(buf0+15) = ((*(buf0+15))+(val2[0]*val6[0])+(val2[1]*val6[1])+(val2[2]*val6[2])+(val2[3]*val6[3]));
      }
      int alu36 = (Lidx2<<2);
      float4 val8 = (*((float4*)((data3_64+alu36))));
      int alu37 = ((data4_<<10)+(Lidx1<<8)+alu36);
      *((float4*)((data0_4096+(alu37+64)))) = (float4){((*(buf0+4))+val8[0]),((*(buf0+5))+val8[1]),((*(buf0+6))+val8[2]),((*(buf0+7))+val8[3])};
      *((float4*)((data0_4096+(alu37+128)))) = (float4){((*(buf0+8))+val8[0]),((*(buf0+9))+val8[1]),((*(buf0+10))+val8[2]),((*(buf0+11))+val8[3])};
      *((float4*)((data0_4096+(alu37+192)))) = (float4){((*(buf0+12))+val8[0]),((*(buf0+13))+val8[1]),((*(buf0+14))+val8[2]),((*(buf0+15))+val8[3])};
      *((float4*)((data0_4096+alu37))) = (float4){((*(buf0+0))+val8[0]),((*(buf0+1))+val8[1]),((*(buf0+2))+val8[2]),((*(buf0+3))+val8[3])};
    }
  }
}
