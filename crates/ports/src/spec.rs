//! Port specifications: the text a user writes to name a port.
//!
//! Grammar (no spaces):
//!
//! ```text
//! spec    = kind ":" name *("," key "=" value) ["=" portno]
//! kind    = "afpacket" | "pcap" | "tap" | "afxdp"
//! portno  = decimal OpenFlow port number, 1 ..= 0xffffff00 (OFPP_MAX)
//! ```
//!
//! The optional `=portno` is the last `=`-suffix of the whole spec: on the name when
//! there are no options (`afpacket:veth1=1`), otherwise after the last option's
//! value (`pcap:in.pcap,out=out.pcap=3`). Names and values therefore cannot contain
//! `,` or `=`; interface names are checked like the kernel does (1..=15 bytes, no
//! `/`, `:` or whitespace).
//!
//! Each kind accepts a fixed set of option keys; an unknown key, a repeated key, a
//! bad number or a bad name is an error that quotes the offending token.
//! `Display` writes the canonical form, and `parse(display(x)) == x`.

use std::fmt;
use std::str::FromStr;

/// OFPP_MAX: the largest number a physical/logical port may have.
pub const OFPP_MAX: u32 = 0xffff_ff00;

/// What kind of port a spec opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PortKind {
    /// `afpacket:IFNAME`
    AfPacket,
    /// `pcap:FILE`
    Pcap,
    /// `tap:NAME`
    Tap,
    /// `afxdp:IFNAME`
    AfXdp,
}

impl PortKind {
    /// The spec prefix.
    pub fn as_str(self) -> &'static str {
        match self {
            PortKind::AfPacket => "afpacket",
            PortKind::Pcap => "pcap",
            PortKind::Tap => "tap",
            PortKind::AfXdp => "afxdp",
        }
    }

    /// Option keys this kind accepts.
    pub fn option_keys(self) -> &'static [&'static str] {
        match self {
            // rx: recv | ring; blocks / block_size: RX ring geometry (the socket's
            // receive buffer with rx=recv); tov: block retire timeout (ms);
            // tx_frames: TX ring slots.
            PortKind::AfPacket => &["rx", "blocks", "block_size", "tov", "tx_frames"],
            // out: capture file for transmitted frames; loop: replay IN this many times.
            PortKind::Pcap => &["out", "loop"],
            PortKind::Tap => &[],
            // queue: NIC queue; mode: copy | zerocopy | auto; frames: UMEM frames.
            PortKind::AfXdp => &["queue", "mode", "frames"],
        }
    }

    fn names_interface(self) -> bool {
        !matches!(self, PortKind::Pcap)
    }
}

impl FromStr for PortKind {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, SpecError> {
        match s {
            "afpacket" => Ok(PortKind::AfPacket),
            "pcap" => Ok(PortKind::Pcap),
            "tap" => Ok(PortKind::Tap),
            "afxdp" => Ok(PortKind::AfXdp),
            _ => Err(SpecError::new(s, "unknown port kind (afpacket, pcap, tap, afxdp)")),
        }
    }
}

/// A parse error: the offending token and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    /// The token that could not be accepted.
    pub token: String,
    /// Why.
    pub reason: String,
}

impl SpecError {
    fn new(token: &str, reason: impl Into<String>) -> SpecError {
        SpecError { token: token.to_string(), reason: reason.into() }
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad port spec token {:?}: {}", self.token, self.reason)
    }
}

impl std::error::Error for SpecError {}

impl From<SpecError> for std::io::Error {
    fn from(e: SpecError) -> Self {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, e)
    }
}

/// A parsed port spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortSpec {
    /// Port kind.
    pub kind: PortKind,
    /// Interface name or file path.
    pub name: String,
    /// `key=value` options in the order written.
    pub options: Vec<(String, String)>,
    /// OpenFlow port number, if given.
    pub port_no: Option<u32>,
}

fn is_valid_ifname(name: &str) -> bool {
    let b = name.as_bytes();
    !(b.is_empty()
        || b.len() >= 16
        || name == "."
        || name == ".."
        || b.iter().any(|&c| c == b'/' || c == b':' || c == 0 || c.is_ascii_whitespace()))
}

fn parse_port_no(tok: &str) -> Result<u32, SpecError> {
    let ok = !tok.is_empty() && tok.bytes().all(|c| c.is_ascii_digit());
    match tok.parse::<u32>() {
        Ok(n) if ok && (1..=OFPP_MAX).contains(&n) => Ok(n),
        _ => Err(SpecError::new(tok, "port number must be 1..=4294967040 (OFPP_MAX)")),
    }
}

impl PortSpec {
    /// Parses `kind:name[,key=value]*[=portno]`.
    pub fn parse(s: &str) -> Result<PortSpec, SpecError> {
        let (kind_s, rest) =
            s.split_once(':').ok_or_else(|| SpecError::new(s, "expected KIND:NAME"))?;
        let kind: PortKind = kind_s.parse()?;
        let mut tokens = rest.split(',');
        let first = tokens.next().unwrap_or("");
        let mut port_no = None;
        let name = match first.split_once('=') {
            Some((n, p)) => {
                port_no = Some(parse_port_no(p)?);
                n
            }
            None => first,
        };
        if name.is_empty() {
            return Err(SpecError::new(first, "empty port name"));
        }
        if kind.names_interface() && !is_valid_ifname(name) {
            return Err(SpecError::new(name, "invalid interface name"));
        }
        let mut options: Vec<(String, String)> = Vec::new();
        let rest: Vec<&str> = tokens.collect();
        for (i, tok) in rest.iter().enumerate() {
            let (key, val) =
                tok.split_once('=').ok_or_else(|| SpecError::new(tok, "expected KEY=VALUE"))?;
            let val = match val.split_once('=') {
                Some((v, p)) if i + 1 == rest.len() => {
                    if port_no.is_some() {
                        return Err(SpecError::new(p, "port number given twice"));
                    }
                    port_no = Some(parse_port_no(p)?);
                    v
                }
                Some(_) => return Err(SpecError::new(tok, "'=' inside an option value")),
                None => val,
            };
            if !kind.option_keys().contains(&key) {
                return Err(SpecError::new(
                    key,
                    format!(
                        "unknown option for {} (accepted: {})",
                        kind.as_str(),
                        kind.option_keys().join(", ")
                    ),
                ));
            }
            if options.iter().any(|(k, _)| k == key) {
                return Err(SpecError::new(key, "option given twice"));
            }
            if val.is_empty() {
                return Err(SpecError::new(tok, "empty option value"));
            }
            options.push((key.to_string(), val.to_string()));
        }
        Ok(PortSpec { kind, name: name.to_string(), options, port_no })
    }

