//! Classic pcap files (the `tcpdump -w` format): just enough to feed
//! packets to programs (`sluice bpf run/bench`) and to write test inputs.
//!
//! Both byte orders and both timestamp resolutions are accepted; records
//! larger than [`MAX_RECORD`] or truncated records are errors, never panics.

/// Largest accepted record (the usual snaplen).
pub const MAX_RECORD: usize = 262_144;

/// Parses a pcap file into its packets' bytes.
pub fn read(data: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let magic = data.get(0..4).ok_or("pcap: file too short")?;
    let le = match magic {
        [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1] => true,
        [0xa1, 0xb2, 0xc3, 0xd4] | [0xa1, 0xb2, 0x3c, 0x4d] => false,
        _ => return Err("pcap: bad magic (pcapng is not supported)".into()),
    };
    let u32_at = |off: usize| -> Option<u32> {
        let b: [u8; 4] = data.get(off..off + 4)?.try_into().ok()?;
        Some(if le { u32::from_le_bytes(b) } else { u32::from_be_bytes(b) })
    };
    if data.len() < 24 {
        return Err("pcap: truncated global header".into());
    }
    let mut out = Vec::new();
    let mut off = 24usize;
    while off < data.len() {
        let caplen = u32_at(off + 8).ok_or("pcap: truncated record header")? as usize;
        if caplen > MAX_RECORD {
            return Err(format!("pcap: record {} too large ({caplen} bytes)", out.len()));
        }
        let start = off + 16;
        let pkt = data
            .get(start..start + caplen)
            .ok_or_else(|| format!("pcap: record {} truncated", out.len()))?;
        out.push(pkt.to_vec());
        off = start + caplen;
    }
    Ok(out)
}

/// Writes packets as a little-endian, microsecond pcap with link type Ethernet.
pub fn write(packets: &[Vec<u8>]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    v.extend_from_slice(&2u16.to_le_bytes());
    v.extend_from_slice(&4u16.to_le_bytes());
    v.extend_from_slice(&0i32.to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    v.extend_from_slice(&65535u32.to_le_bytes());
    v.extend_from_slice(&1u32.to_le_bytes());
    for (i, p) in packets.iter().enumerate() {
        v.extend_from_slice(&(i as u32).to_le_bytes());
        v.extend_from_slice(&0u32.to_le_bytes());
        v.extend_from_slice(&(p.len() as u32).to_le_bytes());
        v.extend_from_slice(&(p.len() as u32).to_le_bytes());
        v.extend_from_slice(p);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_errors() {
        let pkts = vec![vec![1, 2, 3], vec![], vec![9; 70]];
        assert_eq!(read(&write(&pkts)).unwrap(), pkts);
        assert!(read(b"xx").is_err());
        let mut w = write(&pkts);
        w.truncate(w.len() - 1);
        assert!(read(&w).is_err());
    }

    #[test]
    fn big_endian_literal() {
        let mut f = vec![0xa1, 0xb2, 0xc3, 0xd4, 0, 2, 0, 4];
        f.extend_from_slice(&[0; 16]);
        f.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 2, 0xab, 0xcd]);
        assert_eq!(read(&f).unwrap(), vec![vec![0xab, 0xcd]]);
    }
}
