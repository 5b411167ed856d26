//! `include/hcq.h` is what cbindgen generates from `ffi/capi/src/lib.rs` now: this test fails when
//! the checked-in header is stale. `HCQ_BLESS=1 cargo test -p hcq-ffi --test header` rewrites it.

use std::path::Path;

#[test]
fn the_checked_in_header_is_what_cbindgen_generates() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let header = crate_dir.join("../include/hcq.h");
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("ffi/cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir.join("capi/src/lib.rs"))
        .generate()
        .expect("cbindgen parses ffi/capi/src/lib.rs")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("UTF-8 header");
    if std::env::var_os("HCQ_BLESS").is_some() {
        std::fs::create_dir_all(header.parent().unwrap()).unwrap();
        std::fs::write(&header, &generated).unwrap();
        return;
    }
    let current = std::fs::read_to_string(&header).unwrap_or_default();
    assert!(
        current == generated,
        "include/hcq.h is stale: regenerate it with `HCQ_BLESS=1 cargo test -p hcq-ffi --test header` \
         (first differing line: {:?})",
        current.lines().zip(generated.lines()).find(|(a, b)| a != b)
    );
    for f in ["hcq_device_open", "hcq_model_load", "hcq_model_run", "hcq_model_bind_input", "hcq_last_error"] {
        assert!(generated.contains(f), "{f} missing from the header");
    }
}
