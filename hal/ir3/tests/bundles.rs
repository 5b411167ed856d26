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
