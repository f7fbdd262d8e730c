//! The binary container circom and snarkjs write (`.zkey`, `.wtns`, `.r1cs`): a 4-byte magic, a
//! version, and numbered sections, each with its length. Read strictly: a section that runs past
//! the end of the file, a missing or repeated section, or bytes left over in one is an error.

use crate::error::{Error, Result};

pub(crate) struct BinFile<'a> {
    what: &'static str,
    sections: Vec<(u32, &'a [u8])>,
}

impl<'a> BinFile<'a> {
    /// `what` names the file in errors ("proving key (.zkey)").
    pub fn parse(
        data: &'a [u8],
        magic: &[u8; 4],
        max_version: u32,
        what: &'static str,
    ) -> Result<Self> {
        let mut r = Reader::new(data, what);
        if data.len() < 4 || &data[..4] != magic {
            return Err(Error::Corrupt(format!(
                "not a {what}: the file does not start with \"{}\"",
                String::from_utf8_lossy(magic)
            )));
        }
        r.bytes(4)?;
        let version = r.u32()?;
        if version == 0 || version > max_version {
            return Err(Error::Corrupt(format!(
                "{what}: format version {version} is not supported (1..={max_version})"
            )));
        }
        let count = r.u32()?;
        let mut sections = Vec::new();
        for _ in 0..count {
            let id = r.u32()?;
            let len = r.u64()?;
            let len = usize::try_from(len)
                .ok()
                .filter(|&l| l <= r.remaining())
                .ok_or_else(|| {
                    Error::Corrupt(format!(
                        "{what} is truncated: section {id} declares {len} bytes, {} remain",
                        r.remaining()
                    ))
                })?;
            sections.push((id, r.bytes(len)?));
        }
        if r.remaining() != 0 {
            return Err(Error::Corrupt(format!(
                "{what}: {} bytes after the last section",
                r.remaining()
            )));
        }
        Ok(BinFile { what, sections })
    }

    /// Section `id`, which must appear exactly once.
    pub fn section(&self, id: u32) -> Result<Reader<'a>> {
        let mut found = self.sections.iter().filter(|(i, _)| *i == id);
        match (found.next(), found.next()) {
            (Some((_, data)), None) => Ok(Reader::new(data, self.what)),
            (None, _) => Err(Error::Corrupt(format!(
                "{}: section {id} is missing (truncated or not written by circom/snarkjs?)",
                self.what
            ))),
            _ => Err(Error::Corrupt(format!(
                "{}: section {id} appears more than once",
                self.what
            ))),
        }
    }
}

/// Little-endian reads over one section, each checked against its end.
pub(crate) struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn new(data: &'a [u8], what: &'static str) -> Self {
        Reader { data, pos: 0, what }
    }

    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(Error::Corrupt(format!(
                "{} is truncated: {n} bytes expected, {} remain",
                self.what,
                self.remaining()
            )));
        }
        let out = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.bytes(4)?.try_into().unwrap()))
    }

    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.bytes(8)?.try_into().unwrap()))
    }

    /// A count as usize.
    pub fn count(&mut self) -> Result<usize> {
        Ok(self.u32()? as usize)
    }

    /// Exactly `n` items of `size` bytes (the rest of the section must be just that).
    pub fn items(&mut self, n: usize, size: usize, name: &str) -> Result<&'a [u8]> {
        let want = n.saturating_mul(size);
        if self.remaining() != want {
            return Err(Error::Corrupt(format!(
                "{}: {name} holds {} bytes, {n} items of {size} bytes need {want}",
                self.what,
                self.remaining()
            )));
        }
        self.bytes(want)
    }

    /// The section must be fully read.
    pub fn finish(&self, name: &str) -> Result<()> {
        if self.remaining() != 0 {
            return Err(Error::Corrupt(format!(
                "{}: {} unexpected bytes at the end of {name}",
                self.what,
                self.remaining()
            )));
        }
        Ok(())
    }
}

/// A container file: `magic`, `version`, then each (id, bytes) section in the order given.
pub(crate) fn write(magic: &[u8; 4], version: u32, sections: &[(u32, Vec<u8>)]) -> Vec<u8> {
    let len = 12 + sections.iter().map(|(_, s)| 12 + s.len()).sum::<usize>();
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(magic);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&(sections.len() as u32).to_le_bytes());
    for (id, data) in sections {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&(data.len() as u64).to_le_bytes());
        out.extend_from_slice(data);
    }
    out
}
