//! Every launch of every bundle (examples/ and ../shared/bundles/), run in order through the
//! interpreter from the manifest's metadata alone, reproduces the bundle's expected outputs
//! within |got − expected| ≤ 1e-5 + 1e-4·|expected|.

mod common;

#[test]
fn every_bundle_matches_expected_outputs() {
    let mut bundles = 0;
    for dir in common::bundle_dirs() {
        let mut b = common::load_bundle(&dir);
        if b.programs.iter().all(|p| p.is_none()) {
            continue; // no a630 objects in this bundle
        }
        let mut interp = hcq_ir3::exec::Interp::new();
        let stats = common::run_all(&mut b, &mut interp).unwrap_or_else(|e| panic!("{e}"));
        let d = common::compare(&dir, &b);
        eprintln!(
            "{}: {} outputs ({} bit-identical), largest |got-exp| = {:.3e} (expected {}, got {}), {} lane-instructions",
            dir.display(),
            d.n,
            d.exact,
            d.max,
            d.at_expected,
            d.at_got,
            stats.lane_instructions
        );
        assert!(d.n > 0);
        assert!(
            d.worst_excess <= 0.0,
            "{}: an output exceeds the tolerance by {:e} (largest deviation {:e})",
            dir.display(),
            d.worst_excess,
            d.max
        );
        bundles += 1;
    }
    // 4 sample bundles in examples/ (wide included) + 3 in ../shared/bundles
    assert!(bundles >= 7, "only {bundles} bundles with a630 programs ran");
}

/// A dispatch run as parts (`Interp::run_groups` over consecutive ranges, a fresh interpreter
/// for each part, as a caller spreading work-groups over threads does) writes the same bytes
/// and counts the same statistics as the whole run (the wide bundle: several launches of many
/// work-groups each).
#[test]
fn run_groups_in_parts_equals_the_whole_dispatch() {
    let dir = common::repo_root().join("examples/wide");
    let mut whole = common::load_bundle(&dir);
    let mut parts = common::load_bundle(&dir);
    let launches = common::launches(&whole);
    let mut interp = hcq_ir3::exec::Interp::new();
    for l in &launches {
        let prog = whole.programs[l.program].as_ref().unwrap();
        let d = hcq_ir3::exec::Dispatch { consts: &l.consts, grid: l.grid, local: l.local };
        let want = interp.run(prog, &d, &mut whole.mem).unwrap();
        let n = d.groups();
        assert!(n > 1, "{}: one work-group", l.name);
        let mut got = hcq_ir3::exec::Stats::default();
        for r in [0..n / 3, n / 3..n / 3, n / 3..n - 1, n - 1..n] {
            let s = hcq_ir3::exec::Interp::new().run_groups(prog, &d, Default::default(), &mut parts.mem, r).unwrap();
            got.steps += s.steps;
            got.lane_instructions += s.lane_instructions;
        }
        assert_eq!(got, want, "{}", l.name);
    }
    assert_eq!(whole.mem.bufs, parts.mem.bufs);
    let prog = whole.programs[launches[0].program].as_ref().unwrap();
    let l = &launches[0];
    let d = hcq_ir3::exec::Dispatch { consts: &l.consts, grid: l.grid, local: l.local };
    let beyond = interp.run_groups(prog, &d, Default::default(), &mut whole.mem, 0..d.groups() + 1);
    assert_eq!(beyond, Err(hcq_ir3::exec::ExecError::BadDispatch("work-group range beyond the grid")));
}

/// Every launch of every bundle (the benchmark bundles too) writes the same bytes and counts the
/// same statistics with small work-groups packed into shared waves as with each work-group in
/// waves of its own (`Interp::pack`), and at least one of them packs.
#[test]
fn packed_work_groups_equal_one_by_one_on_every_bundle() {
    let mut dirs = common::bundle_dirs();
    dirs.extend(["benches/bundles/convnet", "benches/bundles/matmul"].map(|d| common::repo_root().join(d)));
    let mut packed = 0;
    for dir in dirs {
        let mut a = common::load_bundle(&dir);
        if a.programs.iter().all(|p| p.is_none()) {
            continue;
        }
        let mut b = common::load_bundle(&dir);
        let mut on = hcq_ir3::exec::Interp::new();
        let mut off = hcq_ir3::exec::Interp::new();
        off.pack = false;
        for l in common::launches(&a) {
            let prog = a.programs[l.program].clone().unwrap();
            let d = hcq_ir3::exec::Dispatch { consts: &l.consts, grid: l.grid, local: l.local };
            let fibers = l.local.iter().map(|&v| u64::from(v)).product();
            packed += usize::from(hcq_ir3::exec::groups_per_wave(&prog, fibers) > 1);
            let x = on.run(&prog, &d, &mut a.mem);
            let y = off.run(&prog, &d, &mut b.mem);
            assert_eq!(x, y, "{} {}", dir.display(), l.name);
            assert!(a.mem.bufs == b.mem.bufs, "{} {}: packed run wrote different bytes", dir.display(), l.name);
        }
    }
    assert!(packed >= 5, "only {packed} launches packed work-groups");
}
