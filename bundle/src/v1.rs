//! Import of the `tg-cpu-bundle` interchange directory (a `manifest.json` plus one file per
//! object, buffer and expected output), as tinygrad's exporter writes it: version 1 (one graph
//! at the manifest's top level) and version 2 (`graphs`, one per target, each with the tables of
//! version 1, indices relative to the graph; see [`VERSION_GRAPHS`]). Image views
//! (`{width, height, pitch, format}`) are read in both: per launch argument
//! (`launches[].args[j].image`, the view that launch binds) and per buffer (`buffers[].image`,
//! older bundles: the view of an image binding whose argument names none).
//!
//! [`import_dir`] reads the manifest, refuses another `format` or `version`
//! ([`Error::Unsupported`]), loads every file the manifest names (only plain relative names
//! inside the directory: `..` or absolute paths are refused), checks each `sha256` and, for
//! objects, `nbytes` where the manifest gives them (a mismatch is an [`Error::Mismatch`] naming
//! the file); a buffer's data file and an output's expected file must be exactly `nbytes` long
//! (a shorter one is an [`Error::Mismatch`] naming the file, its length and the nbytes; a longer
//! one is refused before it is read), and it ends with [`BundleModel::validate`]. Errors name the manifest field
//! (`"manifest.json: launches[3].args[1].offset: ..."`).
//!
//! What the importer assumes where the manifest is silent:
//! - no `arch_levels` (older bundles): both levels are `None`, i.e. the objects are treated as
//!   built for the exporting machine only, like `"native"`;
//! - no `expected_from`: `x86_64` (the only producer of v1 expected outputs);
//! - no `programs[].objects` (older bundles): the top-level `file`/`sha256`/`nbytes` are the
//!   x86-64 object; object keys other than `x86_64`, `aarch64`, `adreno_a630` are ignored;
//! - no `adreno` / `adreno_a630` / `gpu_*` fields (bundles exported without the GPU option):
//!   those parts are `None`;
//! - no `outs`/`ins`: empty lists (they are informational); they are sorted and deduplicated;
//! - `vars` entries may be names or objects with a `name` field; signature `name` may be null;
//! - no `file` on an output: no expected bytes.
//!
//! Everything else the format lists for running a bundle is required, and every other field
//! (`toolchain`, `calling_convention`, `display_name`, `source_file`, ...) is ignored.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::path::{Component, Path};

use serde_json::Value;
use sha2::{Digest, Sha256};

use alloc::collections::BTreeMap;

use super::model::{
    ArchLevels, ArgImage, Buffer, BundleModel, GpuLaunch, Graph, Image, Input, KernelLaunch, Launch, Objects, Output,
    Param, Program, Span,
};
use super::{Arch, ArgView, BufferRole, GraphTarget};
use hcq::dtype::DType;
use hcq::error::{Error, Result, ResultExt};

/// The manifest's file name.
pub const MANIFEST: &str = "manifest.json";
/// The `format` this importer reads.
pub const FORMAT: &str = "tg-cpu-bundle";
/// The oldest `version` this importer reads (one graph, at the manifest's top level).
pub const VERSION: u64 = 1;
/// The newest `version` this importer reads: `graphs`, one per target, each with its own
/// `buffers`, `inputs`, `outputs`, `programs` and `launches` (indices relative to the graph),
/// a `target` (`"cpu"`, `"qcom"`, `"any"`), a `name` and an `expected_from`; buffers of two
/// graphs may name the same file (weights stored once), with the same `nbytes` and `dtype`.
pub const VERSION_GRAPHS: u64 = 2;
/// Largest `manifest.json` the importer reads (the JSON tree takes several times the file).
pub const MAX_MANIFEST_BYTES: u64 = 64 << 20;

/// A JSON value with its path in the manifest, for error messages.
struct Node<'v> {
    value: &'v Value,
    path: String,
}

fn field_error(path: &str, reason: &'static str) -> Error {
    Error::Malformed { what: "bundle manifest field", at: 0, reason }.context(format!("{MANIFEST}: {path}"))
}

