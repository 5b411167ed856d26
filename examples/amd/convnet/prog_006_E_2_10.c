
void E_2_10(float* restrict data0_20, float* restrict data1_20, float* restrict data2_2, float* restrict data3_2) {
  for (int Lidx0 = 0; Lidx0 < 2; Lidx0++) {
    float val0 = (*(data2_2+Lidx0));
    float val1 = (*(data3_2+Lidx0));
    for (int Lidx1 = 0; Lidx1 < 10; Lidx1++) {
      int alu0 = ((Lidx0*10)+Lidx1);
      float val2 = (*(data1_20+alu0));
      *(data0_20+alu0) = ((val2-val0)-val1);
    }
  }
}
