//! Cost of one mock MMIO access: host side (lock + hook lookup + optional log) and device side
//! (lock-free atomic).

use divan::{Bencher, black_box};
use hcq::mmio::{MmioBus, Width};
use hcq_sim::mmio::{MockMmio, WriteAction};

fn main() {
    divan::main();
}

#[divan::bench]
fn host_write_u32(b: Bencher) {
    let m = MockMmio::new(4096).unwrap();
    b.bench(|| m.write(black_box(0x40), Width::U32, black_box(7)).unwrap());
}

#[divan::bench]
fn host_read_u32(b: Bencher) {
    let m = MockMmio::new(4096).unwrap();
    b.bench(|| m.read(black_box(0x40), Width::U32).unwrap());
}

#[divan::bench]
fn host_write_u32_logged(b: Bencher) {
    let m = MockMmio::new(4096).unwrap();
    m.set_logging(true);
    b.bench(|| m.write(black_box(0x40), Width::U32, black_box(7)).unwrap());
}

#[divan::bench]
fn host_write_u32_hooked(b: Bencher) {
    let m = MockMmio::new(4096).unwrap();
    m.on_write(0x40, WriteAction::Store).unwrap();
    b.bench(|| m.write(black_box(0x40), Width::U32, black_box(7)).unwrap());
}

#[divan::bench]
fn device_write_u16(b: Bencher) {
    let m = MockMmio::new(4096).unwrap();
    b.bench(|| m.device_write(black_box(0x42), Width::U16, black_box(7)).unwrap());
}

#[divan::bench]
fn device_read_u64(b: Bencher) {
    let m = MockMmio::new(4096).unwrap();
    b.bench(|| m.device_read(black_box(0x40), Width::U64).unwrap());
}
