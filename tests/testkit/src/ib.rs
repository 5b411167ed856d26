//! An indirect buffer of commands encoded one after another by a backend's [`Encoder`] (no
//! timeline wait and signal around them, as an [`hcq::queue::HwQueue`] has), with their marks:
//! for tests that submit raw command words to a device or a simulator.

use hcq::queue::{CmdWriter, Command, Encoder, Mark};
use std::sync::Arc;

/// Encoded commands and the marks of their patchable fields.
pub struct Ib {
    enc: Arc<dyn Encoder>,
    words: Vec<u32>,
    marks: Vec<Mark>,
    cmds: u32,
}

impl Ib {
    /// An empty buffer encoded by `enc`.
    pub fn new(enc: Arc<dyn Encoder>) -> Self {
        Self { enc, words: Vec::new(), marks: Vec::new(), cmds: 0 }
    }

    /// Encode `cmd` after the commands before it. On error nothing is appended.
    pub fn push(&mut self, cmd: Command) -> hcq::Result<()> {
        let (words, marks) = (self.words.len(), self.marks.len());
        if let Err(e) = self.enc.encode(&cmd, &mut CmdWriter::new(&mut self.words, &mut self.marks, self.cmds)) {
            self.words.truncate(words);
            self.marks.truncate(marks);
            return Err(e);
        }
        self.cmds += 1;
        Ok(())
    }

    /// The encoded words.
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    /// The marks of command `i` (the `i`-th pushed, from 0).
    pub fn marks(&self, i: u32) -> impl Iterator<Item = &Mark> {
        self.marks.iter().filter(move |m| m.cmd == i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hcq::queue::Field;
    use hcq::soft::{SoftEncoder, decode};

    #[test]
    fn commands_are_encoded_in_order_with_the_marks_of_each() {
        let mut ib = Ib::new(Arc::new(SoftEncoder));
        ib.push(Command::Signal { addr: 0x1000, value: 7 }).unwrap();
        ib.push(Command::Copy { dst: 0x2000, src: 0x3000, bytes: 64 }).unwrap();
        let cmds: Vec<Command> = decode(ib.words()).map(|c| c.unwrap()).collect();
        assert_eq!(
            cmds,
            [Command::Signal { addr: 0x1000, value: 7 }, Command::Copy { dst: 0x2000, src: 0x3000, bytes: 64 }]
        );
        assert!(ib.marks(0).any(|m| m.field == Field::Value));
        assert!(ib.marks(1).any(|m| m.field == Field::Size) && !ib.marks(1).any(|m| m.field == Field::Value));
        assert_eq!(ib.marks(2).count(), 0);
    }
}
