//! `pcap:IN.pcap[,out=OUT.pcap][,loop=N]` — a port backed by capture files.
//!
//! Receive replays the frames of IN in file order, as fast as the caller asks (the
//! timestamps are ignored), `N` times (default 1); after that `rx_burst` returns
//! `Ok(0)` forever and [`PcapPort::finished`] is true. Transmit appends every frame
//! to OUT (classic pcap, Ethernet link type, microsecond timestamps taken once per
//! burst) or, without `out=`, discards it. OUT is flushed at the end of every burst,
//! so another process (or a test) can read it while the port is open.
//!
//! IN must be a classic pcap file with link type Ethernet (DLT_EN10MB); anything else
//! is refused at open. A record longer than the receive buffer is skipped and counted
//! in `rx_errors`; a corrupt record ends the replay with an error.
//!
//! The reader is `pcap-file`'s `PcapReader`, which parses out of one internal buffer,
//! so replay allocates nothing per packet. There is no pollable fd: a pcap port is
//! always "ready" until it has finished.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pcap_file::pcap::{PcapHeader, PcapReader};
use pcap_file::{DataLink, Endianness, TsResolution};

use crate::{synthetic_mac, Port, PortSpec, PortStats, RxBuf};

/// Snap length written into OUT's header; longer frames are cut (never happens for
/// Ethernet frames a port can carry).
const SNAPLEN: u32 = 65535;

/// A capture-file port. See the module docs.
pub struct PcapPort {
    name: String,
    input: PathBuf,
    reader: Option<PcapReader<File>>,
    loops_left: u64,
    out: Option<BufWriter<File>>,
    hw: [u8; 6],
    stats: PortStats,
}

fn ctx(path: &Path, e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("pcap {}: {e}", path.display()))
}

fn open_reader(path: &Path) -> io::Result<PcapReader<File>> {
    let f = File::open(path).map_err(|e| io::Error::new(e.kind(), ctx(path, e)))?;
    let r = PcapReader::new(f).map_err(|e| ctx(path, e))?;
    let dl = r.header().datalink;
    if dl != DataLink::ETHERNET {
        return Err(ctx(path, format!("link type {dl:?} is not Ethernet")));
    }
    Ok(r)
}

impl PcapPort {
    /// Opens `input` for replay (`loops` times) and, if given, creates `output`.
    pub fn open(input: &Path, output: Option<&Path>, loops: u64) -> io::Result<PcapPort> {
        let reader = open_reader(input)?;
        let out = match output {
            Some(p) => {
                let f = File::create(p).map_err(|e| io::Error::new(e.kind(), ctx(p, e)))?;
                let header = PcapHeader {
                    datalink: DataLink::ETHERNET,
                    snaplen: SNAPLEN,
                    ts_resolution: TsResolution::MicroSecond,
                    endianness: Endianness::Little,
                    ..PcapHeader::default()
                };
                let mut w = BufWriter::new(f);
                header.write_to(&mut w).map_err(|e| ctx(p, e))?;
                w.flush()?;
                Some(w)
            }
            None => None,
        };
        let name = input.display().to_string();
        Ok(PcapPort {
            hw: synthetic_mac(&name),
            name,
            input: input.to_path_buf(),
            reader: Some(reader),
            loops_left: loops.saturating_sub(1),
            out,
            stats: PortStats::default(),
        })
    }

    /// Opens the port a `pcap:` spec describes.
    pub fn from_spec(spec: &PortSpec) -> io::Result<PcapPort> {
        let loops: u64 = spec.option_parse("loop")?.unwrap_or(1);
        PcapPort::open(Path::new(&spec.name), spec.option("out").map(Path::new), loops)
    }

    /// True once every replay of IN has been delivered.
    pub fn finished(&self) -> bool {
        self.reader.is_none()
    }

    /// Flushes OUT.
    pub fn flush(&mut self) -> io::Result<()> {
        match &mut self.out {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}

impl Port for PcapPort {
    fn rx_burst(&mut self, bufs: &mut [RxBuf]) -> io::Result<usize> {
        let mut n = 0;
        while n < bufs.len() {
            let Some(reader) = &mut self.reader else { break };
            match reader.next_packet() {
                Some(Ok(pkt)) => {
                    let Some(buf) = bufs.get_mut(n) else { break };
                    if buf.load(&pkt.data) {
                        self.stats.rx_packets += 1;
                        self.stats.rx_bytes += pkt.data.len() as u64;
                        n += 1;
                    } else {
                        self.stats.rx_errors += 1;
                    }
                }
                Some(Err(e)) => {
                    self.reader = None;
                    return Err(ctx(&self.input, e));
                }
                None if self.loops_left > 0 => {
                    self.loops_left -= 1;
                    self.reader = Some(open_reader(&self.input)?);
                }
                None => self.reader = None,
            }
        }
        Ok(n)
    }

    fn tx_burst(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        let Some(w) = &mut self.out else {
            self.stats.tx_packets += frames.len() as u64;
            self.stats.tx_bytes += frames.iter().map(|f| f.len() as u64).sum::<u64>();
            return Ok(frames.len());
        };
        let ts = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
        for f in frames {
            // Record header (little endian, as the file header says): ts_sec,
            // ts_usec, captured length, original length.
            let len = f.len().min(SNAPLEN as usize);
            let mut rec = [0u8; 16];
            rec[0..4].copy_from_slice(&(ts.as_secs() as u32).to_le_bytes());
            rec[4..8].copy_from_slice(&ts.subsec_micros().to_le_bytes());
            rec[8..12].copy_from_slice(&(len as u32).to_le_bytes());
            rec[12..16].copy_from_slice(&(f.len() as u32).to_le_bytes());
            w.write_all(&rec)?;
            w.write_all(&f[..len])?;
            self.stats.tx_packets += 1;
            self.stats.tx_bytes += f.len() as u64;
        }
        w.flush()?;
        Ok(frames.len())
    }

    fn link_up(&self) -> bool {
        true
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn hw_addr(&self) -> [u8; 6] {
        self.hw
    }

    fn raw_fd(&self) -> Option<RawFd> {
        None
    }

    fn stats(&self) -> PortStats {
        self.stats
    }
}

impl Drop for PcapPort {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}
