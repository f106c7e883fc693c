//! pcap port round trip: frames written to IN come out of `rx_burst` exactly and in
//! order; frames given to `tx_burst` land in OUT exactly and in order.

use std::fs::File;
use std::path::PathBuf;
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};
use pcap_file::DataLink;
use sluice_ports::pcap::PcapPort;
use sluice_ports::testutil::{test_frame, unique_name};
use sluice_ports::{open, Port, PortSpec, RxBuf, BURST};

/// A temporary directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        let p = std::env::temp_dir().join(unique_name("sluice-pcap-"));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn write_pcap(path: &PathBuf, datalink: DataLink, frames: &[Vec<u8>]) {
    let header = PcapHeader { datalink, ..PcapHeader::default() };
    let mut w = PcapWriter::with_header(File::create(path).unwrap(), header).unwrap();
    for (i, f) in frames.iter().enumerate() {
        let pkt = PcapPacket::new(Duration::from_micros(i as u64), f.len() as u32, f);
        w.write_packet(&pkt).unwrap();
    }
}

fn read_pcap(path: &PathBuf) -> Vec<Vec<u8>> {
    let mut r = PcapReader::new(File::open(path).unwrap()).unwrap();
    assert_eq!(r.header().datalink, DataLink::ETHERNET);
    let mut out = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        assert_eq!(p.orig_len as usize, p.data.len());
        out.push(p.data.into_owned());
    }
    out
}

fn frames(n: u32) -> Vec<Vec<u8>> {
    let a = [0x02, 0, 0, 0, 0, 1];
    let b = [0x02, 0, 0, 0, 0, 2];
    (0..n).map(|i| test_frame(a, b, i, 60 + (i as usize * 41) % 1455)).collect()
}

fn drain(port: &mut dyn Port) -> Vec<Vec<u8>> {
    let mut bufs = RxBuf::burst(BURST);
    let mut got = Vec::new();
    // Bounded: every call before the end returns frames.
    for _ in 0..10_000 {
        let n = port.rx_burst(&mut bufs).unwrap();
        if n == 0 {
            break;
        }
        assert!(n <= BURST);
        got.extend(bufs[..n].iter().map(|b| b.frame().to_vec()));
    }
    got
}

#[test]
fn replays_and_records_exactly() {
    let dir = TempDir::new();
    let input = dir.0.join("in.pcap");
    let output = dir.0.join("out.pcap");
    let sent = frames(75);
    write_pcap(&input, DataLink::ETHERNET, &sent);

    let spec = format!("pcap:{},out={}=3", input.display(), output.display());
    let spec = PortSpec::parse(&spec).unwrap();
    assert_eq!(spec.port_no, Some(3));
    let mut port = open(&spec).unwrap();
    assert!(port.link_up());
    assert!(port.raw_fd().is_none());
    assert_eq!(port.hw_addr()[0] & 0x03, 0x02, "local unicast MAC");

    let got = drain(port.as_mut());
    assert_eq!(got, sent);
    assert_eq!(port.rx_burst(&mut RxBuf::burst(4)).unwrap(), 0, "stays finished");

    let refs: Vec<&[u8]> = got.iter().map(|f| f.as_slice()).collect();
    for chunk in refs.chunks(BURST) {
        assert_eq!(port.tx_burst(chunk).unwrap(), chunk.len());
    }
    // Flushed per burst: readable while the port is still open.
    assert_eq!(read_pcap(&output), sent);
    let st = port.stats();
    assert_eq!((st.rx_packets, st.tx_packets), (75, 75));
    drop(port);
    assert_eq!(read_pcap(&output), sent);
}

#[test]
fn loops_and_skips_frames_too_big_for_the_buffer() {
    let dir = TempDir::new();
    let input = dir.0.join("in.pcap");
    let sent = frames(10);
    write_pcap(&input, DataLink::ETHERNET, &sent);
    let mut port = PcapPort::open(&input, None, 3).unwrap();
    let got = drain(&mut port);
    assert_eq!(got.len(), 30);
    assert_eq!(&got[20..], &sent[..]);
    assert!(port.finished());

    // Buffers of 200 bytes: only the frames that fit come through.
    let mut port = PcapPort::open(&input, None, 1).unwrap();
    let mut bufs: Vec<RxBuf> = (0..4).map(|_| RxBuf::new(200)).collect();
    let mut n_got = 0;
    for _ in 0..100 {
        let n = port.rx_burst(&mut bufs).unwrap();
        if n == 0 {
            break;
        }
        for b in &bufs[..n] {
            assert!(sent.contains(&b.frame().to_vec()));
        }
        n_got += n;
    }
    let fit = sent.iter().filter(|f| f.len() <= 200).count();
    assert_eq!(n_got, fit);
    assert_eq!(port.stats().rx_errors as usize, sent.len() - fit);
}

#[test]
fn refuses_non_ethernet_and_missing_files() {
    let dir = TempDir::new();
    let input = dir.0.join("raw.pcap");
    write_pcap(&input, DataLink::RAW, &frames(2));
    let e = PcapPort::open(&input, None, 1).err().expect("non-Ethernet refused");
    assert!(e.to_string().contains("not Ethernet"), "{e}");
    let e = PcapPort::open(&dir.0.join("missing.pcap"), None, 1).err().unwrap();
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    let junk = dir.0.join("junk.pcap");
    std::fs::write(&junk, b"this is not a pcap file at all").unwrap();
    assert!(PcapPort::open(&junk, None, 1).is_err());
}
