//! a630 program validation: the copied bundle programs load; malformed or unsupported metadata
//! is refused with an error that names the problem.

mod common;

use common::*;
use hcq::Error;
use hcq_adreno::Program;
use hcq_adreno::program::Slot;
use serde_json::{Value, json};

fn meta() -> Value {
    serde_json::from_slice(&data("e_32_32_4.adreno.json")).unwrap()
}

fn load(m: &Value) -> hcq::Result<Program> {
    Program::from_json(&data("e_32_32_4.a630.bin"), &serde_json::to_vec(m).unwrap())
}

fn err_text(m: &Value) -> String {
    let e = load(m).unwrap_err();
    format!("{e} / {:?}", e.root())
}

#[test]
fn the_bundle_programs_validate() {
    let p = elementwise();
    assert_eq!(p.name, "E_32_32_4");
    assert_eq!((p.image.len(), p.code_units, p.entry), (896, 7, 0));
    assert_eq!(p.image[..], data("e_32_32_4.a630.bin")[3488..3488 + 896]);
    assert_eq!((p.load_vec4, p.const_block_bytes, p.max_threads, p.n_args, p.n_vals), (256, 4096, 1024, 3, 0));
    assert_eq!(p.slots[0], (0, Slot::Arg { arg: 0 }));
    assert_eq!(p.slots[3], (64, Slot::Imm { value: 1073741824 }));
    assert_eq!(p.regs.cntl_0.fullregfootprint(), 10);
    let r = reduction();
    assert_eq!(r.regs.cntl_1.shared_size(), 1);
    assert!(r.check_local([16, 1, 1]).is_ok());
}

#[test]
fn local_sizes_beyond_max_threads_are_refused() {
    let p = elementwise();
    assert!(p.check_local([1024, 1, 1]).is_ok());
    assert!(p.check_local([32, 32, 2]).is_err());
    assert!(p.check_local([0, 1, 1]).is_err());
    let mut m = meta();
    m["max_threads"] = json!(128);
    let p = load(&m).unwrap();
    assert!(p.check_local([256, 1, 1]).unwrap_err().to_string().contains("max_threads"));
}

#[test]
fn textures_and_ibos_are_not_supported_yet() {
    for k in ["tex_cnt", "ibo_cnt", "samp_cnt"] {
        let mut m = meta();
        m["descriptors"][k] = json!(1);
        let e = load(&m).unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }) && e.to_string().contains("not supported yet"), "{k}: {e}");
    }
}

#[test]
fn malformed_metadata_is_refused_with_its_reason() {
    type Edit = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        ("image past the blob", Box::new(|m| m["blob"]["image_offset"] = json!(4000)), "adreno blob image"),
        ("image size differs", Box::new(|m| m["image_size"] = json!(512)), "image_size"),
        ("units differ", Box::new(|m| m["instr_size_128"] = json!(8)), "instr_size_128"),
        ("entry outside", Box::new(|m| m["prg_offset"] = json!(896)), "prg_offset"),
        ("fregs disagree", Box::new(|m| m["fregs"] = json!(11)), "SP_CS_CNTL_0 disagrees"),
        ("fregs too wide", Box::new(|m| m["fregs"] = json!(64)), "FULLREGFOOTPRINT"),
        ("threadsize", Box::new(|m| m["threadsize"] = json!("THREAD32")), "threadsize"),
        ("register moved", Box::new(|m| m["regs"]["SP_CS_CONFIG"]["reg"] = json!(1)), "register database"),
        (
            "register missing",
            Box::new(|m| m["regs"].as_object_mut().unwrap().remove("SP_MODE_CNTL").map(|_| ()).unwrap()),
            "missing",
        ),
        (
            "const slot outside the block",
            Box::new(|m| m["consts"]["args"][2]["offset"] = json!(4096)),
            "outside the loaded constant block",
        ),
        ("slots overlap", Box::new(|m| m["consts"]["immediates"][0]["offset"] = json!(16)), "overlap"),
        ("misaligned arg", Box::new(|m| m["consts"]["args"][1]["offset"] = json!(12)), "8-byte aligned"),
        ("load_vec4 beyond the const RAM", Box::new(|m| m["consts"]["load_vec4"] = json!(512)), "CONSTANTRAMMODE"),
        ("max_threads 0", Box::new(|m| m["max_threads"] = json!(0)), "max_threads"),
        ("not a630", Box::new(|m| m["arch"] = json!("a740")), "a630"),
        ("private memory", Box::new(|m| m["pvtmem"] = json!(512)), "not supported yet"),
        ("wrong type", Box::new(|m| m["fregs"] = json!("ten")), "json"),
        ("shared memory too big", Box::new(|m| m["shmem"] = json!(65536)), "32 KiB"),
    ];
    for (name, f, want) in cases {
        let mut m = meta();
        f(&mut m);
        let t = err_text(&m);
        assert!(t.contains(want), "{name}: {t}");
    }
    assert!(Program::from_json(&[], b"{").is_err());
    assert!(Program::from_json(&[], b"[]").is_err());
}

#[test]
fn the_constant_block_is_filled_as_the_program_says() {
    let p = elementwise();
    let mut block = vec![0xffu8; p.const_block_bytes as usize];
    p.fill_consts(&mut block, &[0x1_0000_1000, 2, 3], &[], [32, 1, 1]).unwrap();
    assert_eq!(&block[..8], &0x1_0000_1000u64.to_le_bytes());
    assert_eq!(&block[64..68], &1073741824u32.to_le_bytes());
    assert!(block[88..].iter().all(|b| *b == 0), "the rest is zeroed");
    assert!(p.fill_consts(&mut block, &[1, 2], &[], [1; 3]).is_err(), "argument count");
    assert!(p.fill_consts(&mut block[..2048], &[1, 2, 3], &[], [1; 3]).is_err(), "block smaller than the GPU load");
}
