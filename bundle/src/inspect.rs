//! A human-readable summary of a packed bundle (what `hcq inspect` prints).

use alloc::string::String;
use alloc::vec;
use core::fmt::Write;

use super::hcqb::{Hcqb, LaunchRef};
use super::{Arch, ArgView};

/// How many launches [`inspect`] lists one by one.
pub const DEFAULT_LAUNCHES_LISTED: usize = 16;

/// Summarise `file`: header, programs (index, name, symbol, parameters, object sizes per
/// architecture), buffers (index, role, dtype, size), inputs and outputs, launches (count, per
/// program, the first [`DEFAULT_LAUNCHES_LISTED`]) and total sizes.
pub fn inspect(file: &Hcqb<'_>) -> String {
    inspect_with(file, DEFAULT_LAUNCHES_LISTED)
}

fn view(v: &ArgView) -> String {
    alloc::format!("buf{}[{:#x}..+{}] {}", v.buffer, v.offset, v.nbytes, v.dtype)
}

/// [`inspect`], listing at most `max_launches` launches individually.
pub fn inspect_with(file: &Hcqb<'_>, max_launches: usize) -> String {
    // `fmt::Write` into a `String` cannot fail; the results are ignored below for that reason.
    let mut s = String::new();
    let (major, minor) = file.version();
    let _ = writeln!(
        s,
        "bundle {:?}  (hcqb {major}.{minor}, from tg-cpu-bundle v{})",
        file.model_name(),
        file.source_version()
    );
    let _ = writeln!(s, "  tinygrad {}", file.tinygrad_version());
    for arch in [Arch::X86_64, Arch::Aarch64] {
        if !file.programs().any(|p| p.object(arch).is_some()) {
            let _ = writeln!(s, "  {arch}: no objects");
            continue;
        }
        let level = file.arch_level(arch).unwrap_or("unknown (runs only where it was exported)");
        let _ = writeln!(s, "  {arch} level: {level}");
    }
    let _ = writeln!(s, "  expected outputs from: {}", file.expected_from());
    if file.n_graphs() == 0 {
        graph_body(&mut s, file, max_launches, file.as_bytes().len());
        return s;
    }
    let _ = writeln!(s, "graphs: {}", file.n_graphs());
    for g in file.graphs() {
        let [b, i, o, p, l] = g.counts;
        let _ = writeln!(
            s,
            "  {} (target {}, expected outputs from {}): {p} programs, {l} launches, {b} buffers, {i} inputs, {o} outputs",
            g.name, g.target, g.expected_from
        );
    }
    for (k, g) in file.graphs().enumerate() {
        let Some(view) = file.graph_view(k) else { continue };
        let _ = writeln!(s, "graph {k} {} (target {}):", g.name, g.target);
        graph_body(&mut s, &view, max_launches, file.as_bytes().len());
    }
    s
}

