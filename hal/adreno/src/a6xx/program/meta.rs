//! The `programs[].adreno` metadata as the bundle writes it (serde types; unknown fields are
//! ignored), before [`Program::from_json`](super::Program::from_json) checks it.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use serde::Deserialize;
use serde::de::IgnoredAny;

/// The metadata as the bundle writes it (unknown fields are ignored).
#[derive(Clone, Debug, Deserialize)]
#[allow(missing_docs)]
pub struct Meta {
    pub arch: String,
    #[serde(default)]
    pub function_name: String,
    pub blob: BlobMeta,
    pub image_size: u32,
    pub instr_size_128: u32,
    pub prg_offset: u32,
    pub threadsize: String,
    pub fregs: u32,
    pub hregs: u32,
    pub branchstack: u32,
    pub pvtmem: u32,
    pub shmem: u32,
    pub hw_stack_offset: u32,
    pub stack_bytes: u64,
    pub shared_size: u32,
    pub max_threads: u32,
    pub pvtmem_size_per_item: u32,
    pub pvtmem_size_total: u32,
    /// Regid of the work-group id (shared registers), 0xfc for none.
    pub wgid: u32,
    /// Regid of the local invocation id (general registers), 0xfc for none.
    pub lid: u32,
    /// Constant id (dwords) of the work-group size, 0xfc for none.
    pub wgsz: u32,
    /// The GPU kernel's parameters, buffers first (`slot` = position).
    pub signature: Vec<SigMeta>,
    /// The integer parameters (the last `vars.len()` of the signature).
    pub vars: Vec<IgnoredAny>,
    pub consts: ConstsMeta,
    pub descriptors: DescriptorsMeta,
    pub regs: BTreeMap<String, RegValue>,
}

/// `adreno.blob`: where the parts of the blob lie.
#[derive(Clone, Debug, Deserialize)]
#[allow(missing_docs)]
pub struct BlobMeta {
    pub variant_offset: u64,
    pub variant_nbytes: u64,
    pub const_state_offset: u64,
    pub const_state_nbytes: u64,
    pub immediates_offset: u64,
    pub immediates_nbytes: u64,
    pub image_offset: u64,
    pub image_nbytes: u64,
}

/// One parameter of `adreno.signature`.
#[derive(Clone, Debug, Deserialize)]
#[allow(missing_docs)]
pub struct SigMeta {
    pub slot: u32,
    /// An image parameter (IMAGE-SCHEMA: `"image": true`, `shape` `[height, width, 4]`).
    #[serde(default)]
    pub image: bool,
    /// The element type (`float16`/`float32` for an image).
    #[serde(default)]
    pub dtype: Option<String>,
    #[serde(default)]
    pub shape: Option<serde_json::Value>,
}

/// One entry of `adreno.descriptors.images` (IMAGE-SCHEMA).
#[derive(Clone, Debug, Deserialize)]
#[allow(missing_docs)]
pub struct ImageMeta {
    /// The image parameter's signature slot.
    pub slot: u32,
    /// The launch argument it is (as `consts.args[].arg`); the slot when absent.
    #[serde(default)]
    pub arg: Option<u32>,
    pub texture: Option<u32>,
    pub ibo: Option<u32>,
    pub width: u32,
    pub height: u32,
    pub format: String,
    pub pitch: u32,
    pub tex_words: Option<[u32; 16]>,
    pub ibo_words: Option<[u32; 16]>,
}

/// `adreno.consts`.
#[derive(Clone, Debug, Deserialize)]
#[allow(missing_docs)]
pub struct ConstsMeta {
    pub kernarg_alloc_size: u32,
    pub load_vec4: u32,
    /// Byte offset of the buffer addresses.
    pub buf_off: u32,
    /// Where the immediates start (vec4).
    pub max_const_offset_vec4: u32,
    pub args: Vec<ArgMeta>,
    pub vals: Vec<ValMeta>,
    pub immediates: Vec<ImmMeta>,
    pub local_size_offset: Option<u32>,
}

/// A buffer address slot.
#[derive(Clone, Debug, Deserialize)]
#[allow(missing_docs)]
pub struct ArgMeta {
    pub arg: u32,
    /// Position of the buffer in the GPU signature.
    pub slot: u32,
    pub offset: u32,
    pub size: u32,
}

/// An integer argument slot.
#[derive(Clone, Debug, Deserialize)]
#[allow(missing_docs)]
pub struct ValMeta {
    pub offset: u32,
    pub size: u32,
}

/// An immediate constant.
#[derive(Clone, Debug, Deserialize)]
#[allow(missing_docs)]
pub struct ImmMeta {
    pub offset: u32,
    pub size: u32,
    pub value: u32,
}

/// `adreno.descriptors` counts.
#[derive(Clone, Debug, Deserialize)]
#[allow(missing_docs)]
pub struct DescriptorsMeta {
    pub tex_cnt: u32,
    pub ibo_cnt: u32,
    pub samp_cnt: u32,
    #[serde(default)]
    pub tex_off: u32,
    #[serde(default)]
    pub ibo_off: u32,
    #[serde(default)]
    pub samp_off: u32,
    #[serde(default)]
    pub images: Vec<ImageMeta>,
    #[serde(default)]
    pub sampler_words: Vec<[u32; 4]>,
}

/// One entry of `adreno.regs`.
#[derive(Clone, Copy, Debug, Deserialize)]
#[allow(missing_docs)]
pub struct RegValue {
    pub reg: u32,
    pub value: u32,
}

/// The last object key before `line`:`column` (1-based, serde_json's error position) of
/// `json`: the field an error is about, for the message ("" when there is none).
pub(super) fn json_key_before(json: &[u8], line: usize, column: usize) -> String {
    let mut at = 0usize;
    for _ in 1..line {
        match json[at..].iter().position(|&b| b == b'\n') {
            Some(p) => at += p + 1,
            None => break,
        }
    }
    let end = at.saturating_add(column).min(json.len());
    let head = &json[..end];
    // `"key":` — the colon after a closing quote, scanning back.
    let mut i = head.len();
    while i > 0 {
        i -= 1;
        if head[i] == b':' {
            let k = head[..i].iter().rposition(|&b| !b.is_ascii_whitespace());
            if let Some(q) = k.filter(|&q| head[q] == b'"')
                && let Some(open) = head[..q].iter().rposition(|&b| b == b'"')
            {
                return String::from_utf8_lossy(&head[open + 1..q]).into_owned();
            }
        }
    }
    String::new()
}
