typedef float float4 __attribute__((aligned(16),ext_vector_type(4)));
void r_16_64_4_3_3_48_4(float* restrict data0_36864, float* restrict data1_36864, float* restrict data2_36864, float* restrict data3_192, const int data4_) {
  float buf0[9];
  for (int Lidx1 = 0; Lidx1 < 16; Lidx1++) {
    int alu0 = ((data4_*9216)+(Lidx1*576));
    for (int Lidx2 = 0; Lidx2 < 64; Lidx2++) {
      int alu1 = (Lidx2*3);
      *(buf0+0) = 0.0f;
      *(buf0+1) = 0.0f;
      *(buf0+2) = 0.0f;
      *(buf0+3) = 0.0f;
      *(buf0+4) = 0.0f;
      *(buf0+5) = 0.0f;
      *(buf0+6) = 0.0f;
      *(buf0+7) = 0.0f;
      *(buf0+8) = 0.0f;
      for (int Ridx0 = 0; Ridx0 < 48; Ridx0++) {
        int alu11 = ((Ridx0*768)+alu1);
        float val0 = (*(data2_36864+(alu11+1)));
        float val1 = (*(data2_36864+(alu11+2)));
        float val2 = (*(data2_36864+(alu11+192)));
        float val3 = (*(data2_36864+(alu11+193)));
        float val4 = (*(data2_36864+(alu11+194)));
        float val5 = (*(data2_36864+(alu11+384)));
        float val6 = (*(data2_36864+(alu11+385)));
        float val7 = (*(data2_36864+(alu11+386)));
        float val8 = (*(data2_36864+(alu11+576)));
        float val9 = (*(data2_36864+(alu11+577)));
        float val10 = (*(data2_36864+(alu11+578)));
        float val11 = (*(data2_36864+alu11));
        int alu12 = (alu0+(Ridx0<<2));
        float4 val12 = (*((float4*)((data1_36864+(alu12+192)))));
        float4 val13 = (*((float4*)((data1_36864+(alu12+384)))));
        float4 val14 = (*((float4*)((data1_36864+alu12))));
        *(buf0+0) = ((*(buf0+0))+(val14[0]*val11)+(val14[1]*val2)+(val14[2]*val5)+(val14[3]*val8));
        *(buf0+1) = ((*(buf0+1))+(val14[0]*val0)+(val14[1]*val3)+(val14[2]*val6)+(val14[3]*val9));
        *(buf0+2) = ((*(buf0+2))+(val14[0]*val1)+(val14[1]*val4)+(val14[2]*val7)+(val14[3]*val10));
        *(buf0+3) = ((*(buf0+3))+(val12[0]*val11)+(val12[1]*val2)+(val12[2]*val5)+(val12[3]*val8));
        *(buf0+4) = ((*(buf0+4))+(val12[0]*val0)+(val12[1]*val3)+(val12[2]*val6)+(val12[3]*val9));
        *(buf0+5) = ((*(buf0+5))+(val12[0]*val1)+(val12[1]*val4)+(val12[2]*val7)+(val12[3]*val10));
        *(buf0+6) = ((*(buf0+6))+(val13[0]*val11)+(val13[1]*val2)+(val13[2]*val5)+(val13[3]*val8));
        *(buf0+7) = ((*(buf0+7))+(val13[0]*val0)+(val13[1]*val3)+(val13[2]*val6)+(val13[3]*val9));
        *(buf0+8) = ((*(buf0+8))+(val13[0]*val1)+(val13[1]*val4)+(val13[2]*val7)+(val13[3]*val10));
      }
      float val15 = (*(data3_192+(alu1+1)));
      float val16 = (*(data3_192+(alu1+2)));
      float val17 = (*(data3_192+alu1));
      int alu23 = (alu0+alu1);
      float alu24 = ((*(buf0+0))+val17);
      float alu25 = ((*(buf0+1))+val15);
      float alu26 = ((*(buf0+2))+val16);
      float alu27 = ((*(buf0+3))+val17);
      float alu28 = ((*(buf0+4))+val15);
      float alu29 = ((*(buf0+5))+val16);
      float alu30 = ((*(buf0+6))+val17);
      float alu31 = ((*(buf0+7))+val15);
      float alu32 = ((*(buf0+8))+val16);
      float alu33 = ((0.0f<alu24)?alu24:0.0f);
      float alu34 = ((0.0f<alu25)?alu25:0.0f);
      float alu35 = ((0.0f<alu26)?alu26:0.0f);
      float alu36 = ((0.0f<alu27)?alu27:0.0f);
      float alu37 = ((0.0f<alu28)?alu28:0.0f);
      float alu38 = ((0.0f<alu29)?alu29:0.0f);
      float alu39 = ((0.0f<alu30)?alu30:0.0f);
      float alu40 = ((0.0f<alu31)?alu31:0.0f);
      float alu41 = ((0.0f<alu32)?alu32:0.0f);
      *(data0_36864+(alu23+1)) = alu34;
      *(data0_36864+(alu23+2)) = alu35;
      *(data0_36864+(alu23+192)) = alu36;
      *(data0_36864+(alu23+193)) = alu37;
      *(data0_36864+(alu23+194)) = alu38;
      *(data0_36864+(alu23+384)) = alu39;
      *(data0_36864+(alu23+385)) = alu40;
      *(data0_36864+(alu23+386)) = alu41;
      *(data0_36864+alu23) = alu33;
    }
  }
}