    /// The value of option `key`, if given.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.options.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Option `key` parsed as `T`; an unparsable value is an error naming it.
    pub fn option_parse<T: FromStr>(&self, key: &str) -> Result<Option<T>, SpecError> {
        match self.option(key) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| SpecError::new(v, format!("bad value for option {key}"))),
        }
    }
}

impl FromStr for PortSpec {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, SpecError> {
        PortSpec::parse(s)
    }
}

impl fmt::Display for PortSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind.as_str(), self.name)?;
        for (k, v) in &self.options {
            write!(f, ",{k}={v}")?;
        }
        if let Some(p) = self.port_no {
            write!(f, "={p}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_the_documented_forms() {
        let s = PortSpec::parse("afpacket:veth1=1").unwrap();
        assert_eq!(s.kind, PortKind::AfPacket);
        assert_eq!(s.name, "veth1");
        assert!(s.options.is_empty());
        assert_eq!(s.port_no, Some(1));

        let s = PortSpec::parse("pcap:in.pcap,out=out.pcap").unwrap();
        assert_eq!(s.kind, PortKind::Pcap);
        assert_eq!(s.name, "in.pcap");
        assert_eq!(s.option("out"), Some("out.pcap"));
        assert_eq!(s.port_no, None);

        let s = PortSpec::parse("pcap:/tmp/a.pcap,out=/tmp/b.pcap,loop=3=7").unwrap();
        assert_eq!(s.option("loop"), Some("3"));
        assert_eq!(s.option_parse::<u32>("loop").unwrap(), Some(3));
        assert_eq!(s.port_no, Some(7));

        let s = PortSpec::parse("tap:sluice0").unwrap();
        assert_eq!((s.kind, s.name.as_str(), s.port_no), (PortKind::Tap, "sluice0", None));

        let s = PortSpec::parse("afxdp:eth0,queue=0,mode=copy=4294967040").unwrap();
        assert_eq!(s.kind, PortKind::AfXdp);
        assert_eq!(s.port_no, Some(OFPP_MAX));
    }

    fn err_token(s: &str) -> String {
        PortSpec::parse(s).unwrap_err().token
    }

    #[test]
    fn errors_name_the_bad_token() {
        assert_eq!(err_token("ethernet:eth0"), "ethernet");
        assert_eq!(err_token("eth0"), "eth0");
        assert_eq!(err_token("afpacket:veth1=x1"), "x1");
        assert_eq!(err_token("afpacket:veth1=0"), "0");
        assert_eq!(err_token("afpacket:veth1=4294967041"), "4294967041");
        assert_eq!(err_token("afpacket:veth1=+1"), "+1");
        assert_eq!(err_token("afpacket:averyveryverylongname"), "averyveryverylongname");
        assert_eq!(err_token("afpacket:a/b"), "a/b");
        assert_eq!(err_token("afpacket:"), "");
        assert_eq!(err_token("afpacket:eth0,bogus=1"), "bogus");
        assert_eq!(err_token("afpacket:eth0,blocks"), "blocks");
        assert_eq!(err_token("afpacket:eth0,blocks=1,blocks=2"), "blocks");
        assert_eq!(err_token("pcap:a.pcap=1,out=b.pcap=2"), "2");
        assert_eq!(err_token("pcap:a.pcap,out=b=c,loop=1"), "out=b=c");
        assert_eq!(err_token("pcap:a.pcap,out="), "out=");
        let e = PortSpec::parse("pcap:a.pcap,loop=x").unwrap().option_parse::<u32>("loop");
        assert_eq!(e.unwrap_err().token, "x");
        // Display of an error quotes the token.
        assert!(PortSpec::parse("foo:bar").unwrap_err().to_string().contains("\"foo\""));
    }

    fn kind_strategy() -> impl Strategy<Value = PortKind> {
        prop_oneof![
            Just(PortKind::AfPacket),
            Just(PortKind::Pcap),
            Just(PortKind::Tap),
            Just(PortKind::AfXdp)
        ]
    }

    proptest! {
        #[test]
        fn display_parse_round_trip(
            kind in kind_strategy(),
            name in "[a-z][a-z0-9_.-]{0,13}",
            vals in proptest::collection::vec("[a-z0-9/._-]{1,8}", 0..3),
            port_no in proptest::option::of(1u32..=OFPP_MAX),
        ) {
            let keys = kind.option_keys();
            let options: Vec<(String, String)> = keys
                .iter()
                .zip(vals.iter())
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect();
            let spec = PortSpec { kind, name, options, port_no };
            let text = spec.to_string();
            prop_assert_eq!(PortSpec::parse(&text).unwrap(), spec);
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,40}") {
            let _ = PortSpec::parse(&s);
        }
    }
}
