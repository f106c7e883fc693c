//! Running filters and pfmatch programs over pcap files (`pcap-file`).
//!
//! Only Ethernet captures (DLT_EN10MB) are accepted; any other link type is
//! rejected with a message naming it. Packets are streamed, one at a time.

use crate::pfmatch::Dispatcher;
use crate::Filter;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::Path;
use std::time::Duration;

/// One captured packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    pub ts: Duration,
    /// Length on the wire (`len` in filters).
    pub wirelen: u32,
    pub data: Vec<u8>,
}

fn open(path: &Path) -> Result<PcapReader<BufReader<File>>, String> {
    let f = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let r = PcapReader::new(BufReader::new(f)).map_err(|e| format!("{}: {e}", path.display()))?;
    let dlt = u32::from(r.header().datalink);
    crate::check_linktype(dlt).map_err(|m| format!("{}: {m}", path.display()))?;
    Ok(r)
}

/// Calls `f` on every packet of an Ethernet pcap file; returns its header.
pub fn for_each_packet(
    path: &Path,
    mut f: impl FnMut(&PcapPacket<'_>),
) -> Result<PcapHeader, String> {
    let mut r = open(path)?;
    let header = r.header();
    while let Some(p) = r.next_packet() {
        let p = p.map_err(|e| format!("{}: {e}", path.display()))?;
        f(&p);
    }
    Ok(header)
}

/// Reads a whole capture into memory (`max` packets at most).
pub fn read_all(path: &Path, max: usize) -> Result<Vec<Packet>, String> {
    let mut out = Vec::new();
    let mut r = open(path)?;
    while let Some(p) = r.next_packet() {
        if out.len() >= max {
            break;
        }
        let p = p.map_err(|e| format!("{}: {e}", path.display()))?;
        out.push(Packet { ts: p.timestamp, wirelen: p.orig_len, data: p.data.into_owned() });
    }
    Ok(out)
}

/// Writes packets to a new Ethernet pcap file.
pub fn write_all<'a>(
    path: &Path,
    packets: impl IntoIterator<Item = &'a Packet>,
) -> Result<(), String> {
    let f = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let header = PcapHeader {
        datalink: pcap_file::DataLink::ETHERNET,
        snaplen: 262_144,
        ..PcapHeader::default()
    };
    let mut w = PcapWriter::with_header(BufWriter::new(f), header).map_err(|e| e.to_string())?;
    for p in packets {
        w.write_packet(&PcapPacket::new(p.ts, p.wirelen, &p.data)).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Result of running a filter over a capture.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FilterReport {
    pub packets: u64,
    pub matched: u64,
}

/// Counts (and optionally saves to `write`) the packets `f` accepts.
pub fn filter_pcap(f: &Filter, input: &Path, write: Option<&Path>) -> Result<FilterReport, String> {
    let mut rep = FilterReport::default();
    let mut r = open(input)?;
    let mut w = match write {
        Some(out) => {
            let file = File::create(out).map_err(|e| format!("{}: {e}", out.display()))?;
            Some(
                PcapWriter::with_header(BufWriter::new(file), r.header())
                    .map_err(|e| e.to_string())?,
            )
        }
        None => None,
    };
    while let Some(p) = r.next_packet() {
        let p = p.map_err(|e| format!("{}: {e}", input.display()))?;
        rep.packets += 1;
        if f.matches_wire(&p.data, p.orig_len) {
            rep.matched += 1;
            if let Some(w) = w.as_mut() {
                w.write_packet(&p).map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(rep)
}

/// Result of running a pfmatch program over a capture.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DispatchReport {
    pub packets: u64,
    /// Packets per handler (same order as `Dispatcher::handlers`).
    pub per_handler: Vec<u64>,
    pub unmatched: u64,
    /// Handler chosen for each packet, in capture order.
    pub verdicts: Vec<Option<usize>>,
}

/// Runs a pfmatch dispatcher over a pcap file: the library side of
/// `sluice replay --pfmatch PROG --pcap IN` (the replay command itself
/// belongs to the pipeline). `on_packet` sees every packet and its handler.
pub fn dispatch_pcap(
    d: &Dispatcher,
    input: &Path,
    mut on_packet: impl FnMut(&PcapPacket<'_>, Option<usize>),
) -> Result<DispatchReport, String> {
    let mut rep =
        DispatchReport { per_handler: vec![0; d.handlers.len()], ..DispatchReport::default() };
    for_each_packet(input, |p| {
        rep.packets += 1;
        let h = d.dispatch(&p.data, p.orig_len);
        match h.and_then(|i| rep.per_handler.get_mut(i)) {
            Some(c) => *c += 1,
            None => rep.unmatched += 1,
        }
        rep.verdicts.push(h);
        on_packet(p, h);
    })?;
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Options;

    #[test]
    fn filter_and_dispatch_a_file() {
        let dir = std::env::temp_dir().join(format!("sluice-filter-pcapio-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("in.pcap");
        let pkts = crate::tests::corpus(7, 200)
            .into_iter()
            .map(|(data, wirelen)| Packet { ts: Duration::from_micros(1), wirelen, data })
            .collect::<Vec<_>>();
        write_all(&input, &pkts).unwrap();
        let f = Filter::compile("tcp or arp", Options::default()).unwrap();
        let out = dir.join("out.pcap");
        let rep = filter_pcap(&f, &input, Some(&out)).unwrap();
        let want = pkts.iter().filter(|p| f.interp(&p.data, p.wirelen)).count() as u64;
        assert_eq!(rep.packets, pkts.len() as u64);
        assert_eq!(rep.matched, want);
        let back = read_all(&out, usize::MAX).unwrap();
        assert_eq!(back.len() as u64, want);
        assert!(back.iter().all(|p| f.interp(&p.data, p.wirelen)));

        let d = Dispatcher::compile(
            "match { tcp => a ; udp => b ; otherwise => c }",
            Options::default(),
        )
        .unwrap();
        let rep = dispatch_pcap(&d, &input, |_, _| {}).unwrap();
        assert_eq!(rep.per_handler.iter().sum::<u64>() + rep.unmatched, pkts.len() as u64);
        assert_eq!(rep.unmatched, 0);
        for (p, v) in pkts.iter().zip(&rep.verdicts) {
            assert_eq!(*v, d.dispatch_interp(&p.data, p.wirelen));
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn rejects_other_link_types() {
        let dir = std::env::temp_dir().join(format!("sluice-filter-dlt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("raw.pcap");
        let f = File::create(&p).unwrap();
        let h = PcapHeader { datalink: pcap_file::DataLink::RAW, ..PcapHeader::default() };
        drop(PcapWriter::with_header(f, h).unwrap());
        let e = read_all(&p, 10).unwrap_err();
        assert!(e.contains("only Ethernet"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