impl<'v> Node<'v> {
    fn child(&self, key: &str, value: &'v Value) -> Node<'v> {
        let path = if self.path.is_empty() { key.to_string() } else { format!("{}.{key}", self.path) };
        Node { value, path }
    }

    /// An optional field: `None` when missing or `null`.
    fn opt(&self, key: &str) -> Option<Node<'v>> {
        match self.value.get(key) {
            None | Some(Value::Null) => None,
            Some(v) => Some(self.child(key, v)),
        }
    }

    /// A required field.
    fn get(&self, key: &str) -> Result<Node<'v>> {
        if !self.value.is_object() {
            return Err(field_error(&self.path, "wrong type (expected an object)"));
        }
        self.opt(key).ok_or_else(|| field_error(&self.child(key, &Value::Null).path, "missing required field"))
    }

    fn u64(&self) -> Result<u64> {
        self.value.as_u64().ok_or_else(|| field_error(&self.path, "wrong type (expected an unsigned integer)"))
    }

    fn u32(&self) -> Result<u32> {
        u32::try_from(self.u64()?).map_err(|_| field_error(&self.path, "value does not fit 32 bits"))
    }

    fn i64(&self) -> Result<i64> {
        self.value.as_i64().ok_or_else(|| field_error(&self.path, "wrong type (expected an integer)"))
    }

    fn str(&self) -> Result<&'v str> {
        self.value.as_str().ok_or_else(|| field_error(&self.path, "wrong type (expected a string)"))
    }

    fn array(&self) -> Result<Vec<Node<'v>>> {
        let items = self.value.as_array().ok_or_else(|| field_error(&self.path, "wrong type (expected an array)"))?;
        Ok(items.iter().enumerate().map(|(i, v)| Node { value: v, path: format!("{}[{i}]", self.path) }).collect())
    }

    fn dtype(&self) -> Result<DType> {
        let name = self.str()?;
        DType::from_name(name).with_context(|| format!("{MANIFEST}: {}: dtype {name:?}", self.path))
    }

    fn u64_list(&self) -> Result<Vec<u64>> {
        self.array()?.iter().map(Node::u64).collect()
    }

    fn u32_list(&self) -> Result<Vec<u32>> {
        self.array()?.iter().map(Node::u32).collect()
    }

    fn dims3(&self) -> Result<[u32; 3]> {
        match self.u32_list()?.as_slice() {
            &[x, y, z] => Ok([x, y, z]),
            _ => Err(field_error(&self.path, "expected exactly three sizes")),
        }
    }

    fn view(&self) -> Result<ArgView> {
        Ok(ArgView {
            buffer: self.get("buffer")?.u32()?,
            offset: self.get("offset")?.u64()?,
            nbytes: self.get("nbytes")?.u64()?,
            dtype: self.get("dtype")?.dtype()?,
        })
    }

    /// An image view `{width, height, pitch, format}` (`buffers[].image`, `launches[].args[j].image`).
    fn image(&self) -> Result<Image> {
        Ok(Image {
            width: self.get("width")?.u32()?,
            height: self.get("height")?.u32()?,
            pitch: self.get("pitch")?.u32()?,
            format: self.get("format")?.dtype()?,
        })
    }

    /// `id`, when present, must equal the list position.
    fn check_id(&self, index: usize) -> Result<()> {
        if let Some(id) = self.opt("id")
            && id.u64()? != index as u64
        {
            return Err(field_error(&id.path, "id is not the entry's position in its list"));
        }
        Ok(())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn first_u64(bytes: &[u8]) -> u64 {
    let mut head = [0u8; 8];
    for (d, s) in head.iter_mut().zip(bytes) {
        *d = *s;
    }
    u64::from_be_bytes(head)
}

fn parse_sha256(node: &Node<'_>) -> Result<[u8; 32]> {
    let s = node.str()?;
    let mut out = [0u8; 32];
    if s.len() != 64 || !s.is_ascii() {
        return Err(field_error(&node.path, "sha256 must be 64 hex digits"));
    }
    for (i, byte) in out.iter_mut().enumerate() {
        let pair = s.get(2 * i..2 * i + 2).unwrap_or("");
        *byte = u8::from_str_radix(pair, 16).map_err(|_| field_error(&node.path, "sha256 must be 64 hex digits"))?;
    }
    Ok(out)
}

/// Read one bundle file: `name` must be a plain relative path inside `dir`, and the file a
/// regular file inside it ([`read_regular`]: a link that leads out of the directory, a FIFO or a
/// device is refused before it is opened). Its length comes from the file system first: longer
/// than `max_len` (what the manifest says the file may hold) is refused by `too_long` without
/// reading a byte, and the memory for it is reserved fallibly, so a huge file is an error, never
/// an allocation abort.
fn read_file(
    dir: &Path,
    name: &str,
    field: &str,
    max_len: Option<u64>,
    too_long: impl FnOnce(u64) -> Error,
) -> Result<Vec<u8>> {
    let rel = Path::new(name);
    if name.is_empty() || !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(Error::Malformed {
            what: "bundle file name",
            at: 0,
            reason: "must be a relative path inside the bundle directory",
        }
        .context(format!("{MANIFEST}: {field}: {name:?}")));
    }
    let path = dir.join(rel);
    let mut too_long_len = None;
    read_regular(&path, Some(dir), |len| match max_len {
        Some(max) if len > max => {
            too_long_len = Some(len);
            Err(too_long(len))
        }
        _ => Ok(()),
    })
    .map_err(|e| match too_long_len {
        Some(len) => e.context(format!("{MANIFEST}: {field}: file {name} has {len} bytes")),
        None => e.context(format!("{MANIFEST}: {field}: file {name}")),
    })
}

