//! Fuzz the `.hcqb` reader: `Hcqb::parse` must never panic, and a file it accepts must be
//! safe to walk through every accessor (every graph of a 2.0 file as well, its images, the
//! graph each architecture's device would run), unpack to a model that `validate()` accepts, and
//! repack to a file that parses to the same model.
//!
//! Seeds: the packed examples and `tests/data/bundles-bad/*.hcqb`. CRCs stop most random
//! inputs early; the `resealed_random_edits...` test in `tests/bundle.rs` covers edits with
//! fixed checksums on stable.
#![no_main]

use std::hint::black_box;

use hcq_bundle::hcqb::{self, Hcqb, LaunchRef};
use hcq_bundle::{Arch, inspect};
use libfuzzer_sys::fuzz_target;

fn walk(file: &Hcqb<'_>) {
    black_box((
        file.version(),
        file.source_version(),
        file.model_name(),
        file.tinygrad_version(),
        file.expected_from(),
    ));
    for arch in Arch::ALL {
        black_box(file.arch_level(arch));
    }
    for (i, p) in file.programs().enumerate() {
        black_box((p.name, p.symbol, p.n_buffer_args, p.core_id_arg, p.adreno, p.n_params()));
        for q in p.params() {
            black_box((q.name, q.slot, q.dtype, q.is_buffer, q.shape().sum::<u64>()));
        }
        black_box(p.vars().map(str::len).sum::<usize>());
        for arch in Arch::ALL {
            assert_eq!(file.object(i, arch), p.object(arch));
        }
    }
    assert!(file.program(file.n_programs()).is_none());
    for (i, b) in file.buffers().enumerate() {
        assert!(b.initial.map_or(0, <[u8]>::len) as u64 <= b.nbytes);
        assert_eq!(file.initial_data(i), b.initial);
    }
    for t in file.inputs().chain(file.outputs()) {
        black_box((t.view, t.expected, t.shape().product::<u64>()));
    }
    for l in file.launches() {
        match l {
            LaunchRef::Kernel(k) => {
                let p = file.program(k.program as usize).expect("a launch's program exists");
                assert_eq!(k.n_args(), p.n_buffer_args as usize);
                for a in k.args() {
                    let b = file.buffer(a.buffer as usize).expect("an argument's buffer exists");
                    assert!(a.offset.checked_add(a.nbytes).is_some_and(|end| end <= b.nbytes));
                }
                black_box((k.name, k.global_size, k.local_size, k.core_id_arg, k.arg(k.n_args())));
                black_box((k.vals().count(), k.outs().count(), k.ins().count()));
                if let Some(g) = k.gpu {
                    black_box((g.global_size, g.local_size, g.vals().sum::<i64>()));
                }
            }
            LaunchRef::Copy { dst, src } => {
                assert_eq!(dst.nbytes, src.nbytes);
                black_box((dst, src));
            }
        }
    }
    // 2.0: every graph is a file of its own that walks the same way; images stay inside their buffers
    for (g, info) in file.graphs().enumerate() {
        let view = file.graph_view(g).expect("a listed graph has a view");
        let [b, i, o, p, l] = info.counts;
        assert_eq!((view.n_buffers(), view.inputs().len(), view.outputs().len()), (b as usize, i as usize, o as usize));
        assert_eq!((view.n_programs(), view.n_launches()), (p as usize, l as usize));
        assert_eq!(view.view_of(), Some(g));
        walk(&view);
    }
    for b in file.buffers() {
        if let Some(im) = b.image {
            assert!(im.width > 0 && im.height > 0);
            assert!(u64::from(im.height) * u64::from(im.pitch) <= b.nbytes);
        }
    }
    // a graph picked for a device has that device's objects (a 1.x file has no graphs: it is its
    // own view, and the runner's pick_arch checks its objects)
    if file.graphs().next().is_some() {
        for arch in Arch::ALL {
            if let Ok(view) = file.for_archs(&[arch]) {
                assert!(view.programs().all(|p| p.object(arch).is_some()));
            }
        }
    }
    black_box(inspect(file).len());
}

fuzz_target!(|data: &[u8]| {
    let Ok(file) = Hcqb::parse(data) else { return };
    walk(&file);
    let model = file.to_model();
    if let Err(e) = model.validate() {
        panic!("parse accepted a file whose model is invalid: {e}");
    }
    let again = hcqb::write(&model).expect("a parsed model repacks");
    let reparsed = Hcqb::parse(&again).expect("a repacked file parses");
    assert_eq!(reparsed.to_model(), model);
});
