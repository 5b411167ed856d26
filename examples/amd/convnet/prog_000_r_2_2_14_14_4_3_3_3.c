typedef float float4 __attribute__((aligned(16),ext_vector_type(4)));
void r_2_2_14_14_4_3_3_3(float* restrict data0_3136, float* restrict data1_1536, float* restrict data2_216, float* restrict data3_8) {
  float buf0[4];
  for (int Lidx3 = 0; Lidx3 < 2; Lidx3++) {
    for (int Lidx4 = 0; Lidx4 < 2; Lidx4++) {
      float4 val0 = (*((float4*)((data3_8+(Lidx4<<2)))));
      for (int Lidx5 = 0; Lidx5 < 14; Lidx5++) {
        for (int Lidx6 = 0; Lidx6 < 14; Lidx6++) {
          *(buf0+0) = 0.0f;
          *(buf0+1) = 0.0f;
          *(buf0+2) = 0.0f;
          *(buf0+3) = 0.0f;
          for (int Ridx0 = 0; Ridx0 < 3; Ridx0++) {
            int alu4 = ((Lidx5<<4)+Lidx6+(Ridx0<<8)+(Lidx3*768));
            float val1 = (*(data1_1536+(alu4+1)));
            float val2 = (*(data1_1536+(alu4+2)));
            float val3 = (*(data1_1536+(alu4+16)));
            float val4 = (*(data1_1536+(alu4+17)));
            float val5 = (*(data1_1536+(alu4+18)));
            float val6 = (*(data1_1536+(alu4+32)));
            float val7 = (*(data1_1536+(alu4+33)));
            float val8 = (*(data1_1536+(alu4+34)));
            float val9 = (*(data1_1536+alu4));
            int alu5 = ((Ridx0*9)+(Lidx4*108));
            float val10 = (*(data2_216+(alu5+1)));
            float val11 = (*(data2_216+(alu5+2)));
            float val12 = (*(data2_216+(alu5+3)));
            float val13 = (*(data2_216+(alu5+4)));
            float val14 = (*(data2_216+(alu5+5)));
            float val15 = (*(data2_216+(alu5+6)));
            float val16 = (*(data2_216+(alu5+7)));
            float val17 = (*(data2_216+(alu5+8)));
            float val18 = (*(data2_216+(alu5+27)));
            float val19 = (*(data2_216+(alu5+28)));
            float val20 = (*(data2_216+(alu5+29)));
            float val21 = (*(data2_216+(alu5+30)));
            float val22 = (*(data2_216+(alu5+31)));
            float val23 = (*(data2_216+(alu5+32)));
            float val24 = (*(data2_216+(alu5+33)));
            float val25 = (*(data2_216+(alu5+34)));
            float val26 = (*(data2_216+(alu5+35)));
            float val27 = (*(data2_216+(alu5+54)));
            float val28 = (*(data2_216+(alu5+55)));
            float val29 = (*(data2_216+(alu5+56)));
            float val30 = (*(data2_216+(alu5+57)));
            float val31 = (*(data2_216+(alu5+58)));
            float val32 = (*(data2_216+(alu5+59)));
            float val33 = (*(data2_216+(alu5+60)));
            float val34 = (*(data2_216+(alu5+61)));
            float val35 = (*(data2_216+(alu5+62)));
            float val36 = (*(data2_216+(alu5+81)));
            float val37 = (*(data2_216+(alu5+82)));
            float val38 = (*(data2_216+(alu5+83)));
            float val39 = (*(data2_216+(alu5+84)));
            float val40 = (*(data2_216+(alu5+85)));
            float val41 = (*(data2_216+(alu5+86)));
            float val42 = (*(data2_216+(alu5+87)));
            float val43 = (*(data2_216+(alu5+88)));
            float val44 = (*(data2_216+(alu5+89)));
            float val45 = (*(data2_216+alu5));
            *(buf0+0) = ((*(buf0+0))+(val9*val45)+(val1*val10)+(val2*val11)+(val3*val12)+(val4*val13)+(val5*val14)+(val6*val15)+(val7*val16)+(val8*val17));
            *(buf0+1) = ((*(buf0+1))+(val9*val18)+(val1*val19)+(val2*val20)+(val3*val21)+(val4*val22)+(val5*val23)+(val6*val24)+(val7*val25)+(val8*val26));
            *(buf0+2) = ((*(buf0+2))+(val9*val27)+(val1*val28)+(val2*val29)+(val3*val30)+(val4*val31)+(val5*val32)+(val6*val33)+(val7*val34)+(val8*val35));
            *(buf0+3) = ((*(buf0+3))+(val9*val36)+(val1*val37)+(val2*val38)+(val3*val39)+(val4*val40)+(val5*val41)+(val6*val42)+(val7*val43)+(val8*val44));
          }
          int alu11 = ((Lidx5*14)+Lidx6+(Lidx4*784)+(Lidx3*1568));
          float alu12 = ((*(buf0+0))+val0[0]);
          float alu13 = ((*(buf0+1))+val0[1]);
          float alu14 = ((*(buf0+2))+val0[2]);
          float alu15 = ((*(buf0+3))+val0[3]);
          float alu16 = ((0.0f<alu12)?alu12:0.0f);
          float alu17 = ((0.0f<alu13)?alu13:0.0f);
          float alu18 = ((0.0f<alu14)?alu14:0.0f);
          float alu19 = ((0.0f<alu15)?alu15:0.0f);
          *(data0_3136+(alu11+196)) = alu17;
          *(data0_3136+(alu11+392)) = alu18;
          *(data0_3136+(alu11+588)) = alu19;
          *(data0_3136+alu11) = alu16;
        }
      }
    }
  }
}