/// Read the file at `path` the way every bundle file is read: only a **regular** file (a FIFO,
/// whose open blocks, a device such as `/dev/zero`, which never ends, a socket or a directory is
/// refused from its metadata, before it is opened); with `within`, the file the path leads to
/// must lie inside that directory once every link is resolved (a symbolic link out of a bundle
/// directory is refused); `check_len` sees the length the file system states before a byte is
/// read (to refuse what is longer than the caller allows), the memory for it is reserved
/// fallibly ([`Error::OutOfMemory`], never an abort), and at most that many bytes are read: a
/// file that grows while it is read is refused.
pub fn read_regular(path: &Path, within: Option<&Path>, check_len: impl FnOnce(u64) -> Result<()>) -> Result<Vec<u8>> {
    use std::io::Read;
    let os = |e: std::io::Error| {
        Error::Os { what: "read bundle file", errno: e.raw_os_error().unwrap_or(0) }
            .context(format!("{}: {e}", path.display()))
    };
    if let Some(dir) = within {
        let (real, root) = (path.canonicalize().map_err(os)?, dir.canonicalize().map_err(os)?);
        if !real.starts_with(&root) {
            return Err(Error::Malformed {
                what: "bundle file",
                at: 0,
                reason: "a symbolic link out of the bundle directory",
            }
            .context(format!("{} leads to {}", path.display(), real.display())));
        }
    }
    let meta = std::fs::metadata(path).map_err(os)?;
    if !meta.is_file() {
        return Err(Error::Malformed {
            what: "bundle file",
            at: 0,
            reason: "not a regular file (a directory, FIFO, socket or device)",
        }
        .context(path.display().to_string()));
    }
    let mut file = std::fs::File::open(path).map_err(os)?;
    let meta = file.metadata().map_err(os)?;
    if !meta.is_file() {
        return Err(Error::Malformed {
            what: "bundle file",
            at: 0,
            reason: "replaced by a non-regular file while opened",
        }
        .context(path.display().to_string()));
    }
    let len = meta.len();
    check_len(len)?;
    let mut bytes = Vec::new();
    usize::try_from(len).ok().and_then(|n| bytes.try_reserve_exact(n).ok()).ok_or_else(|| {
        Error::OutOfMemory { device: hcq::error::device_name("host"), requested: len, used: 0 }
            .context(path.display().to_string())
    })?;
    hcq::allocator::advise_huge_pages(bytes.as_mut_ptr(), bytes.capacity());
    // One byte past the stated length tells a file that grew from one that did not.
    (&mut file).take(len.saturating_add(1)).read_to_end(&mut bytes).map_err(os)?;
    if bytes.len() as u64 != len {
        return Err(Error::Mismatch {
            what: "bundle file length while read vs its stated length",
            expected: len,
            found: bytes.len() as u64,
        }
        .context(path.display().to_string()));
    }
    Ok(bytes)
}

