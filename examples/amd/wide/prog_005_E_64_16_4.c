typedef float float4 __attribute__((aligned(16),ext_vector_type(4)));
void E_64_16_4(float* restrict data0_4096, float* restrict data1_4096, float* restrict data2_64, float* restrict data3_64) {
  for (int Lidx0 = 0; Lidx0 < 64; Lidx0++) {
    float val0 = (*(data2_64+Lidx0));
    float val1 = (*(data3_64+Lidx0));
    for (int Lidx1 = 0; Lidx1 < 16; Lidx1++) {
      int alu0 = ((Lidx0<<6)+(Lidx1<<2));
      float4 val2 = (*((float4*)((data1_4096+alu0))));
      float alu1 = ((val2[0]-val0)*1.4426950216293335f);
      _Bool alu2 = (alu1!=alu1);
      float alu3 = ((alu1!=((float)(-__builtin_inff())))?alu1:0.0f);
      float alu4 = (alu2?0.0f:alu3);
      float alu5 = ((alu1!=((float)(__builtin_inff())))?alu4:0.0f);
      float alu6 = ((alu5<0.0f)?-0.5f:0.5f);
      int cast0 = ((int)((alu5+alu6)));
      float alu7 = ((val2[1]-val0)*1.4426950216293335f);
      _Bool alu8 = (alu7!=alu7);
      float alu9 = ((alu7!=((float)(-__builtin_inff())))?alu7:0.0f);
      float alu10 = (alu8?0.0f:alu9);
      float alu11 = ((alu7!=((float)(__builtin_inff())))?alu10:0.0f);
      float alu12 = ((alu11<0.0f)?-0.5f:0.5f);
      int cast1 = ((int)((alu11+alu12)));
      float alu13 = ((val2[2]-val0)*1.4426950216293335f);
      _Bool alu14 = (alu13!=alu13);
      float alu15 = ((alu13!=((float)(-__builtin_inff())))?alu13:0.0f);
      float alu16 = (alu14?0.0f:alu15);
      float alu17 = ((alu13!=((float)(__builtin_inff())))?alu16:0.0f);
      float alu18 = ((alu17<0.0f)?-0.5f:0.5f);
      int cast2 = ((int)((alu17+alu18)));
      float alu19 = ((val2[3]-val0)*1.4426950216293335f);
      _Bool alu20 = (alu19!=alu19);
      float alu21 = ((alu19!=((float)(-__builtin_inff())))?alu19:0.0f);
      float alu22 = (alu20?0.0f:alu21);
      float alu23 = ((alu19!=((float)(__builtin_inff())))?alu22:0.0f);
      float alu24 = ((alu23<0.0f)?-0.5f:0.5f);
      int cast3 = ((int)((alu23+alu24)));
      int alu25 = (cast0>>1);
      int alu26 = (cast1>>1);
      int alu27 = (cast2>>1);
      int alu28 = (cast3>>1);
      float alu29 = (alu5-((float)(cast0)));
      float alu30 = (alu11-((float)(cast1)));
      float alu31 = (alu17-((float)(cast2)));
      float alu32 = (alu23-((float)(cast3)));
      float alu33 = (((alu1<128.0f)!=1)?((float)(__builtin_inff())):(((((((((((((0.00015359208919107914f*alu29)+0.0013392627006396651f)*alu29)+0.009618384763598442f)*alu29)+0.055503472685813904f)*alu29)+0.24022644758224487f)*alu29)+0.6931471824645996f)*alu29)+1.0f)*__builtin_bit_cast(float, (int)(((alu25+127)<<23)))*__builtin_bit_cast(float, (int)((((cast0-alu25)+127)<<23)))));
      float alu34 = ((alu1<-150.0f)?0.0f:alu33);
      float alu35 = (alu2?((float)(__builtin_nanf(""))):alu34);
      float alu36 = (((alu7<128.0f)!=1)?((float)(__builtin_inff())):(((((((((((((0.00015359208919107914f*alu30)+0.0013392627006396651f)*alu30)+0.009618384763598442f)*alu30)+0.055503472685813904f)*alu30)+0.24022644758224487f)*alu30)+0.6931471824645996f)*alu30)+1.0f)*__builtin_bit_cast(float, (int)(((alu26+127)<<23)))*__builtin_bit_cast(float, (int)((((cast1-alu26)+127)<<23)))));
      float alu37 = ((alu7<-150.0f)?0.0f:alu36);
      float alu38 = (alu8?((float)(__builtin_nanf(""))):alu37);
      float alu39 = (((alu13<128.0f)!=1)?((float)(__builtin_inff())):(((((((((((((0.00015359208919107914f*alu31)+0.0013392627006396651f)*alu31)+0.009618384763598442f)*alu31)+0.055503472685813904f)*alu31)+0.24022644758224487f)*alu31)+0.6931471824645996f)*alu31)+1.0f)*__builtin_bit_cast(float, (int)(((alu27+127)<<23)))*__builtin_bit_cast(float, (int)((((cast2-alu27)+127)<<23)))));
      float alu40 = ((alu13<-150.0f)?0.0f:alu39);
      float alu41 = (alu14?((float)(__builtin_nanf(""))):alu40);
      float alu42 = (((alu19<128.0f)!=1)?((float)(__builtin_inff())):(((((((((((((0.00015359208919107914f*alu32)+0.0013392627006396651f)*alu32)+0.009618384763598442f)*alu32)+0.055503472685813904f)*alu32)+0.24022644758224487f)*alu32)+0.6931471824645996f)*alu32)+1.0f)*__builtin_bit_cast(float, (int)(((alu28+127)<<23)))*__builtin_bit_cast(float, (int)((((cast3-alu28)+127)<<23)))));
      float alu43 = ((alu19<-150.0f)?0.0f:alu42);
      float alu44 = (alu20?((float)(__builtin_nanf(""))):alu43);
      *((float4*)((data0_4096+alu0))) = (float4){(alu35/val1),(alu38/val1),(alu41/val1),(alu44/val1)};
    }
  }
}
