//! Steady state allocates nothing: once an `Interp` has run a bundle's launches, running them
//! again performs no heap allocation (a counting global allocator watches the second pass on the
//! test's thread: `hcq_testkit::counting_alloc`).

mod common;

use hcq_testkit::counting_alloc::{Counting, allocations_in};

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn second_pass_over_a_bundle_allocates_nothing() {
    for name in ["mlp", "elementwise", "chain100"] {
        let dir = common::repo_root().join("examples").join(name);
        let mut b = common::load_bundle(&dir);
        let launches = common::launches(&b);
        let mut it = hcq_ir3::exec::Interp::new();
        common::run_launches(&mut b, &launches, &mut it).unwrap();
        let (r, allocs) = allocations_in(|| common::run_launches(&mut b, &launches, &mut it));
        let stats = r.unwrap();
        assert!(stats.lane_instructions > 0);
        assert_eq!(allocs, 0, "{name}: allocations in the second pass");
    }
}