/// How long the file of a manifest entry may be, from one of the entry's own fields.
#[derive(Clone, Copy)]
enum Len<'k> {
    /// Exactly `entry.<key>` bytes (objects), when the entry has that field.
    Exact(&'k str),
    /// Exactly `entry.<key>` bytes, the key required (a buffer's starting data, an output's
    /// expected bytes): longer is refused before reading, shorter after (a truncated file would
    /// leave a buffer's tail zero, or make a check compare fewer bytes).
    Full(&'k str),
}

/// Load the file that `entry.file_key` names, checking its length against `len` (from the file
/// system, before reading it) and `entry.sha256`.
fn load(dir: &Path, entry: &Node<'_>, file_key: &str, len: Len<'_>) -> Result<Vec<u8>> {
    let file = entry.get(file_key)?;
    let name = file.str()?;
    let (key, exact) = match len {
        Len::Exact(k) => (k, true),
        Len::Full(k) => (k, false),
    };
    let size_node = if exact { entry.opt(key) } else { Some(entry.get(key)?) };
    let want = match &size_node {
        Some(n) => Some(n.u64()?),
        None => None,
    };
    let bytes = read_file(dir, name, &file.path, want, |found| match exact {
        true => Error::Mismatch { what: "bundle file size", expected: want.unwrap_or(0), found },
        false => {
            Error::OutOfBounds { what: "bundle file vs its nbytes", offset: 0, len: found, limit: want.unwrap_or(0) }
        }
    })?;
    if let (Some(want), Some(size)) = (want, &size_node)
        && want != bytes.len() as u64
    {
        let what = if exact { "bundle file size" } else { "bundle file length vs its nbytes (a truncated file)" };
        return Err(Error::Mismatch { what, expected: want, found: bytes.len() as u64 }.context(format!(
            "{MANIFEST}: {}: file {name} has {} bytes, nbytes says {want}",
            size.path,
            bytes.len()
        )));
    }
    if let Some(sha) = entry.opt("sha256") {
        let want = parse_sha256(&sha)?;
        let found: [u8; 32] = Sha256::digest(&bytes).into();
        if want != found {
            return Err(Error::Mismatch {
                what: "bundle file sha256",
                expected: first_u64(&want),
                found: first_u64(&found),
            }
            .context(format!(
                "{MANIFEST}: {}: file {name} has sha256 {}, the manifest says {}",
                sha.path,
                hex(&found),
                hex(&want)
            )));
        }
    }
    Ok(bytes)
}

/// Import the v1 bundle in directory `path` (see the module docs for every check and default).
pub fn import_dir(path: impl AsRef<Path>) -> Result<BundleModel> {
    let dir = path.as_ref();
    import(dir).with_context(|| format!("bundle {}", dir.display()))
}

fn import(dir: &Path) -> Result<BundleModel> {
    let text = read_file(dir, MANIFEST, MANIFEST, Some(MAX_MANIFEST_BYTES), |len| Error::LimitExceeded {
        what: "manifest.json size (bytes)",
        value: len,
        limit: MAX_MANIFEST_BYTES,
    })?;
    let value: Value = serde_json::from_slice(&text).map_err(|e| {
        Error::Malformed { what: "bundle manifest", at: e.line() as u64, reason: "not valid JSON" }
            .context(format!("{MANIFEST}: {e}"))
    })?;
    let root = Node { value: &value, path: String::new() };
    let format = root.get("format")?.str()?;
    if format != FORMAT {
        return Err(Error::Unsupported { what: "bundle format (this importer reads tg-cpu-bundle)", value: 0 }
            .context(format!("{MANIFEST}: format {format:?}")));
    }
    let version = root.get("version")?.u64()?;
    if version != VERSION && version != VERSION_GRAPHS {
        return Err(Error::Unsupported { what: "tg-cpu-bundle version (this importer reads 1 and 2)", value: version }
            .context(MANIFEST));
    }

    let levels = root.opt("arch_levels");
    let level = |arch: Arch| -> Result<Option<String>> {
        match levels.as_ref().and_then(|l| l.opt(arch.name())) {
            Some(n) => Ok(Some(n.str()?.to_string())),
            None => Ok(None),
        }
    };
    let expected_from = match root.opt("expected_from") {
        Some(n) => Arch::from_name(n.str()?).with_context(|| format!("{MANIFEST}: {}", n.path))?,
        None => Arch::X86_64,
    };

    let mut t = Tables::default();
    let mut graphs = Vec::new();
    let mut files = BTreeMap::new();
    if version == VERSION {
        tables(dir, &root, &mut t, &mut files)?;
    } else {
        for node in root.get("graphs")?.array()? {
            let before = t.counts();
            tables(dir, &node, &mut t, &mut files)?;
            let after = t.counts();
            let span = |k: usize| Span { first: before[k], len: after[k] - before[k] };
            let target = node.get("target")?;
            graphs.push(Graph {
                name: node.get("name")?.str()?.to_string(),
                target: GraphTarget::from_name(target.str()?)
                    .with_context(|| format!("{MANIFEST}: {}", target.path))?,
                expected_from: match node.opt("expected_from") {
                    Some(n) => Arch::from_name(n.str()?).with_context(|| format!("{MANIFEST}: {}", n.path))?,
                    None => expected_from,
                },
                buffers: span(0),
                inputs: span(1),
                outputs: span(2),
                programs: span(3),
                launches: span(4),
            });
        }
        if graphs.is_empty() {
            return Err(field_error("graphs", "a version 2 bundle needs at least one graph"));
        }
    }
    let Tables { buffers, inputs, outputs, programs, launches } = t;
    let model = BundleModel {
        name: root.get("model")?.str()?.to_string(),
        format_version: version as u32,
        tinygrad_version: root.get("tinygrad_version")?.str()?.to_string(),
        arch_levels: ArchLevels { x86_64: level(Arch::X86_64)?, aarch64: level(Arch::Aarch64)? },
        expected_from,
        buffers,
        inputs,
        outputs,
        programs,
        launches,
        graphs,
    };
    model.validate()?;
    Ok(model)
}

/// The tables of one graph, appended to the whole model's.
#[derive(Default)]
struct Tables {
    buffers: Vec<Buffer>,
    inputs: Vec<Input>,
    outputs: Vec<Output>,
    programs: Vec<Program>,
    launches: Vec<Launch>,
}

impl Tables {
    fn counts(&self) -> [u32; 5] {
        let n = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
        [
            n(self.buffers.len()),
            n(self.inputs.len()),
            n(self.outputs.len()),
            n(self.programs.len()),
            n(self.launches.len()),
        ]
    }
}

fn prefix(node: &Node<'_>) -> String {
    if node.path.is_empty() { String::new() } else { format!("{}.", node.path) }
}

/// Read the `buffers`, `inputs`, `outputs`, `programs` and `launches` of `root` (the manifest, or
/// one of its `graphs`) into `t`; `files` remembers every buffer file read (its `nbytes`, dtype and
/// buffer), so a file two graphs share is read once.
fn tables(
    dir: &Path,
    root: &Node<'_>,
    t: &mut Tables,
    files: &mut BTreeMap<String, (u64, DType, usize)>,
) -> Result<()> {
    for (i, b) in root.get("buffers")?.array()?.iter().enumerate() {
        b.check_id(i)?;
        let role_node = b.get("role")?;
        let role =
            BufferRole::from_name(role_node.str()?).with_context(|| format!("{MANIFEST}: {}", role_node.path))?;
        let nbytes = b.get("nbytes")?.u64()?;
        let dtype = b.get("dtype")?.dtype()?;
        let initial = match b.opt("file") {
            Some(f) => {
                let name = f.str()?.to_string();
                match files.get(&name) {
                    Some(&(n, dt, _)) if (n, dt) != (nbytes, dtype) => {
                        return Err(Error::Mismatch {
                            what: "bundle file shared by two buffers (weights stored once) with different nbytes",
                            expected: n,
                            found: nbytes,
                        }
                        .context(format!("{MANIFEST}: {}: file {name}", f.path)));
                    }
                    Some((_, _, k)) => t.buffers.get(*k).and_then(|b: &Buffer| b.initial.clone()),
                    None => {
                        let data = load(dir, b, "file", Len::Full("nbytes"))?;
                        files.insert(name, (nbytes, dtype, t.buffers.len()));
                        Some(data)
                    }
                }
            }
            None if matches!(role, BufferRole::Input | BufferRole::Weight) => {
                return Err(field_error(&format!("{}.file", b.path), "input and weight buffers need a file"));
            }
            None => None,
        };
        let image = b.opt("image").map(|im| im.image()).transpose()?;
        t.buffers.push(Buffer {
            nbytes,
            dtype,
            role,
            also_output: match b.opt("also_output") {
                Some(n) => n.value.as_bool().ok_or_else(|| field_error(&n.path, "wrong type (expected a boolean)"))?,
                None => false,
            },
            initial,
            image,
        });
    }

    let mut inputs = Vec::new();
    for t in root.get("inputs")?.array()? {
        let input = Input { view: t.view()?, shape: t.get("shape")?.u64_list()? };
        inputs.push((t.get("index")?.u64()?, input));
    }
    t.inputs.extend(in_index_order(inputs, &format!("{}inputs", prefix(root)))?);
    let mut outputs = Vec::new();
    for t in root.get("outputs")?.array()? {
        let expected = match t.opt("file") {
            Some(_) => Some(load(dir, &t, "file", Len::Full("nbytes"))?),
            None => None,
        };
        let output = Output { view: t.view()?, shape: t.get("shape")?.u64_list()?, expected };
        outputs.push((t.get("index")?.u64()?, output));
    }
    t.outputs.extend(in_index_order(outputs, &format!("{}outputs", prefix(root)))?);

    for (i, p) in root.get("programs")?.array()?.iter().enumerate() {
        p.check_id(i)?;
        t.programs.push(program(dir, p)?);
    }
    for l in root.get("launches")?.array()? {
        t.launches.push(launch(&l)?);
    }
    Ok(())
}

/// Order entries by their `index`, which must be exactly `0..n`.
fn in_index_order<T>(mut entries: Vec<(u64, T)>, list: &str) -> Result<Vec<T>> {
    entries.sort_by_key(|(index, _)| *index);
    for (position, (index, _)) in entries.iter().enumerate() {
        if *index != position as u64 {
            return Err(field_error(list, "indices must be 0..n without gaps or repeats"));
        }
    }
    Ok(entries.into_iter().map(|(_, t)| t).collect())
}

fn program(dir: &Path, p: &Node<'_>) -> Result<Program> {
    let n_buffer_args = p.get("n_buffer_args")?.u32()?;
    let mut signature = Vec::new();
    for (j, s) in p.get("signature")?.array()?.iter().enumerate() {
        signature.push(Param {
            name: match s.opt("name") {
                Some(n) => Some(n.str()?.to_string()),
                None => None,
            },
            slot: s.get("slot")?.u32()?,
            dtype: s.get("dtype")?.dtype()?,
            shape: match s.opt("shape") {
                Some(n) => n.u64_list()?,
                None => Vec::new(),
            },
            is_buffer: (j as u64) < n_buffer_args as u64,
        });
    }
    let mut vars = Vec::new();
    for v in p.get("vars")?.array()? {
        let name = match v.value {
            Value::String(s) => s.as_str(),
            Value::Object(_) => v.get("name")?.str()?,
            _ => return Err(field_error(&v.path, "wrong type (expected a name or an object with a name)")),
        };
        vars.push(name.to_string());
    }
    let mut objects = Objects::default();
    match p.opt("objects") {
        Some(objs) => {
            let map =
                objs.value.as_object().ok_or_else(|| field_error(&objs.path, "wrong type (expected an object)"))?;
            for (key, value) in map {
                let Ok(arch) = Arch::from_name(key) else { continue };
                let entry = objs.child(key, value);
                objects.set(arch, Some(load(dir, &entry, "file", Len::Exact("nbytes"))?));
            }
        }
        None => objects.x86_64 = Some(load(dir, p, "file", Len::Exact("nbytes"))?),
    }
    let adreno = match p.opt("adreno") {
        Some(a) => Some(serde_json::to_vec(a.value).map_err(|_| field_error(&a.path, "cannot re-encode as JSON"))?),
        None => None,
    };
    Ok(Program {
        name: p.get("name")?.str()?.to_string(),
        symbol: p.get("symbol")?.str()?.to_string(),
        signature,
        n_buffer_args,
        vars,
        core_id_arg: p.opt("core_id_arg").map(|n| n.u32()).transpose()?,
        objects,
        adreno,
    })
}

fn sorted_indices(node: Option<Node<'_>>) -> Result<Vec<u32>> {
    let mut list = match node {
        Some(n) => n.u32_list()?,
        None => Vec::new(),
    };
    list.sort_unstable();
    list.dedup();
    Ok(list)
}

fn launch(l: &Node<'_>) -> Result<Launch> {
    let kind = l.get("kind")?;
    match kind.str()? {
        "kernel" => {
            let mut vals = Vec::new();
            for v in l.get("vals")?.array()? {
                vals.push(if v.value.is_null() { None } else { Some(v.i64()?) });
            }
            let gpu = match l.opt("gpu_global_size") {
                Some(g) => Some(GpuLaunch {
                    global_size: g.dims3()?,
                    local_size: l.get("gpu_local_size")?.dims3()?,
                    vals: match l.opt("gpu_vals") {
                        Some(v) => v.array()?.iter().map(Node::i64).collect::<Result<_>>()?,
                        None => Vec::new(),
                    },
                }),
                None => None,
            };
            let mut args = Vec::new();
            let mut images = Vec::new();
            for (j, a) in l.get("args")?.array()?.iter().enumerate() {
                args.push(a.view()?);
                if let Some(im) = a.opt("image") {
                    let arg = u32::try_from(j).map_err(|_| field_error(&a.path, "too many arguments"))?;
                    images.push(ArgImage { arg, image: im.image()? });
                }
            }
            Ok(Launch::Kernel(KernelLaunch {
                program: l.get("program")?.u32()?,
                name: l.get("name")?.str()?.to_string(),
                global_size: l.get("global_size")?.dims3()?,
                local_size: l.get("local_size")?.dims3()?,
                args,
                vals,
                core_id_arg: l.opt("core_id_arg").map(|n| n.u32()).transpose()?,
                outs: sorted_indices(l.opt("outs"))?,
                ins: sorted_indices(l.opt("ins"))?,
                gpu,
                images,
            }))
        }
        "copy" => Ok(Launch::Copy { dst: l.get("dst")?.view()?, src: l.get("src")?.view()? }),
        other => Err(Error::Unsupported { what: "launch kind", value: 0 }
            .context(format!("{MANIFEST}: {}: {other:?}", kind.path))),
    }
}
