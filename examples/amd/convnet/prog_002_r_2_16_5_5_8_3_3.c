
void r_2_16_5_5_8_3_3(float* restrict data0_800, float* restrict data1_784, float* restrict data2_1152, float* restrict data3_16) {
  float buf0[1];
  for (int Lidx3 = 0; Lidx3 < 2; Lidx3++) {
    for (int Lidx4 = 0; Lidx4 < 16; Lidx4++) {
      float val0 = (*(data3_16+Lidx4));
      for (int Lidx5 = 0; Lidx5 < 5; Lidx5++) {
        for (int Lidx6 = 0; Lidx6 < 5; Lidx6++) {
          *(buf0+0) = 0.0f;
          for (int Ridx0 = 0; Ridx0 < 8; Ridx0++) {
            int alu1 = ((Lidx5*7)+Lidx6+(Ridx0*49)+(Lidx3*392));
            float val1 = (*(data1_784+(alu1+1)));
            float val2 = (*(data1_784+(alu1+2)));
            float val3 = (*(data1_784+(alu1+7)));
            float val4 = (*(data1_784+(alu1+8)));
            float val5 = (*(data1_784+(alu1+9)));
            float val6 = (*(data1_784+(alu1+14)));
            float val7 = (*(data1_784+(alu1+15)));
            float val8 = (*(data1_784+(alu1+16)));
            float val9 = (*(data1_784+alu1));
            int alu2 = ((Ridx0*9)+(Lidx4*72));
            float val10 = (*(data2_1152+(alu2+1)));
            float val11 = (*(data2_1152+(alu2+2)));
            float val12 = (*(data2_1152+(alu2+3)));
            float val13 = (*(data2_1152+(alu2+4)));
            float val14 = (*(data2_1152+(alu2+5)));
            float val15 = (*(data2_1152+(alu2+6)));
            float val16 = (*(data2_1152+(alu2+7)));
            float val17 = (*(data2_1152+(alu2+8)));
            float val18 = (*(data2_1152+alu2));
            *(buf0+0) = ((*(buf0+0))+(val9*val18)+(val1*val10)+(val2*val11)+(val3*val12)+(val4*val13)+(val5*val14)+(val6*val15)+(val7*val16)+(val8*val17));
          }
          float alu5 = ((*(buf0+0))+val0);
          float alu6 = ((0.0f<alu5)?alu5:0.0f);
          *(data0_800+((Lidx5*5)+Lidx6+(Lidx4*25)+(Lidx3*400))) = alu6;
        }
      }
    }
  }
}
