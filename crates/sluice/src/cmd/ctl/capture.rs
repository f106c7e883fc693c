//! `sluice ctl TARGET capture PORT FILE.pcap [--count N] [--seconds S]`:
//! starts a capture on the switch (`sluice_ofp::capturemsg`), reads the
//! frames it buffers every 50 ms, and writes them to a pcap file (libpcap
//! format, Ethernet) as they come, until the switch says the capture is
//! over (count reached or time up). The file is created before the capture
//! starts, so a path that cannot be written fails first.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use sluice_ofp::capturemsg::{CaptureReply, CaptureRequest};
use sluice_ofp::message::Message;

use super::conn::{Conn, Received};
use super::input::PortArg;

/// Seconds a capture runs when neither --count nor --seconds is given.
const DEFAULT_SECONDS: u32 = 10;
/// How often the buffered frames are read.
const READ_EVERY: Duration = Duration::from_millis(50);

fn reply(conn: &Conn, r: &Received) -> Result<CaptureReply> {
    let parsed = match &r.msg {
        Ok(Message::Experimenter(e)) => CaptureReply::parse(e),
        _ => None,
    };
    match parsed {
        Some(Ok(rep)) => Ok(rep),
        Some(Err(e)) => bail!("{}: {e}", conn.target()),
        None => bail!("{} answered the capture with `{}`", conn.target(), r.print()),
    }
}

pub fn run(
    conn: &mut Conn,
    port: &PortArg,
    file: &Path,
    count: Option<u64>,
    seconds: Option<u32>,
) -> Result<()> {
    let count = match count {
        None => 0,
        Some(0) => bail!("capture: --count 0 would record nothing"),
        Some(n) => {
            u32::try_from(n).with_context(|| format!("capture: --count {n} is too large"))?
        }
    };
    let seconds = match (seconds, count) {
        (Some(0), _) => bail!("capture: --seconds 0 would record nothing"),
        (Some(s), _) => s,
        (None, 0) => DEFAULT_SECONDS,
        // A count alone: the switch's own time limit bounds it.
        (None, _) => 0,
    };
    let port_no = super::resolve_port(conn, port)?;
    let f = std::fs::File::create(file)
        .with_context(|| format!("capture: creating {}", file.display()))?;
    let mut w = pcap_file::pcap::PcapWriter::new(std::io::BufWriter::new(f))
        .with_context(|| format!("capture: writing {}", file.display()))?;
    let start = CaptureRequest::Start { port: port_no, count, seconds };
    let r = conn.transact(&start.to_message(), "the capture")?;
    let id = reply(conn, &r)?.id;
    // The switch ends the capture by its count or deadline; this bound only
    // guards against a switch that never says so.
    let limit = Duration::from_secs(u64::from(if seconds == 0 { 3600 } else { seconds }) + 30);
    let began = Instant::now();
    let mut frames = 0u64;
    let dropped = loop {
        let r = conn.transact(&CaptureRequest::Read { id }.to_message(), "the capture read")?;
        let rep = reply(conn, &r)?;
        for rec in &rep.records {
            let ts = Duration::from_nanos(rec.time_ns);
            let pkt = pcap_file::pcap::PcapPacket::new(ts, rec.orig_len, &rec.data);
            w.write_packet(&pkt).with_context(|| format!("capture: writing {}", file.display()))?;
            frames += 1;
        }
        if rep.done {
            break rep.dropped;
        }
        if began.elapsed() > limit {
            bail!("capture {id}: the switch did not end it within {limit:?}");
        }
        if rep.records.is_empty() {
            std::thread::sleep(READ_EVERY);
        }
    };
    let mut inner = w.into_writer();
    std::io::Write::flush(&mut inner)
        .with_context(|| format!("capture: writing {}", file.display()))?;
    eprintln!("captured {frames} frames on port {port_no} into {}", file.display());
    if dropped > 0 {
        eprintln!(
            "warning: the switch could not keep {dropped} frames (its capture buffer was full)"
        );
    }
    Ok(())
}
