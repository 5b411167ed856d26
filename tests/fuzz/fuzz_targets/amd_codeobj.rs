//! Fuzz the gfx1100 code-object loader and its listing: any bytes parse into a checked code
//! object or a `code object: ...` error, never a panic; a parsed one lists without a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match hcq_amd::codeobj::CodeObject::parse(data) {
        Ok(co) => {
            for k in &co.kernels {
                assert!(k.entry < co.image.len() && k.descriptor_at + 64 <= co.image.len());
            }
            let _ = hcq_amd::listing::Listing { co: &co, path: "fuzz" }.to_string();
        }
        Err(e) => assert!(e.to_string().starts_with("code object: ")),
    }
});