/// The programs, buffers, inputs, outputs, launches and sizes of one graph (or of a file
/// without a graph table).
fn graph_body(s: &mut String, file: &Hcqb<'_>, max_launches: usize, file_bytes: usize) {
    let mut object_bytes = [0usize; Arch::ALL.len()];
    let _ = writeln!(s, "programs: {}", file.n_programs());
    for (i, p) in file.programs().enumerate() {
        let params: vec::Vec<String> = p
            .params()
            .map(|q| {
                let shape: vec::Vec<String> = q.shape().map(|d| alloc::format!("{d}")).collect();
                let kind = if q.is_buffer { "*" } else { "" };
                alloc::format!("{}{kind}[{}]", q.dtype, shape.join(","))
            })
            .collect();
        let _ = write!(s, "  [{i}] {} (symbol {}) args({})", p.name, p.symbol, params.join(", "));
        if let Some(c) = p.core_id_arg {
            let _ = write!(s, " core_id_arg={c}");
        }
        let _ = writeln!(s);
        let _ = write!(s, "      objects:");
        for (arch, bytes) in p.objects() {
            let _ = write!(s, " {arch}={}B", bytes.len());
            if let Some(total) = object_bytes.get_mut(arch.code() as usize) {
                *total += bytes.len();
            }
        }
        if let Some(meta) = p.adreno {
            let _ = write!(s, " (adreno metadata {}B)", meta.len());
        }
        let _ = writeln!(s);
    }

    let mut buffer_bytes = 0u64;
    let mut initial_bytes = 0usize;
    let _ = writeln!(s, "buffers: {}", file.n_buffers());
    for (i, b) in file.buffers().enumerate() {
        buffer_bytes = buffer_bytes.saturating_add(b.nbytes);
        let _ = write!(s, "  [{i}] {:<7} {:<8} {:>10} B", b.role.name(), b.dtype.name(), b.nbytes);
        if let Some(d) = b.initial {
            initial_bytes += d.len();
            let _ = write!(s, "  initial {}B", d.len());
        }
        if b.also_output {
            let _ = write!(s, "  also output");
        }
        if let Some(im) = b.image {
            let _ = write!(s, "  image {}x{} {} pitch {}B", im.width, im.height, im.format, im.pitch);
        }
        let _ = writeln!(s);
    }
    for (k, t) in file.inputs().enumerate() {
        let shape: vec::Vec<String> = t.shape().map(|d| alloc::format!("{d}")).collect();
        let _ = writeln!(s, "input {k}: {} shape [{}]", view(&t.view), shape.join(", "));
    }
    let mut expected_bytes = 0usize;
    for (k, t) in file.outputs().enumerate() {
        let shape: vec::Vec<String> = t.shape().map(|d| alloc::format!("{d}")).collect();
        let _ = write!(s, "output {k}: {} shape [{}]", view(&t.view), shape.join(", "));
        if let Some(e) = t.expected {
            expected_bytes += e.len();
            let _ = write!(s, "  expected {}B", e.len());
        }
        let _ = writeln!(s);
    }

    let mut per_program = vec![0usize; file.n_programs()];
    let mut copies = 0usize;
    for l in file.launches() {
        match l {
            LaunchRef::Kernel(k) => {
                if let Some(n) = per_program.get_mut(k.program as usize) {
                    *n += 1;
                }
            }
            LaunchRef::Copy { .. } => copies += 1,
        }
    }
    let _ = writeln!(s, "launches: {} ({} kernel, {copies} copy)", file.n_launches(), file.n_launches() - copies);
    for (p, n) in per_program.iter().enumerate() {
        let name = file.program(p).map_or("?", |p| p.name);
        let _ = writeln!(s, "  program [{p}] {name}: {n}");
    }
    for (i, l) in file.launches().take(max_launches).enumerate() {
        match l {
            LaunchRef::Kernel(k) => {
                let args: vec::Vec<String> = k
                    .args()
                    .enumerate()
                    .map(|(j, a)| match k.arg_image(j) {
                        Some(im) => alloc::format!(
                            "{} image {}x{} {} pitch {}B",
                            view(&a),
                            im.width,
                            im.height,
                            im.format,
                            im.pitch
                        ),
                        None => view(&a),
                    })
                    .collect();
                let _ = write!(s, "  #{i} [{}] {} global {:?}: {}", k.program, k.name, k.global_size, args.join(", "));
                let vals: vec::Vec<String> =
                    k.vals().map(|v| v.map_or(String::from("core_id"), |v| alloc::format!("{v}"))).collect();
                if !vals.is_empty() {
                    let _ = write!(s, " vals [{}]", vals.join(", "));
                }
                let _ = writeln!(s);
            }
            LaunchRef::Copy { dst, src } => {
                let _ = writeln!(s, "  #{i} copy {} <- {}", view(&dst), view(&src));
            }
        }
    }
    if file.n_launches() > max_launches {
        let _ = writeln!(s, "  ... {} more", file.n_launches() - max_launches);
    }

    let _ = write!(
        s,
        "sizes: file {}B, buffers {buffer_bytes}B (initial data {initial_bytes}B), expected {expected_bytes}B, objects",
        file_bytes
    );
    for arch in Arch::ALL {
        let _ = write!(s, " {arch}={}B", object_bytes.get(arch.code() as usize).copied().unwrap_or(0));
    }
    let _ = writeln!(s);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An architecture no program has objects for is said as such, not as an unknown level
    /// (a bundle of GPU objects only has no CPU level at all).
    #[test]
    fn an_architecture_without_objects_is_named_so() {
        let mut m = crate::testing::tiny();
        for p in &mut m.programs {
            p.objects.aarch64 = None;
        }
        let bytes = crate::hcqb::write(&m).unwrap();
        let text = inspect(&Hcqb::parse(&bytes).unwrap());
        assert!(text.contains("  aarch64: no objects\n"), "{text}");
        assert!(text.contains("  x86_64 level: x86-64-v2\n"), "{text}");
        assert!(!text.contains("unknown"), "{text}");
    }
}
