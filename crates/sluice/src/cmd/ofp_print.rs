//! `sluice ofp-print HEX...`: decode and print OpenFlow messages.
//!
//! The arguments are concatenated and read as hex: whitespace, `0x`/`0X`
//! prefixes and `:` separators are ignored, so the output of `xxd -p`, a
//! Wireshark "copy as hex stream" and ovs-ofctl's own hex all work. The
//! bytes may hold several messages back to back; each is printed with
//! [`sluice_ofp::print::print_hex_stream`] in ovs-ofctl's vocabulary. A
//! message that does not decode is printed with its OpenFlow error name
//! (as ovs-ofctl does), which is not a failure of this command; input that
//! is not hex is, and exits non-zero.

/// Arguments of `sluice ofp-print`.
#[derive(clap::Args)]
pub struct Args {
    /// One or more messages as hex (whitespace and `0x` prefixes allowed);
    /// several arguments are concatenated.
    #[arg(required = true)]
    pub hex: Vec<String>,
}

/// Turn the arguments into bytes; the error names the first offending
/// character and its position.
pub fn parse_hex(args: &[String]) -> anyhow::Result<Vec<u8>> {
    let mut digits = String::new();
    for (n, a) in args.iter().enumerate() {
        let mut rest = a.as_str();
        while !rest.is_empty() {
            let t = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ':');
            if let Some(x) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                rest = x;
                continue;
            }
            let mut chars = t.char_indices();
            match chars.next() {
                None => break,
                Some((_, c)) if c.is_ascii_hexdigit() => {
                    digits.push(c);
                    rest = &t[c.len_utf8()..];
                }
                Some((_, c)) => {
                    let at = a.len() - t.len();
                    anyhow::bail!("invalid hex: argument {} has {c:?} at byte {at}: {a:?}", n + 1);
                }
            }
        }
    }
    if digits.is_empty() {
        anyhow::bail!("invalid hex: no hex digits given");
    }
    if digits.len() % 2 != 0 {
        anyhow::bail!("invalid hex: odd number of hex digits ({})", digits.len());
    }
    Ok(hex::decode(&digits)?)
}

pub fn run(args: Args) -> anyhow::Result<()> {
    use std::io::Write;
    let bytes = parse_hex(&args.hex)?;
    let text = sluice_ofp::print::print_hex_stream(&bytes);
    match writeln!(std::io::stdout().lock(), "{text}") {
        // `sluice ofp-print ... | head` closing the pipe early is fine.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn accepts_whitespace_prefixes_and_several_arguments() {
        assert_eq!(
            parse_hex(&s(&["0x04 00", "0X0008 0000", "00:01"])).unwrap(),
            vec![4, 0, 0, 8, 0, 0, 0, 1]
        );
    }

    #[test]
    fn rejects_non_hex_and_odd_lengths() {
        let e = parse_hex(&s(&["0400zz"])).unwrap_err().to_string();
        assert!(e.contains("'z'") && e.contains("byte 4"), "{e}");
        assert!(parse_hex(&s(&["040"])).unwrap_err().to_string().contains("odd"));
        assert!(parse_hex(&s(&["  "])).is_err());
    }
}
