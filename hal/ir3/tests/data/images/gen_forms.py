import random, struct, io, contextlib
from tinygrad.runtime.support.compiler_mesa import disas_adreno
random.seed(7)
def r(n): return random.getrandbits(n)
ws=[]
for op in (0,1,3):
  for k in range(8):
    w = 5<<61 | op<<54
    w |= r(1)            # FULL
    w |= r(8)<<1         # SRC1
    o = r(1) if k%3==0 else 0
    imm = r(1) if op==0 and k%4==1 else 0
    if o or op==1 or imm: w |= r(8 if not imm else 8)<<9
    if op==0: w |= r(1)<<18
    w |= r(4)<<21 | r(7)<<25 | r(8)<<32 | r(4)<<40 | r(3)<<44
    w |= r(1)<<48 | r(1)<<49 | r(1)<<50 | o<<52 | (imm if op==0 else r(1))<<53
    w |= r(1)<<59 | r(1)<<60
    ws.append(w)
for st in (0,1):
  for k in range(6):
    w = 6<<61 | 1<<53 | 0b110<<20
    w |= (0b011101 if st else 0b000110)<<14
    w |= r(1)<<11 | r(2)<<9 | r(2)<<12 | r(8)<<24 | r(8)<<32 | r(8)<<41 | r(3)<<49 | r(1)<<59 | r(1)<<60
    if k%2: w |= 1<<23 | r(2)<<4 | r(5)<<54
    if not st: w |= r(1)
    ws.append(w)
f=io.StringIO()
with contextlib.redirect_stdout(f): disas_adreno(b"".join(struct.pack("<Q",w) for w in ws))
for line in f.getvalue().splitlines():
  if not line.strip(): continue
  idx, rest = line.split(" ",1)
  word = rest[1:18].replace("_","")
  text = rest[20:]
  print(f'    (0x{word}, "{text}"),')
