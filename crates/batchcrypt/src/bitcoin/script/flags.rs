//! Script verification flags: one bit per rule, with Bitcoin Core's bit values and names.

macro_rules! flags {
    ($($flag:ident = $bit:literal, $name:literal;)*) => {
        impl Flags {
            $(pub const $flag: Flags = Flags(1 << $bit);)*
            const NAMES: &'static [(&'static str, Flags)] = &[$(($name, Flags::$flag),)*];
        }
    };
}

/// A set of script rules (`SCRIPT_VERIFY_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flags(pub u32);

flags! {
    P2SH = 0, "P2SH";
    STRICTENC = 1, "STRICTENC";
    DERSIG = 2, "DERSIG";
    LOW_S = 3, "LOW_S";
    NULLDUMMY = 4, "NULLDUMMY";
    SIGPUSHONLY = 5, "SIGPUSHONLY";
    MINIMALDATA = 6, "MINIMALDATA";
    DISCOURAGE_UPGRADABLE_NOPS = 7, "DISCOURAGE_UPGRADABLE_NOPS";
    CLEANSTACK = 8, "CLEANSTACK";
    CHECKLOCKTIMEVERIFY = 9, "CHECKLOCKTIMEVERIFY";
    CHECKSEQUENCEVERIFY = 10, "CHECKSEQUENCEVERIFY";
    WITNESS = 11, "WITNESS";
    DISCOURAGE_UPGRADABLE_WITNESS_PROGRAM = 12, "DISCOURAGE_UPGRADABLE_WITNESS_PROGRAM";
    MINIMALIF = 13, "MINIMALIF";
    NULLFAIL = 14, "NULLFAIL";
    WITNESS_PUBKEYTYPE = 15, "WITNESS_PUBKEYTYPE";
    CONST_SCRIPTCODE = 16, "CONST_SCRIPTCODE";
    TAPROOT = 17, "TAPROOT";
    DISCOURAGE_UPGRADABLE_TAPROOT_VERSION = 18, "DISCOURAGE_UPGRADABLE_TAPROOT_VERSION";
    DISCOURAGE_OP_SUCCESS = 19, "DISCOURAGE_OP_SUCCESS";
    DISCOURAGE_UPGRADABLE_PUBKEYTYPE = 20, "DISCOURAGE_UPGRADABLE_PUBKEYTYPE";
}

impl Flags {
    pub const NONE: Flags = Flags(0);

    /// Every consensus rule in force at today's tip (mandatory flags): P2SH, DERSIG, CLTV, CSV,
    /// WITNESS, NULLDUMMY, TAPROOT. Policy rules (low S, strict encodings, clean stack...) are not
    /// among them.
    pub const CONSENSUS: Flags = Flags(
        Flags::P2SH.0
            | Flags::DERSIG.0
            | Flags::CHECKLOCKTIMEVERIFY.0
            | Flags::CHECKSEQUENCEVERIFY.0
            | Flags::WITNESS.0
            | Flags::NULLDUMMY.0
            | Flags::TAPROOT.0,
    );

    /// Every rule this interpreter knows, consensus and policy.
    pub const ALL: Flags = Flags((1 << 21) - 1);

    pub fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn has(self, other: Flags) -> bool {
        self.0 & other.0 != 0
    }

    pub fn name_of(single: Flags) -> Option<&'static str> {
        Self::NAMES
            .iter()
            .find(|(_, f)| *f == single)
            .map(|(n, _)| *n)
    }

    /// Parses a comma-separated list of names (`"P2SH,WITNESS"`; `""` and `"NONE"` are empty).
    pub fn parse(list: &str) -> Result<Flags, String> {
        let mut flags = Flags::NONE;
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if name == "NONE" {
                continue;
            }
            let (_, f) = Self::NAMES
                .iter()
                .find(|(n, _)| *n == name)
                .ok_or_else(|| {
                    let known: Vec<&str> = Self::NAMES.iter().map(|(n, _)| *n).collect();
                    format!("unknown script flag {name:?}; known: {}", known.join(", "))
                })?;
            flags = flags | *f;
        }
        Ok(flags)
    }

    /// The names of the flags set, comma-separated.
    pub fn names(self) -> String {
        let v: Vec<&str> = Self::NAMES
            .iter()
            .filter(|(_, f)| self.contains(*f))
            .map(|(n, _)| *n)
            .collect();
        v.join(",")
    }
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, o: Flags) -> Flags {
        Flags(self.0 | o.0)
    }
}

impl std::ops::Sub for Flags {
    type Output = Flags;
    fn sub(self, o: Flags) -> Flags {
        Flags(self.0 & !o.0)
    }
}

impl std::str::FromStr for Flags {
    type Err = String;
    fn from_str(s: &str) -> Result<Flags, String> {
        Flags::parse(s)
    }
}
