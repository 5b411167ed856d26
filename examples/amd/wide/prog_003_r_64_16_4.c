
void r_64_16_4(float* restrict data0_64, float* restrict data1_4096) {
  float buf0[1];
  for (int Lidx1 = 0; Lidx1 < 64; Lidx1++) {
    *(buf0+0) = 0.0f;
    for (int Ridx0 = 0; Ridx0 < 16; Ridx0++) {
      int alu1 = ((Ridx0<<8)+Lidx1);
      float val0 = (*(data1_4096+(alu1+64)));
      float val1 = (*(data1_4096+(alu1+128)));
      float val2 = (*(data1_4096+(alu1+192)));
      float val3 = (*(data1_4096+alu1));
      *(buf0+0) = ((*(buf0+0))+val3+val0+val1+val2);
    }
    *(data0_64+Lidx1) = (*(buf0+0));
  }
}
