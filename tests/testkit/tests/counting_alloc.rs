//! The counting allocator counts what it should: the calling thread's allocations with
//! `allocations_in`, every thread's with `allocations_on_every_thread`.

use hcq_testkit::counting_alloc::{Counting, allocations_in, allocations_on_every_thread};
use std::hint::black_box;

#[global_allocator]
static GLOBAL: Counting = Counting;

fn a_vec_here_and_a_box_on_another_thread() {
    drop(black_box(Vec::<u64>::with_capacity(4)));
    std::thread::scope(|s| {
        s.spawn(|| drop(black_box(Box::new(1u64))));
    });
}

#[test]
fn the_calling_thread_s_allocations_and_no_other_s() {
    let ((), n) = allocations_in(|| drop(black_box(Vec::<u64>::with_capacity(4))));
    assert_eq!(n, 1);
    let (_, n) = allocations_in(|| black_box(3u64).count_ones());
    assert_eq!(n, 0, "no allocation, none counted");
    let (_, here) = allocations_in(a_vec_here_and_a_box_on_another_thread);
    let (_, everywhere) = allocations_on_every_thread(a_vec_here_and_a_box_on_another_thread);
    assert!(everywhere > here, "the other thread's box is counted only on every thread: {everywhere} vs {here}");
}
