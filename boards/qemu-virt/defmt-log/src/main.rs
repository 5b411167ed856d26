//! `defmt-log ELF [FRAMES]`: decode the defmt frames of the QEMU `virt` image on the host.
//!
//! The image writes its defmt frames (rzcobs-encoded) through semihosting to a file next to its
//! ELF (`hcq-board-qemu-virt.defmt`); the strings and formats live in the ELF's `.defmt`
//! section. This reads both and prints one line per frame, as `defmt-print` does:
//!
//! ```text
//! 0.001882 INFO  boot: heap 267223040 bytes, 4 bundles embedded
//! ```
//!
//! It is `defmt-print` without its command-line, file-watching and serial-port parts (tokio,
//! serialport and libudev), built from defmt's own `defmt-decoder` library, so CI builds it in
//! the board's step instead of a `cargo install`. FRAMES defaults to the ELF's path with
//! `.defmt` appended to the file name. Exit status: 0 when every frame decoded, 1 when the ELF
//! has no usable defmt table, a file cannot be read, a frame is malformed (counted; rzcobs lets
//! the decoder resynchronise at the next frame) or the file ends inside a frame, 2 on bad usage.

use defmt_decoder::{DecodeError, Table};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What decoding a frame file found.
struct Decoded {
    /// One line per well-formed frame.
    lines: Vec<String>,
    /// Frames that did not decode.
    malformed: usize,
    /// The file ends inside a frame (each frame ends with a zero byte).
    cut_short: bool,
}

/// Decode `frames` (the image's frame file) with the defmt table of `elf`.
fn decode(elf: &[u8], frames: &[u8]) -> Result<Decoded, String> {
    let table = Table::parse(elf)
        .map_err(|e| format!("defmt table: {e:#}"))?
        .ok_or("the ELF has no .defmt section (not an image built with defmt)")?;
    let mut decoder = table.new_stream_decoder();
    decoder.received(frames);
    let mut out = Decoded { lines: Vec::new(), malformed: 0, cut_short: frames.last().is_some_and(|&b| b != 0) };
    loop {
        match decoder.decode() {
            Ok(frame) => {
                // `defmt-print`'s layout: timestamp, level padded to 5, message
                let mut line = String::new();
                if let Some(ts) = frame.display_timestamp() {
                    line = format!("{ts} ");
                }
                if let Some(level) = frame.level() {
                    line += &format!("{:<5} ", level.as_str().to_uppercase());
                }
                line += &frame.display_message().to_string();
                out.lines.push(line);
            }
            // the rest of the data is no whole frame (none, or a frame cut short)
            Err(DecodeError::UnexpectedEof) => break,
            Err(DecodeError::Malformed) if table.encoding().can_recover() => out.malformed += 1,
            Err(DecodeError::Malformed) => {
                out.malformed += 1;
                break;
            }
        }
    }
    Ok(out)
}

fn read(path: &Path, what: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{what} {}: {e}", path.display()))
}

fn main() -> ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let (elf_path, frames_path) = match args.as_slice() {
        [elf] => {
            let mut name = elf.file_name().unwrap_or_default().to_os_string();
            name.push(".defmt");
            (elf.clone(), elf.with_file_name(name))
        }
        [elf, frames] => (elf.clone(), frames.clone()),
        _ => {
            eprintln!("usage: defmt-log ELF [FRAMES]   (FRAMES defaults to ELF.defmt)");
            return ExitCode::from(2);
        }
    };
    let result = read(&elf_path, "ELF").and_then(|elf| {
        let frames = read(&frames_path, "frame file")?;
        decode(&elf, &frames).map_err(|e| format!("{}: {e}", elf_path.display()))
    });
    match result {
        Ok(d) => {
            for l in &d.lines {
                println!("{l}");
            }
            if d.cut_short {
                eprintln!("error: {}: the last frame is cut short (no zero byte at the end)", frames_path.display());
            }
            if d.malformed == 0 && !d.cut_short {
                ExitCode::SUCCESS
            } else if d.malformed == 0 {
                ExitCode::from(1)
            } else {
                eprintln!(
                    "error: {}: {} malformed frame(s) ({} decoded)",
                    frames_path.display(),
                    d.malformed,
                    d.lines.len()
                );
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
